"""The root conftest's lock for `make test`'s two workers: a notebook of RUNS_ALONE starts once
the other worker's test in flight has ended, and no other test starts until it is done."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def item(nodeid: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid)


def started(action) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def test_the_notebook_that_runs_alone_waits_for_the_test_in_flight_and_holds_back_the_next(
    monkeypatch, tmp_path
):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    conftest = root_conftest()  # its own lock opens nothing outside a parallel run
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run")
    (alone,) = conftest.RUNS_ALONE
    notebook, other = conftest._Alone(tmp_path), conftest._Alone(tmp_path)  # one per worker
    first, last = item(f"{alone}::Cell 0"), item(f"{alone}::Cell 1")
    unit_test = item("tests/test_a.py::test_one")

    other.before(unit_test)  # in flight
    waiting = started(lambda: notebook.before(first))
    waiting.join(timeout=0.3)
    assert waiting.is_alive(), "the notebook started beside a test in flight"
    other.after(unit_test, item("tests/test_a.py::test_two"))
    waiting.join(timeout=5)
    assert not waiting.is_alive(), "the notebook still waits after the test ended"

    notebook.before(last)  # its next cell: no new lock
    held_back = started(lambda: other.before(item("tests/test_a.py::test_two")))
    held_back.join(timeout=0.3)
    assert held_back.is_alive(), "a test started while the notebook runs"
    notebook.after(first, last)  # between its cells it keeps the locks
    held_back.join(timeout=0.3)
    assert held_back.is_alive()
    notebook.after(last, None)
    held_back.join(timeout=5)
    assert not held_back.is_alive(), "the next test still waits after the notebook"
    notebook.close()
    other.close()


def test_outside_a_parallel_run_nothing_is_locked(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    conftest = root_conftest()
    solo = conftest._Alone()
    (alone,) = conftest.RUNS_ALONE
    solo.before(item(f"{alone}::Cell 0"))
    solo.after(item(f"{alone}::Cell 0"), None)
    assert (solo.gate, solo.busy, solo.alone) == (None, None, False)


def test_the_notebook_that_runs_alone_starts_its_kernel_without_the_wait_policy(
    monkeypatch, tmp_path
):
    """nbval starts the kernel from os.environ at the notebook's first cell: on a quiet machine
    the policy is gone from then until its last cell, and only for that notebook, in parallel
    or not. On a busy machine it stays."""
    from tools import record

    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    conftest = root_conftest()  # its own lock opens nothing outside a parallel run
    policy = conftest.WAIT_POLICY
    (alone,) = conftest.RUNS_ALONE
    first, last = item(f"{alone}::Cell 0"), item(f"{alone}::Cell 1")
    unit_test = item("tests/test_a.py::test_one")
    for run, busy in ((None, 0.0), ("run", 0.1), ("run", 0.9)):
        if run is None:
            monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
        else:
            monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", run)
        monkeypatch.setattr(record, "busy_share", lambda busy=busy: busy)
        monkeypatch.setenv(policy, "PASSIVE")
        during = None if busy < record.QUIET_BELOW else "PASSIVE"
        worker = conftest._Alone(tmp_path)
        worker.before(unit_test)
        assert conftest.os.environ[policy] == "PASSIVE"
        worker.after(unit_test, first)
        worker.before(first)
        assert conftest.os.environ.get(policy) == during
        worker.after(first, last)
        worker.before(last)
        assert conftest.os.environ.get(policy) == during, "set back before the last cell"
        worker.after(last, unit_test)
        assert conftest.os.environ[policy] == "PASSIVE"
        worker.close()
