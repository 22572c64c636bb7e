"""The Transformer encoder and decoder (chapter 7), checked against d2l 1.0.3."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from companion.layers.attention import record_attention
from companion.layers.blocks import (
    AddNorm,
    DecoderCache,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from companion.layers.feedforward import PositionWiseFFN
from companion.layers.kv_cache import KVCache
from companion.models.transformer import TransformerDecoder, TransformerEncoder

VOCAB, HIDDENS, FFN, HEADS = 30, 16, 24, 4


@pytest.fixture(autouse=True)
def seeded():
    """The same random weights and inputs in every run, without touching other tests' RNG."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        yield


@pytest.fixture(scope="session")
def d2l_decoder(d2l):
    """d2l's TransformerDecoderBlock and TransformerDecoder, which d2l/torch.py leaves out.

    Written after the PyTorch tab of d2l 1.0.3's chapter_attention-mechanisms-and-transformers/
    transformer.md: self-attention masked by ``dec_valid_lens`` in training mode only, the
    block inputs cached in ``state[2][i]``, and the positional encoding of position 0 at each
    call.
    """

    class Block(nn.Module):
        def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
            super().__init__()
            self.i = i
            self.attention1 = d2l.MultiHeadAttention(num_hiddens, num_heads, dropout)
            self.addnorm1 = d2l.AddNorm(num_hiddens, dropout)
            self.attention2 = d2l.MultiHeadAttention(num_hiddens, num_heads, dropout)
            self.addnorm2 = d2l.AddNorm(num_hiddens, dropout)
            self.ffn = d2l.PositionWiseFFN(ffn_num_hiddens, num_hiddens)
            self.addnorm3 = d2l.AddNorm(num_hiddens, dropout)

        def forward(self, X, state):
            enc_outputs, enc_valid_lens = state[0], state[1]
            past = state[2][self.i]
            key_values = X if past is None else torch.cat((past, X), dim=1)
            state[2][self.i] = key_values
            dec_valid_lens = None
            if self.training:
                batch_size, num_steps, _ = X.shape
                dec_valid_lens = torch.arange(1, num_steps + 1).repeat(batch_size, 1)
            Y = self.addnorm1(X, self.attention1(X, key_values, key_values, dec_valid_lens))
            Z = self.addnorm2(Y, self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens))
            return self.addnorm3(Z, self.ffn(Z)), state

    class Decoder(d2l.AttentionDecoder):
        def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout):
            super().__init__()
            self.num_hiddens, self.num_blks = num_hiddens, num_blks
            self.embedding = nn.Embedding(vocab_size, num_hiddens)
            self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
            self.blks = nn.Sequential()
            for i in range(num_blks):
                self.blks.add_module(
                    "block" + str(i), Block(num_hiddens, ffn_num_hiddens, num_heads, dropout, i)
                )
            self.dense = nn.LazyLinear(vocab_size)

        def init_state(self, enc_outputs, enc_valid_lens):
            return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

        def forward(self, X, state):
            X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
            for blk in self.blks:
                X, state = blk(X, state)
            return self.dense(X), state

    return Block, Decoder


def matched(reference: nn.Module, ours: nn.Module, dtype: torch.dtype) -> tuple[nn.Module, ...]:
    """Load the (materialised) d2l layer's parameters, moved off their initial values so that
    LayerNorm's 1s and 0s are tested too, into ours with ``strict=True``; both in ``dtype``."""
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.3 * torch.randn_like(p))
    ours.load_state_dict(reference.state_dict(), strict=True)
    return ours.to(dtype), reference.to(dtype)


@pytest.fixture(params=[torch.float64, torch.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


def close(actual, expected, atol=None):
    """Within 1e-6 in float64; float32 rounds a logit near 4 to steps of 5e-7, so 1e-5 there."""
    if atol is None:
        atol = 1e-6 if actual.dtype == torch.float64 else 1e-5
    rtol = 0 if actual.dtype == torch.float64 else 1e-5
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


def tokens(*shape, generator=None):
    return torch.randint(0, VOCAB, shape, generator=generator)


# --- Same numbers as d2l ------------------------------------------------------------------------


def test_ffn_matches_d2l(d2l, dtype):
    reference = d2l.PositionWiseFFN(FFN, 6)
    reference(torch.randn(2, 5, HIDDENS))  # materialise the lazy layers
    ours, reference = matched(reference, PositionWiseFFN(FFN, 6), dtype)
    X = torch.randn(3, 7, HIDDENS, dtype=dtype)
    close(ours(X), reference(X))


def test_addnorm_matches_d2l(d2l, dtype):
    ours, reference = matched(d2l.AddNorm(HIDDENS, 0.4), AddNorm(HIDDENS, 0.4), dtype)
    ours.eval(), reference.eval()
    X, Y = torch.randn(2, 5, HIDDENS, dtype=dtype), torch.randn(2, 5, HIDDENS, dtype=dtype)
    close(ours(X, Y), reference(X, Y))


@pytest.mark.parametrize("use_bias", [False, True])
def test_encoder_block_matches_d2l(d2l, dtype, use_bias):
    reference = d2l.TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.3, use_bias)
    reference(torch.randn(2, 5, HIDDENS), torch.tensor([2, 5]))
    ours = TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.3, use_bias)
    ours, reference = matched(reference, ours, dtype)
    ours.eval(), reference.eval()
    X, valid_lens = torch.randn(3, 7, HIDDENS, dtype=dtype), torch.tensor([7, 1, 4])
    close(ours(X, valid_lens), reference(X, valid_lens))


def test_encoder_matches_d2l(d2l, dtype):
    reference = d2l.TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.3)
    reference(tokens(2, 5), torch.tensor([2, 5]))
    ours = TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.3)
    ours, reference = matched(reference, ours, dtype)
    ours.eval(), reference.eval()
    X, valid_lens = tokens(3, 9), torch.tensor([9, 2, 5])
    expected = reference(X, valid_lens)
    close(ours(X, valid_lens), expected)
    with record_attention(ours):
        close(ours(X, valid_lens), expected)
    for weights, reference_weights in zip(ours.attention_weights, reference.attention_weights):
        close(weights.reshape(-1, 9, 9), reference_weights)  # d2l: (batch * heads, q, k)


def encoder_state(batch_size, dtype=torch.float32, generator=None):
    enc_outputs = torch.randn(batch_size, 6, HIDDENS, generator=generator).to(dtype)
    enc_valid_lens = torch.randint(1, 7, (batch_size,), generator=generator)
    return enc_outputs, enc_valid_lens


def test_decoder_block_matches_d2l(d2l_decoder, dtype):
    enc_outputs, enc_valid_lens = encoder_state(3)
    reference = d2l_decoder[0](HIDDENS, FFN, HEADS, 0.0, 0)
    reference(torch.randn(3, 4, HIDDENS), [enc_outputs, enc_valid_lens, [None]])
    ours = TransformerDecoderBlock(HIDDENS, FFN, HEADS, 0.0, 0)
    ours, reference = matched(reference, ours, dtype)
    enc_outputs, X = enc_outputs.to(dtype), torch.randn(3, 5, HIDDENS, dtype=dtype)

    # Training: the whole sequence at once, causal self-attention.
    def states():
        return [enc_outputs, enc_valid_lens, [None]]  # d2l's: block inputs cached in [None]

    close(ours(X, enc_outputs, enc_valid_lens), reference(X, states())[0])
    # Prediction: one step at a time in evaluation mode. d2l caches the block's inputs and
    # projects them all again at every step; ours caches the projected keys and values.
    ours.eval(), reference.eval()
    cache, reference_state = DecoderCache(KVCache(), KVCache(static=True)), states()
    for t in range(5):
        step = X[:, t : t + 1]
        close(ours(step, enc_outputs, enc_valid_lens, cache), reference(step, reference_state)[0])
    self_attention, cross_attention = ours.attention1, ours.attention2
    assert cache.self_attention.keys.shape == (3, HEADS, 5, HIDDENS // HEADS)
    close(cache.self_attention.keys, self_attention.split_heads(self_attention.W_k(X)))
    close(cache.self_attention.values, self_attention.split_heads(self_attention.W_v(X)))
    assert cache.cross_attention.keys.shape == (3, HEADS, enc_outputs.shape[1], HIDDENS // HEADS)
    close(cache.cross_attention.keys, cross_attention.split_heads(cross_attention.W_k(enc_outputs)))


def matching_decoders(d2l_decoder, dtype):
    reference = d2l_decoder[1](VOCAB, HIDDENS, FFN, HEADS, 2, 0.0)
    reference(tokens(2, 3), reference.init_state(*encoder_state(2)))
    return matched(reference, TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.0), dtype)


def test_decoder_matches_d2l_in_training(d2l_decoder, dtype):
    ours, reference = matching_decoders(d2l_decoder, dtype)
    enc_outputs, enc_valid_lens = encoder_state(3, dtype)
    X = tokens(3, 8)
    expected, _ = reference(X, reference.init_state(enc_outputs, enc_valid_lens))
    logits, state = ours(X, ours.init_state(enc_outputs, enc_valid_lens))
    assert logits.shape == (3, 8, VOCAB)
    close(logits, expected)
    assert [len(cache.self_attention) for cache in state[2]] == [8, 8]
    assert [len(cache.cross_attention) for cache in state[2]] == [enc_outputs.shape[1]] * 2


def test_step_by_step_decoding_matches_d2l_training(d2l_decoder, dtype):
    """Decoding one step at a time gives d2l's teacher-forced logits, step for step.

    d2l's own step-by-step decoding adds the positional encoding of position 0 at every step,
    so it agrees with ours at the first step only.
    """
    ours, reference = matching_decoders(d2l_decoder, dtype)
    enc_outputs, enc_valid_lens = encoder_state(3, dtype)
    X = tokens(3, 6)
    expected, _ = reference(X, reference.init_state(enc_outputs, enc_valid_lens))
    ours.eval(), reference.eval()
    state = ours.init_state(enc_outputs, enc_valid_lens)
    reference_state = reference.init_state(enc_outputs, enc_valid_lens)
    for t in range(6):
        logits, state = ours(X[:, t : t + 1], state)
        close(logits, expected[:, t : t + 1])
        reference_logits, reference_state = reference(X[:, t : t + 1], reference_state)
        assert torch.allclose(logits, reference_logits, atol=1e-5, rtol=1e-5) == (t == 0)
    # Evaluation mode on the whole sequence is causal too (d2l's is not).
    close(ours(X, ours.init_state(enc_outputs, enc_valid_lens))[0], expected)


def test_several_steps_after_a_cache():
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.0).eval()
    enc_outputs, enc_valid_lens = encoder_state(2)
    X = tokens(2, 7)
    expected, _ = decoder(X, decoder.init_state(enc_outputs, enc_valid_lens))
    state = decoder.init_state(enc_outputs, enc_valid_lens)
    pieces = [decoder(X[:, a:b], state)[0] for a, b in ((0, 2), (2, 3), (3, 7))]
    close(torch.cat(pieces, dim=1), expected)


# --- Properties -----------------------------------------------------------------------------------

with torch.random.fork_rng():
    torch.manual_seed(0)
    BLOCK = TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.0).eval()
    DECODER = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.0)  # training mode, no dropout


@given(st.integers(1, 8).flatmap(lambda n: st.permutations(range(n))), st.integers(0, 2**16))
def test_self_attention_is_permutation_equivariant(permutation, seed):
    X = torch.randn(2, len(permutation), HIDDENS, generator=torch.Generator().manual_seed(seed))
    permutation = torch.tensor(permutation)
    with torch.no_grad():  # one call on both: the batch rows are independent
        permuted_output, output = BLOCK(torch.cat((X[:, permutation], X))).split(2)
    close(permuted_output, output[:, permutation], atol=1e-5)


@given(
    st.integers(1, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))),
    st.integers(0, 2**16),
)
def test_decoder_output_ignores_later_tokens(steps_and_t, seed):
    num_steps, t = steps_and_t
    generator = torch.Generator().manual_seed(seed)
    enc_outputs, enc_valid_lens = encoder_state(2, generator=generator)
    X = tokens(2, num_steps, generator=generator)
    changed = X.clone()
    changed[:, t + 1 :] = tokens(2, num_steps - t - 1, generator=generator)
    state = DECODER.init_state(enc_outputs.repeat(2, 1, 1), enc_valid_lens.repeat(2))
    with torch.no_grad():  # one call on both: the batch rows are independent
        logits, changed_logits = DECODER(torch.cat((X, changed)), state)[0].split(2)
    close(changed_logits[:, : t + 1], logits[:, : t + 1])


# --- Attention weights: explicit path vs fused path ----------------------------------------------


def test_encoder_weights_and_paths_agree():
    encoder = TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.1).eval()
    X, valid_lens = tokens(3, 7), torch.tensor([7, 3, 1])
    fused = encoder(X, valid_lens)
    with pytest.raises(RuntimeError, match="record_attention"):
        encoder.attention_weights  # noqa: B018 - the fused path keeps none
    with record_attention(encoder):
        explicit = encoder(X, valid_lens)
    close(explicit, fused, atol=1e-5)
    assert len(encoder.attention_weights) == 2
    for weights in encoder.attention_weights:
        assert weights.shape == (3, HEADS, 7, 7)
        close(weights.sum(-1), torch.ones(3, HEADS, 7))
        assert (weights[2, :, :, 1:] == 0).all()  # valid length 1: padding gets no weight


def test_decoder_weights_and_paths_agree():
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.1).eval()
    enc_outputs, enc_valid_lens = torch.randn(2, 6, HIDDENS), torch.tensor([6, 2])
    X = tokens(2, 5)
    fused, _ = decoder(X, decoder.init_state(enc_outputs, enc_valid_lens))
    with pytest.raises(RuntimeError, match="record_attention"):
        decoder.attention_weights  # noqa: B018
    with record_attention(decoder):
        explicit, _ = decoder(X, decoder.init_state(enc_outputs, enc_valid_lens))
    close(explicit, fused, atol=1e-5)
    self_weights, cross_weights = decoder.attention_weights
    for weights in self_weights:
        assert weights.shape == (2, HEADS, 5, 5)
        close(weights.sum(-1), torch.ones(2, HEADS, 5))
        assert (weights.triu(diagonal=1) == 0).all()  # no step looks ahead
    for weights in cross_weights:
        assert weights.shape == (2, HEADS, 5, 6)
        close(weights.sum(-1), torch.ones(2, HEADS, 5))
        assert (weights[1, :, :, 2:] == 0).all()
    # One step at a time: each new query sees the steps so far.
    state = decoder.init_state(enc_outputs, enc_valid_lens)
    with record_attention(decoder):
        for t in range(3):
            decoder(X[:, t : t + 1], state)
            assert decoder.attention_weights[0][1].shape == (2, HEADS, 1, t + 1)
            assert decoder.attention_weights[1][0].shape == (2, HEADS, 1, 6)


# --- Errors ---------------------------------------------------------------------------------------

CONSTRUCTORS = {
    "AddNorm": lambda dropout: AddNorm(HIDDENS, dropout),
    "EncoderBlock": lambda dropout: TransformerEncoderBlock(HIDDENS, FFN, HEADS, dropout),
    "Encoder": lambda dropout: TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, 1, dropout),
    "DecoderBlock": lambda dropout: TransformerDecoderBlock(HIDDENS, FFN, HEADS, dropout, 0),
    "Decoder": lambda dropout: TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 1, dropout),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_unit_interval(name, dropout):
    with pytest.raises(ValueError, match="dropout"):
        CONSTRUCTORS[name](dropout)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TransformerEncoderBlock(18, FFN, 4, 0.0),
        lambda: TransformerEncoder(VOCAB, 18, FFN, 4, 1, 0.0),
        lambda: TransformerDecoderBlock(18, FFN, 4, 0.0, 0),
        lambda: TransformerDecoder(VOCAB, 18, FFN, 4, 1, 0.0),
    ],
)
def test_heads_must_divide_num_hiddens(make):
    with pytest.raises(
        ValueError, match=r"num_hiddens \(18\) must be divisible by num_heads \(4\)"
    ):
        make()


@pytest.mark.parametrize("make", [TransformerEncoder, TransformerDecoder])
def test_num_blks_at_least_one(make):
    with pytest.raises(ValueError, match="num_blks"):
        make(VOCAB, HIDDENS, FFN, HEADS, 0, 0.0)


def run_encoder(X):
    return TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, 1, 0.0)(X)


def run_decoder(X):
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 1, 0.0)
    return decoder(X, decoder.init_state(torch.randn(X.shape[0], 3, HIDDENS), None))


@pytest.mark.parametrize("run", [run_encoder, run_decoder])
@pytest.mark.parametrize(
    "X, message",
    [
        (torch.tensor([[1, VOCAB]]), rf"outside the vocabulary \[0, {VOCAB}\)"),
        (torch.tensor([[-1, 2]]), "from -1 to 2, outside the vocabulary"),
        (torch.zeros(2, 3, HIDDENS), "2-D"),
        (torch.zeros(4, dtype=torch.long), "2-D"),
        (torch.zeros(2, 3), "integer"),
    ],
)
def test_bad_token_ids(run, X, message):
    with pytest.raises(ValueError, match=message):
        run(X)


def test_bad_block_inputs():
    with pytest.raises(ValueError, match=r"3-D \(batch, steps, num_hiddens=16\)"):
        TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.0)(torch.zeros(5, HIDDENS))
    with pytest.raises(ValueError, match="num_hiddens=16"):
        TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.0)(torch.zeros(2, 5, 8))
    with pytest.raises(ValueError, match="same shape"):
        AddNorm(HIDDENS, 0.0)(torch.zeros(2, 5, HIDDENS), torch.zeros(2, 4, HIDDENS))
    block = TransformerDecoderBlock(HIDDENS, FFN, HEADS, 0.0, 1)
    with pytest.raises(ValueError, match=r"enc_outputs must be 3-D .*got shape \(2, 3, 8\)"):
        block(torch.zeros(2, 5, HIDDENS), torch.zeros(2, 3, 8))
    with pytest.raises(ValueError, match="X has 3 rows, not a multiple of the 2 rows"):
        block(torch.zeros(3, 5, HIDDENS), torch.zeros(2, 3, HIDDENS))
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 2, 0.0)
    with pytest.raises(ValueError, match="one DecoderCache per block .2., as init_state"):
        decoder(tokens(2, 1), [torch.zeros(2, 3, HIDDENS), None, [None, None]])


def test_decoding_past_max_len():
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, 1, 0.0)
    state = decoder.init_state(torch.randn(1, 3, HIDDENS), None)
    cached = torch.zeros(1, HEADS, 999, HIDDENS // HEADS)  # as if 999 steps were decoded
    state[2][0].self_attention.update(cached, cached)
    decoder(tokens(1, 1), state)  # step 999, the last that fits max_len=1000
    with pytest.raises(ValueError, match=r"positions 1000\.\.1000, but max_len=1000"):
        decoder(tokens(1, 1), state)


def test_scaled_token_embeddings_start_at_the_size_of_the_positions():
    torch.manual_seed(0)
    encoder = TransformerEncoder(500, 64, 128, 4, 1, 0.0)
    decoder = TransformerDecoder(500, 64, 128, 4, 1, 0.0)
    for embedding in (encoder.embedding, decoder.embedding):
        scaled = embedding.weight * math.sqrt(64)  # what the model adds the positions to
        assert 0.9 < scaled.std().item() < 1.1
