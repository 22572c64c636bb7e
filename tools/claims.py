"""The spread of every trained claim over seeds and CPU numerics: ``book/claims.json``.

A cell tagged ``trained`` asserts the claims the prose makes about what it prints, with
``companion.claim(statement, value, above=..., below=...)`` (CONTRIBUTING.md). This tool measures
how much room each bound leaves: it runs each such notebook under :data:`RUNS` (three seeds with
the Makefile's pins, and seed 0 under two other kinds of float arithmetic), collects every claim's
value from ``$COMPANION_CLAIMS_LOG``, and writes them to the record that the status page shows
and ``tools/tests/test_claims.py`` checks::

    python -m tools.claims sweep                   # every notebook with a trained cell
    python -m tools.claims sweep book/X.ipynb ...  # only these; the others' entries stay
    python -m tools.claims sweep --skip NAME ...   # as if this CPU could not do run NAME
    python -m tools.claims table                   # the record as a Markdown table

**What a run describes.** Each run of a notebook is stamped with the fingerprint of what its
results depend on (:func:`fingerprint`): the notebook's code cells, and companion's code and
data files (docstrings and comments left out; the figures, exercises and benchmarks too, which
train nothing). ``tools/tests/test_claims.py`` fails when a run that any CPU can do no longer
matches the code: then sweep again, on any machine.

**Seeds.** A run with offset ``k`` shifts every seed the notebook sets (``torch.manual_seed``,
``random.seed``, ``numpy.random.seed``, and so ``companion.reproducible``) by ``1000 * k``, through
a cell put in front of the notebook's code in the copy that runs; the committed file is not
touched. Whatever draws from a ``torch.Generator`` with its own seed stays the same: the data of
a task, and in some chapters the batch order or a labelled subset. So the spread is that of the
initialisation and of whatever draws from the global generators (dropout, and the batch order
where no generator of its own is given); a chapter says which.

**Another CPU.** ``ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE`` makes torch and MKL sum
floats in another order, as another vendor's CPU does (``make test-foreign`` runs nbval so).

**An unpinned machine.** Colab, and ``make colab-check``, run with none of the Makefile's pins,
so torch and MKL take the widest SIMD path the CPU has: AVX-512 on most current servers. That
sums in a third order; the last run asks for it. Only a CPU with AVX-512 can do it: elsewhere
the sweep keeps that run's values from the previous sweep while the notebook's code is
unchanged (even if companion changed since: the status page marks them), or leaves it out and
says so. Either way the test passes; the status page shows what is missing.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nbformat

if __package__ in (None, ""):  # run as a script, `python tools/claims.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from companion.claims import LOG_VARIABLE, TRAINED_TAG
from tools import record, toc
from tools.notebooks import run_notebook
from tools.record import ROOT

CLAIMS_PATH = "book/claims.json"  # relative to the book's root
CLAIMS = ROOT / CLAIMS_PATH
SETUP_CELL_TAG = "remove-cell"  # the Colab set-up cell, which changes with the release tag
DIAGRAM_PREFIX = "fig-diagram-"  # the names of schematic figures (companion.figures.diagrams)
FOREIGN_NUMERICS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
WIDEST_NUMERICS = {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AUTO"}  # what Colab gets
LIBRARY = ROOT / "companion"
NOT_TRAINING = ("figures", "exercises", "bench")  # plots, checkers and benchmarks train nothing


@dataclass(frozen=True)
class Run:
    name: str
    seed_offset: int
    environment: dict[str, str] = field(default_factory=dict)
    every_cpu: bool = True  # False: needs a CPU feature that some machines lack


RUNS = (
    Run("seed 0", 0),
    Run("seed 1", 1),
    Run("seed 2", 2),
    Run("seed 0, other CPU numerics", 0, FOREIGN_NUMERICS),
    Run("seed 0, AVX-512 numerics", 0, WIDEST_NUMERICS, every_cpu=False),
)

SEED_SHIFT_CELL = """\
# Added by tools/claims.py for a seed sweep: every seed the notebook sets moves by {shift}.
import random as _random

import numpy as _np
import torch as _torch


def _shifted(set_seed):
    def set_shifted_seed(seed=None, *args, **kwargs):
        return set_seed(None if seed is None else seed + {shift}, *args, **kwargs)

    return set_shifted_seed


_torch.manual_seed = _shifted(_torch.manual_seed)
_random.seed = _shifted(_random.seed)
_np.random.seed = _shifted(_np.random.seed)"""


def is_trained(cell) -> bool:
    return cell.cell_type == "code" and TRAINED_TAG in cell.metadata.get("tags", [])


def trained_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks of the table of contents that have a cell tagged ``trained``."""
    return [
        path
        for path in toc.toc_notebooks(root)
        if any(is_trained(cell) for cell in nbformat.read(path, as_version=4).cells)
    ]


def is_diagram(cell) -> bool:
    """A cell that only draws a schematic figure (``fig-diagram-...``, from
    companion.figures.diagrams)."""
    figure = cell.metadata.get("mystnb", {}).get("figure", {})
    return str(figure.get("name", "")).startswith(DIAGRAM_PREFIX)


def code_sha256(notebook) -> str:
    """A fingerprint of a notebook's code, as far as trained results depend on it: its code
    cells less the set-up cell and schematic-figure cells, which draw boxes and train nothing."""
    return record.code_sha256(
        notebook,
        keep=lambda cell: (
            SETUP_CELL_TAG not in cell.metadata.get("tags", []) and not is_diagram(cell)
        ),
    )


def _code_without_docstrings(source: str) -> str:
    """A module's code as its syntax tree, without docstrings and comments."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
            and isinstance(node.body[0].value.value, str)
        ):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def library_sha256(library: Path = LIBRARY) -> str:
    """A fingerprint of what companion computes: the code of its modules (docstrings and
    comments left out) and its data files, except :data:`NOT_TRAINING`."""
    digest = hashlib.sha256()
    for path in sorted(library.rglob("*")):
        relative = path.relative_to(library)
        if relative.parts[0] in NOT_TRAINING or path.suffix not in (".py", ".json", ".txt"):
            continue
        if path.suffix == ".py":
            content = _code_without_docstrings(path.read_text()).encode()
        else:
            content = path.read_bytes()
        digest.update(relative.as_posix().encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


def fingerprint(path: Path) -> dict[str, str]:
    """What a run of ``path`` describes: the notebook's code and companion's."""
    return {
        "code_sha256": code_sha256(nbformat.read(path, as_version=4)),
        "library_sha256": library_sha256(),
    }


def run_once(path: Path, seed_offset: int, log: Path) -> list[str]:
    """Execute a copy of ``path`` with its seeds shifted; return the errors its cells raised.

    Claims append to ``log`` through ``$COMPANION_CLAIMS_LOG``, which the kernel inherits.
    """
    notebook = nbformat.read(path, as_version=4)
    position = 1 if notebook.cells and notebook.cells[0].cell_type == "code" else 0
    shift = nbformat.v4.new_code_cell(SEED_SHIFT_CELL.format(shift=1000 * seed_offset))
    notebook.cells.insert(position, shift)
    os.environ[LOG_VARIABLE] = str(log)
    run_notebook(notebook, path.parent, allow_errors=True)
    return [
        f"cell {index}: {output.ename}: {output.evalue}"
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]


# torch's SIMD paths from narrowest to widest. Forced with ATEN_CPU_CAPABILITY, torch reports
# the path it was told to take even where the CPU lacks it (and then dies of an illegal
# instruction), so what a CPU can do is read with the variable unset: the widest it has.
CAPABILITIES = ("DEFAULT", "AVX2", "AVX512")


def can_do(run: Run) -> bool:
    """Whether this CPU has the SIMD path ``run`` asks for, at least as wide as it."""
    if run.every_cpu:
        return True
    wanted = run.environment["ATEN_CPU_CAPABILITY"].upper()
    command = [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"]
    environment = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    widest = subprocess.run(
        command, check=True, capture_output=True, text=True, env=environment
    ).stdout.strip()
    if widest not in CAPABILITIES or wanted not in CAPABILITIES:
        return widest == wanted
    return CAPABILITIES.index(widest) >= CAPABILITIES.index(wanted)


def measure(path: Path, run: Run) -> dict:
    """Run ``path`` once as ``run`` says, in a child process with ``run``'s environment: the
    claims it made, the errors its cells raised, and what the run describes (its ``stamp``)."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "claims.jsonl"
        result = Path(scratch) / "errors.json"
        command = [sys.executable, "-m", "tools.claims", "_run", str(path)]
        command += [str(run.seed_offset), str(log), str(result)]
        subprocess.run(command, check=True, cwd=ROOT, env={**os.environ, **run.environment})
        lines = log.read_text().splitlines() if log.exists() else []
        return {
            "claims": [json.loads(line) for line in lines],
            "errors": json.loads(result.read_text()),
            "stamp": {
                **fingerprint(path),
                "machine": record.run_environment()["cpu"],
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds")[:19] + "Z",
            },
        }


def sweep_entry(measurements: dict[str, dict]) -> dict:
    """One notebook's entry: what each run describes, each claim (in the order the first run
    made them) with its value in every run, and the errors any run raised."""
    claims: dict[str, dict] = {}
    for run_name, measured in measurements.items():
        for made in measured["claims"]:
            entry = claims.setdefault(
                made["claim"],
                {
                    "claim": made["claim"],
                    "above": made["above"],
                    "below": made["below"],
                    "values": {},
                    "held": {},
                },
            )
            entry["values"][run_name] = made["value"]
            entry["held"][run_name] = made["held"]
    return {
        "runs": {name: measured["stamp"] for name, measured in measurements.items()},
        "claims": list(claims.values()),
        "errors": {name: m["errors"] for name, m in measurements.items() if m["errors"]},
    }


def kept_run(entry: dict, run_name: str) -> dict:
    """The record's measurement of one run, in the form :func:`measure` returns."""
    return {
        "claims": [
            {
                "claim": c["claim"],
                "above": c["above"],
                "below": c["below"],
                "value": c["values"][run_name],
                "held": c["held"][run_name],
            }
            for c in entry["claims"]
            if run_name in c["values"]
        ],
        "errors": entry["errors"].get(run_name, []),
        "stamp": entry["runs"][run_name],
    }


def read_claims(path: Path = CLAIMS) -> dict:
    if not path.exists():
        return {"runs": [], "notebooks": {}}
    return json.loads(path.read_text())


def sweep(
    paths: list[Path], record_path: Path = CLAIMS, root: Path = ROOT, skip: Sequence[str] = ()
) -> bool:
    """Measure every claim of ``paths`` in every run this CPU can do (all but ``skip``); True
    if every claim held everywhere.

    A run this CPU cannot do keeps its values from the record while the notebook's code is
    the code it ran (companion may have changed: the status page says so); otherwise it is
    left out, and the status page shows it as missing."""
    unknown = set(skip) - {run.name for run in RUNS}
    if unknown:
        raise SystemExit(
            f"error: no run named {', '.join(sorted(unknown))}; "
            f"runs: {', '.join(run.name for run in RUNS)}"
        )
    runs = [run for run in RUNS if run.name not in skip and can_do(run)]
    for run in RUNS:
        if run not in runs:
            print(f"{run.name}: not on this CPU; kept where a notebook's code is unchanged")
    all_held = True
    for path in paths:
        name = path.relative_to(root).as_posix()
        earlier = read_claims(record_path)["notebooks"].get(name, {"runs": {}})
        code = code_sha256(nbformat.read(path, as_version=4))
        measurements = {}
        for run in RUNS:
            if run in runs:
                measurements[run.name] = measure(path, run)
                made = len(measurements[run.name]["claims"])
                print(f"{name}, {run.name}: {made} claims", flush=True)
            elif earlier["runs"].get(run.name, {}).get("code_sha256") == code:
                measurements[run.name] = kept_run(earlier, run.name)
                print(f"{name}, {run.name}: kept from {earlier['runs'][run.name]['measured_at']}")
            else:
                print(f"{name}, {run.name}: not measured (its code changed since)", flush=True)
        entry = sweep_entry(measurements)
        # Read again before writing: a sweep of other notebooks may have written meanwhile.
        written = read_claims(record_path)
        written["runs"] = [
            {"name": run.name, "seed_offset": run.seed_offset, "environment": run.environment}
            for run in RUNS
        ]
        written["notebooks"] = {**written["notebooks"], name: entry}
        record_path.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
        failed = [c["claim"] for c in entry["claims"] if not all(c["held"].values())]
        all_held &= not failed and not entry["errors"]
        for statement in failed:
            print(f"  does not hold in every run: {statement}", flush=True)
        for run_name, errors in entry["errors"].items():
            print(f"  {run_name}: {'; '.join(errors)}", flush=True)
    return all_held


def bound_text(claim: dict) -> str:
    parts = []
    if claim["above"] is not None:
        parts.append(f"> {claim['above']:g}")
    if claim["below"] is not None:
        parts.append(f"< {claim['below']:g}")
    return " and ".join(parts)


def margin(claim: dict) -> float:
    """The smallest distance of any run's value from the nearest bound (negative: broken)."""
    distances = []
    for value in claim["values"].values():
        if claim["above"] is not None:
            distances.append(value - claim["above"])
        if claim["below"] is not None:
            distances.append(claim["below"] - value)
    return min(distances)


def table_rows(record: dict, library: str | None = None) -> list[list[str]]:
    """Header and rows of the spread table: notebook, claim, bound, each run's value, margin.
    A value measured with another companion than ``library`` (a run kept from an earlier sweep)
    is marked ``*``; a run not measured on the notebook's code shows ``–``."""
    run_names = [run["name"] for run in record["runs"]]
    rows = [["chapter", "claim", "bound", *run_names, "smallest margin"]]
    for name, entry in sorted(record["notebooks"].items()):
        earlier = {
            run
            for run, stamp in entry["runs"].items()
            if library is not None and stamp["library_sha256"] != library
        }
        for claim in entry["claims"]:
            values = [
                "–"
                if run not in claim["values"]
                else f"{claim['values'][run]:.4g}" + ("*" if run in earlier else "")
                for run in run_names
            ]
            rows.append(
                [
                    Path(name).stem,
                    claim["claim"],
                    bound_text(claim),
                    *values,
                    f"{margin(claim):.3g}",
                ]
            )
    return rows


def machines(record: dict) -> str:
    """Where and when the runs of the record were measured, in a sentence."""
    stamps = [stamp for entry in record["notebooks"].values() for stamp in entry["runs"].values()]
    names = sorted({stamp["machine"] for stamp in stamps})
    dates = sorted(stamp["measured_at"][:10] for stamp in stamps)
    return f"Measured on {' and '.join(names)}, from {dates[0]} to {dates[-1]}."


def markdown_table(record: dict) -> str:
    rows = table_rows(record)
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.insert(1, "|" + "---|" * len(rows[0]))
    return "\n".join(lines)


def output_text(cell) -> str:
    """What a code cell printed: its streams and the text of its results."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.claims", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    commands = parser.add_subparsers(dest="command", required=True)
    swept = commands.add_parser("sweep", help="measure the claims into book/claims.json")
    swept.add_argument("notebooks", nargs="*", type=Path, help="default: every trained one")
    swept.add_argument("--skip", action="append", default=[], metavar="RUN", help="a run to keep")
    commands.add_parser("table", help="the record as a Markdown table")
    one = commands.add_parser("_run")  # one run, in a child process with the run's environment
    one.add_argument("notebook", type=Path)
    one.add_argument("offset", type=int)
    one.add_argument("log", type=Path)
    one.add_argument("result", type=Path)
    args = parser.parse_args(argv)

    if args.command == "_run":
        errors = run_once(args.notebook, args.offset, args.log)
        args.result.write_text(json.dumps(errors))
        return 0
    if args.command == "sweep":
        paths = [path.resolve() for path in args.notebooks] or trained_notebooks()
        held = sweep(paths, skip=args.skip)
        print(f"recorded in {CLAIMS_PATH}")
        return 0 if held else 1
    print(markdown_table(read_claims()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
