"""Checkers for chapter 6, multi-head attention.

``check_split_heads`` and ``check_merge_heads`` check the two reshapes that let every head of a
multi-head attention layer run in one batched matrix product: from ``(batch, n, d)`` to
``(batch, heads, n, d / heads)`` and back. They name the usual mistakes: a reshape without the
transpose (which mixes positions and heads), features given to the heads in interleaved order
instead of in contiguous blocks, and the heads left in the wrong axis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from companion.exercises.core import Inputs, check

# Four different sizes, so that any two axes mixed up show in the shape or in the values.
BATCH, STEPS, HEADS, HEAD_SIZE = 2, 5, 3, 4

NO_TRANSPOSE_SPLIT = (
    "reshaped without transposing: a direct reshape to (batch, heads, n, d/heads) mixes "
    "positions and heads. Reshape to (batch, n, heads, d/heads) first, then swap axes 1 and 2"
)
INTERLEAVED_SPLIT = (
    "the features are interleaved: head i owns the contiguous block of features "
    "i*p ... (i+1)*p - 1 (p = d/heads), not every heads-th feature"
)
SWAPPED_SPLIT = (
    "heads and positions swapped: you returned (batch, n, heads, d/heads); swap axes 1 and 2 "
    "so that the heads come right after the batch"
)
FLAT_SPLIT = (
    "that is d2l's layout (batch*heads, n, d/heads); this exercise keeps the heads as an axis "
    "of their own: (batch, heads, n, d/heads)"
)
NO_TRANSPOSE_MERGE = (
    "reshaped without transposing back: swap axes 1 and 2 first, to (batch, n, heads, d/heads), "
    "then reshape to (batch, n, d); a direct reshape mixes positions and heads"
)
INTERLEAVED_MERGE = (
    "the features are interleaved: the output of head i must fill the contiguous features "
    "i*p ... (i+1)*p - 1 (p = d/heads), the heads side by side"
)
NOT_CONCATENATED = (
    "the heads are not concatenated yet: reshape (batch, n, heads, d/heads) to (batch, n, d)"
)
POSITIONS_FLATTENED = (
    "each head's positions were flattened together, (batch, heads, n*d/heads): move the heads "
    "behind the positions (swap axes 1 and 2) before the reshape"
)

ShapeHint = tuple[Callable[..., tuple[int, ...]], str]  # (the wrong shape for these inputs, hint)


def _split_inputs(generator: torch.Generator) -> Inputs:
    X = torch.randn(BATCH, STEPS, HEADS * HEAD_SIZE, generator=generator)  # (batch, n, d)
    return X, HEADS


def _split_heads(X: torch.Tensor, num_heads: int, how: str = "right") -> torch.Tensor:
    """``(batch, n, d)`` to ``(batch, heads, n, d / heads)``; ``how`` names a known mistake."""
    batch, n, d = X.shape
    p = d // num_heads
    if how == "no_transpose":
        return X.reshape(batch, num_heads, n, p)
    if how == "interleaved":  # feature j goes to head j % heads
        return X.reshape(batch, n, p, num_heads).permute(0, 3, 1, 2)
    return X.reshape(batch, n, num_heads, p).transpose(1, 2)


def _merge_inputs(generator: torch.Generator) -> Inputs:
    H = torch.randn(BATCH, HEADS, STEPS, HEAD_SIZE, generator=generator)  # (batch, h, n, p)
    return (H,)


def _merge_heads(H: torch.Tensor, how: str = "right") -> torch.Tensor:
    """``(batch, heads, n, p)`` to ``(batch, n, heads * p)``; ``how`` names a known mistake."""
    batch, h, n, p = H.shape
    if how == "no_transpose":
        return H.reshape(batch, n, h * p)
    if how == "interleaved":  # feature j comes from head j % heads
        return H.permute(0, 2, 3, 1).reshape(batch, n, p * h)
    return H.transpose(1, 2).reshape(batch, n, h * p)


def _shape_hint(
    student_fn: Callable[..., torch.Tensor],
    make_inputs: Callable[[torch.Generator], Inputs],
    shape_hints: Sequence[ShapeHint],
) -> str | None:
    """A hint when the answer has a shape that a known mistake produces, else ``None``.

    :func:`companion.exercises.core.check` reports any shape as "expected ..., got ...": right,
    but here the wrong shape says which axes were mixed up, so it deserves its own hint.
    """
    inputs = make_inputs(torch.Generator().manual_seed(0))
    try:
        got = student_fn(*inputs)
    except Exception:  # stubs and crashes are reported by check()
        return None
    if not isinstance(got, torch.Tensor):
        return None
    for wrong_shape, hint in shape_hints:
        if tuple(got.shape) == wrong_shape(*inputs):
            return hint
    return None


def check_split_heads(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 6: ``student_fn(X, num_heads)`` splits ``X`` of shape ``(batch, n, d)`` into
    ``(batch, heads, n, d / heads)``, head ``i`` taking features ``i*p ... (i+1)*p - 1``."""
    hint = _shape_hint(
        student_fn,
        _split_inputs,
        [
            (lambda X, h: (X.shape[0], X.shape[1], h, X.shape[2] // h), SWAPPED_SPLIT),
            (lambda X, h: (X.shape[0] * h, X.shape[1], X.shape[2] // h), FLAT_SPLIT),
        ],
    )
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _split_heads,
        _split_inputs,
        mistakes=[
            (lambda X, h: _split_heads(X, h, "no_transpose"), NO_TRANSPOSE_SPLIT),
            (lambda X, h: _split_heads(X, h, "interleaved"), INTERLEAVED_SPLIT),
        ],
    )


def check_merge_heads(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 6: ``student_fn(H)`` concatenates the heads of ``H`` of shape
    ``(batch, heads, n, p)`` into ``(batch, n, heads * p)``, head ``i`` filling features
    ``i*p ... (i+1)*p - 1``: the inverse of the split."""
    hint = _shape_hint(
        student_fn,
        _merge_inputs,
        [
            (lambda H: (H.shape[0], H.shape[2], H.shape[1], H.shape[3]), NOT_CONCATENATED),
            (lambda H: (H.shape[0], H.shape[1], H.shape[2] * H.shape[3]), POSITIONS_FLATTENED),
        ],
    )
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _merge_heads,
        _merge_inputs,
        mistakes=[
            (lambda H: _merge_heads(H, "no_transpose"), NO_TRANSPOSE_MERGE),
            (lambda H: _merge_heads(H, "interleaved"), INTERLEAVED_MERGE),
        ],
    )
