"""Notebook wall times: pytest runs every notebook under nbval and reports how long each took.

The budget is 60 s per notebook on two CPU cores (``tools/record.py``). It is a report, not a
flaky test: the summary flags a notebook over its budget, and the run fails only when one takes
more than twice as long. The status page shows the times ``make outputs`` recorded. This
conftest sits at the root so that its hooks see the notebook items under book/ as well as the
tests under tests/.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from companion.claims import TRAINED_TAG
from companion.device import cpu_name
from tools.record import (
    FAIL_FACTOR,
    NOTEBOOK_BUDGET_S,
    RUNS_ALONE,
    WAIT_POLICY,
    fails_budget,
    over_budget,
    spins_alone,
)

_notebook_seconds: dict[str, float] = defaultdict(float)
_notebook_failed: set[str] = set()


def notebook_path(nodeid: str) -> str | None:
    path = nodeid.split("::")[0]
    return path if path.endswith(".ipynb") else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A cell tagged ``trained`` prints results of training, which differ between CPUs and
    seeds: nbval runs it (its ``claim`` calls must hold) but does not compare its output."""
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and TRAINED_TAG in cell.get("metadata", {}).get("tags", []):
            item.options["check"] = False


# `make test` runs two pytest-xdist workers (--dist loadscope: each notebook, and each test
# module, stays on one worker). A notebook's kernel keeps about one core busy and the second
# only now and then, so two workers finish the suite in about two thirds of the time. A notebook
# beside other work slows down, though (the Transformer chapter from about 36 s to 45-50 s),
# and that chapter's budget is the tightest: it runs alone (tools.record.RUNS_ALONE). The other
# worker finishes the test it is running, then waits, outside the timed phases, until the
# chapter is done. Alone on a quiet machine, its kernel starts without the pins'
# OMP_WAIT_POLICY (see there).


class _Alone:
    """Two file locks that the workers of one run share. ``gate``: held exclusively from
    when a notebook of RUNS_ALONE is next until it is done; no other test starts meanwhile.
    ``busy``: every other test holds it shared while it runs; the notebook takes it
    exclusively, so it starts once the test in flight has ended. Outside a parallel run there
    are no locks. Either way, if the machine is quiet, the notebook's kernel starts without
    WAIT_POLICY: nbval starts it from ``os.environ`` when the first cell is set up, after
    :meth:`before`."""

    def __init__(self, folder: Path | None = None) -> None:
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same on every worker of a run
        folder = folder or Path(tempfile.gettempdir())
        self.gate, self.busy = (
            (None, None)
            if run is None
            else (open(folder / f"companion-tests-{run}.{name}", "a+") for name in ("gate", "busy"))
        )
        self.alone = False  # this worker runs a notebook of RUNS_ALONE
        self.wait_policy: str | None = None  # the pins' value, set back when it is done

    def before(self, item: pytest.Item) -> None:
        if self.alone:
            return
        if notebook_path(item.nodeid) in RUNS_ALONE:
            if self.gate is not None:
                fcntl.flock(self.gate, fcntl.LOCK_EX)
                fcntl.flock(self.busy, fcntl.LOCK_EX)
            self.alone = True
            if spins_alone():
                self.wait_policy = os.environ.pop(WAIT_POLICY, None)
        elif self.gate is not None:
            fcntl.flock(self.gate, fcntl.LOCK_SH)  # waits while the gate is closed
            fcntl.flock(self.gate, fcntl.LOCK_UN)
            fcntl.flock(self.busy, fcntl.LOCK_SH)

    def after(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if not self.alone:
            if self.gate is not None:
                fcntl.flock(self.busy, fcntl.LOCK_UN)
        elif nextitem is None or notebook_path(nextitem.nodeid) != notebook_path(item.nodeid):
            if self.wait_policy is not None:
                os.environ[WAIT_POLICY] = self.wait_policy
                self.wait_policy = None
            if self.gate is not None:
                fcntl.flock(self.busy, fcntl.LOCK_UN)
                fcntl.flock(self.gate, fcntl.LOCK_UN)
            self.alone = False

    def close(self) -> None:
        for lock in (self.gate, self.busy):
            if lock is not None:
                lock.close()  # releases what it holds
                Path(lock.name).unlink(missing_ok=True)  # both workers opened it at start


_alone = _Alone()


def pytest_unconfigure() -> None:
    _alone.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _alone.before(item)
    try:
        return (yield)
    finally:
        _alone.after(item, nextitem)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = notebook_path(report.nodeid)
    if path is not None:
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
