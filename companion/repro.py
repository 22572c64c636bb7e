"""Pinned settings that make a notebook print the same numbers on every run.

``make outputs`` and ``make test`` export the same environment (threads, the CPU math path,
``MKL_CBWR``); :func:`reproducible` applies the in-process half of it at the top of a chapter.
"""

from __future__ import annotations

import os
import random
from typing import overload

import numpy as np
import torch

from companion._validate import check_integer, check_seed

THREADS_VARIABLE = "COMPANION_NUM_THREADS"
# The thread count `make test` and `make outputs` pin, and benchmarks use unless told otherwise.
DEFAULT_THREADS = 2


@overload
def configured_threads(default: int = DEFAULT_THREADS) -> int: ...
@overload
def configured_threads(default: None) -> int | None: ...
def configured_threads(default: int | None = DEFAULT_THREADS) -> int | None:
    """The CPU thread count ``$COMPANION_NUM_THREADS`` asks for, or ``default`` when it is unset.

    A value that is not a positive integer raises a ``ValueError`` naming the variable; so does
    a ``default`` that is neither a positive integer nor ``None``.
    """
    if default is not None:
        check_integer("default", default)
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VARIABLE} must be a positive integer; got {value!r}")
    return int(value)


def reproducible(seed: int = 0) -> None:
    """Seed every generator, pin torch's thread count and make printed tensors short and stable.

    The thread count comes from ``$COMPANION_NUM_THREADS`` (the Makefile sets 2); without it,
    torch keeps its own default, which is what a reader in Colab wants. Float sums depend on
    how the work is split between threads, so pinning them pins the last printed digit.
    ``seed`` is an integer (``None`` would seed from the clock).
    """
    check_seed(seed)
    threads = configured_threads(default=None)
    if threads is not None:
        torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    # Fixed-point with 4 decimals: tensor reprs would otherwise switch to scientific notation
    # depending on their values.
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
