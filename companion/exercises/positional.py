"""Checkers for sec-positional-encoding, positional encoding.

The mistakes they name are the ones people make with the sinusoidal table (sine and cosine
swapped, a wrong exponent or base, the split layout, positions counted from 1), with the
rotation that shifts it (transposed, a wrong sign, the angle without the offset), and with
ALiBi's causal bias (slopes counted from 0 or in the wrong order, a reward instead of a penalty,
the mask missing, zero-filled or transposed). An answer that calls the code it is asked to write
(``PositionalEncoding``, ``alibi_bias``) is told so, though its numbers are right.

The sizes are drawn afresh on every call (``seed=`` repeats a run, for tests), and never the
chapter's own (width ``d = 32``, ``n = 60`` positions, offsets of a few hundred), so a solution that
reads the notebook's variables instead of its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.layers.positional import PositionalEncoding

BASE = 10000.0

SWAPPED = (
    "sine and cosine are swapped: the even columns 2j hold sin(i / 10000^(2j/d)), the odd "
    "columns 2j+1 hold the cosine"
)
EXPONENT_WITHOUT_2 = (
    "the exponent is 2j/d, where j counts the (sin, cos) pairs: your angles are "
    "i / 10000^(j/d) (the same as i / 100^(2j/d)), so the slowest wavelength is about "
    "2 pi 100 instead of 2 pi 10000"
)
EXPONENT_PER_COLUMN = (
    "the frequency must be the same for both columns of a pair: column 2j and column 2j+1 both "
    "use 10000^(2j/d), with j the index of the pair, not of the column"
)
MULTIPLIED = "divide the position by 10000^(2j/d); you multiplied by it"
WRONG_BASE = "the base of the power is 10000: the angles are i / 10000^(2j/d)"
SPLIT_LAYOUT = (
    "that is the split layout (all sines, then all cosines); interleave them: sines in "
    "columns 0, 2, 4, ..., cosines in columns 1, 3, 5, ..."
)
FROM_ONE = "positions start at 0: row 0 of the table is (0, 1, 0, 1, ...)"
OWN_TABLE = {
    "companion.layers.positional": (
        "the answer reads companion's PositionalEncoding: the exercise is to compute the table "
        "yourself, with torch.sin and torch.cos"
    )
}


def _obeys(student_fn: Callable, inputs: Inputs, forbidden: dict[str, str]) -> bool:
    """False, with the hint printed, when ``student_fn(*inputs)`` calls what the exercise asks
    the student to write."""
    hint = forbidden_call(student_fn, inputs, forbidden)
    if hint:
        print(f"hint: {hint}")
    return hint is None


def _angles(max_len: int, num_pairs: int, exponents: torch.Tensor, base: float) -> torch.Tensor:
    """``i / base^exponent`` for positions ``i`` and one exponent per pair: ``(max_len, pairs)``."""
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]
    return positions / base ** exponents[None, :num_pairs]


def _sinusoidal(
    max_len: int,
    num_hiddens: int,
    *,
    base: float = BASE,
    exponent: str = "2j/d",
    swapped: bool = False,
    multiplied: bool = False,
    split: bool = False,
    first: int = 0,
) -> torch.Tensor:
    """The ``(max_len, num_hiddens)`` table for an even width, right (the defaults) or wrong."""
    d, pairs = num_hiddens, num_hiddens // 2
    j = torch.arange(pairs, dtype=torch.float64)
    if exponent == "2j/d":
        sin_exp = cos_exp = 2 * j / d
    elif exponent == "j/d":
        sin_exp = cos_exp = j / d
    else:  # "column": each column k uses k / d, so a cosine gets its own frequency
        sin_exp, cos_exp = 2 * j / d, (2 * j + 1) / d
    sign = -1.0 if multiplied else 1.0
    sin_angles = _angles(max_len + first, pairs, sign * sin_exp, base)[first:]
    cos_angles = _angles(max_len + first, pairs, sign * cos_exp, base)[first:]
    even, odd = torch.sin(sin_angles), torch.cos(cos_angles)  # (max_len, pairs) each
    if swapped:
        even, odd = torch.cos(sin_angles), torch.sin(cos_angles)
    if split:
        table = torch.cat([even, odd], dim=1)
    else:
        table = torch.stack([even, odd], dim=2).reshape(max_len, d)  # interleave the pairs
    return table.float()  # the reference, companion's buffer, is float32


def _encoding_inputs(generator: torch.Generator) -> Inputs:
    # An even width of 6 to 24 (the chapter's is 32), and 10 to 40 positions (it has 60): few
    # enough that float32 angles stay exact to about 1e-6, so a correct float32 answer passes.
    # Never as many positions as features: a transposed table then shows in the shape.
    num_hiddens = 2 * draw(generator, 3, 12)
    return draw(generator, 10, 40, avoid=[num_hiddens]), num_hiddens


def _reference_encoding(max_len: int, num_hiddens: int) -> torch.Tensor:
    return PositionalEncoding(num_hiddens, 0.0, max_len).P[0]  # (max_len, num_hiddens)


def check_sinusoidal_encoding(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-positional-encoding: ``student_fn(max_len, num_hiddens)`` returns the ``(max_len,
    num_hiddens)`` sinusoidal table ``P`` with ``P[i, 2j] = sin(i / 10000^(2j/d))`` and ``P[i, 2j+1]
    = cos(i / 10000^(2j/d))``, ``d = num_hiddens`` (even), as in
    ``companion.PositionalEncoding``, which the answer must not call."""
    start = first_seed(seed)
    if not _obeys(student_fn, _encoding_inputs(seeded_generator(start)), OWN_TABLE):
        return False
    return check(
        student_fn,
        _reference_encoding,
        _encoding_inputs,
        mistakes=[
            (lambda n, d: _sinusoidal(n, d, swapped=True), SWAPPED),
            (lambda n, d: _sinusoidal(n, d, exponent="j/d"), EXPONENT_WITHOUT_2),
            (lambda n, d: _sinusoidal(n, d, exponent="column"), EXPONENT_PER_COLUMN),
            (lambda n, d: _sinusoidal(n, d, multiplied=True), MULTIPLIED),
            (lambda n, d: _sinusoidal(n, d, base=1000.0), WRONG_BASE),
            (lambda n, d: _sinusoidal(n, d, base=math.e), WRONG_BASE),
            (lambda n, d: _sinusoidal(n, d, split=True), SPLIT_LAYOUT),
            (lambda n, d: _sinusoidal(n, d, swapped=True, split=True), SPLIT_LAYOUT),
            (lambda n, d: _sinusoidal(n, d, first=1), FROM_ONE),
        ],
        seed=start,
    )


TRANSPOSED = (
    "this matrix moves delta steps backwards, to i - delta: it is the transpose of the right "
    "one (equivalently, the signs of the two sines are swapped). From "
    "sin((i + delta) w) = sin(i w) cos(delta w) + cos(i w) sin(delta w), the sine row is "
    "(cos, +sin) and the cosine row (-sin, cos). The checker wants M for column vectors, "
    "p_{i+delta} = M p_i; for rows that is P[i + delta] = P[i] @ M.T"
)
SAME_SIGN = (
    "the two sines need opposite signs: (cos, +sin) in the row of the sine, (-sin, cos) in the "
    "row of the cosine"
)
SIN_ON_DIAGONAL = "cos(delta w_j) goes on the diagonal of each 2x2 block, the sines off it"
NO_DELTA = "the angle of each block is delta * w_j: you left out delta (this is a shift by 1)"
WRONG_FREQUENCY = "the frequency of pair j is w_j = 1 / 10000^(2j/d), the same as in the table"
SPLIT_BLOCKS = (
    "your blocks couple column j with column j + d/2, the split layout; in the interleaved "
    "table the pair of frequency j is columns (2j, 2j+1), a 2x2 block on the diagonal"
)


def _rotation(
    delta: int,
    num_hiddens: int,
    *,
    transposed: bool = False,
    signs: tuple[float, float] = (1.0, -1.0),
    sin_on_diagonal: bool = False,
    with_delta: bool = True,
    exponent: str = "2j/d",
    split: bool = False,
) -> torch.Tensor:
    """The ``(d, d)`` matrix ``M`` with ``p_{i+delta} = M p_i``, right (the defaults) or wrong."""
    d, pairs = num_hiddens, num_hiddens // 2
    j = torch.arange(pairs, dtype=torch.float64)
    omega = 1 / BASE ** (2 * j / d if exponent == "2j/d" else j / d)  # (pairs,)
    angle = (delta if with_delta else 1) * omega
    c, s = torch.cos(angle), torch.sin(angle)
    if sin_on_diagonal:
        c, s = s, c
    # One 2x2 block per pair, rows (sin, cos): [[c, +s], [-s, c]] maps (sin, cos)(i w) forward.
    block = [[c, signs[0] * s], [signs[1] * s, c]]  # entries of shape (pairs,)
    pair = torch.arange(pairs)
    # The two columns of pair j: next to each other (interleaved) or d/2 apart (split).
    columns = (pair, pair + pairs) if split else (2 * pair, 2 * pair + 1)
    M = torch.zeros(d, d, dtype=torch.float64)
    for a in range(2):
        for b in range(2):
            M[columns[a], columns[b]] = block[a][b]
    return M.T if transposed else M


def _rotation_inputs(generator: torch.Generator) -> Inputs:
    # A nonzero shift, forward or backward, and an even width of 4 to 16 (the chapter's is 32).
    delta = draw(generator, 1, 29)
    if torch.rand(1, generator=generator).item() < 0.3:
        delta = -delta
    return delta, 2 * draw(generator, 2, 8)


def check_rotation_matrix(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-positional-encoding: ``student_fn(delta, num_hiddens)`` returns the ``(d, d)``
    block-diagonal matrix ``M`` with ``p_{i+delta} = M p_i`` for every position ``i``, where ``p_i``
    is row ``i`` of the sinusoidal table as a column vector: block ``j`` (rows and columns ``2j,
    2j+1``) is ``[[cos(delta w_j), sin(delta w_j)], [-sin(delta w_j), cos(delta w_j)]]`` with ``w_j
    = 1 / 10000^(2j/d)``."""
    return check(
        student_fn,
        _rotation,
        _rotation_inputs,
        mistakes=[
            (lambda delta, d: _rotation(delta, d, transposed=True), TRANSPOSED),
            (lambda delta, d: _rotation(delta, d, signs=(1.0, 1.0)), SAME_SIGN),
            (lambda delta, d: _rotation(delta, d, signs=(-1.0, -1.0)), SAME_SIGN),
            (lambda delta, d: _rotation(delta, d, sin_on_diagonal=True), SIN_ON_DIAGONAL),
            (
                lambda delta, d: _rotation(delta, d, sin_on_diagonal=True, transposed=True),
                SIN_ON_DIAGONAL,
            ),
            (lambda delta, d: _rotation(delta, d, with_delta=False), NO_DELTA),
            (lambda delta, d: _rotation(delta, d, exponent="j/d"), WRONG_FREQUENCY),
            (lambda delta, d: _rotation(delta, d, split=True), SPLIT_BLOCKS),
        ],
        seed=seed,
    )


ALIBI_FROM_ZERO = (
    "the slopes are 2^(-8r/h) for the heads r = 1 .. h: counting r from 0 gives the first head "
    "slope 1"
)
ALIBI_REVERSED = (
    "the slopes are in the wrong order: head 1 has the largest, 2^(-8/h), and the last head the "
    "smallest, 2^(-8)"
)
ALIBI_IGNORES_HEADS = (
    "the slopes depend on the number of heads h: 2^(-8r/h), from 2^(-8/h) down to 2^(-8); "
    "2^(-r) is right only for h = 8"
)
ALIBI_SIGN = (
    "the bias is a penalty: -slope * (i - t) for a key t <= i, so that farther keys get lower "
    "scores; yours rewards distance"
)
ALIBI_NOT_CAUSAL = (
    "keys after the query must be hidden: a causal layer adds -inf where t > i (ALiBi is "
    "defined for causal attention)"
)
ALIBI_ZERO_FILLED = (
    "the entries for keys after the query are 0, and a score plus 0 still gets weight: they must "
    "be -inf"
)
ALIBI_MASK_TRANSPOSED = (
    "the mask is transposed: row i is the query, column t the key, and the keys t > i (above "
    "the diagonal) are the hidden ones"
)
ALIBI_TRANSPOSED = (
    "the result is transposed: entry [h, i, t] belongs to query i (a row) and key t (a column), "
    "and the keys hidden from query i are those after it, t > i"
)
ALIBI_HIDES_ITSELF = "each query also sees itself: the diagonal (t = i) gets bias 0, not -inf"
OWN_ALIBI = {
    "companion.layers.positional": (
        "the answer calls companion's alibi_slopes or alibi_bias: the exercise is to build the "
        "bias yourself"
    ),
    "companion.layers.attention": (
        "the answer calls companion's attention masks: the exercise is to build the bias and "
        "its causal mask yourself"
    ),
}


def _alibi(
    num_heads: int,
    num_steps: int,
    *,
    heads: str = "1..H",
    sign: float = -1.0,
    masked: str = "above",
    fill: float = -math.inf,
) -> torch.Tensor:
    """What a causal ALiBi layer adds to the ``(heads, queries, keys)`` scores, right (the
    defaults) or wrong: ``-slope_h (i - t)`` for ``t <= i``, ``-inf`` for ``t > i``."""
    h = torch.arange(1, num_heads + 1, dtype=torch.float64)
    exponent = {
        "1..H": -8 * h / num_heads,
        "0..H-1": -8 * (h - 1) / num_heads,
        "reversed": -8 * h.flip(0) / num_heads,
        "2^-h": -h,
    }[heads]
    slopes = 2.0**exponent  # (heads,)
    positions = torch.arange(num_steps, dtype=torch.float64)
    distance = positions[:, None] - positions[None, :]  # i - t: (queries, keys)
    bias = sign * slopes[:, None, None] * distance  # (heads, queries, keys)
    hidden = {
        "above": distance < 0,
        "below": distance > 0,
        "and diagonal": distance <= 0,
        "none": torch.zeros_like(distance, dtype=torch.bool),
    }[masked]
    return bias.masked_fill(hidden, fill).float()


def _alibi_inputs(generator: torch.Generator) -> Inputs:
    # Never 8 heads (where 2^(-r) happens to be right), and as many steps as heads never, so a
    # transposed result shows in the shape; the chapter's figure has 24 positions.
    num_heads = draw(generator, 2, 12, avoid=[8])
    return num_heads, draw(generator, 4, 12, avoid=[num_heads])


def check_alibi(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-positional-encoding: ``student_fn(num_heads, num_steps)`` returns the
    ``(num_heads, num_steps, num_steps)`` tensor that a causal attention layer with ALiBi adds
    to its scores: ``-s_r (i - t)`` for query ``i`` and key ``t <= i``, ``-inf`` for ``t > i``,
    with the slopes ``s_r = 2^(-8r/h)`` of the heads ``r = 1 .. h``. Companion's
    ``alibi_slopes`` and ``alibi_bias`` compute it; the answer must not call them."""
    start = first_seed(seed)
    if not _obeys(student_fn, _alibi_inputs(seeded_generator(start)), OWN_ALIBI):
        return False
    return check(
        student_fn,
        _alibi,
        _alibi_inputs,
        mistakes=[
            (lambda H, n: _alibi(H, n, heads="0..H-1"), ALIBI_FROM_ZERO),
            (lambda H, n: _alibi(H, n, heads="reversed"), ALIBI_REVERSED),
            (lambda H, n: _alibi(H, n, heads="2^-h"), ALIBI_IGNORES_HEADS),
            (lambda H, n: _alibi(H, n, sign=1.0), ALIBI_SIGN),
            (lambda H, n: _alibi(H, n, masked="none"), ALIBI_NOT_CAUSAL),
            (lambda H, n: _alibi(H, n, fill=0.0), ALIBI_ZERO_FILLED),
            (lambda H, n: _alibi(H, n, masked="below"), ALIBI_MASK_TRANSPOSED),
            (lambda H, n: _alibi(H, n, masked="and diagonal"), ALIBI_HIDES_ITSELF),
            (lambda H, n: _alibi(H, n).transpose(1, 2), ALIBI_TRANSPOSED),
        ],
        seed=start,
    )
