"""The execution record, ``book/execution-status.json``: the one module that reads and writes it.

``make outputs`` (``tools/notebooks.py execute``) writes an entry for each notebook it runs;
the status page (``tools/execution_status.py``) renders the record and fails the build when it
no longer describes the notebooks; the tests read it through :func:`read_record`.

The format: ``{"notebooks": {"book/X.ipynb": entry, ...}}``, where an entry has

* ``executed_at``: UTC, ISO 8601;
* ``seconds``: the wall clock of the execution, compared with :data:`NOTEBOOK_BUDGET_S`;
* ``result``: ``passed`` or ``failed: <exception name>``;
* ``sha256``: of the file as the run left it, so a build can tell that it changed since
  (file times mean nothing in a fresh clone);
* ``environment``: :func:`run_environment`, per notebook, since a partial re-run may use other
  versions.

It also holds what the notebook runs share with the test session: the time budget, and which
notebooks run alone and when their kernels may spin (:data:`RUNS_ALONE`, :func:`spins_alone`).
This module imports neither Sphinx nor nbclient, so the test session's ``conftest.py`` can use
them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
import tomllib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD_PATH = "book/execution-status.json"  # relative to the book's root
RECORD = ROOT / RECORD_PATH
PASSED = "passed"
FIX = "run `make outputs`"

# Every notebook runs in at most this many seconds on 2 CPU cores. Over it is reported (the
# test summary, the status page); only over FAIL_FACTOR times it fails a run, since a shared
# machine's timings are noisy.
NOTEBOOK_BUDGET_S = 60.0
FAIL_FACTOR = 2.0

# The notebooks that run with nothing beside them: `make test`'s workers hold back every other
# test meanwhile (the root conftest's lock), and `make outputs` runs one notebook at a time. The
# Transformer chapter has the tightest budget: it trains for 314 steps of a few thousand small
# kernels each.
RUNS_ALONE = frozenset({"book/transformer.ipynb"})
# Alone on a quiet machine, a notebook's kernel gets libgomp's default wait policy: an idle
# OpenMP thread spins a moment before it sleeps. The pins' OMP_WAIT_POLICY=PASSIVE puts it to
# sleep at once, which wakes a thread for every parallel kernel: measured on 2 AMD EPYC cores, a
# training step of that chapter took 66 ms sleeping and 39 ms spinning, and the chapter 42 s and
# 26 s. Beside other work spinning is far worse: with one core kept busy by another process, the
# step took 94 ms sleeping and 178 ms spinning. So the kernel spins only if the machine is quiet
# as it starts: less than QUIET_BELOW of its CPU time busy. The arithmetic is the same either way
# (the committed outputs reproduce exactly).
WAIT_POLICY = "OMP_WAIT_POLICY"
QUIET_BELOW = 0.25
PROC_STAT = Path("/proc/stat")


def busy_share(seconds: float = 0.5, stat: Path = PROC_STAT) -> float | None:
    """The share of the machine's CPU time that was busy over the next ``seconds``, from the
    first line of Linux's ``/proc/stat``; None where there is none."""

    def totals() -> tuple[int, int]:
        ticks = [int(field) for field in stat.read_text().split("\n", 1)[0].split()[1:]]
        return sum(ticks), sum(ticks[3:5])  # all, idle + iowait

    if not stat.exists():
        return None
    total, idle = totals()
    time.sleep(seconds)
    later_total, later_idle = totals()
    if later_total == total:
        return None
    return 1 - (later_idle - idle) / (later_total - total)


def spins_alone() -> bool:
    """Whether a notebook of :data:`RUNS_ALONE` starting now gets libgomp's default wait
    policy: the machine is quiet."""
    busy = busy_share()
    return busy is not None and busy < QUIET_BELOW


def alone_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without :data:`WAIT_POLICY`, for a notebook that :func:`spins_alone`."""
    return {name: value for name, value in environ.items() if name != WAIT_POLICY}


class RecordError(ValueError):
    """The record is missing or is not valid JSON; the message says how to make it."""


def over_budget(seconds: float) -> bool:
    return seconds > NOTEBOOK_BUDGET_S


def fails_budget(seconds: float) -> bool:
    return seconds > FAIL_FACTOR * NOTEBOOK_BUDGET_S


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_record(path: Path = RECORD, missing_ok: bool = False) -> dict:
    """The record at ``path``. A missing file is an empty record if ``missing_ok``, else a
    :class:`RecordError`, as is a file that is not JSON."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        if missing_ok:
            return {"notebooks": {}}
        raise RecordError(f"{path} is missing: {FIX} to execute the notebooks") from None
    except json.JSONDecodeError as error:
        raise RecordError(f"{path} is not valid JSON ({error}): {FIX}") from None


def write_record(path: Path, record: Mapping) -> None:
    """Write ``record`` stably: sorted keys, two-space indent, a final newline."""
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def release_version(root: Path = ROOT) -> str:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def run_environment() -> dict[str, str]:
    """What a notebook's printed numbers depend on besides its code: versions, threads, CPU."""
    from companion.device import cpu_name
    from companion.repro import configured_threads

    threads = configured_threads(default=None)
    return {
        "python": platform.python_version(),
        "torch": version("torch"),
        "numpy": version("numpy"),
        "matplotlib": version("matplotlib"),
        "companion": release_version(),
        "nbclient": version("nbclient"),
        "threads": str(threads) if threads is not None else "torch's default",
        "cpu_capability": os.environ.get("ATEN_CPU_CAPABILITY", "default"),
        "cpu": f"{cpu_name()}, {os.cpu_count()} cores",
    }


def record_entry(path: Path, seconds: float, result: str, environment: Mapping[str, str]) -> dict:
    """One notebook's entry, written just after its run (the format is in the module's doc)."""
    return {
        "executed_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "seconds": round(seconds, 1),
        "result": result,
        "sha256": file_sha256(path),
        "environment": dict(environment),
    }


def stale_entries(record: Mapping, root: Path, notebooks: Sequence[str]) -> list[str]:
    """Why ``record`` does not describe ``notebooks`` (posix paths under ``root``), one line
    per notebook; an empty list when it does."""
    entries = record.get("notebooks", {})
    problems = []
    for name in notebooks:
        entry = entries.get(name)
        if entry is None:
            problems.append(f"{name}: has no entry in the record")
        elif entry.get("sha256") != file_sha256(root / name):
            problems.append(
                f"{name}: changed after its last execution ({entry.get('executed_at')})"
            )
        elif entry.get("result") != PASSED:
            problems.append(f"{name}: its last execution {entry.get('result')}")
    for name in sorted(set(entries) - set(notebooks)):
        problems.append(f"{name}: has an entry but is not in the table of contents")
    return problems
