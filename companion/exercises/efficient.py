"""Checkers for sec-efficient-attention, efficient attention: linear attention, plain and causal.

The shapes are drawn afresh on every call (``seed=`` repeats a run, for tests), all different from
each other (so that a mixed-up axis shows as a shape) and never those of the chapter's own tensors,
so a solution that reads the notebook's variables instead of its arguments fails.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from companion.exercises.core import Inputs, check, seeded_generator
from companion.exercises.sizes import draw

# The chapter's self-attention examples have 6, 8 and 9 steps of width 4.
CHAPTER_STEPS, CHAPTER_WIDTH = (6, 8, 9), 4
# The inputs are float64: with features that can be negative (a known mistake), a query's
# normaliser can come close to 0 and magnify float32 rounding past the tolerance, so the
# mistake would no longer be recognised. A float32 answer still passes.
DTYPE = torch.float64


def _phi(x: torch.Tensor) -> torch.Tensor:
    return F.elu(x) + 1


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


def _distinct_sizes(generator: torch.Generator, *ranges: tuple[int, int]) -> list[int]:
    """One size from each ``(low, high)`` range, all of them different, none the chapter's."""
    while True:
        sizes = [draw(generator, low, high) for low, high in ranges]
        if len(set(sizes)) == len(sizes) and not {*CHAPTER_STEPS, CHAPTER_WIDTH} & {*sizes[1:]}:
            return sizes


def _linear_inputs(generator: torch.Generator) -> Inputs:
    batch, num_queries, num_keys, d_k, d_v = _distinct_sizes(
        generator, (2, 3), (3, 11), (3, 11), (2, 7), (2, 7)
    )
    queries = torch.randn(batch, num_queries, d_k, generator=generator, dtype=DTYPE)
    keys = torch.randn(batch, num_keys, d_k, generator=generator, dtype=DTYPE)
    values = torch.randn(batch, num_keys, d_v, generator=generator, dtype=DTYPE)
    return queries, keys, values


def _linear_attention(
    queries, keys, values, phi_q=_phi, phi_k=_phi, normalise=True, mask: str = "none"
):
    """``(batch, n_q, d_v)`` outputs of linear attention, built from the quadratic form so that
    each known mistake is one argument away: ``mask`` is "none", "causal", "anticausal" (keys
    j >= i), "strict" (keys j < i) or "numerator" (causal numerator, normaliser over all)."""
    similarity = phi_q(queries) @ phi_k(keys).transpose(1, 2)  # (batch, n_q, n_k)
    n_q, n_k = similarity.shape[1:]
    allowed = {
        "none": torch.ones(n_q, n_k, dtype=torch.bool),
        "causal": torch.ones(n_q, n_k, dtype=torch.bool).tril(),
        "anticausal": torch.ones(n_q, n_k, dtype=torch.bool).triu(),
        "strict": torch.ones(n_q, n_k, dtype=torch.bool).tril(-1),
        "numerator": torch.ones(n_q, n_k, dtype=torch.bool).tril(),
    }[mask]
    totals = similarity.sum(dim=-1, keepdim=True)  # over all keys
    similarity = similarity * allowed
    if mask != "numerator":
        totals = similarity.sum(dim=-1, keepdim=True)  # over the allowed keys
    if not normalise:
        return similarity @ values
    totals = totals.masked_fill(totals == 0, 1.0)  # a query with no key: output 0
    return similarity / totals @ values


def _quadratic_cost(student_fn: Callable[..., torch.Tensor]) -> bool:
    """True when ``student_fn`` gives the right values on a long sequence but its matrix
    products cost O(n^2): it formed the (n, n) matrix phi(Q) phi(K)^T."""
    n, d = 256, 8
    generator = seeded_generator(99)  # fixed inputs: whether the cost is quadratic is no draw
    queries, keys, values = (torch.randn(1, n, d, generator=generator) for _ in range(3))
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            got = student_fn(queries, keys, values)
        right = torch.allclose(got, _linear_attention(queries, keys, values), atol=1e-5)
    except Exception:  # any failure is reported by the value check that follows
        return False
    linear = 4 * n * d * d + 2 * n * d  # phi(K)^T V, phi(Q) S and phi(Q) z
    return right and counter.get_total_flops() > 4 * linear  # n^2 d = 64 x n d^2 here


def check_linear_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-efficient-attention: ``student_fn(queries, keys, values)`` returns the ``(batch, n_q,
    d_v)`` outputs of linear attention, ``phi(Q) (phi(K)^T V) / (phi(Q) phi(K)^T 1)`` with ``phi(x)
    = elu(x) + 1``, for queries ``(batch, n_q, d_k)``, keys ``(batch, n_k, d_k)`` and values
    ``(batch, n_k, d_v)``, in O(n) time: no ``(n_q, n_k)`` matrix."""
    if _quadratic_cost(student_fn):
        print(
            "hint: the values are right, but in the quadratic order: (phi(Q) phi(K)^T) V builds "
            "the (n_q, n_k) matrix, O(n^2). Multiply phi(K)^T V first, a (d_k, d_v) matrix"
        )
        return False
    return check(
        student_fn,
        _linear_attention,
        _linear_inputs,
        mistakes=[
            (
                lambda q, k, v: _linear_attention(q, k, v, normalise=False),
                "the normaliser is missing: divide phi(Q) (phi(K)^T V) by phi(Q) (phi(K)^T 1), "
                "the sum of each query's similarities",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, phi_k=_identity),
                "phi is not applied to the keys: use phi(K) in both the sum and the normaliser",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, phi_q=_identity),
                "phi is not applied to the queries",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, phi_q=F.elu, phi_k=F.elu),
                "phi(x) is elu(x) + 1: elu alone goes negative, and the normaliser can reach 0",
            ),
            (
                lambda q, k, v: torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, -1) @ v,
                "that is softmax attention; linear attention uses phi(q)^T phi(k) instead of "
                "exp(q^T k / sqrt(d))",
            ),
        ],
        seed=seed,
    )


def _causal_inputs(generator: torch.Generator) -> Inputs:
    batch, n, d_k, d_v = _distinct_sizes(generator, (2, 3), (3, 11), (2, 7), (2, 7))
    queries = torch.randn(batch, n, d_k, generator=generator, dtype=DTYPE)
    keys = torch.randn(batch, n, d_k, generator=generator, dtype=DTYPE)
    values = torch.randn(batch, n, d_v, generator=generator, dtype=DTYPE)
    return queries, keys, values


def check_causal_linear_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-efficient-attention: ``student_fn(queries, keys, values)`` returns the ``(batch, n,
    d_v)`` outputs of causal linear attention: output ``i`` is ``phi(q_i)^T S_i / phi(q_i)^T z_i``
    with the running sums ``S_i = sum_{j<=i} phi(k_j) v_j^T`` and ``z_i = sum_{j<=i} phi(k_j)``, for
    queries and keys ``(batch, n, d_k)`` and values ``(batch, n, d_v)``."""
    return check(
        student_fn,
        lambda q, k, v: _linear_attention(q, k, v, mask="causal"),
        _causal_inputs,
        mistakes=[
            (
                lambda q, k, v: _linear_attention(q, k, v),
                "not causal: output i uses future keys j > i. Sum phi(k_j) v_j^T and phi(k_j) "
                "only over j <= i (a cumulative sum, or the recurrence S_i = S_{i-1} + ...)",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, mask="numerator"),
                "the normaliser is not causal: z_i must be the running sum of phi(k_j) over "
                "j <= i too, not the sum over all keys",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, mask="anticausal"),
                "the mask keeps keys j >= i (an upper triangle): query i must see keys j <= i",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, mask="strict"),
                "the current key is left out: query i must see keys 0..i, including i itself "
                "(add phi(k_i) v_i^T to S before reading out)",
            ),
            (
                lambda q, k, v: _linear_attention(q, k, v, mask="causal", normalise=False),
                "the normaliser is missing: divide by phi(q_i)^T z_i",
            ),
        ],
        seed=seed,
    )
