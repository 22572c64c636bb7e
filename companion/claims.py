"""Claims about trained models, asserted where the book makes them.

A trained model's numbers differ between CPUs (Intel, AMD, Apple), GPUs and seeds, so a chapter
never regression-tests them digit for digit. Instead, the cell that prints them is tagged
``trained`` (nbval then ignores its output), and it asserts every claim the prose makes about
what it prints::

    claim("attention beats the fixed context on 20-word sentences", gap, above=0.3)

The bound is a margin measured over seeds and another CPU's float arithmetic
(``python -m tools.claims``, CONTRIBUTING.md), so the assertion holds on every machine while
the printed digits may not.

When ``$COMPANION_CLAIMS_LOG`` names a file, each claim also appends one JSON line to it
(statement, value, bounds, whether it held): that is how ``tools/claims.py`` collects the
spread of every claim over seeds and machines for the status page.
"""

from __future__ import annotations

import json
import math
import os

from companion._validate import check_number, check_type, describe

LOG_VARIABLE = "COMPANION_CLAIMS_LOG"
# The cell tag of a cell that prints results of training; the test configuration maps it to
# nbval's ignore-output (conftest.py).
TRAINED_TAG = "trained"


class ClaimError(AssertionError):
    """A claim the prose makes about a trained result does not hold for this run."""


def claim(
    statement: str, value: float, *, above: float | None = None, below: float | None = None
) -> None:
    """Assert ``above < value < below`` (either bound may be left out).

    ``statement`` is the claim in the prose's words (a str); it names the failure. ``value`` is
    a number, a bool or a one-element tensor or array; the bounds are numbers, ``above`` less
    than ``below``. A value that is not a finite number fails too, so a diverged run (NaN)
    never passes quietly. It returns nothing, so a claim on a cell's last line prints nothing.
    """
    value = _check_claim(statement, value, above, below)
    held = (
        math.isfinite(value)
        and (above is None or value > above)
        and (below is None or value < below)
    )
    _log(statement, value, above, below, held)
    if not held:
        bounds = " and ".join(
            f"{word} {bound:g}"
            for word, bound in (("above", above), ("below", below))
            if bound is not None
        )
        raise ClaimError(f"claim does not hold: {statement}: {value:.4g} is not {bounds}")


def _check_claim(statement: str, value: float, above: float | None, below: float | None) -> float:
    """:func:`claim`'s arguments, checked; ``value`` as a float."""
    check_type("statement", statement, str, "the claim in the prose's words, a str")
    if above is None and below is None:
        raise ValueError(f"claim {statement!r} needs a bound: give above=, below= or both")
    for name, bound in (("above", above), ("below", below)):
        if bound is not None:
            check_number(name, bound, finite=False)
    if above is not None and below is not None and not above < below:
        raise ValueError(f"claim {statement!r}: above={above} must be less than below={below}")
    one_number = isinstance(value, (int, float)) or (
        hasattr(value, "shape") and math.prod(value.shape) == 1
    )
    if isinstance(value, str) or not one_number:
        raise ValueError(f"claim {statement!r}: value must be one number; got {describe(value)}")
    return float(value)  # a number, or a one-element tensor or array


def _log(
    statement: str, value: float, above: float | None, below: float | None, held: bool
) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    entry = {"claim": statement, "value": value, "above": above, "below": below, "held": held}
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")
