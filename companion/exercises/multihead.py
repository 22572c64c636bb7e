"""Checkers for sec-multihead-attention, multi-head attention.

``check_split_heads`` and ``check_merge_heads`` check the two reshapes that let every head of a
multi-head attention layer run in one batched matrix product: from ``(batch, n, d)`` to
``(batch, heads, n, d / heads)`` and back. They name the usual mistakes: a reshape without the
transpose (which mixes positions and heads), features given to the heads in interleaved order
instead of in contiguous blocks, and the heads left in the wrong axis.

``check_head_ablation`` checks switching one head off by zeroing the columns of the output
projection ``W_o`` that read it, and names zeroing its rows instead.

``check_multihead_attention`` checks the whole layer built from its four matrices (the chapter's
build-it-yourself), and names a scale by sqrt(d) instead of sqrt(p), a missing scale, a
forgotten ``W_o``, heads mixed with positions, interleaved heads, one head over the whole width
and a softmax over the queries.

The shapes are drawn afresh on every call (``seed=`` repeats a run, for tests) and never equal the
chapter's own variables (``batch, steps, d, h = 2, 5, 12, 3`` and the two heads of 16 features of
the digit task), so a solution that reads those variables instead of its arguments fails.

Each exercise asks for code the chapter's own layer already has, so an answer that calls that
layer (its ``split_heads`` or ``merge_heads``, or the layer itself), or PyTorch's attention
(``scaled_dot_product_attention`` under any of torch's names, ``nn.MultiheadAttention``) where
the whole layer is to be built, or the checker's own reference (``_split_heads``,
``_multihead``, ...), is told so, though its numbers are right.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.adapters import on_copies
from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import CHECKER_CODE, forbidden_call
from companion.exercises.sizes import draw

# The chapter's own sizes: batch, steps, heads and head size of its split, and its width d.
CHAPTER_BATCH, CHAPTER_STEPS, CHAPTER_HEADS, CHAPTER_HEAD_SIZE = 2, 5, 3, 4
CHAPTER_WIDTH = CHAPTER_HEADS * CHAPTER_HEAD_SIZE

OWN_RESHAPE = {
    "companion.layers.attention": (
        "the answer calls companion's multi-head attention (its split_heads or merge_heads): "
        "the exercise is to write the reshape yourself, with reshape or view and transpose"
    )
} | CHECKER_CODE
BUILD_IT_YOURSELF = (
    "the exercise is to build the layer yourself, from matrix products and a softmax"
)
OWN_LAYER = {
    "companion.layers.attention": (
        "the answer calls companion's attention (MultiHeadAttention, DotProductAttention or "
        f"masked_softmax): {BUILD_IT_YOURSELF}"
    ),
    # nn.MultiheadAttention calls scaled_dot_product_attention: name the layer first
    "torch.nn.functional.multi_head_attention_forward": (
        f"the answer calls torch's nn.MultiheadAttention: {BUILD_IT_YOURSELF}"
    ),
    "torch._C._nn.scaled_dot_product_attention": (
        f"the answer calls torch's scaled_dot_product_attention: {BUILD_IT_YOURSELF}"
    ),
} | CHECKER_CODE


def _breaks_a_rule(
    student_fn: Callable,
    make_inputs: Callable[[torch.Generator], Inputs],
    start: int,
    rules: dict[str, str],
) -> bool:
    """Print the hint and return True when ``student_fn``, run on the first trial's inputs,
    calls what ``rules`` forbids."""
    hint = forbidden_call(student_fn, make_inputs(seeded_generator(start)), rules)
    if hint:
        print(f"hint: {hint}")
    return hint is not None


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


def _sizes(generator: torch.Generator) -> tuple[int, int, int, int]:
    """``(batch, steps, heads, head_size)``, none of them the chapter's, and as many steps as
    heads never: then heads and positions swapped show in the shape."""
    while True:
        batch = draw(generator, 1, 4, avoid=[CHAPTER_BATCH])
        steps = draw(generator, 2, 8, avoid=[CHAPTER_STEPS])
        heads = draw(generator, 2, 6, avoid=[CHAPTER_HEADS])
        head_size = draw(generator, 2, 6, avoid=[CHAPTER_HEAD_SIZE])
        if steps != heads and heads * head_size != CHAPTER_WIDTH:
            return batch, steps, heads, head_size


def _split_inputs(generator: torch.Generator) -> Inputs:
    batch, steps, heads, head_size = _sizes(generator)
    X = torch.randn(batch, steps, heads * head_size, generator=generator)  # (batch, n, d)
    return X, heads


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
    batch, steps, heads, head_size = _sizes(generator)
    H = torch.randn(batch, heads, steps, head_size, generator=generator)  # (batch, h, n, p)
    return (H,)


def _merge_heads(H: torch.Tensor, how: str = "right") -> torch.Tensor:
    """``(batch, heads, n, p)`` to ``(batch, n, heads * p)``; ``how`` names a known mistake."""
    batch, h, n, p = H.shape
    if how == "no_transpose":
        return H.reshape(batch, n, h * p)
    if how == "interleaved":  # feature j comes from head j % heads
        return H.permute(0, 2, 3, 1).reshape(batch, n, p * h)
    return H.transpose(1, 2).reshape(batch, n, h * p)


def check_split_heads(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-multihead-attention: ``student_fn(X, num_heads)`` splits ``X`` of shape ``(batch, n, d)``
    into ``(batch, heads, n, d / heads)``, head ``i`` taking features ``i*p ... (i+1)*p - 1``,
    without calling companion's layer."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _split_inputs, start, OWN_RESHAPE):
        return False
    return check(
        student_fn,
        _split_heads,
        _split_inputs,
        mistakes=[
            (lambda X, h: _split_heads(X, h, "no_transpose"), NO_TRANSPOSE_SPLIT),
            (lambda X, h: _split_heads(X, h, "interleaved"), INTERLEAVED_SPLIT),
        ],
        seed=start,
        shape_hints=[
            (lambda X, h: (X.shape[0], X.shape[1], h, X.shape[2] // h), SWAPPED_SPLIT),
            (lambda X, h: (X.shape[0] * h, X.shape[1], X.shape[2] // h), FLAT_SPLIT),
        ],
    )


def check_merge_heads(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-multihead-attention: ``student_fn(H)`` concatenates the heads of ``H`` of shape ``(batch,
    heads, n, p)`` into ``(batch, n, heads * p)``, head ``i`` filling features ``i*p ... (i+1)*p -
    1``: the inverse of the split, without calling companion's layer."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _merge_inputs, start, OWN_RESHAPE):
        return False
    return check(
        student_fn,
        _merge_heads,
        _merge_inputs,
        mistakes=[
            (lambda H: _merge_heads(H, "no_transpose"), NO_TRANSPOSE_MERGE),
            (lambda H: _merge_heads(H, "interleaved"), INTERLEAVED_MERGE),
        ],
        seed=start,
        shape_hints=[
            (lambda H: (H.shape[0], H.shape[2], H.shape[1], H.shape[3]), NOT_CONCATENATED),
            (lambda H: (H.shape[0], H.shape[1], H.shape[2] * H.shape[3]), POSITIONS_FLATTENED),
        ],
    )


ROWS_ZEROED = (
    "you zeroed rows of W_o.weight. nn.Linear stores its weight as (out, in), so a row makes one "
    "output feature, to which every head contributes. Head i's output enters W_o as the input "
    "features i*p ... (i+1)*p - 1 (p = d/heads): zero those columns, W_o.weight[:, i*p:(i+1)*p]"
)
INTERLEAVED_COLUMNS = (
    "you zeroed every heads-th column: head i's output is the contiguous block of input "
    "features i*p ... (i+1)*p - 1 (p = d/heads), so zero W_o.weight[:, i*p:(i+1)*p]"
)
ONLY_HEAD_KEPT = (
    "you kept only that head and switched off all the others: zero the columns of head i and "
    "keep the rest"
)
OTHER_HEAD = (
    "you zeroed the columns of a neighbouring head: heads are counted from 0, head i owning "
    "columns i*p ... (i+1)*p - 1"
)
NOTHING_ZEROED = "nothing was zeroed: W_o came back unchanged"


def _ablation_inputs(generator: torch.Generator) -> Inputs:
    # The chapter's model has 2 heads of 16 features: at least 3 heads here, of at most 7.
    heads, head_size = draw(generator, 3, 6), draw(generator, 2, 7)
    width = heads * head_size
    W_o = torch.randn(width, width, generator=generator)  # W_o.weight: (out, in)
    return W_o, draw(generator, 0, heads - 1), heads


def _ablate(W_o: torch.Tensor, head: int, num_heads: int, how: str = "columns") -> torch.Tensor:
    """``W_o`` with head ``head`` switched off; ``how`` names a known mistake."""
    p = W_o.shape[1] // num_heads
    block = slice(head * p, (head + 1) * p)
    ablated = W_o.clone()
    if how == "rows":
        ablated[block] = 0
    elif how == "interleaved":
        ablated[:, head::num_heads] = 0
    elif how == "kept":
        ablated = torch.zeros_like(W_o)
        ablated[:, block] = W_o[:, block]
    else:  # "columns": the right answer
        ablated[:, block] = 0
    return ablated


def check_head_ablation(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-multihead-attention: ``student_fn(W_o, head, num_heads)`` returns a copy of the output
    projection's weight ``W_o`` (``(d, d)``, stored (out, in) as ``nn.Linear`` does) in which head
    ``head`` (counted from 0) no longer contributes: its columns ``head*p ... (head+1)*p - 1`` are
    zero, ``p = d / num_heads``."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _ablation_inputs, start, CHECKER_CODE):
        return False
    return check(
        on_copies(student_fn),  # zeroing W_o in place is allowed; the mistakes read the original
        _ablate,
        _ablation_inputs,
        mistakes=[
            (lambda W, i, h: _ablate(W, i, h, "rows"), ROWS_ZEROED),
            (lambda W, i, h: _ablate(W, i, h, "interleaved"), INTERLEAVED_COLUMNS),
            (lambda W, i, h: _ablate(W, i, h, "kept"), ONLY_HEAD_KEPT),
            (lambda W, i, h: _ablate(W, (i + 1) % h, h), OTHER_HEAD),
            (lambda W, i, h: _ablate(W, (i - 1) % h, h), OTHER_HEAD),
            (lambda W, i, h: W, NOTHING_ZEROED),
        ],
        seed=start,
    )


# --------------------------------------------- the whole layer, built from its four matrices

SCALED_BY_WIDTH = (
    "the scores are divided by sqrt(d), the model's width; each head compares vectors of "
    "p = d/heads features, so divide by sqrt(p)"
)
NOT_SCALED = "the scores are not scaled: divide each head's q·k by sqrt(p), p = d/heads"
NO_OUTPUT_PROJECTION = (
    "W_o is missing: after concatenating the heads, multiply by W_o, which mixes what the heads "
    "found"
)
HEADS_MIXED_WITH_POSITIONS = (
    "heads and positions are mixed: a reshape of (batch, n, d) straight to (batch, heads, n, p) "
    "gives each head features of other positions. Reshape to (batch, n, heads, p), then swap "
    "axes 1 and 2 (and back the same way before W_o)"
)
INTERLEAVED_HEADS = (
    "the features are interleaved: head i owns the contiguous features i*p ... (i+1)*p - 1 of "
    "the projected queries, keys and values, not every heads-th feature"
)
ONE_HEAD = (
    "that is one head over the whole width: split the projected queries, keys and values into "
    "heads of p = d/heads features, attend in each head separately, then concatenate"
)
SOFTMAX_OVER_QUERIES = (
    "softmax over the wrong axis: each query's weights over the keys must sum to 1 (softmax over "
    "the last axis of the (batch, heads, queries, keys) scores)"
)


def _multihead_inputs(generator: torch.Generator) -> Inputs:
    # Queries and keys of different lengths, so that a softmax over the wrong axis shows.
    batch, queries, heads, head_size = _sizes(generator)
    keys = draw(generator, 2, 8, avoid=[queries, heads, CHAPTER_STEPS])
    width = heads * head_size

    def matrix() -> torch.Tensor:  # (d, d), applied as X @ W
        return torch.randn(width, width, generator=generator) / width**0.5

    Q = torch.randn(batch, queries, width, generator=generator)
    K, V = (torch.randn(batch, keys, width, generator=generator) for _ in range(2))
    return Q, K, V, matrix(), matrix(), matrix(), matrix(), heads


def _multihead(Q, K, V, W_q, W_k, W_v, W_o, num_heads, *, how: str = "right") -> torch.Tensor:
    """Multi-head attention from its four matrices; ``how`` names a known mistake."""
    width = Q.shape[-1]
    heads = 1 if how == "one_head" else num_heads
    p = width // heads
    split_how = {"no_transpose": "no_transpose", "interleaved": "interleaved"}.get(how, "right")
    q, k, v = (_split_heads(X @ W, heads, split_how) for X, W in ((Q, W_q), (K, W_k), (V, W_v)))
    scale = {"width": width**0.5, "unscaled": 1.0}.get(how, p**0.5)
    scores = q @ k.transpose(-2, -1) / scale  # (batch, heads, queries, keys)
    weights = scores.softmax(dim=-2 if how == "softmax_queries" else -1)
    merged = _merge_heads(weights @ v, split_how)  # (batch, queries, d)
    return merged if how == "no_output" else merged @ W_o


def check_multihead_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-multihead-attention: ``student_fn(queries, keys, values, W_q, W_k, W_v, W_o,
    num_heads)`` computes multi-head attention without masks: project with the ``(d, d)``
    matrices (``X @ W``), split into ``num_heads`` heads of ``p = d / num_heads`` contiguous
    features, scaled dot-product attention in each head (``/ sqrt(p)``), concatenate the heads
    and multiply by ``W_o``. Queries are ``(batch, queries, d)``, keys and values ``(batch,
    keys, d)``; the result is ``(batch, queries, d)``. An answer that calls an attention layer
    (companion's or PyTorch's) instead of computing it fails, whatever its numbers."""

    def mistake(how: str) -> Callable[..., torch.Tensor]:
        return lambda *inputs: _multihead(*inputs, how=how)

    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _multihead_inputs, start, OWN_LAYER):
        return False
    return check(
        student_fn,
        _multihead,
        _multihead_inputs,
        mistakes=[
            (mistake("width"), SCALED_BY_WIDTH),
            (mistake("unscaled"), NOT_SCALED),
            (mistake("no_output"), NO_OUTPUT_PROJECTION),
            (mistake("no_transpose"), HEADS_MIXED_WITH_POSITIONS),
            (mistake("interleaved"), INTERLEAVED_HEADS),
            (mistake("one_head"), ONE_HEAD),
            (mistake("softmax_queries"), SOFTMAX_OVER_QUERIES),
        ],
        seed=start,
        atol=1e-4,
    )
