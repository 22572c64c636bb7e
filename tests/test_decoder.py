"""The configurable decoder: cached decoding equals teacher forcing in every configuration, the
rolling cache equals a full cache with the window mask, chapter 9's GPT is one configuration,
the ViT, GPT and the Llama-style model stack one block class, and bad input is a ValueError that
names the argument."""

from __future__ import annotations

import math

import pytest
import torch

from companion.layers.attention import MultiHeadAttention, attention_mask
from companion.layers.feedforward import SwiGLU
from companion.layers.kv_cache import KVCache
from companion.layers.norms import RMSNorm
from companion.layers.rotary import RotaryEmbedding
from companion.models.decoder import GPT, DecoderConfig, DecoderLM, gpt2_config, llama_config

VOCAB = 30
CONFIGS = {
    "gpt2": gpt2_config(VOCAB),
    "rmsnorm": gpt2_config(VOCAB, norm="rms"),
    "rope": gpt2_config(VOCAB, positions="rope"),
    "rope-interleaved": gpt2_config(VOCAB, positions="rope", rope_pairing="interleaved"),
    "sinusoidal": gpt2_config(VOCAB, positions="sinusoidal"),
    "alibi": gpt2_config(VOCAB, positions="alibi"),
    "swiglu": gpt2_config(VOCAB, ffn="swiglu"),
    "gqa": gpt2_config(VOCAB, num_kv_heads=2),
    "mqa": gpt2_config(VOCAB, num_kv_heads=1),
    "window": gpt2_config(VOCAB, window=3),
    "llama": llama_config(VOCAB),
    "llama-window": llama_config(VOCAB, window=4),
}


def gqa(num_hiddens: int, num_heads: int, num_kv_heads: int | None = None, **options):
    """Multi-head self-attention with the modern decoder's options (sec-modern-decoder)."""
    sizes = dict(query_size=num_hiddens, key_size=num_hiddens, value_size=num_hiddens)
    return MultiHeadAttention(
        num_hiddens, num_heads, 0.0, num_kv_heads=num_kv_heads, **sizes, **options
    )


def attend(layer, X, valid_lens=None, *, causal=True, cache=None):
    """Self-attention: the queries, keys and values are all ``X``."""
    return layer(X, X, X, valid_lens, causal=causal, cache=cache)


def randomized(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return model.eval()


@pytest.mark.parametrize("name", CONFIGS)
def test_cached_decoding_equals_teacher_forcing(name):
    model = randomized(DecoderLM(CONFIGS[name]))
    X = torch.randint(0, VOCAB, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(X)  # teacher forced: every step at once
        caches = model.new_caches()
        stepwise = torch.cat([model(X[:, t : t + 1], caches) for t in range(11)], dim=1)
        caches = model.new_caches()  # a prompt of 5, then 2 steps, then 4
        chunks = [model(X[:, :5], caches), model(X[:, 5:7], caches), model(X[:, 7:], caches)]
    torch.testing.assert_close(stepwise, expected, rtol=0.0, atol=1e-5)
    torch.testing.assert_close(torch.cat(chunks, dim=1), expected, rtol=0.0, atol=1e-5)


@pytest.mark.parametrize("name", ["gpt2", "llama-window"])
def test_generate_with_and_without_cache_gives_the_same_tokens(name):
    model = randomized(DecoderLM(CONFIGS[name]))
    prompt = torch.randint(0, VOCAB, (3, 2), generator=torch.Generator().manual_seed(2))
    cached = model.generate(prompt, 12, temperature=0)
    assert cached.shape == (3, 14)
    assert torch.equal(cached, model.generate(prompt, 12, temperature=0, use_cache=False))


def test_the_rolling_cache_equals_a_full_cache_with_the_window_mask():
    torch.manual_seed(0)
    layer = randomized(gqa(16, 4, 2, rotary=RotaryEmbedding(4), window=3))
    X = torch.randn(2, 12, 16)
    rolling, full = KVCache(window=3), KVCache()
    with torch.no_grad():
        outputs = [
            (
                attend(layer, X[:, t : t + 1], cache=rolling),
                attend(layer, X[:, t : t + 1], cache=full),
            )
            for t in range(12)
        ]
    for t, (from_rolling, from_full) in enumerate(outputs):
        torch.testing.assert_close(from_rolling, from_full, rtol=0.0, atol=1e-6, msg=f"step {t}")
    assert len(full) == 12 and len(rolling) == 3  # the full cache grows, the rolling one does not
    assert rolling.keys.shape == (2, 2, 3, 4)  # (batch, kv heads, window, head_dim)


def reference_attention(X, layer, window):
    """softmax(Q K^T / sqrt(d) + mask) V written out, keys and values repeated per group."""
    batch, steps, _ = X.shape
    heads, groups, d = layer.num_heads, layer.num_kv_heads, layer.head_dim
    Q = layer.W_q(X).reshape(batch, steps, heads, d).transpose(1, 2)
    K = layer.W_k(X).reshape(batch, steps, groups, d).transpose(1, 2)
    V = layer.W_v(X).reshape(batch, steps, groups, d).transpose(1, 2)
    K = torch.stack([K[:, h * groups // heads] for h in range(heads)], dim=1)
    V = torch.stack([V[:, h * groups // heads] for h in range(heads)], dim=1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d)
    m, n = torch.arange(steps)[:, None], torch.arange(steps)[None, :]
    scores = scores.masked_fill((n > m) | (n <= m - window), -math.inf)
    output = torch.softmax(scores, dim=-1) @ V
    return layer.W_o(output.transpose(1, 2).reshape(batch, steps, -1))


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_sliding_window_attention_equals_masked_full_attention(num_kv_heads):
    torch.manual_seed(0)
    layer = randomized(gqa(16, 4, num_kv_heads, window=3))
    X = torch.randn(2, 9, 16)
    expected = reference_attention(X, layer, 3)
    torch.testing.assert_close(attend(layer, X), expected, rtol=0.0, atol=1e-5)


def test_the_cache_holds_only_the_shared_heads():
    model = randomized(DecoderLM(CONFIGS["gqa"]))
    caches = model.new_caches()
    with torch.no_grad():
        model(torch.zeros(1, 5, dtype=torch.long), caches)
    assert caches[0].keys.shape == (1, 2, 5, 16)  # (batch, kv heads, steps, head_dim)


def test_a_window_mask_counts_the_query_itself():
    mask = attention_mask(torch.arange(5), torch.arange(5), causal=True, window=2)[0]
    assert mask.sum(dim=1).tolist() == [1, 2, 2, 2, 2]
    assert mask[4].tolist() == [False, False, False, True, True]


def test_chapter_9s_gpt_is_the_gpt2_configuration():
    gpt = randomized(GPT(VOCAB, 64, 128, 4, 2, max_len=13))
    assert isinstance(gpt, DecoderLM) and gpt.config == gpt2_config(VOCAB, max_len=13)
    assert set(vars(GPT)) <= {
        "__init__",
        "__doc__",
        "__module__",
        "__qualname__",
        "__firstlineno__",
        "__static_attributes__",
    }  # no code of its own
    model = DecoderLM(gpt2_config(VOCAB, max_len=13)).eval()
    model.load_state_dict(gpt.state_dict())  # strict: the same parameters, the same names
    X = torch.randint(0, VOCAB, (2, 13))
    torch.testing.assert_close(model(X), gpt(X), rtol=0.0, atol=0.0)


def test_vit_gpt_and_llama_stack_one_block_class():
    from companion.layers.blocks import PreNormBlock
    from companion.models.vit import ViT

    vit = ViT(8, 4, 16, 24, 2, 2, 0.0, 0.0, num_classes=3)
    models = [vit, GPT(VOCAB, 16, 24, 2, 2, max_len=8), DecoderLM(llama_config(VOCAB))]
    for model in models:
        assert {type(blk) for blk in model.blks} == {PreNormBlock}
        assert {type(blk.attention) for blk in model.blks} == {MultiHeadAttention}


def expanded_mha(layer: MultiHeadAttention):
    """sec-multihead-attention's layer with ``layer``'s weights, shared heads copied out."""
    mha = MultiHeadAttention(
        layer.num_hiddens,
        layer.num_heads,
        0.0,
        query_size=layer.num_hiddens,
        key_size=layer.num_hiddens,
        value_size=layer.num_hiddens,
    )
    group, d = layer.num_heads // layer.num_kv_heads, layer.head_dim
    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(mha, name).weight.copy_(getattr(layer, name).weight)
        for name in ("W_k", "W_v"):  # (g d, hiddens) -> (h d, hiddens): head i reads i // group
            weight = getattr(layer, name).weight.reshape(layer.num_kv_heads, d, -1)
            getattr(mha, name).weight.copy_(weight.repeat_interleave(group, 0).flatten(0, 1))
    return mha.eval()


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("causal", [True, False])
def test_plain_gqa_is_multihead_attention_with_copied_heads(num_kv_heads, causal):
    """Without a window or ALiBi the layer takes chapter 6's masks: valid_lens and causal."""
    from companion.layers.attention import record_attention

    layer = randomized(gqa(16, 4, num_kv_heads))
    mha = expanded_mha(layer)
    X = torch.randn(3, 6, 16, generator=torch.Generator().manual_seed(3))
    valid_lens = torch.tensor([6, 2, 0])  # a row with no valid key: zeros, never NaN
    with torch.no_grad(), record_attention(layer), record_attention(mha):
        explicit = attend(layer, X, valid_lens, causal=causal)
        expected = mha(X, X, X, valid_lens, causal=causal)
    torch.testing.assert_close(explicit, expected, rtol=0.0, atol=1e-5)
    torch.testing.assert_close(layer.attention_weights, mha.attention_weights)
    with torch.no_grad():
        fused = attend(layer, X, valid_lens, causal=causal)
    torch.testing.assert_close(fused, expected, rtol=0.0, atol=1e-5)
    assert not fused.isnan().any()


@pytest.mark.parametrize("options", [{"window": 3}, {"alibi": True}])
def test_masks_by_position_keep_weights_on_the_explicit_path(options):
    from companion.layers.attention import record_attention

    layer = randomized(gqa(16, 4, 2, **options))
    X = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        fused = attend(layer, X)
        with record_attention(layer):
            explicit = attend(layer, X)
    torch.testing.assert_close(explicit, fused, rtol=0.0, atol=1e-5)
    weights = layer.attention_weights  # (batch, heads, queries, keys)
    assert weights.shape == (2, 4, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 7))
    assert weights.triu(diagonal=1).abs().max() == 0  # causal
    if "window" in options:
        assert weights.tril(diagonal=-3).abs().max() == 0  # the last 3 keys only
    with pytest.raises(ValueError, match="mask by position and are causal"):
        attend(layer, X, causal=False)
    with torch.no_grad(), record_attention(layer):  # padding is one more term of the mask
        padded = attend(layer, X, torch.tensor([7, 3]))
        torch.testing.assert_close(padded[0], explicit[0])
    assert layer.attention_weights[1, :, :, 3:].abs().max() == 0


def test_rmsnorm_normalizes_the_root_mean_square():
    X = torch.randn(4, 8) * 5
    Y = RMSNorm(8, eps=1e-12)(X)
    torch.testing.assert_close(Y.pow(2).mean(dim=-1), torch.ones(4))


def test_rope_scores_depend_only_on_the_offset():
    torch.manual_seed(0)
    rope = RotaryEmbedding(8)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    score = (rope(q, offset=3) * rope(k, offset=1)).sum()
    torch.testing.assert_close((rope(q, offset=10) * rope(k, offset=8)).sum(), score)


@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: RMSNorm(8, eps=0.0), "eps"),
        (lambda: RMSNorm(8)(torch.zeros(2, 7)), "num_hiddens=8"),
        (lambda: RotaryEmbedding(7), "head_dim"),
        (lambda: RotaryEmbedding(8, pairing="pairs"), "pairing"),
        (lambda: RotaryEmbedding(8)(torch.zeros(2, 5, 8)), "X must be 4-D"),
        (lambda: SwiGLU(8, 16)(torch.zeros(2, 4)), "num_hiddens=8"),
        (lambda: gqa(16, 4, 3), "num_kv_heads"),
        (lambda: gqa(16, 3), "num_heads"),
        (lambda: gqa(16, 4, window=0), "window"),
        (lambda: attend(gqa(16, 4), torch.zeros(2, 3, 8)), "queries must have 16 features"),
        (lambda: DecoderConfig(VOCAB, norm="batch"), "norm"),
        (lambda: DecoderConfig(VOCAB, positions="none"), "positions"),
        (lambda: DecoderConfig(VOCAB, ffn="relu"), "ffn"),
        (lambda: DecoderLM(gpt2_config(VOCAB, max_len=4))(torch.zeros(1, 5).long()), "max_len"),
        (lambda: DecoderLM(gpt2_config(VOCAB))(torch.full((1, 5), VOCAB)), "vocabulary"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(build, argument):
    with pytest.raises(ValueError, match=argument):
        build()


def test_caches_that_new_caches_did_not_make_are_a_type_error():
    with pytest.raises(TypeError, match=r"caches must be what new_caches\(\) returns"):
        DecoderLM(gpt2_config(VOCAB))(torch.zeros(1, 5).long(), [])


@pytest.mark.parametrize("name", ["gpt2", "window", "llama-window"])
def test_under_autograd_the_caches_give_the_same_logits_and_the_whole_sequences_gradients(name):
    """One policy for every kind of cache: under autograd it appends out of place (torch.cat),
    so the backward pass goes through it, and the numbers are those of decoding without it."""
    X = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(5))
    whole = randomized(DecoderLM(CONFIGS[name]))
    whole(X).square().sum().backward()
    cached = randomized(DecoderLM(CONFIGS[name]))
    caches = cached.new_caches()
    pieces = [cached(X[:, :4], caches)] + [cached(X[:, t : t + 1], caches) for t in range(4, 9)]
    torch.cat(pieces, dim=1).square().sum().backward()
    for (name, a), b in zip(whole.named_parameters(), cached.parameters()):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-4, rtol=1e-4, msg=name)
    with torch.no_grad():  # and in place, the same logits
        caches = cached.new_caches()
        in_place = [cached(X[:, :4], caches)] + [
            cached(X[:, t : t + 1], caches) for t in range(4, 9)
        ]
    torch.testing.assert_close(torch.cat(in_place, dim=1), torch.cat(pieces, dim=1).detach())


def test_generate_keeps_the_mode_when_a_step_raises_and_checks_sampling_first():
    model = DecoderLM(
        llama_config(20, num_hiddens=16, num_heads=2, num_blks=1, ffn_num_hiddens=24, max_len=8)
    )
    model.train()
    prompt = torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match="top_k"):
        model.generate(prompt, 2, top_k=0)
    original = model.forward

    def fail(*args, **kwargs):
        raise RuntimeError("a step failed")

    model.forward = fail  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="a step failed"):
        model.generate(prompt, 2)
    assert model.training
    model.forward = original  # type: ignore[method-assign]
