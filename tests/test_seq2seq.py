"""Sequence to sequence (chapter 3): the GRU encoder, the Bahdanau decoder and decoding."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from companion.generation.decoding import beam_search, decode, greedy_decode
from companion.layers.attention import MultiHeadAttention
from companion.models.seq2seq import (
    EncoderDecoder,
    Seq2Seq,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)

BOS, EOS = 0, 1  # the toy models below use these ids


def book_attention_decoder(d2l, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
    """The Bahdanau decoder as the d2l book defines it (it is not in the d2l 1.0.3 package),
    built from the package's own parts."""

    class BookSeq2SeqAttentionDecoder(d2l.AttentionDecoder):
        def __init__(self):
            super().__init__()
            self.attention = d2l.AdditiveAttention(num_hiddens, dropout)
            self.embedding = nn.Embedding(vocab_size, embed_size)
            self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
            self.dense = nn.LazyLinear(vocab_size)
            self.apply(d2l.init_seq2seq)

        def init_state(self, enc_outputs, enc_valid_lens):
            outputs, hidden_state = enc_outputs
            return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)

        def forward(self, X, state):
            enc_outputs, hidden_state, enc_valid_lens = state
            X = self.embedding(X).permute(1, 0, 2)
            outputs, self._attention_weights = [], []
            for x in X:
                query = torch.unsqueeze(hidden_state[-1], dim=1)
                context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)
                x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)
                out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)
                outputs.append(out)
                self._attention_weights.append(self.attention.attention_weights)
            outputs = self.dense(torch.cat(outputs, dim=0))
            return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]

        @property
        def attention_weights(self):
            return self._attention_weights

    return BookSeq2SeqAttentionDecoder()


def bahdanau_model(vocab_size=7, embed_size=8, num_hiddens=16, num_layers=2, seed=0):
    torch.manual_seed(seed)
    return EncoderDecoder(
        Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers),
        Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens, num_layers),
    ).eval()


def source_batch(vocab_size, batch_size=4, num_steps=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(2, vocab_size, (batch_size, num_steps), generator=generator)
    valid_len = torch.randint(1, num_steps + 1, (batch_size,), generator=generator)
    return src, valid_len


# --- Toy models that follow d2l's encoder/decoder protocol ----------------------------------


class BatchFirstEncoder(nn.Module):
    """Embeds the source: (batch, steps, num_hiddens), batch first like a Transformer's."""

    def __init__(self, vocab_size, num_hiddens):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, num_hiddens)

    def forward(self, X, valid_lens=None):
        return self.embedding(X)


class BigramDecoder(nn.Module):
    """The next token depends on the previous one only, through a fixed table of probabilities."""

    def __init__(self, probs):
        super().__init__()
        self.register_buffer("logits", probs.log())

    def init_state(self, enc_all_outputs, enc_valid_lens):
        return [enc_all_outputs, enc_valid_lens]  # batch-first: reordered on axis 0

    def forward(self, X, state):
        return self.logits[X], state  # (batch, steps, vocab_size)

    @property
    def attention_weights(self):
        return []


class CachingAttentionDecoder(nn.Module):
    """A one-block Transformer-style decoder: causal self-attention over a batch-first cache of
    the inputs so far, cross-attention to the encoder, both companion layers (fused path)."""

    def __init__(self, vocab_size, num_hiddens, num_heads=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.self_attention = MultiHeadAttention(num_hiddens, num_heads, 0.0)
        self.cross_attention = MultiHeadAttention(num_hiddens, num_heads, 0.0)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, None]

    def forward(self, X, state):
        enc_outputs, enc_valid_lens, cache = state
        X = self.embedding(X)  # (batch, steps, num_hiddens)
        key_values = X if cache is None else torch.cat((cache, X), dim=1)
        Y = X + self.self_attention(X, key_values, key_values, causal=cache is None)
        Z = Y + self.cross_attention(Y, enc_outputs, enc_outputs, enc_valid_lens)
        return self.dense(Z), [enc_outputs, enc_valid_lens, key_values]

    @property
    def attention_weights(self):
        return [self.self_attention.attention_weights, self.cross_attention.attention_weights]


def caching_model(vocab_size=4, num_hiddens=8, seed=0):
    torch.manual_seed(seed)
    model = EncoderDecoder(
        BatchFirstEncoder(vocab_size, num_hiddens), CachingAttentionDecoder(vocab_size, num_hiddens)
    )
    return model.eval()


def brute_force(model, src, valid_len, num_steps, length_penalty=0.0):
    """The best sequence of every example by scoring all vocab_size**num_steps continuations
    with one teacher-forced forward pass each (no incremental decoding, no beams)."""
    vocab_size = model(src[:1], torch.tensor([[BOS]]), valid_len[:1]).shape[-1]
    candidates = torch.tensor(list(itertools.product(range(vocab_size), repeat=num_steps)))
    best = []
    for i in range(src.shape[0]):
        n = len(candidates)
        dec_X = torch.cat((torch.full((n, 1), BOS), candidates[:, :-1]), dim=1)
        with torch.no_grad():
            logits = model(src[i : i + 1].expand(n, -1), dec_X, valid_len[i : i + 1].expand(n))
        step = logits.log_softmax(-1).gather(2, candidates[..., None]).squeeze(-1)  # (n, steps)
        results = []
        for row, log_probs in zip(candidates.tolist(), step.tolist()):
            length = row.index(EOS) + 1 if EOS in row else num_steps
            score = sum(log_probs[:length])
            results.append((score / length**length_penalty, score, row[: length - (EOS in row)]))
        best.append(max(results))
    return best


# --- The encoder ------------------------------------------------------------------------------


def test_encoder_loads_d2l_state_dict_and_agrees(d2l):
    theirs = d2l.Seq2SeqEncoder(
        vocab_size=9, embed_size=5, num_hiddens=7, num_layers=2, dropout=0.2
    )
    ours = Seq2SeqEncoder(vocab_size=9, embed_size=5, num_hiddens=7, num_layers=2, dropout=0.2)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    theirs.load_state_dict(ours.state_dict(), strict=True)  # and back
    X = torch.randint(0, 9, (3, 6))
    ours.eval(), theirs.eval()
    (outputs, state), (expected_outputs, expected_state) = ours(X), theirs(X)
    assert outputs.shape == (6, 3, 7) and state.shape == (2, 3, 7)  # time-major, as d2l
    torch.testing.assert_close(outputs, expected_outputs, atol=1e-6, rtol=0)
    torch.testing.assert_close(state, expected_state, atol=1e-6, rtol=0)


def test_encoder_initialises_as_d2l(d2l):
    """Same seed, same weights: init_seq2seq draws what d2l's draws, in the same order."""
    torch.manual_seed(3)
    theirs = d2l.Seq2SeqEncoder(vocab_size=9, embed_size=5, num_hiddens=7, num_layers=2)
    torch.manual_seed(3)
    ours = Seq2SeqEncoder(vocab_size=9, embed_size=5, num_hiddens=7, num_layers=2)
    for (name, ours_param), theirs_param in zip(
        ours.state_dict().items(), theirs.state_dict().values()
    ):
        torch.testing.assert_close(ours_param, theirs_param, atol=0, rtol=0, msg=name)


def test_encoder_rejects_float_token_ids():
    encoder = Seq2SeqEncoder(5, 4, 6, 1).eval()
    with pytest.raises(
        ValueError, match=r"X must hold integer token ids \(torch.long\); got torch.float32"
    ):
        encoder(torch.randint(0, 5, (2, 3)).float())


# --- The Bahdanau decoder ---------------------------------------------------------------------


def test_decoder_loads_the_books_state_dict_and_agrees(d2l):
    vocab_size, embed_size, num_hiddens, num_layers = 9, 5, 7, 2
    encoder = d2l.Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers).eval()
    theirs = book_attention_decoder(d2l, vocab_size, embed_size, num_hiddens, num_layers).eval()
    ours = Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens, num_layers).eval()
    src, valid_len = source_batch(vocab_size, batch_size=3, num_steps=6)
    dec_X = torch.randint(0, vocab_size, (3, 4))
    expected, expected_state = theirs(dec_X, theirs.init_state(encoder(src), valid_len))
    ours.load_state_dict(theirs.state_dict(), strict=True)
    theirs.load_state_dict(ours.state_dict(), strict=True)  # and back
    outputs, state = ours(dec_X, ours.init_state(encoder(src), valid_len))
    assert outputs.shape == (3, 4, vocab_size)
    torch.testing.assert_close(outputs, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(state[1], expected_state[1], atol=1e-6, rtol=0)
    assert len(ours.attention_weights) == 4  # one (batch, 1, src steps) tensor per step
    for weights, expected_weights in zip(ours.attention_weights, theirs.attention_weights):
        assert weights.shape == (3, 1, 6)
        torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=0)


def test_decoder_attends_as_bahdanau():
    """The first step's weights are the additive attention of the encoder's final top-layer
    state over the encoder outputs, zero on padding; the GRU sees [context; embedding]."""
    model = bahdanau_model(vocab_size=7, num_hiddens=6)
    src, valid_len = source_batch(7, batch_size=3, num_steps=5, seed=1)
    enc_outputs, enc_state = model.encoder(src)
    dec_X = torch.full((3, 1), BOS)
    decoder = model.decoder
    logits, state = decoder(dec_X, decoder.init_state((enc_outputs, enc_state), valid_len))

    h, s = enc_outputs.permute(1, 0, 2), enc_state[-1]  # (batch, T, H), (batch, H)
    att = decoder.attention
    scores = att.w_v(torch.tanh(att.W_q(s)[:, None] + att.W_k(h))).squeeze(-1)  # (batch, T)
    padding = torch.arange(5)[None] >= valid_len[:, None]
    alpha = scores.masked_fill(padding, -math.inf).softmax(-1)
    torch.testing.assert_close(decoder.attention_weights[0].squeeze(1), alpha)
    assert (decoder.attention_weights[0].squeeze(1)[padding] == 0).all()

    context = (alpha[..., None] * h).sum(1)  # c_1 = sum_t alpha_t h_t
    rnn_input = torch.cat((context, decoder.embedding(dec_X[:, 0])), -1)[None]
    _, expected_state = decoder.rnn(rnn_input, enc_state)
    torch.testing.assert_close(state[1], expected_state)
    torch.testing.assert_close(logits[:, 0], decoder.dense(expected_state[-1]))


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqEncoder(5, 4, 6, 1, dropout=1.0)
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqAttentionDecoder(5, 4, 6, 2, dropout=-0.1)
    with pytest.raises(ValueError, match="vocab_size"):
        Seq2SeqEncoder(0, 4, 6, 1)
    with pytest.raises(ValueError, match="num_layers"):
        Seq2SeqAttentionDecoder(5, 4, 6, 0)
    model = bahdanau_model(vocab_size=5, num_hiddens=6)
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 5\)"):
        model.encoder(torch.tensor([[1, 5]]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.encoder(torch.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match="2-D"):
        model.encoder(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="integer token ids"):
        model.encoder(torch.tensor([[1.5, 2.0]]))
    enc_all_outputs = model.encoder(torch.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError, match="enc_outputs must be"):
        Seq2SeqAttentionDecoder(5, 4, 7, 2).init_state(enc_all_outputs, None)
    state = model.decoder.init_state(enc_all_outputs, None)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.decoder(torch.tensor([[7]]), state)
    with pytest.raises(ValueError, match="batch"):
        model.decoder(torch.tensor([[1], [2]]), state)


# --- Training ---------------------------------------------------------------------------------


def test_seq2seq_loss_ignores_padding():
    model = Seq2Seq(*bahdanau_model().children(), tgt_pad=2, lr=0.01)
    Y_hat, Y = torch.randn(3, 4, 7), torch.tensor([[3, 4, 2, 2], [5, 2, 2, 2], [6, 6, 6, 6]])
    kept = Y != 2
    expected = nn.functional.cross_entropy(Y_hat[kept], Y[kept])
    torch.testing.assert_close(model.loss(Y_hat, Y), expected)
    assert isinstance(model.configure_optimizers(), torch.optim.Adam)


def test_bahdanau_model_learns_to_reverse():
    """A second of training on reversing short sequences of 5 symbols: > 90% of the tokens
    that greedy decoding produces on unseen sequences are right (chance: 20%)."""
    pad, bos, eos, symbols, max_len = 0, 1, 2, range(3, 8), 5

    def reverse_batch(n, generator):
        lengths = torch.randint(3, max_len + 1, (n,), generator=generator)
        src = torch.full((n, max_len + 1), pad)
        tgt = torch.full((n, max_len + 2), pad)
        tgt[:, 0] = bos
        for i, length in enumerate(lengths.tolist()):
            seq = torch.randint(symbols.start, symbols.stop, (length,), generator=generator)
            src[i, : length + 1] = torch.cat((seq, torch.tensor([eos])))
            tgt[i, 1 : length + 2] = torch.cat((seq.flip(0), torch.tensor([eos])))
        return src, tgt[:, :-1], lengths + 1, tgt[:, 1:]

    torch.manual_seed(0)
    vocab_size = symbols.stop
    model = Seq2Seq(
        Seq2SeqEncoder(vocab_size, 16, 32, 1),
        Seq2SeqAttentionDecoder(vocab_size, 16, 32, 1),
        tgt_pad=pad,
        lr=0.02,
    )
    optimizer = model.configure_optimizers()
    generator = torch.Generator().manual_seed(0)
    for _ in range(100):
        src, dec_X, valid_len, Y = reverse_batch(32, generator)
        loss = model.loss(model(src, dec_X, valid_len), Y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    src, _, valid_len, Y = reverse_batch(200, torch.Generator().manual_seed(1))
    decoded = greedy_decode(model, src, valid_len, bos, eos, num_steps=max_len + 1)
    assert model.training  # decoding restores the mode it found
    correct = total = 0
    for tokens, label, length in zip(decoded.tokens, Y.tolist(), valid_len.tolist()):
        truth = label[: length - 1]  # the reversed symbols, without <eos>
        correct += sum(a == b for a, b in zip(tokens, truth))
        total += max(len(tokens), len(truth))
    assert correct / total > 0.9


# --- Greedy decoding --------------------------------------------------------------------------


def test_predict_step_matches_d2l(d2l):
    vocab_size, embed_size, num_hiddens, num_layers = 9, 5, 7, 2
    torch.manual_seed(0)
    encoder = d2l.Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers)
    theirs = d2l.EncoderDecoder(
        encoder, book_attention_decoder(d2l, vocab_size, embed_size, num_hiddens, num_layers)
    ).eval()
    src, valid_len = source_batch(vocab_size, batch_size=3, num_steps=6)
    tgt = torch.full((3, 5), BOS)
    batch = (src, tgt, valid_len, tgt)
    expected, expected_weights = theirs.predict_step(batch, "cpu", 5, True)
    ours = EncoderDecoder(
        Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers),
        Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens, num_layers),
    )
    ours.load_state_dict(theirs.state_dict(), strict=True)
    tokens, weights = ours.predict_step(batch, "cpu", 5, save_attention_weights=True)
    assert tokens.shape == (3, 5)
    torch.testing.assert_close(tokens, expected)
    assert len(weights) == len(expected_weights) == 5
    for step, expected_step in zip(weights, expected_weights):
        torch.testing.assert_close(step[0], expected_step[0], atol=1e-6, rtol=0)
    assert ours.predict_step(batch, "cpu", 5)[1] == []


def test_greedy_stops_each_example_at_eos_and_respects_num_steps():
    src, valid_len = source_batch(7, batch_size=5, seed=2)

    def up_to(full, eos):  # d2l's predictions, each cut at its first eos
        return [row[: row.index(eos)] if eos in row else row for row in full.tolist()]

    for seed in range(20):  # an untrained model whose examples end at different steps
        model = bahdanau_model(vocab_size=7, seed=seed)
        full, _ = model.predict_step((src, torch.full((5, 1), BOS), valid_len, None), "cpu", 8)
        eos = max(range(7), key=lambda eos: len({len(row) for row in up_to(full, eos)}))
        rows = up_to(full, eos)
        if len({len(row) for row in rows}) > 1:
            break
    else:
        pytest.fail("no model among 20 seeds ends its examples at different steps")
    decoded = greedy_decode(model, src, valid_len, BOS, eos, num_steps=8)
    assert decoded.tokens == rows
    assert all(eos not in tokens for tokens in decoded.tokens)
    short = greedy_decode(model, src, valid_len, BOS, eos, num_steps=2)
    assert short.tokens == [row[:2] for row in rows]


def test_greedy_decodes_each_example_as_if_alone():
    model = bahdanau_model(vocab_size=7)
    src, valid_len = source_batch(7, batch_size=4, seed=3)
    eos = 3
    together = greedy_decode(model, src, valid_len, BOS, eos, num_steps=6)
    for i in range(4):
        alone = greedy_decode(model, src[i : i + 1], valid_len[i : i + 1], BOS, eos, num_steps=6)
        assert alone.tokens[0] == together.tokens[i]
        assert alone.scores[0] == pytest.approx(together.scores[i], abs=1e-5)


def test_greedy_scores_are_the_log_probabilities_of_the_result():
    model = bahdanau_model(vocab_size=4, num_hiddens=8)
    src, valid_len = source_batch(4, batch_size=3, num_steps=4, seed=4)
    decoded = greedy_decode(model, src, valid_len, BOS, EOS, num_steps=3)
    for i, (tokens, score) in enumerate(zip(decoded.tokens, decoded.scores)):
        target = tokens + [EOS] * (len(tokens) < 3)
        dec_X = torch.tensor([[BOS] + target[:-1]])
        with torch.no_grad():
            logits = model(src[i : i + 1], dec_X, valid_len[i : i + 1])
        expected = logits.log_softmax(-1)[0, range(len(target)), target].sum().item()
        assert score == pytest.approx(expected, abs=1e-5)


def test_attention_weights_of_every_step_for_heatmaps():
    model = bahdanau_model(vocab_size=7)
    src, valid_len = source_batch(7, batch_size=2, num_steps=6, seed=5)
    batch = (src, torch.full((2, 1), BOS), valid_len, None)
    full, full_weights = model.predict_step(batch, "cpu", 6, save_attention_weights=True)

    def steps_until(eos):  # the steps until every example has emitted eos
        return max(row.index(eos) + 1 if eos in row else 6 for row in full.tolist())

    eos = min(range(7), key=steps_until)
    assert steps_until(eos) < 6, "the test needs a batch that is done before num_steps"
    decoded = greedy_decode(model, src, valid_len, BOS, eos, 6, save_attention_weights=True)
    assert len(decoded.attention_weights) == steps_until(eos)  # decoding stops when all are done
    for step, expected in zip(decoded.attention_weights, full_weights):
        (weights,) = step  # the Bahdanau decoder: one (batch, 1, src steps) tensor per step
        assert weights.shape == (2, 1, 6)
        torch.testing.assert_close(weights, expected[0])
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 1))
        assert (weights[torch.arange(6)[None, None] >= valid_len[:, None, None]] == 0).all()
    assert greedy_decode(model, src, valid_len, BOS, eos, 6).attention_weights == []


def test_decoding_records_weights_of_fused_attention_layers():
    """record_attention is switched on only while decoding, for the caller who asks."""
    model = caching_model(vocab_size=5, num_hiddens=8)
    src, valid_len = source_batch(5, batch_size=2, num_steps=3, seed=6)
    decoded = greedy_decode(model, src, valid_len, BOS, EOS, 4, save_attention_weights=True)
    for t, (self_weights, cross_weights) in enumerate(decoded.attention_weights):
        assert self_weights.shape == (2, 2, 1, t + 1)  # (batch, heads, query, keys so far)
        assert cross_weights.shape == (2, 2, 1, 3)
    assert not model.decoder.self_attention.need_weights  # restored
    greedy_decode(model, src, valid_len, BOS, EOS, 4)  # not asked: the fused path runs
    with pytest.raises(RuntimeError, match="record_attention"):
        model.decoder.attention_weights  # noqa: B018


# --- Beam search ------------------------------------------------------------------------------


@pytest.mark.parametrize("make_model", [bahdanau_model, caching_model])
def test_beam_size_one_is_greedy(make_model):
    model = make_model(vocab_size=6, seed=1)
    src, valid_len = source_batch(6, batch_size=5, seed=7)
    for eos in range(2, 6):
        greedy = greedy_decode(model, src, valid_len, BOS, eos, num_steps=7)
        beam = beam_search(model, src, valid_len, BOS, eos, num_steps=7, beam_size=1)
        assert beam.tokens == greedy.tokens
        assert beam.scores == pytest.approx(greedy.scores, abs=1e-5)
        for alpha in (0.75, 2.0):
            with_penalty = beam_search(
                model, src, valid_len, BOS, eos, 7, beam_size=1, length_penalty=alpha
            )
            assert with_penalty.tokens == greedy.tokens


def test_beam_search_beats_greedy_where_greedy_is_short_sighted():
    """From <bos>, token a is likelier than b; but every continuation of a is unsure, while b
    is almost surely followed by <eos>. Greedy takes a, beam search finds b <eos>."""
    a, b = 2, 3
    probs = torch.full((4, 4), 0.25)
    probs[BOS] = torch.tensor([0.0, 0.0, 0.6, 0.4])
    probs[a] = torch.tensor([0.0, 0.4, 0.3, 0.3])
    probs[b] = torch.tensor([0.0, 0.9, 0.05, 0.05])
    model = EncoderDecoder(BatchFirstEncoder(4, 3), BigramDecoder(probs))
    src, valid_len = torch.zeros(1, 2, dtype=torch.long), torch.tensor([2])
    greedy = greedy_decode(model, src, valid_len, BOS, EOS, num_steps=3)
    beam = beam_search(model, src, valid_len, BOS, EOS, num_steps=3, beam_size=2)
    assert greedy.tokens == [[a]] and beam.tokens == [[b]]
    assert greedy.scores[0] == pytest.approx(math.log(probs[BOS, a] * probs[a, EOS]))
    assert beam.scores[0] == pytest.approx(math.log(probs[BOS, b] * probs[b, EOS]))
    assert beam.scores[0] > greedy.scores[0]
    ((_, best_score, best_tokens),) = brute_force(model, src, valid_len, 3)
    assert beam.tokens == [best_tokens] and beam.scores[0] == pytest.approx(best_score)


@pytest.mark.parametrize("make_model", [bahdanau_model, caching_model])
def test_a_beam_as_wide_as_all_sequences_finds_the_best(make_model):
    """vocab_size**num_steps beams keep every hypothesis: the result is the exhaustive optimum."""
    vocab_size, num_steps = 4, 3
    optimum_lengths, greedy_missed = [], False
    for seed, length_penalty in itertools.product(range(3), (0.0, 1.0)):
        model = make_model(vocab_size=vocab_size, seed=seed)
        src, valid_len = source_batch(vocab_size, batch_size=2, num_steps=4, seed=seed)
        beam = beam_search(
            model,
            src,
            valid_len,
            BOS,
            EOS,
            num_steps,
            vocab_size**num_steps,
            length_penalty=length_penalty,
        )
        expected = brute_force(model, src, valid_len, num_steps, length_penalty)
        for tokens, score, (_, best_score, best_tokens) in zip(beam.tokens, beam.scores, expected):
            assert score == pytest.approx(best_score, abs=1e-5)
            assert tokens == best_tokens
            optimum_lengths.append(len(best_tokens))
        greedy = greedy_decode(model, src, valid_len, BOS, EOS, num_steps)
        greedy_missed |= greedy.tokens != beam.tokens
    # The cases must put the search to work: optima of several tokens (so that the beams'
    # states are reordered along the way), and optima that greedy decoding misses.
    assert max(optimum_lengths) >= 2 and greedy_missed


def test_beam_search_attention_weights_are_those_of_the_best_sequences():
    model = bahdanau_model(vocab_size=6)
    src, valid_len = source_batch(6, batch_size=3, seed=8)
    beam = beam_search(model, src, valid_len, BOS, 4, 5, beam_size=3, save_attention_weights=True)
    for i, tokens in enumerate(beam.tokens):
        target = torch.tensor([[BOS] + tokens])
        with torch.no_grad():
            model(src[i : i + 1], target, valid_len[i : i + 1])
        for t, expected in enumerate(
            model.decoder.attention_weights[: len(beam.attention_weights)]
        ):
            torch.testing.assert_close(beam.attention_weights[t][0][i : i + 1], expected)


def test_decode_dispatches_and_rejects_bad_arguments():
    model = bahdanau_model(vocab_size=6)
    src, valid_len = source_batch(6, batch_size=2, seed=9)
    assert decode(model, src, valid_len, BOS, 3, 5) == greedy_decode(
        model, src, valid_len, BOS, 3, 5
    )
    assert model.decode(src, valid_len, BOS, 3, 5, strategy="beam", beam_size=2) == beam_search(
        model, src, valid_len, BOS, 3, 5, beam_size=2
    )
    with pytest.raises(ValueError, match="'sampling'"):
        decode(model, src, valid_len, BOS, 3, 5, strategy="sampling")
    for beam_size in (0, -1):
        with pytest.raises(ValueError, match="beam_size"):
            beam_search(model, src, valid_len, BOS, 3, 5, beam_size=beam_size)
    with pytest.raises(ValueError, match="num_steps"):
        greedy_decode(model, src, valid_len, BOS, 3, 0)
    with pytest.raises(ValueError, match="eos_id"):
        greedy_decode(model, src, valid_len, BOS, 6, 5)
    with pytest.raises(ValueError, match="src_valid_len"):
        greedy_decode(model, src, valid_len[:1], BOS, 3, 5)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(model, src, valid_len, BOS, 3, 5, beam_size=2, length_penalty=-1.0)


def test_beam_search_refuses_a_state_it_cannot_reorder():
    """A decoder state whose tensors are not batch-first needs the decoder's reorder_state."""

    class TimeMajorEncoder(BatchFirstEncoder):
        def forward(self, X, valid_lens=None):
            return self.embedding(X).transpose(0, 1)  # (steps, batch, hiddens)

    model = EncoderDecoder(TimeMajorEncoder(4, 3), BigramDecoder(torch.full((4, 4), 0.25)))
    src = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="reorder_state"):
        beam_search(model, src, None, BOS, EOS, 3, beam_size=2)


# --- The plain decoder (fixed context) --------------------------------------------------------


def book_plain_decoder(d2l, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
    """d2l's ``Seq2SeqDecoder`` as the book defines it (it is not in the d2l 1.0.3 package),
    built from the package's own parts."""

    class BookSeq2SeqDecoder(d2l.Decoder):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_size)
            self.rnn = d2l.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout)
            self.dense = nn.LazyLinear(vocab_size)
            self.apply(d2l.init_seq2seq)

        def init_state(self, enc_all_outputs, *args):
            return enc_all_outputs

        def forward(self, X, state):
            embs = self.embedding(X.t().type(torch.int32))
            enc_output, hidden_state = state
            context = enc_output[-1]
            context = context.repeat(embs.shape[0], 1, 1)
            embs_and_context = torch.cat((embs, context), -1)
            outputs, hidden_state = self.rnn(embs_and_context, hidden_state)
            outputs = self.dense(outputs).swapaxes(0, 1)
            return outputs, [enc_output, hidden_state]

    return BookSeq2SeqDecoder()


def plain_model(vocab_size=7, embed_size=8, num_hiddens=16, num_layers=2, seed=0):
    torch.manual_seed(seed)
    return EncoderDecoder(
        Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers),
        Seq2SeqDecoder(vocab_size, embed_size, num_hiddens, num_layers),
    ).eval()


def test_plain_decoder_loads_the_books_state_dict_and_agrees(d2l):
    vocab_size, embed_size, num_hiddens, num_layers = 9, 5, 7, 2
    encoder = d2l.Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers).eval()
    theirs = book_plain_decoder(d2l, vocab_size, embed_size, num_hiddens, num_layers, 0.2)
    ours = Seq2SeqDecoder(vocab_size, embed_size, num_hiddens, num_layers, dropout=0.2)
    theirs.eval(), ours.eval()
    src, valid_len = source_batch(vocab_size, batch_size=3, num_steps=6)
    dec_X = torch.randint(0, vocab_size, (3, 4))
    expected, expected_state = theirs(dec_X, theirs.init_state(encoder(src), valid_len))
    ours.load_state_dict(theirs.state_dict(), strict=True)
    theirs.load_state_dict(ours.state_dict(), strict=True)  # and back
    outputs, state = ours(dec_X, ours.init_state(encoder(src), valid_len))
    assert outputs.shape == (3, 4, vocab_size)
    torch.testing.assert_close(outputs, expected, atol=1e-6, rtol=0)
    for ours_part, theirs_part in zip(state, expected_state):  # [enc_outputs, hidden_state]
        torch.testing.assert_close(ours_part, theirs_part, atol=1e-6, rtol=0)


def test_plain_decoder_reads_one_fixed_context():
    """Every step gets the encoder's last top-layer output, whatever the source length."""
    model = plain_model(vocab_size=7, num_hiddens=6, num_layers=1)
    src, valid_len = source_batch(7, batch_size=3, num_steps=5, seed=1)
    enc_outputs, enc_state = model.encoder(src)
    dec_X = torch.randint(0, 7, (3, 4))
    decoder = model.decoder
    logits, _ = decoder(dec_X, decoder.init_state((enc_outputs, enc_state), valid_len))
    context = enc_outputs[-1]  # (batch, num_hiddens), the same at every step
    inputs = torch.cat((decoder.embedding(dec_X.t()), context.expand(4, -1, -1)), -1)
    outputs, _ = decoder.rnn.rnn(inputs, enc_state)  # (steps, batch, num_hiddens)
    torch.testing.assert_close(logits, decoder.dense(outputs).transpose(0, 1))
    # Step by step, as decoding runs it, gives what one teacher-forced pass gives.
    state = decoder.init_state((enc_outputs, enc_state), valid_len)
    steps = []
    for t in range(4):
        step, state = decoder(dec_X[:, t : t + 1], state)
        steps.append(step)
    torch.testing.assert_close(torch.cat(steps, dim=1), logits)


def test_plain_decoder_rejects_bad_inputs():
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqDecoder(5, 4, 6, 2, dropout=1.0)
    with pytest.raises(ValueError, match="num_hiddens"):
        Seq2SeqDecoder(5, 4, 0, 1)
    model = plain_model(vocab_size=5, num_hiddens=6, num_layers=2)
    enc_outputs, enc_state = model.encoder(torch.tensor([[2, 3, 4]]))
    with pytest.raises(ValueError, match=r"enc_all_outputs must be"):
        model.decoder.init_state((enc_outputs, enc_state[-1]), None)
    state = model.decoder.init_state((enc_outputs, enc_state), None)
    with pytest.raises(ValueError, match="batch"):
        model.decoder(torch.tensor([[1], [1]]), state)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.decoder(torch.tensor([[5]]), state)


def test_plain_decoder_decodes_greedy_and_beam():
    """Decoding works with the time-major state: beam size 1 is greedy, each example decodes as
    if alone, and a beam as wide as all sequences finds the exhaustive optimum."""
    model = plain_model(vocab_size=4, num_hiddens=8, seed=2)
    src, valid_len = source_batch(4, batch_size=3, num_steps=5, seed=6)
    greedy = greedy_decode(model, src, valid_len, BOS, EOS, num_steps=3)
    beam_one = beam_search(model, src, valid_len, BOS, EOS, num_steps=3, beam_size=1)
    assert beam_one.tokens == greedy.tokens
    assert beam_one.scores == pytest.approx(greedy.scores, abs=1e-5)
    for i in range(3):
        alone = greedy_decode(model, src[i : i + 1], valid_len[i : i + 1], BOS, EOS, 3)
        assert alone.tokens[0] == greedy.tokens[i]
    beam = beam_search(model, src, valid_len, BOS, EOS, num_steps=3, beam_size=4**3)
    for tokens, score, (_, best_score, best_tokens) in zip(
        beam.tokens, beam.scores, brute_force(model, src, valid_len, 3)
    ):
        assert tokens == best_tokens
        assert score == pytest.approx(best_score, abs=1e-5)


# --- The bidirectional encoder (Bahdanau et al.'s, sec-transformer's baseline) ---------------


def test_default_encoder_stays_d2ls_and_ignores_valid_lens(d2l):
    """bidirectional=False is d2l's encoder: its parameters, and padding read as d2l reads it."""
    torch.manual_seed(5)
    theirs = d2l.Seq2SeqEncoder(vocab_size=9, embed_size=5, num_hiddens=6, num_layers=2).eval()
    torch.manual_seed(5)
    ours = Seq2SeqEncoder(9, 5, 6, 2, bidirectional=False).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    X, valid_lens = torch.randint(0, 9, (3, 7)), torch.tensor([7, 2, 4])
    for got, expected in zip(ours(X, valid_lens), theirs(X, valid_lens)):
        torch.testing.assert_close(got, expected, atol=0, rtol=0)


def test_bidirectional_encoder_reads_each_sentence_both_ways():
    """Each row equals a forward GRU over its real tokens and a backward GRU over them
    reversed; the padding changes nothing, and the shapes are the one-way encoder's."""
    torch.manual_seed(0)
    X, valid_lens = torch.randint(0, 11, (3, 6)), torch.tensor([6, 2, 4])
    two_layers = Seq2SeqEncoder(11, 5, 8, 2, bidirectional=True).eval()
    assert [tuple(t.shape) for t in two_layers(X, valid_lens)] == [(6, 3, 8), (2, 3, 8)]
    encoder = Seq2SeqEncoder(11, 5, 8, 1, bidirectional=True).eval()
    gru = encoder.rnn.rnn  # 4 hidden units per direction
    outputs, state = encoder(X, valid_lens)
    assert outputs.shape == (6, 3, 8) and state.shape == (1, 3, 8)
    forward, backward = nn.GRU(5, 4, 1), nn.GRU(5, 4, 1)
    with torch.no_grad():
        for name, param in gru.named_parameters():
            target = backward if name.endswith("_reverse") else forward
            getattr(target, name.removesuffix("_reverse")).copy_(param)
        for b, length in enumerate(valid_lens.tolist()):
            embs = encoder.embedding(X[b, :length])[:, None]  # (length, 1, 5)
            out_f, h_f = forward(embs)
            out_b, h_b = backward(embs.flip(0))
            expected = torch.cat((out_f, out_b.flip(0)), dim=-1)[:, 0]  # (length, 8)
            torch.testing.assert_close(outputs[:length, b], expected)
            assert (outputs[length:, b] == 0).all()  # padded steps
            torch.testing.assert_close(state[:, b], torch.cat((h_f, h_b), dim=-1)[:, 0])
        X_other = X.clone()
        X_other[1, 2:] = 0  # other padding tokens
        torch.testing.assert_close(encoder(X_other, valid_lens)[0], outputs)


def test_bidirectional_encoder_feeds_the_bahdanau_decoder():
    encoder = Seq2SeqEncoder(11, 5, 8, 1, bidirectional=True)
    decoder = Seq2SeqAttentionDecoder(13, 5, 8, 1)
    model = EncoderDecoder(encoder, decoder)
    X, Y, valid_lens = (
        torch.randint(0, 11, (3, 6)),
        torch.randint(0, 13, (3, 4)),
        torch.tensor([6, 2, 4]),
    )
    assert model(X, Y, valid_lens).shape == (3, 4, 13)
    decoded = greedy_decode(model, X, valid_lens, BOS, EOS, 5)
    assert len(decoded.tokens) == 3
    with pytest.raises(ValueError, match="must be even"):
        Seq2SeqEncoder(11, 5, 7, 1, bidirectional=True)
    with pytest.raises(ValueError, match="valid_lens must be <= the number of source steps"):
        encoder(X, torch.tensor([7, 2, 4]))
