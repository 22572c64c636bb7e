"""The book's notebooks: which ones the table of contents lists, their Colab set-up cell,
and the one way their committed outputs are produced (``make outputs``).

    python tools/notebooks.py list                  # the notebooks in _toc.yml order
    python tools/notebooks.py execute               # re-run them all in place, in the pinned
                                                    # environment, and record each run
    python tools/notebooks.py execute book/X.ipynb  # re-run and record only these

The record, book/execution-status.json, is what the book's status page shows and what the
build checks the notebooks against; tools/record.py reads and writes it.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import time
from pathlib import Path

import nbformat
import yaml

if __package__ in (None, ""):  # run as a script, `python tools/notebooks.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import toc
from tools.record import (
    RECORD,
    ROOT,
    read_record,
    record_entry,
    release_version,
    run_environment,
    write_record,
)

# The set-up cell every notebook starts with. Only in Colab does it install companion, from
# the repository named in _config.yml, at the release tag of the version in pyproject.toml.
SETUP_CELL = """\
# Colab set-up: installs companion, the book's library, at this edition's release tag.
# Anywhere else (your machine, Binder, CI) this cell does nothing and prints nothing.
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "{requirement}"],
        check=True,
    )"""

# The site is not executable, so it leaves the set-up cell out; Colab shows and runs it.
SETUP_CELL_TAG = "remove-cell"

# Kept fixed so that re-running a notebook on another patch release of Python changes nothing.
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "pygments_lexer": "ipython3"},
}


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def release_tag() -> str:
    return f"v{release_version()}"


def companion_requirement() -> str:
    url = book_config()["repository"]["url"].rstrip("/")
    return f"companion @ git+{url}@{release_tag()}"


def setup_cell_source() -> str:
    return SETUP_CELL.format(requirement=companion_requirement())


def toc_files() -> list[str]:
    """Every ``file:`` entry of _toc.yml, the root first, in reading order."""
    return toc.toc_files(ROOT)


def toc_notebooks() -> list[Path]:
    """The notebooks the table of contents lists, in reading order."""
    return toc.toc_notebooks(ROOT)


def coalesce_streams(cell) -> None:
    """Merge consecutive stdout (or stderr) outputs into one.

    How a cell's prints are split into messages depends on when the kernel flushed, which
    depends on the machine's load; merging them makes the committed file independent of it.
    """
    merged: list = []
    for output in cell.get("outputs", []):
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and output.output_type == previous.output_type == "stream"
            and output.name == previous.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    cell.outputs = merged


IGNORE_OUTPUT_MARKER = "# NBVAL_IGNORE_OUTPUT"
REFRESH_VARIABLE = "COMPANION_REFRESH_MEASUREMENTS"
# A measurement cell's metadata names the code that printed its output: the first 16 hex digits
# of the SHA-256 of its source. The file on disk may hold an edited cell whose output the old
# code printed; the stamp tells the two apart, and the tests check that every stamp matches.
MEASURED_FROM = "measured_from"


def measures(cell) -> bool:
    """A cell that prints measured times (nbval ignores its output)."""
    return cell.cell_type == "code" and cell.source.startswith(IGNORE_OUTPUT_MARKER)


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def keep_measurements(before, after, refresh: bool = False) -> int:
    """Give the cells marked ``# NBVAL_IGNORE_OUTPUT`` back their committed outputs, and stamp
    each with the digest of the code that printed its output (:data:`MEASURED_FROM`).

    Those cells print measured times, which differ on every run. While a cell's code is the
    code that printed its committed output, that measurement stays, so ``make outputs`` leaves
    the files alone; a changed cell, or ``refresh`` (``COMPANION_REFRESH_MEASUREMENTS=1``),
    records the new measurement. A cell without a stamp counts as printed by its own code.
    Returns the number of cells kept.
    """
    kept = 0
    old = {cell.get("id"): cell for cell in before.cells}
    for cell in filter(measures, after.cells):
        digest = source_digest(cell.source)
        previous = old.get(cell.get("id"))
        if (
            not refresh
            and previous is not None
            and previous.get("outputs")
            and previous.metadata.get(MEASURED_FROM, source_digest(previous.source)) == digest
        ):
            cell.outputs = previous.outputs
            kept += 1
        cell.metadata[MEASURED_FROM] = digest
    return kept


SETUP_PLACEHOLDER = "# replaced by the set-up cell"


def place_setup_cell(notebook) -> None:
    """Make the notebook's first cell the Colab set-up cell, with the current repository and tag.

    A first code cell that is a set-up cell already, empty, or ``# replaced by the set-up cell``
    is overwritten; anything else (a new chapter's title or first code) stays, and the set-up
    cell goes in before it.
    """
    first = notebook.cells[0] if notebook.cells else nbformat.v4.new_markdown_cell()
    replaceable = first.cell_type == "code" and (
        not first.source.strip() or first.source.startswith(("# Colab set-up:", SETUP_PLACEHOLDER))
    )
    if not replaceable:
        first = nbformat.v4.new_code_cell()
        notebook.cells.insert(0, first)
    first.source = setup_cell_source()
    first.metadata["tags"] = [SETUP_CELL_TAG]


# A cell of claims (`companion.claim`) is the proof beside the reading path: it runs under nbval,
# make claims and the device check, and a reader does not have to read it. make outputs folds it
# on the site (a "show code" toggle), in Colab (a form with this title) and in JupyterLab.
CLAIMS_TITLE = "#@title How this result is checked"
CLAIMS_TAG = "hide-input"


def _is_claim_statement(node: ast.stmt) -> bool:
    """``claim(...)``, ``_ = claim(...)`` or ``from companion import claim``."""
    if isinstance(node, ast.ImportFrom):
        return [alias.name for alias in node.names] == ["claim"]
    value = node.value if isinstance(node, ast.Expr | ast.Assign) else None
    return isinstance(value, ast.Call) and getattr(value.func, "id", None) == "claim"


def is_claims_cell(cell) -> bool:
    """A code cell that holds nothing but ``claim(...)`` calls (and their import)."""
    if cell.cell_type != "code" or "claim(" not in cell.source:
        return False
    try:
        return all(map(_is_claim_statement, ast.parse(cell.source).body))
    except SyntaxError:
        return False


def fold_claims_cell(cell) -> None:
    """Fold a cell of claims everywhere a reader may open it: see :data:`CLAIMS_TITLE`."""
    if not cell.source.startswith(CLAIMS_TITLE):
        cell.source = f"{CLAIMS_TITLE}\n{cell.source}"
    tags = cell.metadata.setdefault("tags", [])
    if CLAIMS_TAG not in tags:
        tags.append(CLAIMS_TAG)
    cell.metadata["cellView"] = "form"  # Colab
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True  # JupyterLab, Notebook 7


def run_notebook(notebook, folder: Path, allow_errors: bool = False) -> None:
    """Execute ``notebook`` in place from a fresh kernel started in ``folder``, in this
    process's environment."""
    from nbclient import NotebookClient

    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        record_timing=False,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(folder)}},
    ).execute()


def execute(path: Path) -> float:
    """Re-run ``path`` in place from a fresh kernel started in its folder; return the seconds."""

    committed = nbformat.read(path, as_version=4)
    notebook = nbformat.read(path, as_version=4)
    place_setup_cell(notebook)
    for cell in filter(is_claims_cell, notebook.cells):
        fold_claims_cell(cell)
    start = time.perf_counter()
    run_notebook(notebook, path.parent)
    seconds = time.perf_counter() - start
    for cell in notebook.cells:
        if cell.cell_type == "code":
            coalesce_streams(cell)
    keep_measurements(committed, notebook, refresh=os.environ.get(REFRESH_VARIABLE, "0") == "1")
    notebook.metadata = nbformat.from_dict(NOTEBOOK_METADATA)
    nbformat.write(notebook, path)
    return seconds


def execute_and_record(
    paths: list[Path], record_path: Path = RECORD, root: Path = ROOT, complete: bool = False
) -> bool:
    """Execute each notebook, recording its run in ``record_path``; True if all passed.

    The record is written after every notebook, so an interrupted run loses nothing it did.
    A failed notebook keeps its committed file and gets a failed entry; the others still run.
    ``complete`` means ``paths`` are all the book's notebooks: entries of others are dropped.
    """
    names = [path.relative_to(root).as_posix() for path in paths]
    environment = run_environment()
    all_passed = True
    for path, name in zip(paths, names):
        start = time.perf_counter()
        try:
            seconds = execute(path)
            result = "passed"
        except Exception as error:  # a failing notebook is recorded, not fatal to the run
            seconds = time.perf_counter() - start
            result = f"failed: {getattr(error, 'ename', None) or type(error).__name__}"
            print(f"{name}: {error}", file=sys.stderr)
            all_passed = False
        # Read the record again just before writing it: another `make outputs` of other
        # notebooks may have written its entries meanwhile.
        record = read_record(record_path, missing_ok=True)
        if complete:
            record["notebooks"] = {
                other: entry for other, entry in record["notebooks"].items() if other in names
            }
        record["notebooks"][name] = record_entry(path, seconds, result, environment)
        write_record(record_path, record)
        print(f"{seconds:6.1f} s  {result:<8}  {name}")
    return all_passed


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "list"
    if command == "list":
        for path in toc_notebooks():
            print(path.relative_to(ROOT))
        return 0
    if command == "execute":
        paths = [Path(arg).resolve() for arg in argv[1:]]
        complete = not paths
        passed = execute_and_record(paths or toc_notebooks(), complete=complete)
        print(f"recorded in {RECORD.relative_to(ROOT)}")
        return 0 if passed else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
