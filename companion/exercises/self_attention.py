"""Checkers for the exercises of sec-self-attention (self-attention).

The sizes are drawn afresh on every call and are never the chapter's own (the worked example's
3 inputs of width 4 projected to width 3, the 6-node graph of width 8, the 3-node chain), so a
solution that reads ``x``, ``W_query`` or ``adjacency`` instead of its arguments fails. The
build-it-yourself answer must compute the attention itself: one that calls companion's attention
layers, PyTorch's ``scaled_dot_product_attention`` or ``nn.MultiheadAttention`` is told so,
though its numbers are right.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.adapters import as_bool_mask
from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw

# n, d and d_k = d_v of the worked example; the nodes and the width of the graph example
CHAPTER_SIZES = (3, 4, 6, 8)
BUILD_IT_YOURSELF = (
    "the exercise is to build it yourself from matrix products, a mask and a softmax"
)
LAYERS_CALLED = {
    "companion.layers.attention": (
        f"the answer calls companion's attention (DotProductAttention, MultiHeadAttention or "
        f"masked_softmax): {BUILD_IT_YOURSELF}"
    ),
    "torch._C._nn.scaled_dot_product_attention": (
        f"the answer calls torch's scaled_dot_product_attention: {BUILD_IT_YOURSELF}"
    ),
    "torch.nn.functional.multi_head_attention_forward": (
        f"the answer calls torch's nn.MultiheadAttention: {BUILD_IT_YOURSELF}"
    ),
}


def _self_attention_inputs(generator: torch.Generator) -> Inputs:
    # Four different sizes, so that a mixed-up width shows up as a shape or a scale.
    n = draw(generator, 5, 12, avoid=CHAPTER_SIZES)
    d = draw(generator, 5, 16, avoid=(*CHAPTER_SIZES, n))
    d_k = draw(generator, 2, 12, avoid=(*CHAPTER_SIZES, n, d))
    d_v = draw(generator, 2, 12, avoid=(*CHAPTER_SIZES, n, d, d_k))
    X = torch.randn(n, d, generator=generator)  # (n, d)
    W_q = torch.randn(d, d_k, generator=generator) / math.sqrt(d)  # (d, d_k)
    W_k = torch.randn(d, d_k, generator=generator) / math.sqrt(d)  # (d, d_k)
    W_v = torch.randn(d, d_v, generator=generator) / math.sqrt(d)  # (d, d_v)
    # Trials alternate (consecutive seeds): no mask (all True), and a random mask that keeps
    # each position's own key, so that every row has a key and every column a query.
    if generator.initial_seed() % 2:
        mask = torch.rand(n, n, generator=generator) < 0.5
        mask |= torch.eye(n, dtype=torch.bool)
    else:
        mask = torch.ones(n, n, dtype=torch.bool)
    return X, W_q, W_k, W_v, mask


def _self_attention(
    X, W_q, W_k, W_v, mask, scale="sqrt_dk", axis=-1, transposed=False, masking="scores"
):
    """The reference (the defaults) and, with a flag switched, each known mistake."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (n, d_k), (n, d_k), (n, d_v)
    scores = K @ Q.T if transposed else Q @ K.T  # (n queries, n keys)
    divisor = {
        "sqrt_dk": math.sqrt(Q.shape[-1]),
        "none": 1.0,
        "dk": Q.shape[-1],
        "sqrt_d": math.sqrt(X.shape[-1]),
    }[scale]
    scores = scores / divisor
    if masking == "scores":  # right: -inf before the softmax
        scores = scores.masked_fill(~mask, float("-inf"))
    elif masking == "transposed":
        scores = scores.masked_fill(~mask.T, float("-inf"))
    elif masking == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    weights = torch.softmax(scores, dim=axis)
    if masking == "after":
        weights = weights * mask
    return weights @ V  # (n, d_v)


def check_self_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-self-attention: ``student_fn(X, W_q, W_k, W_v, mask)`` returns the ``(n, d_v)``
    outputs of single-head self-attention, ``softmax(Q K^T / sqrt(d_k)) V`` with ``Q = X W_q``,
    ``K = X W_k`` and ``V = X W_v``, for ``X`` of shape ``(n, d)``. ``mask`` is ``(n, n)``
    boolean, True where query ``i`` may attend to key ``j``; the scores elsewhere are -inf
    before the softmax. Half the trials mask nothing (all True). An answer that calls an
    attention layer instead of computing it fails, whatever its numbers."""

    def mistake(**flags):
        return lambda *inputs: _self_attention(*inputs, **flags)

    start = first_seed(seed)
    rule = forbidden_call(
        student_fn, _self_attention_inputs(seeded_generator(start)), LAYERS_CALLED
    )
    if rule:
        print(f"hint: {rule}")
        return False
    return check(
        student_fn,
        _self_attention,
        _self_attention_inputs,
        mistakes=[
            (
                mistake(scale="none"),
                "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax",
            ),
            (mistake(scale="dk"), "divide the scores by sqrt(d_k), not by d_k"),
            (
                mistake(scale="sqrt_d"),
                "the scale uses the width d of X; use d_k, the width of the queries and keys",
            ),
            (
                mistake(axis=0),
                "softmax over the wrong axis: each row (one query) must sum to 1 over the keys",
            ),
            (
                mistake(transposed=True),
                "the scores are transposed (K Q^T): row i must hold query i against every key, "
                "Q K^T",
            ),
            (
                mistake(masking="none"),
                "the mask is ignored: set the scores where mask is False to -inf before the "
                "softmax",
            ),
            (
                mistake(masking="zero"),
                "masked scores were set to 0, but a score of 0 still gets weight after the "
                "softmax: set them to -inf (or a large negative number)",
            ),
            (
                mistake(masking="transposed"),
                "the mask is transposed: mask[i, j] is about query i (a row of the scores) and "
                "key j (a column)",
            ),
            (
                mistake(masking="after"),
                "the mask was applied after the softmax: the weights left no longer sum to 1. "
                "Mask the scores, then take the softmax",
            ),
        ],
        seed=start,
    )


def _graph_inputs(generator: torch.Generator) -> Inputs:
    n = draw(generator, 5, 12, avoid=CHAPTER_SIZES)
    adjacency = (torch.rand(n, n, generator=generator) < 0.3).float()  # (n, n), directed
    adjacency.fill_diagonal_(0.0)  # self-loops are the student's job
    return (adjacency,)


def _graph_mask(adjacency, transposed=False, self_loops=True):
    edges = adjacency.bool()
    mask = edges if transposed else edges.T  # mask[j, i]: node j attends to node i
    if self_loops:
        mask = mask | torch.eye(len(adjacency), dtype=torch.bool)
    return mask.float()  # the checker compares numbers; the student returns booleans


def check_graph_attention_mask(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-self-attention: ``student_fn(adjacency)`` returns the ``(n, n)`` boolean attention
    mask of a directed graph. ``adjacency[i, j] = 1`` when there is an edge from node ``i`` to
    node ``j``; ``mask[j, i]`` is True when node ``j`` (the query) may attend to node ``i`` (a
    key): along an edge into ``j``, or to itself."""
    return check(
        as_bool_mask(student_fn, "node j may attend to node i"),
        _graph_mask,
        _graph_inputs,
        mistakes=[
            (
                lambda a: _graph_mask(a, self_loops=False),
                "self-loops are missing: every node must also attend to itself (add the "
                "identity), or a node with no incoming edge has nothing to attend to",
            ),
            (
                lambda a: _graph_mask(a, transposed=True),
                "the mask is transposed: an edge i -> j lets node j (the query, a row) attend "
                "to node i (a column), so use adjacency.T",
            ),
            (
                lambda a: _graph_mask(a, transposed=True, self_loops=False),
                "the mask is transposed (use adjacency.T) and the self-loops are missing",
            ),
        ],
        seed=seed,
    )
