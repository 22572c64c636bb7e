"""Checkers for the exercises of sec-attention-scoring (attention scoring functions).

``check_masked_softmax`` checks a masked softmax with ``valid_lens`` of shape ``(batch,)`` and
``(batch, queries)``; ``check_scaled_dot_product`` checks scaled dot-product attention with a
padding mask. Both name the usual mistakes: the wrong softmax axis, a missing or misplaced mask,
a missing or wrong scale.

The sizes (batch, queries, keys, the width ``d`` of queries and keys, the width of the values)
are drawn afresh on every call, all different from each other, so that a swapped axis or a
scale by the wrong size shows; and never the chapter's own (batches of 1, 2 and 4, 1 to 6
queries, 4 to 10 keys, widths 2 to 8, 20, 64 and 256), so a solution that reads the chapter's
``X``, ``Q``, ``K``, ``V`` or ``valid_lens`` instead of its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.adapters import on_copies
from companion.exercises.core import Inputs, check
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


def _keep(valid_lens: torch.Tensor, num_queries: int, num_keys: int) -> torch.Tensor:
    """True where a query may attend to a key: ``(batch, queries or 1, keys)``."""
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens  # (batch, 1 or queries)
    return torch.arange(num_keys) < lens[..., None]


def _softmax_variant(
    X: torch.Tensor,
    valid_lens: torch.Tensor,
    *,
    axis: int = -1,
    fill: float | None = NEGATIVE,
    after: bool = False,
) -> torch.Tensor:
    """A masked softmax, right or wrong: ``fill=None`` skips the mask, ``after`` zeroes the
    weights of masked keys after an unmasked softmax instead of masking the scores."""
    keep = _keep(valid_lens, X.shape[1], X.shape[2])
    if after:
        return torch.softmax(X, dim=axis) * keep
    if fill is not None:
        X = X.masked_fill(~keep, fill)
    return torch.softmax(X, dim=axis)


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
    # Trials alternate (their seeds are consecutive): valid_lens of shape (batch,) and of shape
    # (batch, queries). Both must work.
    two_d = generator.initial_seed() % 2 == 1
    batch, queries, keys = _sizes(generator)
    X = 2 * torch.randn(batch, queries, keys, generator=generator)  # scores
    return X, _valid_lens(generator, (batch, queries) if two_d else (batch,), keys)


def check_masked_softmax(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-attention-scoring: ``student_fn(X, valid_lens)`` returns the softmax of the scores ``X``
    ``(batch, queries, keys)`` over the keys, with weight 0 on every key at a position
    ``>= valid_lens``. ``valid_lens`` has shape ``(batch,)`` (one length per batch row) or
    ``(batch, queries)`` (one per query), and is at least 1."""
    return check(
        on_copies(student_fn),  # an in-place fill must not change what the mistakes see
        masked_softmax,
        _masked_softmax_inputs,
        mistakes=[
            (lambda X, v: _softmax_variant(X, v, axis=1), WRONG_AXIS),
            (lambda X, v: _softmax_variant(X, v, axis=1, fill=None), WRONG_AXIS),
            (lambda X, v: _softmax_variant(X, v, fill=None), NOT_MASKED),
            (lambda X, v: _softmax_variant(X, v, fill=0.0), MASKED_WITH_ZERO),
            (lambda X, v: _softmax_variant(X, v, after=True), MASKED_AFTER),
            (lambda X, v: _softmax_variant(X, _one_length_per_row(v, "first")), PER_QUERY_IGNORED),
            (lambda X, v: _softmax_variant(X, _one_length_per_row(v, "max")), PER_QUERY_IGNORED),
        ],
        seed=seed,
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
        seed=seed,
    )
