"""The execution record, ``book/execution-status.json``: the one module that reads and writes it.

``make outputs`` (``tools/notebooks.py execute``) writes an entry for each notebook it runs;
the status page (``tools/execution_status.py``) renders the record and fails the build when it
no longer describes the notebooks; the tests read it through :func:`read_record`.

The format: ``{"notebooks": {"book/X.ipynb": entry, ...}}``, where an entry has

* ``executed_at``: UTC, ISO 8601;
* ``seconds``: the wall clock of the execution, compared with :data:`NOTEBOOK_BUDGET_S`;
* ``result``: ``passed`` or ``failed: <exception name>``;
* ``code_sha256``: :func:`code_sha256` of the notebook as the run left it, so a build can tell
  that its code changed since (file times mean nothing in a fresh clone); a change to a
  markdown cell, a tag or the metadata needs no new run;
* ``environment``: :func:`run_environment`, per notebook, since a partial re-run may use other
  versions.

It also holds the time budget that the test summary and the status page report. This module
imports neither Sphinx nor nbclient, so the test session's ``conftest.py`` can use it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tomllib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[1]
RECORD_PATH = "book/execution-status.json"  # relative to the book's root
RECORD = ROOT / RECORD_PATH
PASSED = "passed"
FIX = "run `make outputs`"

# Every notebook runs in at most this many seconds on 2 CPU cores. It is a report, never a
# failure: the test summary and the status page flag a notebook over it, since a shared
# machine's timings are noisy.
NOTEBOOK_BUDGET_S = 60.0


class RecordError(ValueError):
    """The record is missing or is not valid JSON; the message says how to make it."""


def over_budget(seconds: float) -> bool:
    return seconds > NOTEBOOK_BUDGET_S


def code_sha256(notebook: Any, keep: Callable[[Any], bool] = lambda cell: True) -> str:
    """A fingerprint of a notebook's code: the sources of its code cells that ``keep``
    accepts, in order. Markdown, tags, metadata and outputs are left out: changing them
    changes nothing a run prints."""
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code" and keep(cell)]
    return hashlib.sha256("\n\0".join(sources).encode()).hexdigest()


def notebook_sha256(path: Path) -> str:
    """:func:`code_sha256` of the notebook file at ``path``."""
    return code_sha256(nbformat.read(path, as_version=4))


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
        "code_sha256": notebook_sha256(path),
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
        elif entry.get("code_sha256") != notebook_sha256(root / name):
            problems.append(
                f"{name}: its code changed after its last execution ({entry.get('executed_at')})"
            )
        elif entry.get("result") != PASSED:
            problems.append(f"{name}: its last execution {entry.get('result')}")
    for name in sorted(set(entries) - set(notebooks)):
        problems.append(f"{name}: has an entry but is not in the table of contents")
    return problems
