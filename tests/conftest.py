"""Shared set-up of the unit tests: the d2l reference and hypothesis settings."""

from __future__ import annotations

import sys
import types

import matplotlib
import pytest
import torch
from hypothesis import settings

matplotlib.use("Agg")  # tests draw figures without a screen
# The tests use tiny tensors: a second thread only adds overhead, and on a busy machine
# spinning threads make each step many times slower.
torch.set_num_threads(1)

# CPU timings vary from run to run; correctness, not speed, is what these tests check.
settings.register_profile("book", deadline=None, max_examples=50, derandomize=True)
settings.load_profile("book")


@pytest.fixture(scope="session")
def d2l():
    """The ``d2l.torch`` module of d2l 1.0.3, the reference companion is checked against.

    d2l imports torchvision at the top of ``d2l/torch.py``; the attention code never uses it,
    and the only torchvision on the package index is a CUDA build. A stand-in module lets the
    import succeed on a CPU-only torch.
    """
    if "torchvision" not in sys.modules:
        torchvision = types.ModuleType("torchvision")
        for name in ("transforms", "datasets"):
            submodule = types.ModuleType(f"torchvision.{name}")
            setattr(torchvision, name, submodule)
            sys.modules[f"torchvision.{name}"] = submodule
        sys.modules["torchvision"] = torchvision
    from d2l import torch as d2l_torch

    return d2l_torch
