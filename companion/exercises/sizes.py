"""Random sizes for the checkers' inputs.

A checker draws the shapes of its inputs from the generator that
:func:`companion.exercises.core.check` hands it, and never uses the sizes of the chapter's own
variables. A solution that reads the notebook's variables (``batch``, ``steps``, ``h``, ``d``
...) instead of its arguments then fails, with an error or with wrong values, instead of
passing by coincidence.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def draw(generator: torch.Generator, low: int, high: int, avoid: Iterable[int] = ()) -> int:
    """A random integer in ``[low, high]`` that is not in ``avoid``."""
    avoid = set(avoid)
    choices = [k for k in range(low, high + 1) if k not in avoid]
    if not choices:
        raise ValueError(f"no integer in [{low}, {high}] outside {sorted(avoid)}")
    return choices[int(torch.randint(len(choices), (1,), generator=generator))]
