"""Checkers for the modern decoder chapter (sec-modern-decoder).

``check_llama_block`` checks the chapter's build it yourself: a whole Llama-style block written
with tensor operations, ``llama_block(X, weights, num_heads, num_kv_heads)``, against
companion's :class:`~companion.layers.blocks.PreNormBlock` in the Llama configuration with the
same weights (RMSNorm with eps 1e-6, causal grouped-query attention with RoPE in the halves
pairing, base 10000, from position 0, SwiGLU, two residuals). It names the typical mistakes:
key-value heads tiled with ``repeat`` instead of shared by consecutive query heads, the
interleaved RoPE pairing, RoPE on the values too, RoPE on the queries only, no causal mask, a
score scaled by the width instead of the head's, the gate and up projections swapped, layer
normalization's centring, and a post-norm block. An answer that calls companion's layers or
models, or a fused attention (``scaled_dot_product_attention``, ``nn.MultiheadAttention``),
is told so, though its numbers are right.

``check_rope`` checks the rotary position embedding written from scratch:
``rope(X, offset, base)`` rotates the features of ``X`` ``(batch, heads, steps, d)``
in the pairs ``(i, i + d/2)`` of Hugging Face's Llama, pair ``i`` of the token at position ``m``
by the angle ``m base^(-2i/d)``. It names the interleaved pairing ``(2i, 2i+1)``, a rotation the
wrong way, frequencies ``base^(-i/d)``, positions that forget the offset, and cos and sin
swapped.

``check_repeat_kv`` checks expanding grouped-query attention's ``g`` key-value heads
``(batch, g, steps, d)`` to the ``h`` query heads ``(batch, h, steps, d)``, query head ``i``
reading key-value head ``i // (h / g)``. It names ``repeat`` (head ``i`` reading ``i mod g``).

The sizes are drawn afresh on every call and are never the chapter's own (4 heads of 16
features, 2 key-value heads).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.layers.attention import MultiHeadAttention
from companion.layers.feedforward import SwiGLU
from companion.layers.norms import RMSNorm
from companion.layers.rotary import RotaryEmbedding

CHAPTER_HEADS, CHAPTER_KV_HEADS, CHAPTER_HEAD_DIM = 4, 2, 16

INTERLEAVED = (
    "you rotated the pairs (2i, 2i+1), the paper's interleaved pairing; this exercise (and Hugging "
    "Face's Llama) pairs feature i with feature i + d/2: x_a = X[..., :d/2], x_b = X[..., d/2:]"
)
WRONG_WAY = (
    "the rotation turns the wrong way: (x_a, x_b) -> (x_a cos - x_b sin, x_a sin + x_b cos), "
    "the minus sign on the first output"
)
FREQUENCIES = (
    "the frequencies are base^(-i/d): theta_i = base^(-2i/d) for i = 0 .. d/2 - 1, i.e. "
    "base ** (-torch.arange(0, d, 2) / d)"
)
NO_OFFSET = "the positions start at 0: the first step of X is at position `offset`"
OWN_ROPE = {
    "companion.layers.rotary": (
        "the answer calls companion's RotaryEmbedding: the exercise is to rotate the pairs "
        "yourself, with tensor operations"
    )
}
COS_SIN_SWAPPED = (
    "cos and sin are swapped: position 0 must leave X unchanged (cos 0 = 1, sin 0 = 0)"
)
REPEAT = (
    "you used repeat, which gives query head i the key-value head i mod g; in grouped-query "
    "attention consecutive query heads share a key-value head, head i reads i // (h / g): use "
    "repeat_interleave(h // g, dim=1)"
)


# ----------------------------------------------------------------------------- RoPE


def _rope(X: torch.Tensor, offset: int, base: float, how: str = "right") -> torch.Tensor:
    """RoPE with the half pairing; ``how`` names a typical mistake."""
    d = X.shape[-1]
    exponents = torch.arange(0, d, 2, dtype=torch.float32) / d
    theta = base ** (-exponents / 2 if how == "frequencies" else -exponents)  # (d/2,)
    start = 0 if how == "no_offset" else offset
    angles = torch.arange(start, start + X.shape[-2]).float()[:, None] * theta  # (steps, d/2)
    cos, sin = angles.cos(), angles.sin()
    if how == "swapped":
        cos, sin = sin, cos
    if how == "wrong_way":
        sin = -sin
    if how == "interleaved":
        return RotaryEmbedding(d, base, "interleaved")(X, offset=offset)
    x_a, x_b = X[..., : d // 2], X[..., d // 2 :]
    return torch.cat((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)


def _rope_inputs(generator: torch.Generator) -> Inputs:
    d = 2 * draw(generator, 2, 6, avoid=[CHAPTER_HEAD_DIM // 2])
    heads, steps, batch = draw(generator, 1, 3), draw(generator, 2, 6), draw(generator, 1, 2)
    offset = draw(generator, 1, 20)
    base = float(draw(generator, 50, 500))  # small bases turn fast: mistakes show
    return torch.randn(batch, heads, steps, d, generator=generator), offset, base


def check_rope(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-modern-decoder: ``student_fn(X, offset, base)`` rotates queries or keys ``X`` of shape
    ``(batch, heads, steps, d)``, whose first step is at position ``offset``, pairs ``(i, i +
    d/2)`` by ``m base^(-2i/d)``: :class:`companion.layers.rotary.RotaryEmbedding` with
    ``pairing="half"``. An answer that calls companion's rotary layer is told so."""
    start = first_seed(seed)
    hint = forbidden_call(student_fn, _rope_inputs(seeded_generator(start)), OWN_ROPE)
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _rope,
        _rope_inputs,
        mistakes=[
            (lambda X, o, b, how=how: _rope(X, o, b, how), hint)
            for how, hint in [
                ("interleaved", INTERLEAVED),
                ("wrong_way", WRONG_WAY),
                ("frequencies", FREQUENCIES),
                ("no_offset", NO_OFFSET),
                ("swapped", COS_SIN_SWAPPED),
            ]
        ],
        atol=1e-4,
        seed=start,
    )


# ----------------------------------------------------------------------------- GQA


def _repeat_kv(keys: torch.Tensor, num_heads: int, how: str = "right") -> torch.Tensor:
    group = num_heads // keys.shape[1]  # query heads per key-value head
    if how == "repeat":
        return keys.repeat(1, group, 1, 1)
    return keys.repeat_interleave(group, dim=1)  # (batch, num_heads, steps, d)


def _repeat_kv_inputs(generator: torch.Generator) -> Inputs:
    kv_heads = draw(generator, 2, 4, avoid=[CHAPTER_KV_HEADS])  # 2 or more: repeat shows
    group = draw(generator, 2, 3)
    batch, steps, d = draw(generator, 1, 2), draw(generator, 1, 5), draw(generator, 2, 6)
    return torch.randn(batch, kv_heads, steps, d, generator=generator), kv_heads * group


def check_repeat_kv(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-modern-decoder: ``student_fn(keys, num_heads)`` expands ``g`` key-value heads
    ``(batch, g, steps, d)`` to ``num_heads`` query heads ``(batch, num_heads, steps, d)``, query
    head ``i`` reading key-value head ``i // (num_heads / g)``."""
    return check(
        student_fn,
        _repeat_kv,
        _repeat_kv_inputs,
        mistakes=[(lambda K, h: _repeat_kv(K, h, "repeat"), REPEAT)],
        seed=seed,
    )


# ----------------------------------------------------------------------------- a Llama block

BLOCK_EPS = 1e-6  # llama_config's norm_eps
BLOCK_BASE = 10000.0
BY_HAND = {
    "companion": (
        "the answer calls companion's own layers (a norm, the attention, RoPE, SwiGLU or the "
        "block): the exercise is to write the block with tensor operations"
    ),
    "torch._C._nn.scaled_dot_product_attention": (
        "the answer calls scaled_dot_product_attention: write the attention yourself, scores, "
        "causal mask, softmax and the values, so that you see how the heads share keys"
    ),
    "torch.nn.modules.activation.MultiheadAttention": (
        "the answer calls nn.MultiheadAttention: write the attention yourself"
    ),
}
BLOCK_HINTS = {
    "repeat": REPEAT,
    "interleaved": INTERLEAVED,
    "rope_values": (
        "you rotated the values too: RoPE turns the queries and the keys only, so that the "
        "scores see the offset; the values are mixed as they are"
    ),
    "rope_queries_only": "you rotated the queries but not the keys: RoPE turns both",
    "no_causal": (
        "no causal mask: each position may attend only to itself and the positions before it "
        "(scores of later keys set to -inf before the softmax)"
    ),
    "scale_width": (
        "the scores are divided by sqrt(d), the width; each head divides by the square root of "
        "its own head_dim = d / num_heads"
    ),
    "swapped_gate": (
        "the gate and up projections are swapped: SwiGLU(x) = W_down (SiLU(W_gate x) * W_up x), "
        "the SiLU on the gate"
    ),
    "centred": (
        "you subtracted the mean: RMSNorm divides by the root mean square of x itself, "
        "x / sqrt(mean(x^2) + eps) * g, with no centring and no bias"
    ),
    "post_norm": (
        "a post-norm block: the Llama block normalizes the input of each sublayer, "
        "X = X + attention(norm_1(X)), then X = X + ffn(norm_2(X))"
    ),
}


def _rms(X: torch.Tensor, gain: torch.Tensor, centred: bool = False) -> torch.Tensor:
    if centred:
        X = X - X.mean(dim=-1, keepdim=True)
    return X * torch.rsqrt(X.pow(2).mean(dim=-1, keepdim=True) + BLOCK_EPS) * gain


def _rotate(X: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """RoPE from position 0 on ``(batch, heads, steps, d)``."""
    d = X.shape[-1]
    theta = BLOCK_BASE ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = torch.arange(X.shape[-2]).float()[:, None] * theta  # (steps, d/2)
    cos, sin = angles.cos(), angles.sin()
    if interleaved:
        x_a, x_b = X[..., 0::2], X[..., 1::2]
        return torch.stack((x_a * cos - x_b * sin, x_a * sin + x_b * cos), -1).flatten(-2)
    x_a, x_b = X[..., : d // 2], X[..., d // 2 :]
    return torch.cat((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)


def _llama_block(
    X: torch.Tensor, w: dict, num_heads: int, num_kv_heads: int, how: str = "right"
) -> torch.Tensor:
    """The Llama-style block by hand; ``how`` names a typical mistake."""
    batch, steps, d = X.shape
    head_dim, group = d // num_heads, num_heads // num_kv_heads

    def heads(Y: torch.Tensor, n: int) -> torch.Tensor:  # (batch, steps, n d_h) -> (b, n, s, d_h)
        return Y.reshape(batch, steps, n, head_dim).transpose(1, 2)

    def attention(Y: torch.Tensor) -> torch.Tensor:
        q = heads(Y @ w["W_q"].T, num_heads)
        k, v = heads(Y @ w["W_k"].T, num_kv_heads), heads(Y @ w["W_v"].T, num_kv_heads)
        q = _rotate(q, how == "interleaved")
        if how != "rope_queries_only":
            k = _rotate(k, how == "interleaved")
        if how == "rope_values":
            v = _rotate(v)
        if how == "repeat":
            k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
        else:
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scale = d if how == "scale_width" else head_dim
        scores = q @ k.transpose(-2, -1) / scale**0.5  # (batch, heads, steps, steps)
        if how != "no_causal":
            later = torch.ones(steps, steps, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(later, float("-inf"))
        out = scores.softmax(dim=-1) @ v  # (batch, heads, steps, head_dim)
        return out.transpose(1, 2).reshape(batch, steps, d) @ w["W_o"].T

    def ffn(Y: torch.Tensor) -> torch.Tensor:
        gate, up = Y @ w["W_gate"].T, Y @ w["W_up"].T
        if how == "swapped_gate":
            gate, up = up, gate
        return (torch.nn.functional.silu(gate) * up) @ w["W_down"].T

    centred = how == "centred"
    if how == "post_norm":
        X = _rms(X + attention(X), w["norm1"])
        return _rms(X + ffn(X), w["norm2"])
    X = X + attention(_rms(X, w["norm1"], centred))
    return X + ffn(_rms(X, w["norm2"], centred))


def llama_block_weights(block: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights of a Llama-style :class:`~companion.layers.blocks.PreNormBlock`, named as the
    exercise names them (``nn.Linear`` layout, ``(out, in)``), detached."""
    a, f, ln1, ln2 = block.attention, block.mlp, block.ln1, block.ln2
    if not (
        isinstance(a, MultiHeadAttention)
        and isinstance(f, SwiGLU)
        and isinstance(ln1, RMSNorm)
        and isinstance(ln2, RMSNorm)
    ):
        raise TypeError("a Llama-style block: RMSNorm, MultiHeadAttention and SwiGLU")
    weights = {
        "norm1": ln1.weight,
        "W_q": a.W_q.weight,
        "W_k": a.W_k.weight,
        "W_v": a.W_v.weight,
        "W_o": a.W_o.weight,
        "norm2": ln2.weight,
        "W_gate": f.gate_proj.weight,
        "W_up": f.up_proj.weight,
        "W_down": f.down_proj.weight,
    }
    return {name: weight.detach().clone() for name, weight in weights.items()}


def _block_inputs(generator: torch.Generator) -> Inputs:
    """A random Llama-style block's input, weights and heads (never the chapter's sizes), with
    norm gains away from 1; the block itself rides along for the reference."""
    from companion.models.decoder import build_block, llama_config  # the reference's block

    kv_heads = draw(generator, 2, 3)  # two or more: repeat and repeat_interleave differ
    heads = kv_heads * draw(generator, 2, 3)
    head_dim = 2 * draw(generator, 2, 5, avoid=[CHAPTER_HEAD_DIM // 2])
    d = heads * head_dim
    config = llama_config(
        16,
        num_hiddens=d,
        num_heads=heads,
        num_kv_heads=kv_heads,
        ffn_num_hiddens=draw(generator, d, 3 * d),
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
    block = build_block(config).eval()
    torch.random.set_rng_state(state)  # the notebook's own draws are left alone
    with torch.no_grad():
        for norm in (block.ln1, block.ln2):
            if not isinstance(norm, RMSNorm):
                raise TypeError(f"a Llama-style block normalizes with RMSNorm, not {norm}")
            norm.weight.copy_(0.5 + torch.rand(d, generator=generator))
    batch, steps = draw(generator, 1, 2), draw(generator, 3, 7)
    X = torch.randn(batch, steps, d, generator=generator)
    return X, _Weights(llama_block_weights(block), block), heads, kv_heads


class _Weights(dict):
    """The weights a student reads, with the block they came from (for the reference)."""

    def __init__(self, weights: dict, block: torch.nn.Module) -> None:
        super().__init__(weights)
        self.block = block


def _companion_block(X: torch.Tensor, w: _Weights, num_heads: int, num_kv_heads: int):
    with torch.no_grad():
        return w.block(X, causal=True)


def check_llama_block(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-modern-decoder: ``student_fn(X, weights, num_heads, num_kv_heads)`` is a Llama-style
    pre-norm block on ``X`` of shape ``(batch, steps, d)``, written with tensor operations:
    ``weights`` holds ``norm1`` and ``norm2`` (RMSNorm gains, eps 1e-6), ``W_q``, ``W_k``,
    ``W_v``, ``W_o`` (causal attention, ``num_kv_heads`` key-value heads shared by consecutive
    query heads, RoPE in the halves pairing with base 10000 on the queries and keys) and
    ``W_gate``, ``W_up``, ``W_down`` (SwiGLU), each in ``nn.Linear``'s ``(out, in)`` layout.
    The reference is companion's ``PreNormBlock`` with those weights."""
    start = first_seed(seed)
    hint = forbidden_call(student_fn, _block_inputs(seeded_generator(start)), BY_HAND)
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _companion_block,
        _block_inputs,
        mistakes=[
            (lambda X, w, h, g, how=how: _llama_block(X, w, h, g, how), hint)
            for how, hint in BLOCK_HINTS.items()
        ],
        atol=1e-4,
        seed=start,
    )
