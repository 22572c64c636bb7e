"""Checkers for the modern decoder chapter (sec-modern-decoder).

``check_rope`` checks the rotary position embedding written from scratch (the chapter's build it
yourself): ``rope(X, offset, base)`` rotates the features of ``X`` ``(batch, heads, steps, d)``
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

from companion.exercises.core import Inputs, check
from companion.exercises.sizes import draw
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
    ``pairing="half"``."""
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
        seed=seed,
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
