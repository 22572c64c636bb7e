"""Checkers for sec-efficient-attention, efficient attention: linear attention, plain and chunked.

The shapes are drawn afresh on every call (``seed=`` repeats a run, for tests), all different from
each other (so that a mixed-up axis shows as a shape) and never those of the chapter's own tensors,
so a solution that reads the notebook's variables instead of its arguments fails.

**The exercises' rules are checked too.** Right values are not enough when the point of the
exercise is the cost: each checker also runs the student's function once on a long sequence and
watches every tensor operation (:class:`_Work`, a ``TorchDispatchMode``). An answer that makes
a tensor as large as the ``(n_q, n_k)`` matrix (by a matrix product, or by broadcasting and a
sum), or whose operations produce a quadratic number of elements in all (a loop over the
queries), fails with a hint, as does a chunked answer that keeps the state of every position.
And since the student builds the layer, an answer that calls companion's ``LinearAttention``, or
the checker's own reference, fails too (:func:`companion.exercises.rules.forbidden_call`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from companion.exercises.core import Inputs, check, first_seed, run_student, seeded_generator
from companion.exercises.rules import CHECKER_CODE, forbidden_call
from companion.exercises.sizes import draw

# The chapter's self-attention examples have 6, 8 and 9 steps of width 4.
CHAPTER_STEPS, CHAPTER_WIDTH = (6, 8, 9), 4
# The inputs are float64: with features that can be negative (a known mistake), a query's
# normaliser can come close to 0 and magnify float32 rounding past the tolerance, so the
# mistake would no longer be recognised. A float32 answer still passes.
DTYPE = torch.float64
# The long sequence on which the cost is watched: n positions of width d (queries, keys and
# values), and the chunk the chunked exercise is given there.
LONG_N, LONG_D, LONG_CHUNK = 1024, 8, 8
# companion's layer: the exercises build it, so an answer must not call it.
FORBIDDEN = {
    "companion.layers.efficient.LinearAttention": (
        "your function calls companion's LinearAttention; the exercise is to build it: write "
        "it with tensor operations (feature_map, matrix products, sums)"
    ),
} | CHECKER_CODE


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


# ----------------------------------------------------------------------------- the rules


class _Work(TorchDispatchMode):
    """Watches every tensor operation: the largest result any one of them produces, and the
    number of elements they produce in all."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel())
                self.total += tensor.numel()
        return out


def _long_inputs(extra: tuple = ()) -> tuple:
    generator = seeded_generator(99)  # fixed inputs: whether the cost is quadratic is no draw
    qkv = (torch.randn(1, LONG_N, LONG_D, generator=generator) for _ in range(3))
    return (*qkv, *extra)


def _broken_rule(
    student_fn: Callable,
    small: tuple,
    long: tuple,
    expected: torch.Tensor,
    advice: str,
    *,
    one_state: bool = False,
) -> str | None:
    """The hint for the first rule the answer breaks, or None.

    The rules: do not call companion's layer or the checker's code (watched on the ``small``
    inputs); and on the ``long`` ones, make no tensor as large as half the ``(n, n)`` matrix,
    and produce fewer elements in all than the ``n^2`` scores. With ``one_state`` (the chunked
    form), make no tensor as large as half the states of all ``n`` positions either (``n d_k
    d_v`` numbers): the non-causal form may broadcast ``phi(k_j) v_j^T`` before summing it,
    which is O(n). ``advice`` says what to do instead. An answer that raises or gives wrong
    values is left to the value checks, which say why."""
    hint = forbidden_call(student_fn, small, FORBIDDEN)
    if hint:
        return hint
    n, d = LONG_N, LONG_D
    work = _Work()
    with torch.no_grad(), work:
        got, verdict = run_student(student_fn, *long)
    if verdict or not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return None
    if not torch.allclose(got.to(expected.dtype), expected, atol=1e-4):
        return None
    size = f"at n = {n}, d_k = d_v = {d}"
    if work.largest >= n * n // 2:
        return (
            f"the values are right, but your function made a tensor of {work.largest:,} numbers "
            f"{size}: the (n, n) matrix or larger, O(n^2) memory. {advice}"
        )
    if one_state and work.largest >= n * d * d // 2:
        return (
            f"the values are right, but your function made a tensor of {work.largest:,} numbers "
            f"{size}, as many as the states S_1..S_n of every position ({n * d * d:,}). "
            f"{advice}"
        )
    if work.total >= n * n:
        return (
            f"the values are right, but your function's operations produce {work.total:,} "
            f"numbers in all {size}, more than the {n * n:,} scores: O(n^2) work, such as a "
            f"loop over the queries that reads every key. {advice}"
        )
    return None


# ----------------------------------------------------------------------------- linear attention


def _linear_inputs(generator: torch.Generator) -> Inputs:
    batch, num_queries, num_keys, d_k, d_v = _distinct_sizes(
        generator, (2, 3), (3, 11), (3, 11), (2, 7), (2, 7)
    )
    queries = torch.randn(batch, num_queries, d_k, generator=generator, dtype=DTYPE)
    keys = torch.randn(batch, num_keys, d_k, generator=generator, dtype=DTYPE)
    values = torch.randn(batch, num_keys, d_v, generator=generator, dtype=DTYPE)
    return queries, keys, values


def _weighted(queries, keys, values, weights, normaliser=None, phi_q=_phi, phi_k=_phi, empty=0.0):
    """``(batch, n_q, d_v)`` outputs of linear attention in the quadratic form, each similarity
    ``phi(q_i)^T phi(k_j)`` multiplied by ``weights[i, j]`` (1 for a key the query sees, 0 for one
    it must not; 2 for one counted twice). The normaliser sums the similarities with
    ``normaliser`` (``weights`` when None); ``normaliser=False`` leaves it out. Each known
    mistake is one choice of the weights away. A query that sees no key gets ``empty``: 0, or
    the NaN of 0 / 0 that a mistake leaving out the diagonal gives at the first position."""
    similarity = phi_q(queries) @ phi_k(keys).transpose(1, 2)  # (batch, n_q, n_k)
    numerator = (similarity * weights) @ values
    if normaliser is False:
        return numerator
    totals = (similarity * (weights if normaliser is None else normaliser)).sum(-1, keepdim=True)
    return (numerator / totals).masked_fill(totals == 0, empty)  # a query that sees no key


def _linear_attention(queries, keys, values, phi_q=_phi, phi_k=_phi, normalise=True):
    weights = torch.ones(queries.shape[1], keys.shape[1], dtype=queries.dtype)
    return _weighted(queries, keys, values, weights, None if normalise else False, phi_q, phi_k)


def check_linear_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-efficient-attention: ``student_fn(queries, keys, values)`` returns the ``(batch, n_q,
    d_v)`` outputs of linear attention, ``phi(Q) (phi(K)^T V) / (phi(Q) phi(K)^T 1)`` with ``phi(x)
    = elu(x) + 1``, for queries ``(batch, n_q, d_k)``, keys ``(batch, n_k, d_k)`` and values
    ``(batch, n_k, d_v)``, in O(n) time: no ``(n_q, n_k)`` matrix, and not by calling companion's
    ``LinearAttention``."""
    long = _long_inputs()
    small = _linear_inputs(seeded_generator(first_seed(seed)))
    advice = "Multiply phi(K)^T V first, a (d_k, d_v) matrix: never pair every query with every key"
    hint = _broken_rule(student_fn, small, long, _linear_attention(*long), advice)
    if hint:
        print(f"hint: {hint}")
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


# ----------------------------------------------------------------------------- chunked, causal


def _chunk_weights(n: int, chunk: int, how: str = "right") -> torch.Tensor:
    """``(n, n)`` weights of causal linear attention computed in chunks of ``chunk`` positions:
    query ``i`` sees the keys of earlier chunks (through the state) and keys ``j <= i`` of its own
    chunk. ``how`` names a mistake instead: "block_diagonal" (no state from earlier chunks),
    "unmasked" (the whole own chunk, future keys included), "strict" (the own chunk's keys
    ``j < i``), "early_update" (the state already holds the own chunk, which then counts twice),
    "none" (every key)."""
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    earlier, same = j // chunk < i // chunk, j // chunk == i // chunk
    weights = {
        "right": earlier | (same & (j <= i)),
        "block_diagonal": same & (j <= i),
        "unmasked": earlier | same,
        "strict": earlier | (same & (j < i)),
        "early_update": (earlier | same).double() + (same & (j <= i)).double(),
        "none": torch.ones(n, n, dtype=torch.bool),
    }[how]
    return weights.to(DTYPE)


def _chunked(queries, keys, values, chunk, how="right", normaliser=None, empty=0.0):
    weights = _chunk_weights(queries.shape[1], chunk, how).to(queries.dtype)
    if normaliser == "all":
        normaliser = torch.ones_like(weights)
    return _weighted(queries, keys, values, weights, normaliser, empty=empty)


def _chunked_inputs(generator: torch.Generator) -> Inputs:
    batch, n, d_k, d_v = _distinct_sizes(generator, (2, 3), (7, 13), (2, 7), (2, 7))
    chunk = draw(generator, 2, n - 2, avoid=[c for c in range(2, n) if n % c == 0])
    queries = torch.randn(batch, n, d_k, generator=generator, dtype=DTYPE)
    keys = torch.randn(batch, n, d_k, generator=generator, dtype=DTYPE)
    values = torch.randn(batch, n, d_v, generator=generator, dtype=DTYPE)
    return queries, keys, values, chunk


def check_chunked_linear_attention(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-efficient-attention: ``student_fn(queries, keys, values, chunk)`` returns the ``(batch,
    n, d_v)`` outputs of causal linear attention, output ``i`` being ``phi(q_i)^T S_i / phi(q_i)^T
    z_i`` with ``S_i = sum_{j<=i} phi(k_j) v_j^T`` and ``z_i = sum_{j<=i} phi(k_j)``, computed in
    chunks of ``chunk`` positions (the last one may be shorter): inside a chunk the masked
    quadratic form, across chunks one running state ``(S, z)``. The rules: no ``(n, n)`` matrix,
    no state per position (``(n, d_k, d_v)``), and not companion's ``LinearAttention``."""
    long = _long_inputs((LONG_CHUNK,))
    small = _chunked_inputs(seeded_generator(first_seed(seed)))
    advice = (
        "Inside a chunk, the masked (chunk, chunk) scores; across chunks, one state (S, z) "
        "of shapes (d_k, d_v) and (d_k,), read by the chunk's queries, then updated"
    )
    hint = _broken_rule(student_fn, small, long, _chunked(*long), advice, one_state=True)
    if hint:
        print(f"hint: {hint}")
        return False

    def mistake(how: str, normaliser=None, empty=0.0) -> Callable[..., torch.Tensor]:
        return lambda q, k, v, chunk: _chunked(q, k, v, chunk, how, normaliser, empty)

    strict = (
        "inside a chunk, the current key is left out: query i must see keys j <= i, the "
        "diagonal included (tril, not tril(-1))"
    )

    return check(
        student_fn,
        _chunked,
        _chunked_inputs,
        mistakes=[
            (
                mistake("none"),
                "not causal: output i uses future keys j > i. Each query sees the state of the "
                "earlier chunks and the keys j <= i of its own chunk",
            ),
            (
                mistake("block_diagonal"),
                "each chunk attends only to itself: add the state (S, z) of the earlier chunks "
                "to every query's numerator and normaliser, then add this chunk to the state",
            ),
            (
                mistake("unmasked"),
                "inside a chunk, query i sees the chunk's later keys: mask the chunk's scores "
                "to keys j <= i (a lower triangle)",
            ),
            (mistake("strict", empty=torch.nan), strict),
            (mistake("strict"), strict),
            (
                mistake("early_update"),
                "the chunk is counted twice: its queries read the state after it was updated "
                "with this chunk, and the masked scores add the chunk again. Read the state "
                "first, update it after",
            ),
            (
                mistake("right", normaliser="all"),
                "the normaliser is not causal: z_i sums phi(k_j) over j <= i, like the "
                "numerator, not over every key",
            ),
            (
                mistake("right", normaliser=False),
                "the normaliser is missing: divide by phi(q_i)^T z_i",
            ),
        ],
        shape_hints=[
            (
                lambda q, k, v, chunk: (q.shape[0], q.shape[1] // chunk * chunk, v.shape[-1]),
                "the last, shorter chunk is missing: when chunk does not divide n, the last "
                "chunk holds the n % chunk positions left",
            )
        ],
        seed=seed,
    )
