"""The book on an accelerator: every notebook run on ``$COMPANION_DEVICE``, each claim logged.

    COMPANION_DEVICE=cuda python -m tools.device_check [book/X.ipynb ...] --out DIR [--jobs N]
                                                       [--seeds 0 1 2]

``make test`` runs the notebooks on the CPU only. This runs them where a Colab GPU runtime does:
each from a fresh kernel started in book/, with errors allowed, so that one claim that fails
does not hide the next. It writes ``DIR/device-check.json``: the machine, and per notebook its
wall time, the errors its cells raised, anything written to stderr, every claim (statement,
value, bounds, held), what its timing cells measured, and the untrained cells whose printed
output differs from the committed one. A GPU adds floats in another order than the CPU that
recorded the book, so a few such cells are expected (rounded digits that flip); a trained
cell's claims must hold regardless. ``--seeds`` runs each notebook once per seed offset, as
``tools/claims.py`` shifts them (outputs are compared for offset 0 only). ``--jobs`` runs several
notebooks at once, so their times are wall times under that load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from companion.claims import LOG_VARIABLE, TRAINED_TAG
from tools import toc
from tools.claims import SEED_SHIFT_CELL, SETUP_CELL_TAG, output_text
from tools.notebooks import coalesce_streams, measures, run_notebook
from tools.record import ROOT, run_environment

ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,16}")  # tests/sanitize.cfg's one rule
SHOWN_CHARS = 600  # of each differing output, enough to see which digits moved


def printed(cell) -> str:
    """What a code cell shows as text: its streams, plain-text results and errors."""
    errors = [
        f"{output.ename}: {output.evalue}"
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    return ADDRESS.sub("0xADDRESS", "\n".join([output_text(cell), *errors]))


def compared(cell) -> bool:
    """Cells whose output ``make test`` compares exactly (not trained, not the set-up cell)."""
    tags = cell.metadata.get("tags", [])
    return (
        cell.cell_type == "code"
        and TRAINED_TAG not in tags
        and SETUP_CELL_TAG not in tags
        and not measures(cell)
    )


def check(run: tuple[Path, int]) -> dict:
    """Run one notebook on this machine's device, its seeds shifted by ``1000 * offset``; what
    it raised, printed and claimed."""
    path, offset = run
    committed = nbformat.read(path, as_version=4)
    notebook = nbformat.read(path, as_version=4)
    position = 1 if notebook.cells and notebook.cells[0].cell_type == "code" else 0
    if offset:  # after the set-up cell, as tools/claims.py does
        shift = nbformat.v4.new_code_cell(SEED_SHIFT_CELL.format(shift=1000 * offset))
        notebook.cells.insert(position, shift)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "claims.jsonl"
        before = os.environ.get(LOG_VARIABLE)
        os.environ[LOG_VARIABLE] = str(log)  # the kernel inherits it
        try:
            start = time.perf_counter()
            run_notebook(notebook, path.parent, allow_errors=True)
            seconds = time.perf_counter() - start
        finally:  # a caller's later kernels must not log into a removed folder
            if before is None:
                del os.environ[LOG_VARIABLE]
            else:
                os.environ[LOG_VARIABLE] = before
        claims = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    if offset:
        notebook.cells.pop(position)
    for cell in notebook.cells:  # a print may arrive in parts; `make outputs` joins them too
        if cell.cell_type == "code":
            coalesce_streams(cell)
    errors, stderr, differing, measured = [], [], [], []
    for index, (before, after) in enumerate(zip(committed.cells, notebook.cells, strict=True)):
        if after.cell_type != "code":
            continue
        for output in after.get("outputs", []):
            if output.output_type == "error":
                errors.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                stderr.append(f"cell {index}: {output.text[:SHOWN_CHARS]}")
        if measures(after):
            measured.append({"cell": index, "device": printed(after)[:SHOWN_CHARS]})
        elif offset == 0 and compared(after) and printed(before) != printed(after):
            differing.append(
                {
                    "cell": index,
                    "committed": printed(before)[:SHOWN_CHARS],
                    "device": printed(after)[:SHOWN_CHARS],
                }
            )
    return {
        "notebook": path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path),
        "seed_offset": offset,
        "seconds": round(seconds, 1),
        "errors": errors,
        "stderr": stderr,
        "claims": claims,
        "claims_failed": [entry["claim"] for entry in claims if not entry["held"]],
        "differing_cells": differing,
        "measurements": measured,
    }


def machine() -> dict[str, str]:
    import torch

    from companion.device import get_device

    device = get_device()
    described = run_environment()
    described["device"] = str(device)
    if device.type == "cuda":
        described["gpu"] = torch.cuda.get_device_name(device)
        described["cuda"] = str(torch.version.cuda)
    return described


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--out", type=Path, required=True, help="folder for device-check.json")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks run at once")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seed offsets")
    args = parser.parse_args(argv)
    paths = [path.resolve() for path in args.notebooks] or toc.toc_notebooks(ROOT)
    report: dict = {"machine": machine(), "jobs": args.jobs, "notebooks": []}
    args.out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = [(path, offset) for path in paths for offset in args.seeds]
        for result in pool.map(check, runs):
            report["notebooks"].append(result)
            claims = result["claims"]
            print(
                f"{result['seconds']:6.1f} s  {result['notebook']} "
                f"(seed offset {result['seed_offset']}): "
                f"{len(claims) - len(result['claims_failed'])}/{len(claims)} claims held, "
                f"{len(result['errors'])} errors, {len(result['stderr'])} stderr outputs, "
                f"{len(result['differing_cells'])} compared cells differ",
                flush=True,
            )
            # Written after each notebook, so a run stopped by a time limit keeps what it had.
            (args.out / "device-check.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0 if all(not entry["errors"] for entry in report["notebooks"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
