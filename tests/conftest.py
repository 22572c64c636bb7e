"""Shared test set-up: the d2l reference, hypothesis settings, and notebook wall times."""

from __future__ import annotations

import sys
import types
from collections import defaultdict

import matplotlib
import pytest
import torch
from hypothesis import settings

matplotlib.use("Agg")  # tests draw figures without a screen
torch.set_num_threads(2)

# CPU timings vary from run to run; correctness, not speed, is what these tests check.
settings.register_profile("book", deadline=None, max_examples=50, derandomize=True)
settings.load_profile("book")

NOTEBOOK_BUDGET_S = 60.0
_notebook_seconds: dict[str, float] = defaultdict(float)


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


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration  # setup (kernel start) + each cell


def _over_budget() -> list[str]:
    return [path for path, s in _notebook_seconds.items() if s > NOTEBOOK_BUDGET_S]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _over_budget() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config) -> None:
    if not _notebook_seconds:
        return
    terminalreporter.section("notebook wall time (budget 60 s each on 2 CPU cores)")
    for path, seconds in sorted(_notebook_seconds.items()):
        flag = "  OVER BUDGET" if seconds > NOTEBOOK_BUDGET_S else ""
        terminalreporter.write_line(f"{seconds:6.1f} s  {path}{flag}")
