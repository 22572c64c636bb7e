"""Notebook wall times: pytest runs every notebook under nbval, and each must stay within
its budget on two CPU cores. This conftest sits at the root so that its hooks see the notebook
items under book/ as well as the tests under tests/."""

from __future__ import annotations

from collections import defaultdict

import pytest

NOTEBOOK_BUDGET_S = 60.0
_notebook_seconds: dict[str, float] = defaultdict(float)


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
