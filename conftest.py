"""Notebooks under pytest: trained cells run without being compared, and each notebook's wall
time is reported.

The budget is 60 s per notebook on two CPU cores (``tools/record.py``). It is a report, never a
failure: a shared machine's timings are noisy, so the summary flags a notebook over its budget
and the run's result does not depend on it. The status page shows the times ``make outputs``
recorded. This conftest sits at the root so that its hooks see the notebook items under book/
as well as the tests under tests/.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from _pytest.terminal import TerminalReporter

from companion.claims import TRAINED_TAG
from companion.device import cpu_name
from tools.record import NOTEBOOK_BUDGET_S, over_budget

_notebook_seconds: dict[str, float] = defaultdict(float)


def notebook_path(nodeid: str) -> str | None:
    path = nodeid.split("::")[0]
    return path if path.endswith(".ipynb") else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A cell tagged ``trained`` prints results of training, which differ between CPUs and
    seeds: nbval runs it (its ``claim`` calls must hold) but does not compare its output."""
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and TRAINED_TAG in cell.get("metadata", {}).get("tags", []):
            item.options["check"] = False  # type: ignore[attr-defined]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = notebook_path(report.nodeid)
    if path is not None:
        _notebook_seconds[path] += report.duration  # setup (kernel start) + each cell


def pytest_terminal_summary(
    terminalreporter: TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    if not _notebook_seconds:
        return
    terminalreporter.section(
        f"notebook wall time (budget {NOTEBOOK_BUDGET_S:.0f} s each on 2 CPU cores, "
        f"reported only; this CPU: {cpu_name()})"
    )
    for path, seconds in sorted(_notebook_seconds.items()):
        flag = "  over budget" if over_budget(seconds) else ""
        terminalreporter.write_line(f"{seconds:6.1f} s  {path}{flag}")
