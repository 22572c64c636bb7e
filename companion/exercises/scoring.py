"""Checkers for the exercises of sec-attention-scoring (attention scoring functions).

``check_masked_softmax`` checks a masked softmax built from scratch (the chapter's
build-it-yourself): ``valid_lens`` of shape ``(batch,)`` and ``(batch, queries)``, lengths of 0
(such a query gets all-zero weights, as companion's do), and a ``causal`` flag.
``check_scaled_dot_product`` checks scaled dot-product attention with a padding mask. Both name
the usual mistakes: the wrong softmax axis, a missing or misplaced mask, a missing or wrong
scale, a causal mask off by one, a query with no key left uniform or NaN.

Each exercise has a rule the values cannot check, and the checker enforces it
(:mod:`companion.exercises.rules`): the masked softmax is written without companion's
attention code or torch's ready-made masked softmax and fused attention (which, given the
identity as its values, returns a masked softmax), and scaled dot-product attention without
``DotProductAttention`` or PyTorch's fused ``scaled_dot_product_attention``, under any of
torch's names for it (``masked_softmax`` is allowed there).

The sizes (batch, queries, keys, the width ``d`` of queries and keys, the width of the values)
are drawn afresh on every call, all different from each other, so that a swapped axis or a
scale by the wrong size shows; and never the chapter's own (batches of 1, 2 and 4, 1 to 6
queries, 4 to 10 keys, widths 2 to 8, 20, 64 and 256), so a solution that reads the chapter's
``X``, ``Q``, ``K``, ``V`` or ``valid_lens`` instead of its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from companion.exercises.adapters import on_copies
from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.layers.attention import masked_softmax

# The sizes of the chapter's own tensors, which the checkers' inputs never have.
CHAPTER_BATCHES, CHAPTER_QUERIES, CHAPTER_KEYS = (1, 2, 4), (1, 2, 3, 5, 6), (4, 5, 6, 7, 10)
CHAPTER_WIDTHS = (1, 2, 3, 4, 8, 20, 64, 256)
NEGATIVE = -1e6  # what the mistakes fill masked scores with, as d2l does

WRONG_AXIS = "softmax over the wrong axis: normalise each query's scores over the keys (dim=-1)"
NOT_MASKED = (
    "padding not masked: keys at positions >= valid_lens must get weight 0, so set their "
    "scores to a large negative number (such as -1e6) before the softmax"
)
MASKED_WITH_ZERO = (
    "masked scores were set to 0, but a score of 0 still gets weight after the softmax: "
    "fill them with a large negative number such as -1e6"
)
MASKED_AFTER = (
    "the mask was applied after the softmax: the weights of the valid keys no longer sum to 1. "
    "Mask the scores, then take the softmax"
)
PER_QUERY_IGNORED = (
    "valid_lens per query ignored: with valid_lens of shape (batch, queries), query i of batch "
    "row b keeps its own first valid_lens[b, i] keys"
)
NO_KEY_UNIFORM = (
    "a query with valid length 0 has no key to attend to, so its weights must all be 0; yours "
    "spread them evenly over the padding. Set the rows that keep no key to 0 after the softmax"
)
NO_KEY_NAN = (
    "NaN for a query with valid length 0: with -inf as the fill its softmax is 0/0. Fill with a "
    "large finite negative number, then set the rows that keep no key to 0"
)
CAUSAL_IGNORED = "causal=True ignored: query i must not see the keys j > i"
CAUSAL_DIAGONAL = "causal mask off by one: query i may see key i itself (keep j <= i, not j < i)"
CAUSAL_TRANSPOSED = "causal mask transposed: query i keeps the keys j <= i, not j >= i"
OWN_SOFTMAX = (
    "the answer calls companion's attention code (masked_softmax or its mask): the exercise is "
    "to build the masked softmax yourself, from torch operations"
)
TORCH_SHORTCUT = (
    "the answer calls torch's own masked softmax or fused attention (scaled_dot_product_attention "
    "returns a masked softmax when its values are the identity): the exercise is to build the "
    "masked softmax yourself, from a mask, a fill and a softmax"
)
OWN_ATTENTION = (
    "the answer calls a finished attention layer (DotProductAttention, or PyTorch's "
    "scaled_dot_product_attention): compute the scores, the masked softmax and the weighted "
    "sum yourself (masked_softmax is allowed)"
)


def _keep(
    valid_lens: torch.Tensor, num_queries: int, num_keys: int, causal: str | None = None
) -> torch.Tensor:
    """True where a query may attend to a key: ``(batch, queries or 1, keys)``. ``causal`` is
    ``None`` (no causal mask), ``"right"`` (key j <= query i) or a mistake: ``"diagonal"``
    (j < i) or ``"transposed"`` (j >= i); causal scores are square."""
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens  # (batch, 1 or queries)
    keep = torch.arange(num_keys) < lens[..., None]
    if causal is not None:
        i, j = torch.arange(num_queries)[:, None], torch.arange(num_keys)[None, :]
        order = {"right": j <= i, "diagonal": j < i, "transposed": j >= i}[causal]
        keep = keep & order  # (batch, queries, keys)
    return keep


def _softmax_variant(
    X: torch.Tensor,
    valid_lens: torch.Tensor,
    causal: bool = False,
    *,
    axis: int = -1,
    fill: float | None = NEGATIVE,
    after: bool = False,
    how: str = "right",
    zero_empty: bool = True,
) -> torch.Tensor:
    """A masked softmax, right or wrong: ``fill=None`` skips the mask, ``after`` zeroes the
    weights of masked keys after an unmasked softmax instead of masking the scores, ``how`` is
    the causal mask's kind (see :func:`_keep`), and ``zero_empty=False`` leaves the rows of a
    query that keeps no key as the softmax made them (uniform, or NaN with ``-inf``)."""
    keep = _keep(valid_lens, X.shape[1], X.shape[2], how if causal else None)
    if after:
        return torch.softmax(X, dim=axis) * keep
    if fill is not None:
        X = X.masked_fill(~keep, fill)
    weights = torch.softmax(X, dim=axis)
    if zero_empty and fill is not None:
        weights = weights * keep.any(dim=-1, keepdim=True)
    return weights


def _one_length_per_row(valid_lens: torch.Tensor, pick: str) -> torch.Tensor:
    """The mistake of reducing ``(batch, queries)`` lengths to one length per batch row."""
    if valid_lens.dim() == 1:
        return valid_lens
    return valid_lens[:, 0] if pick == "first" else valid_lens.max(dim=1).values


def _sizes(generator: torch.Generator) -> tuple[int, int, int]:
    """``(batch, queries, keys)``: all different, none of them the chapter's."""
    batch = draw(generator, 3, 6, avoid=CHAPTER_BATCHES)
    queries = draw(generator, 3, 12, avoid=(*CHAPTER_QUERIES, batch))
    keys = draw(generator, 3, 14, avoid=(*CHAPTER_KEYS, batch, queries))
    return batch, queries, keys


def _valid_lens(generator: torch.Generator, shape: tuple[int, ...], keys: int) -> torch.Tensor:
    # 1 to keys - 1: every query has a valid key and at least one padded one.
    return torch.randint(1, keys, shape, generator=generator)


def _masked_softmax_inputs(generator: torch.Generator) -> Inputs:
    # Trials cycle through four cases (their seeds are consecutive): valid_lens of shape
    # (batch,) or (batch, queries), each without and with causal (square scores then). Every
    # trial has a query with valid length 0 and padded keys for every other one.
    case = generator.initial_seed() % 4
    two_d, causal = case % 2 == 1, case >= 2
    batch, queries, keys = _sizes(generator)
    keys = queries if causal else keys
    X = 2 * torch.randn(batch, queries, keys, generator=generator)  # scores
    valid_lens = _valid_lens(generator, (batch, queries) if two_d else (batch,), keys)
    empty = int(torch.randint(batch, (1,), generator=generator))  # a batch row, or its query
    if two_d:
        valid_lens[empty, int(torch.randint(queries, (1,), generator=generator))] = 0
    else:
        valid_lens[empty] = 0
    return X, valid_lens, causal


def _reference_masked_softmax(X: torch.Tensor, valid_lens: torch.Tensor, causal: bool):
    return masked_softmax(X, valid_lens, causal=causal)


def check_masked_softmax(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-attention-scoring: ``student_fn(X, valid_lens, causal)`` returns the softmax of the
    scores ``X`` ``(batch, queries, keys)`` over the keys, with weight 0 on every key at a
    position ``>= valid_lens`` and, with ``causal`` (square ``X``), on every key ``j > i`` of
    query ``i``. ``valid_lens`` has shape ``(batch,)`` (one length per batch row) or ``(batch,
    queries)`` (one per query); a query that keeps no key gets all-zero weights. The answer
    builds it from torch operations: one that calls companion's attention code fails."""
    start = first_seed(seed)
    inputs = _masked_softmax_inputs(seeded_generator(start))
    rules = {
        "companion.layers.attention": OWN_SOFTMAX,
        "torch._C._nn.scaled_dot_product_attention": TORCH_SHORTCUT,
        "torch._VariableFunctionsClass._masked_softmax": TORCH_SHORTCUT,
        "torch.nn.functional.multi_head_attention_forward": TORCH_SHORTCUT,
    }
    hint = forbidden_call(on_copies(student_fn), inputs, rules)
    if hint:
        print(f"hint: {hint}")
        return False

    def variant(**how) -> Callable[..., torch.Tensor]:
        lens = how.pop("lens", None)
        causal = how.pop("causal", None)
        return lambda X, v, c: _softmax_variant(
            X,
            v if lens is None else _one_length_per_row(v, lens),
            c if causal is None else causal,
            **how,
        )

    cases: list[tuple[dict[str, Any], str]] = [
        ({"axis": 1}, WRONG_AXIS),
        ({"axis": 1, "fill": None}, WRONG_AXIS),
        ({"fill": None}, NOT_MASKED),
        ({"fill": 0.0}, MASKED_WITH_ZERO),
        ({"after": True}, MASKED_AFTER),
        ({"lens": "first"}, PER_QUERY_IGNORED),
        ({"lens": "max"}, PER_QUERY_IGNORED),
        ({"causal": False}, CAUSAL_IGNORED),
        ({"how": "diagonal"}, CAUSAL_DIAGONAL),
        ({"how": "transposed"}, CAUSAL_TRANSPOSED),
    ]
    # Each mistake twice: with the rows of a query that keeps no key set to 0, and without
    # (uniform), so that it is named whether or not the answer handles length 0 as well.
    mistakes = [
        (variant(**how, zero_empty=zero_empty), hint)
        for how, hint in cases
        for zero_empty in (True, False)
    ]
    mistakes += [
        (variant(zero_empty=False), NO_KEY_UNIFORM),
        (variant(fill=-math.inf, zero_empty=False), NO_KEY_NAN),
    ]
    return check(
        on_copies(student_fn),  # an in-place fill must not change what the mistakes see
        _reference_masked_softmax,
        _masked_softmax_inputs,
        mistakes=mistakes,
        seed=start,
    )


def _dot_product_inputs(generator: torch.Generator) -> Inputs:
    batch, num_queries, num_keys = _sizes(generator)
    # d and v differ from each other and from the other sizes: a scale by any other size shows.
    d = draw(generator, 5, 24, avoid=(*CHAPTER_WIDTHS, batch, num_queries, num_keys))
    v = draw(generator, 2, 12, avoid=(*CHAPTER_WIDTHS, batch, num_queries, num_keys, d))
    queries = torch.randn(batch, num_queries, d, generator=generator)  # (batch, queries, d)
    keys = torch.randn(batch, num_keys, d, generator=generator)  # (batch, keys, d)
    values = torch.randn(batch, num_keys, v, generator=generator)  # (batch, keys, v)
    return queries, keys, values, _valid_lens(generator, (batch,), num_keys)


def _scaled_dot_product(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor,
    *,
    scale: float | None = None,
    axis: int = -1,
    mask: bool = True,
    fill: float = NEGATIVE,
) -> torch.Tensor:
    """softmax(Q K^T / scale) V, right (the defaults: scale sqrt(d)) or wrong."""
    scale = math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = queries @ keys.transpose(1, 2) / scale  # (batch, queries, keys)
    weights = _softmax_variant(scores, valid_lens, axis=axis, fill=fill if mask else None)
    return weights @ values  # (batch, queries, value features)


def _reference_dot_product(queries, keys, values, valid_lens) -> torch.Tensor:
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    return masked_softmax(scores, valid_lens) @ values


def check_scaled_dot_product(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-attention-scoring: ``student_fn(queries, keys, values, valid_lens)`` returns
    ``softmax(Q K^T / sqrt(d)) V`` of shape ``(batch, queries, value features)``, where keys at
    positions ``>= valid_lens`` (shape ``(batch,)``) get weight 0. Queries and keys have ``d``
    features; values may have another number."""
    wrong_size = (
        "the scale uses the wrong size: d is the feature size that queries and keys share, "
        "queries.shape[-1]"
    )
    start = first_seed(seed)
    finished_layers = {
        "companion.layers.attention.DotProductAttention": OWN_ATTENTION,
        "companion.layers.attention.MultiHeadAttention": OWN_ATTENTION,
        "companion.layers.attention.fused_attention": OWN_ATTENTION,
        "torch._C._nn.scaled_dot_product_attention": OWN_ATTENTION,
        "torch.nn.functional.multi_head_attention_forward": OWN_ATTENTION,
    }
    inputs = _dot_product_inputs(seeded_generator(start))
    hint = forbidden_call(on_copies(student_fn), inputs, finished_layers)
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        on_copies(student_fn),
        _reference_dot_product,
        _dot_product_inputs,
        mistakes=[
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, scale=1.0),
                "missing scale: divide the scores Q K^T by sqrt(d) before the softmax",
            ),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, scale=q.shape[-1]),
                "divided by d instead of sqrt(d): the scores are now too flat",
            ),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, scale=v.shape[-1] ** 0.5),
                wrong_size,
            ),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, scale=k.shape[1] ** 0.5),
                wrong_size,
            ),
            (lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, axis=1), WRONG_AXIS),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, axis=1, mask=False),
                WRONG_AXIS,
            ),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, mask=False),
                "mask missing: keys at positions >= valid_lens must get weight 0",
            ),
            (
                lambda q, k, v, lens: _scaled_dot_product(q, k, v, lens, fill=0.0),
                MASKED_WITH_ZERO,
            ),
        ],
        seed=start,
    )
