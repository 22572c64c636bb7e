"""The modern decoder's layers against Hugging Face transformers, the oracle: tiny configs, random
weights built locally (no download), weights copied between the two, outputs equal within 1e-5.

Each test was checked to fail when its layer is broken on purpose (a copy of the tree, one
line changed, these tests and tests/test_decoder.py run):

- RMSNorm without eps, or with eps outside the root, or its gain never applied: the RMSNorm test
  fails (its first row has a mean square of 1e-6, where eps matters), and so do the models';
- RoPE with the pairing flipped, the sine's sign flipped, or ``theta_i`` over ``d/2``: the rotary,
  attention and model tests fail; RoPE also applied to the values: the attention tests fail;
- SwiGLU with SiLU on the up projection instead of the gate: the SwiGLU and model tests fail;
- GQA pairing query head ``i`` with key-value head ``i % g`` instead of ``i // (h / g)``: the
  attention test with 2 key-value heads (MHA and MQA cannot tell them apart), the models and the
  masked-attention reference fail;
- a scale of ``1/sqrt(num_hiddens)`` instead of ``1/sqrt(head_dim)``: attention and models fail;
- the window off by one: the Mistral test fails; cached steps whose RoPE restarts at position 0:
  the models' step-by-step checks fail; the rolling cache not evicting, or not masking its oldest
  key: the Mistral step-by-step check fails (and tests/test_decoder.py's cache tests).
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM
from transformers.models.llama.modeling_llama import (
    LlamaAttention,
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from companion.layers.attention import MultiHeadAttention
from companion.layers.feedforward import SwiGLU
from companion.layers.norms import RMSNorm
from companion.layers.rotary import RotaryEmbedding
from companion.models.decoder import DecoderLM, llama_config

TOLERANCE = dict(rtol=0.0, atol=1e-5)
SIZES = dict(
    vocab_size=40,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,  # grouped-query: two query heads per key-value head
    max_position_embeddings=64,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    attn_implementation="eager",
)


PROJECTIONS = (("q_proj", "W_q"), ("k_proj", "W_k"), ("v_proj", "W_v"), ("o_proj", "W_o"))


def llama(**changes) -> LlamaConfig:
    return LlamaConfig(**{**SIZES, **changes})


def ours(config: LlamaConfig, **changes):
    """Our configuration of the same model as Hugging Face's ``config``."""
    return llama_config(
        config.vocab_size,
        num_hiddens=config.hidden_size,
        ffn_num_hiddens=config.intermediate_size,
        num_blks=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        num_kv_heads=config.num_key_value_heads,
        norm_eps=config.rms_norm_eps,
        rope_base=config.rope_parameters["rope_theta"],
        **changes,
    )


def randomize(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Every parameter random, norms' gains included (Hugging Face starts them at 1, which would
    hide a gain that is never applied)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return module.eval()


def copy_attention(hf: torch.nn.Module, layer: MultiHeadAttention) -> None:
    for theirs, mine in PROJECTIONS:
        getattr(layer, mine).load_state_dict(getattr(hf, theirs).state_dict())


def copy_llama(hf: torch.nn.Module, model: DecoderLM) -> None:
    """Hugging Face's Llama (or Mistral) for causal LM into our :class:`DecoderLM`."""
    model.token_embedding.load_state_dict(hf.model.embed_tokens.state_dict())
    for theirs, mine in zip(hf.model.layers, model.blks):
        mine.ln1.load_state_dict(theirs.input_layernorm.state_dict())
        copy_attention(theirs.self_attn, mine.attention)
        mine.ln2.load_state_dict(theirs.post_attention_layernorm.state_dict())
        mine.mlp.load_state_dict(theirs.mlp.state_dict())
    model.ln.load_state_dict(hf.model.norm.state_dict())
    model.head.load_state_dict(hf.lm_head.state_dict())


def causal_bias(steps: int, window: int | None = None) -> torch.Tensor:
    """The additive ``(1, 1, steps, steps)`` mask Hugging Face's eager attention takes."""
    offsets = torch.arange(steps)[:, None] - torch.arange(steps)[None, :]
    allowed = (offsets >= 0) & (offsets < (window or steps + 1))
    bias = torch.zeros(steps, steps).masked_fill(~allowed, torch.finfo(torch.float32).min)
    return bias[None, None]


def test_rmsnorm_equals_llamas():
    torch.manual_seed(0)
    theirs = randomize(LlamaRMSNorm(16, eps=1e-6))
    mine = RMSNorm(16, eps=1e-6)
    mine.load_state_dict(theirs.state_dict())
    X = torch.randn(3, 5, 16)
    X[0] *= 1e-3  # mean square 1e-6: here eps matters as much as the input
    torch.testing.assert_close(mine(X), theirs(X), **TOLERANCE)


@pytest.mark.parametrize("offset", [0, 7])
def test_rotary_half_pairing_equals_llamas(offset):
    config = llama()
    head_dim = config.hidden_size // config.num_attention_heads
    torch.manual_seed(0)
    queries, keys = torch.randn(2, 4, 6, head_dim), torch.randn(2, 2, 6, head_dim)  # (b, h, n, d)
    position_ids = torch.arange(offset, offset + 6)[None].expand(2, -1)
    cos, sin = LlamaRotaryEmbedding(config)(queries, position_ids)
    expected_q, expected_k = apply_rotary_pos_emb(queries, keys, cos, sin)
    rope = RotaryEmbedding(head_dim, config.rope_parameters["rope_theta"], pairing="half")
    torch.testing.assert_close(rope(queries, offset=offset), expected_q, **TOLERANCE)
    torch.testing.assert_close(rope(keys, offset=offset), expected_k, **TOLERANCE)


def test_rotary_interleaved_pairing_is_the_papers_complex_rotation():
    """The paper's form: pair ``(2i, 2i+1)`` is the complex number ``x_2i + j x_2i+1``, times
    ``e^{j m theta_i}``."""
    torch.manual_seed(0)
    X = torch.randn(2, 3, 5, 8)  # (batch, heads, steps, head_dim)
    theta = 10000.0 ** (-torch.arange(0, 8, 2).float() / 8)
    angles = torch.arange(3, 8).float()[:, None] * theta  # positions 3..7, (steps, d/2)
    pairs = torch.view_as_complex(X.reshape(2, 3, 5, 4, 2).contiguous())
    expected = torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles))
    rope = RotaryEmbedding(8, pairing="interleaved")
    torch.testing.assert_close(rope(X, offset=3), expected.flatten(-2), **TOLERANCE)


def test_the_two_pairings_differ_by_a_permutation_of_features():
    torch.manual_seed(0)
    X = torch.randn(1, 2, 4, 8)
    to_half = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])  # (2i, 2i+1) -> (i, i + d/2)
    half = RotaryEmbedding(8, pairing="half")
    interleaved = RotaryEmbedding(8, pairing="interleaved")
    rotated = half(X[..., to_half])
    torch.testing.assert_close(interleaved(X), rotated[..., to_half.argsort()], **TOLERANCE)
    assert not torch.allclose(interleaved(X), half(X), atol=1e-3)  # but not the same layer


def test_swiglu_equals_llamas_mlp():
    config = llama()
    theirs = randomize(LlamaMLP(config))
    mine = SwiGLU(config.hidden_size, config.intermediate_size)
    mine.load_state_dict(theirs.state_dict())
    X = torch.randn(2, 5, config.hidden_size)
    torch.testing.assert_close(mine(X), theirs(X), **TOLERANCE)


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])  # MHA, GQA, MQA
def test_grouped_query_attention_equals_llamas(num_kv_heads):
    config = llama(num_key_value_heads=num_kv_heads)
    theirs = randomize(LlamaAttention(config, layer_idx=0))
    head_dim = config.hidden_size // config.num_attention_heads
    mine = MultiHeadAttention(
        config.hidden_size,
        config.num_attention_heads,
        0.0,
        num_kv_heads=num_kv_heads,
        rotary=RotaryEmbedding(head_dim, config.rope_parameters["rope_theta"]),
        query_size=config.hidden_size,
        key_size=config.hidden_size,
        value_size=config.hidden_size,
    ).eval()
    copy_attention(theirs, mine)
    X = torch.randn(2, 7, config.hidden_size)
    cos, sin = LlamaRotaryEmbedding(config)(X, torch.arange(7)[None])
    expected, _ = theirs(X, position_embeddings=(cos, sin), attention_mask=causal_bias(7))
    torch.testing.assert_close(mine(X, X, X, causal=True), expected, **TOLERANCE)


def test_llama_style_model_logits_equal_llamaforcausallm():
    config = llama()
    theirs = randomize(LlamaForCausalLM(config))
    mine = DecoderLM(ours(config)).eval()
    copy_llama(theirs, mine)
    X = torch.randint(0, config.vocab_size, (2, 9))
    expected = theirs(X).logits
    torch.testing.assert_close(mine(X), expected, **TOLERANCE)
    caches = mine.new_caches()  # and one token at a time, through the caches
    with torch.no_grad():
        stepwise = torch.cat([mine(X[:, t : t + 1], caches) for t in range(9)], dim=1)
    torch.testing.assert_close(stepwise, expected, **TOLERANCE)


def test_sliding_window_model_logits_equal_mistrals():
    window = 3
    config = MistralConfig(**{**SIZES, "sliding_window": window})
    theirs = randomize(MistralForCausalLM(config))
    mine = DecoderLM(ours(config, window=window)).eval()
    copy_llama(theirs, mine)
    X = torch.randint(0, config.vocab_size, (2, 10))
    expected = theirs(X).logits
    torch.testing.assert_close(mine(X), expected, **TOLERANCE)
    caches = mine.new_caches()  # rolling caches of `window` steps
    with torch.no_grad():
        stepwise = torch.cat([mine(X[:, t : t + 1], caches) for t in range(10)], dim=1)
    torch.testing.assert_close(stepwise, expected, **TOLERANCE)
    no_window = DecoderLM(ours(config)).eval()
    copy_llama(theirs, no_window)
    assert not torch.allclose(no_window(X), expected, atol=1e-3)  # the window does matter here
