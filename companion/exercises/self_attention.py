"""Checkers for the exercises of sec-self-attention (self-attention).

The build-it-yourself exercise asks for what the chapter does not print: self-attention over a
padded batch, ``(batch, n, d)`` with ``valid_lens``, and a causal flag combined with the padding,
where a sequence of length 0 gets outputs of 0 (as companion's layers give it), not NaN.

The sizes are drawn afresh on every call and are never the chapter's own (the worked example's
3 inputs of width 4 projected to width 3, the 6-node graph of width 8, the 3-node chain), so a
solution that reads ``x``, ``W_query`` or ``adjacency`` instead of its arguments fails. The
build-it-yourself answer must compute the attention itself: one that calls companion's attention
layers, PyTorch's ``scaled_dot_product_attention`` (under any of its names) or
``nn.MultiheadAttention`` is told so, though its numbers are right.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.adapters import as_bool_mask
from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.layers.attention import masked_softmax

# n, d and d_k = d_v of the worked example; the nodes and the width of the graph example
CHAPTER_SIZES = (3, 4, 6, 8)
NEGATIVE = -1e6  # what an answer that fills with a finite number uses, as d2l does
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
    "torch._VariableFunctionsClass._masked_softmax": (
        f"the answer calls torch's _masked_softmax: {BUILD_IT_YOURSELF}"
    ),
}


def _self_attention_inputs(generator: torch.Generator) -> Inputs:
    # Trials alternate (consecutive seeds) between causal=False and causal=True. Five
    # different sizes, so that a mixed-up width or axis shows up as a shape or a scale. Every
    # sequence but one is padded (valid length 1 to n - 1), and one has valid length 0: its
    # queries keep no key, and their outputs must be 0.
    causal = generator.initial_seed() % 2 == 1
    batch = draw(generator, 3, 6, avoid=CHAPTER_SIZES)
    n = draw(generator, 5, 12, avoid=(*CHAPTER_SIZES, batch))
    d = draw(generator, 5, 16, avoid=(*CHAPTER_SIZES, batch, n))
    d_k = draw(generator, 2, 12, avoid=(*CHAPTER_SIZES, batch, n, d))
    d_v = draw(generator, 2, 12, avoid=(*CHAPTER_SIZES, batch, n, d, d_k))
    X = torch.randn(batch, n, d, generator=generator)  # (batch, n, d)
    W_q = torch.randn(d, d_k, generator=generator) / math.sqrt(d)  # (d, d_k)
    W_k = torch.randn(d, d_k, generator=generator) / math.sqrt(d)  # (d, d_k)
    W_v = torch.randn(d, d_v, generator=generator) / math.sqrt(d)  # (d, d_v)
    valid_lens = torch.randint(1, n, (batch,), generator=generator)  # (batch,)
    valid_lens[int(torch.randint(batch, (1,), generator=generator))] = 0
    return X, W_q, W_k, W_v, valid_lens, causal


def _self_attention(
    X,
    W_q,
    W_k,
    W_v,
    valid_lens,
    causal=False,
    *,
    scale="sqrt_dk",
    axis=-1,
    transposed=False,
    padding="keys",
    order="right",
    masking="scores",
    empty="zero",
):
    """The reference (the defaults: companion's) and, with a flag switched, each known mistake.
    ``padding`` is ``"keys"``, ``"queries"`` or ``None``; ``order`` the causal mask's kind
    (``"right"``: key j <= query i, ``"diagonal"``: j < i, ``"transposed"``: j >= i, ``None``:
    ignored); ``masking`` where the mask goes (``"scores"``, ``"zero"``: scores set to 0,
    ``"after"``: weights zeroed after the softmax); ``empty`` what a query with no key gets
    (``"zero"``, ``"nan"``: the softmax of a row of -inf, ``"uniform"``: of a row of -1e6)."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (batch, n, d_k), (batch, n, d_k), (batch, n, d_v)
    scores = K @ Q.transpose(1, 2) if transposed else Q @ K.transpose(1, 2)  # (batch, n, n)
    divisor = {
        "sqrt_dk": math.sqrt(Q.shape[-1]),
        "none": 1.0,
        "dk": Q.shape[-1],
        "sqrt_d": math.sqrt(X.shape[-1]),
    }[scale]
    scores = scores / divisor
    positions = torch.arange(X.shape[1])
    keep = torch.ones(scores.shape, dtype=torch.bool)  # (batch, queries, keys)
    if padding == "keys":
        keep = keep & (positions < valid_lens[:, None, None])  # real keys only
    elif padding == "queries":
        keep = keep & (positions[:, None] < valid_lens[:, None, None])
    if causal and order is not None:
        i, j = positions[:, None], positions[None, :]
        keep = keep & {"right": j <= i, "diagonal": j < i, "transposed": j >= i}[order]
    if masking == "scores":
        fill = float("-inf") if empty in ("nan", "nan_to_num") else NEGATIVE
        weights = torch.softmax(scores.masked_fill(~keep, fill), dim=axis)
    elif masking == "zero":
        weights = torch.softmax(scores.masked_fill(~keep, 0.0), dim=axis)
    else:  # "after"
        weights = torch.softmax(scores, dim=axis) * keep
    if empty in ("zero", "nan_to_num"):  # a query that keeps no key: weights 0
        weights = torch.nan_to_num(weights) * keep.any(dim=-1, keepdim=True)
    return weights @ V  # (batch, n, d_v)


def _reference(X, W_q, W_k, W_v, valid_lens, causal):
    """companion's own: scaled dot products through its masked softmax."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])  # (batch, queries, keys)
    return masked_softmax(scores, valid_lens, causal=causal) @ V


def check_self_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-self-attention: ``student_fn(X, W_q, W_k, W_v, valid_lens, causal)`` returns the
    ``(batch, n, d_v)`` outputs of single-head self-attention over a padded batch,
    ``softmax(Q K^T / sqrt(d_k)) V`` with ``Q = X W_q``, ``K = X W_k`` and ``V = X W_v`` for
    ``X`` of shape ``(batch, n, d)``. Keys at positions ``>= valid_lens`` (shape ``(batch,)``)
    get weight 0, and with ``causal`` so does every key after its query; a query that keeps no
    key (a sequence of length 0) gets the output 0. An answer that calls an attention layer
    instead of computing it fails, whatever its numbers."""

    def mistake(**flags):
        return lambda *inputs: _self_attention(*inputs, **flags)

    start = first_seed(seed)
    rule = forbidden_call(
        student_fn, _self_attention_inputs(seeded_generator(start)), LAYERS_CALLED
    )
    if rule:
        print(f"hint: {rule}")
        return False
    main_mistakes: list[tuple[dict, str]] = [
        (
            {"scale": "none"},
            "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax",
        ),
        ({"scale": "dk"}, "divide the scores by sqrt(d_k), not by d_k"),
        (
            {"scale": "sqrt_d"},
            "the scale uses the width d of X; use d_k, the width of the queries and keys",
        ),
        (
            {"axis": 1},
            "softmax over the wrong axis: each query's weights must sum to 1 over the keys, "
            "the last axis",
        ),
        (
            {"transposed": True},
            "the scores are transposed (K Q^T): row i must hold query i against every key, Q K^T",
        ),
        (
            {"padding": None},
            "padding ignored: keys at positions >= valid_lens must get weight 0",
        ),
        (
            {"padding": "queries"},
            "the padding mask hides queries instead of keys: valid_lens says which keys are "
            "real, so the mask runs along the last axis of the scores, (batch, 1, keys)",
        ),
        (
            {"masking": "zero"},
            "masked scores were set to 0, but a score of 0 still gets weight after the "
            "softmax: set them to -inf (or a large negative number)",
        ),
        (
            {"masking": "after"},
            "the mask was applied after the softmax: the weights left no longer sum to 1. "
            "Mask the scores, then take the softmax",
        ),
        ({"order": None}, "causal=True ignored: query i must not see the keys j > i"),
        (
            {"order": "diagonal"},
            "causal mask off by one: query i may see key i itself (keep j <= i, not j < i)",
        ),
        (
            {"order": "transposed"},
            "causal mask transposed: query i keeps the keys j <= i, not j >= i",
        ),
    ]
    # Each mistake with every way of treating a query that keeps no key, so that it is named
    # whether or not the answer gets that case right as well.
    mistakes = [
        (mistake(**flags, empty=empty), hint)
        for flags, hint in main_mistakes
        for empty in ("zero", "nan_to_num", "nan", "uniform")
    ]
    mistakes += [
        (
            mistake(empty="nan"),
            "NaN for the queries of a sequence of length 0: they keep no key, so their "
            "softmax is 0/0. Their outputs must be 0, as companion's are",
        ),
        (
            mistake(empty="uniform"),
            "the queries of a sequence of length 0 keep no key, so their outputs must be 0, "
            "as companion's are; yours average the padding",
        ),
    ]
    return check(
        student_fn,
        _reference,
        _self_attention_inputs,
        mistakes=mistakes,
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
