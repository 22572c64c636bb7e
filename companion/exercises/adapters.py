"""Wrappers that fit a student's function to :func:`companion.exercises.core.check`.

- :func:`as_bool_mask`: a mask exercise must return booleans; the checker compares numbers.
- :func:`on_copies`: the student's function gets copies of the tensors, so that an in-place
  answer cannot change the inputs that the checker then hands to the known mistakes.

Each keeps the student's function name, which the checker prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from companion.exercises.core import named_like


def as_bool_mask(mask_fn: Callable[..., Any], allowed: str) -> Callable[..., Any]:
    """``mask_fn`` with its boolean mask turned into 0/1 floats (``allclose`` takes no booleans).

    A mask of another dtype raises a ``TypeError`` that says what True means (``allowed``, e.g.
    "a query may attend to a key"); the checker prints it. Anything but a tensor is passed on,
    for the checker to report.
    """

    def adapted(*inputs: Any) -> Any:
        mask = mask_fn(*inputs)
        if not isinstance(mask, torch.Tensor):
            return mask
        if mask.dtype != torch.bool:
            raise TypeError(
                f"expected a boolean mask (True where {allowed}); got dtype {mask.dtype}"
            )
        return mask.float()

    return named_like(adapted, mask_fn)


def on_copies(student_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``student_fn`` called with a copy of each tensor argument; other arguments as they are."""

    def adapted(*inputs: Any) -> Any:
        return student_fn(*(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs))

    return named_like(adapted, student_fn)
