"""Notebook wall times: pytest runs every notebook under nbval and reports how long each took.

The budget is 60 s per notebook on two CPU cores (``tools/record.py``). It is a report, not a
flaky test: the summary flags a notebook over its budget, and the run fails only when one takes
more than twice as long. The status page shows the times ``make outputs`` recorded. This
conftest sits at the root so that its hooks see the notebook items under book/ as well as the
tests under tests/.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

from companion.claims import TRAINED_TAG
from companion.device import cpu_name
from tools.record import (
    FAIL_FACTOR,
    NOTEBOOK_BUDGET_S,
    fails_budget,
    over_budget,
)

_notebook_seconds: dict[str, float] = defaultdict(float)
_notebook_failed: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A cell tagged ``trained`` prints results of training, which differ between CPUs and
    seeds: nbval runs it (its ``claim`` calls must hold) but does not compare its output."""
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and TRAINED_TAG in cell.get("metadata", {}).get("tags", []):
            item.options["check"] = False


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration  # setup (kernel start) + each cell
        if report.failed:
            _notebook_failed.add(path)


def far_over_budget() -> list[str]:
    return [path for path, seconds in _notebook_seconds.items() if fails_budget(seconds)]


# `make test-foreign` sets it to "report": the foreign numerics' slower kernels time the
# notebooks, so the times are shown but do not fail the run.
BUDGET_VARIABLE = "COMPANION_TIME_BUDGET"


def budget_enforced() -> bool:
    return os.environ.get(BUDGET_VARIABLE, "enforce") != "report"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if budget_enforced() and far_over_budget() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config) -> None:
    if not _notebook_seconds:
        return
    terminalreporter.section(
        f"notebook wall time (budget {NOTEBOOK_BUDGET_S:.0f} s each on 2 CPU cores; "
        + (
            f"a run fails over {FAIL_FACTOR * NOTEBOOK_BUDGET_S:.0f} s"
            if budget_enforced()
            else f"reported only, {BUDGET_VARIABLE}=report"
        )
        + f"; this CPU: {cpu_name()})"
    )
    for path, seconds in sorted(_notebook_seconds.items()):
        flag = ""
        if fails_budget(seconds):
            flag = "  FAILED: more than twice the budget"
        elif over_budget(seconds):
            flag = "  over budget"
        terminalreporter.write_line(f"{seconds:6.1f} s  {path}{flag}")
