"""The student edition: the book without its solutions, built from the same sources.

    python -m companion.student                      # notebooks, staged source and site
    python -m companion.student --notebooks-only     # just _build/student/notebooks/
    python -m companion.student --repository-url https://github.com/you/course-student

Two kinds of solution are stripped, the markers nbgrader and otter-grader also use:

* code between a ``### BEGIN SOLUTION`` line and a ``### END SOLUTION`` line becomes the stub
  ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` at the same indentation, as nbgrader's
  ``ClearSolutions`` does, and the cell's outputs are cleared (they would give the answer away);
* the markdown cells from a sphinx-exercise ``solution-start`` gate up to and including its
  ``solution-end`` gate are removed. Each gate starts its own markdown cell, so no cell that
  holds anything else is ever edited.

Every other cell is kept exactly as it is. Markers that do not pair up, or that nest, raise a
:class:`MarkerError` naming the notebook and the cell. The instructor guide page of the book
explains how to hand the result to students.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from companion.toc import toc_notebooks

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")

# A gate is a directive at the start of a line: ```{solution-start} label
_GATE = re.compile(r"^```\{(solution-start|solution-end|exercise-start|exercise-end)\}", re.M)


class MarkerError(ValueError):
    """Solution markers that do not pair up, nest, or sit where they cannot be stripped."""


@dataclass(frozen=True)
class Where:
    """A cell, named the way an author finds it: notebook, position and cell id."""

    notebook: str
    index: int
    cell_id: str

    def __str__(self) -> str:
        return f"{self.notebook}, cell {self.index} (id {self.cell_id})"


def strip_code(source: str, where: Where | str = "code") -> str:
    """Replace each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region by the stub."""
    lines, begin = [], None
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if begin is not None:
                raise MarkerError(
                    f"{where}: nested {BEGIN_SOLUTION} at line {number} "
                    f"(the one at line {begin} is not closed yet)"
                )
            begin = number
            indent = line[: len(line) - len(line.lstrip())]
            lines += [indent + stub for stub in CODE_STUB]
        elif marker == END_SOLUTION:
            if begin is None:
                raise MarkerError(f"{where}: {END_SOLUTION} at line {number} has no BEGIN")
            begin = None
        elif begin is None:
            lines.append(line)
    if begin is not None:
        raise MarkerError(f"{where}: {BEGIN_SOLUTION} at line {begin} has no {END_SOLUTION}")
    return "\n".join(lines)


def _gates(source: str) -> list[str]:
    return _GATE.findall(source)


def solution_cells(notebook: nbformat.NotebookNode, name: str) -> dict[int, str]:
    """Which cells are solutions, and what becomes of them: ``"remove"`` or ``"stub"``.

    Checks the markers on the way, so that a notebook the student edition cannot strip
    cleanly is an error, never a leak.
    """
    verdicts: dict[int, str] = {}
    opened: Where | None = None  # the solution-start gate we are inside, if any
    for index, cell in enumerate(notebook.cells):
        where = Where(name, index, cell.get("id", "?"))
        if cell.cell_type == "markdown":
            gates = _gates(cell.source)
            if BEGIN_SOLUTION in cell.source or END_SOLUTION in cell.source:
                raise MarkerError(
                    f"{where}: solution markers in a markdown cell; put a written answer "
                    "between solution-start and solution-end gates instead"
                )
            if "solution-start" in gates:
                if opened is not None:
                    raise MarkerError(f"{where}: solution-start nested inside the one at {opened}")
                if gates != ["solution-start"] or not cell.source.lstrip().startswith("```"):
                    raise MarkerError(
                        f"{where}: a solution-start gate must begin its own markdown cell, "
                        f"with no other gate in it (found {gates})"
                    )
                opened = where
                verdicts[index] = "remove"
            elif "solution-end" in gates:
                if opened is None:
                    raise MarkerError(f"{where}: solution-end without a solution-start")
                if cell.source.strip() != "```{solution-end}\n```":
                    raise MarkerError(f"{where}: a solution-end gate must be a cell of its own")
                opened = None
                verdicts[index] = "remove"
            elif opened is not None:
                if gates:
                    raise MarkerError(f"{where}: {gates[0]} inside the solution opened at {opened}")
                verdicts[index] = "remove"
        elif cell.cell_type == "code":
            has_markers = BEGIN_SOLUTION in cell.source or END_SOLUTION in cell.source
            if has_markers:
                strip_code(cell.source, where)  # raises on unbalanced or nested markers
                verdicts[index] = "stub"
            elif opened is not None:
                raise MarkerError(
                    f"{where}: a code cell inside the solution opened at {opened} has no "
                    f"{BEGIN_SOLUTION} / {END_SOLUTION} lines, so it would reach students"
                )
    if opened is not None:
        raise MarkerError(f"{opened}: solution-start has no solution-end")
    return verdicts


def strip_notebook(notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The student version of ``notebook``; the cells that are not solutions are untouched."""
    verdicts = solution_cells(notebook, name)
    student = copy.deepcopy(notebook)
    cells = []
    for index, cell in enumerate(student.cells):
        verdict = verdicts.get(index)
        if verdict == "remove":
            continue
        if verdict == "stub":
            cell.source = strip_code(cell.source)
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    student.cells = cells
    return student


def write_notebooks(root: Path, out: Path) -> list[Path]:
    """Strip every notebook of the table of contents into ``out``; return the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in toc_notebooks(root):
        name = str(path.relative_to(root))
        student = strip_notebook(nbformat.read(path, as_version=4), name)
        target = out / path.name
        nbformat.write(student, target)
        written.append(target)
    return written


def student_config(config: dict, repository_url: str | None) -> dict:
    """The book's ``_config.yml`` for the student edition."""
    config = copy.deepcopy(config)
    config["title"] = f"{config.get('title', 'Book')} (student edition)"
    sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx_config["hide_solutions"] = True  # sphinx-exercise: belt and braces
    if "execution_status" in config["sphinx"].get("local_extensions", {}):
        # The execution record hashes the instructor notebooks; the stripped ones differ.
        sphinx_config["execution_status_check"] = False
    if repository_url:
        config.setdefault("repository", {})["url"] = repository_url
    else:
        # Colab and Binder would open the notebooks *with* solutions from the main repository.
        config["launch_buttons"] = {}
        config.setdefault("html", {})["use_repository_button"] = False
    return config


def stage_source(root: Path, source: Path, notebooks: list[Path], repository_url: str | None):
    """Lay out a book source in ``source``: the pages as they are, the notebooks stripped."""
    if source.exists():
        shutil.rmtree(source)
    config = yaml.safe_load((root / "_config.yml").read_text())
    shutil.copytree(root / "book", source / "book", ignore=shutil.ignore_patterns("*.ipynb"))
    for page in (source / "book").rglob("*.md"):
        if "solution-start" in _gates(page.read_text()):
            raise MarkerError(f"{page.relative_to(source)}: solutions in a markdown page")
    for notebook in notebooks:
        shutil.copy2(notebook, source / "book" / notebook.name)
    for name in ["_toc.yml", *config.get("bibtex_bibfiles", [])]:
        shutil.copy2(root / name, source / name)
    no_cache = shutil.ignore_patterns("__pycache__")
    for folder in sorted(set(config.get("sphinx", {}).get("local_extensions", {}).values())):
        shutil.copytree(root / folder, source / folder, ignore=no_cache)
    config = student_config(config, repository_url)
    (source / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))


def build_site(source: Path, html: Path) -> None:
    """Render the staged source with Jupyter Book 1 (``-W``: any warning fails)."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    built = subprocess.run([str(jupyter_book), "build", str(source), "-W", "--keep-going"])
    if built.returncode != 0:
        sys.exit("error: the student site did not build; Jupyter Book's output above says why")
    if html.exists():
        shutil.rmtree(html)
    shutil.move(source / "_build" / "html", html)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m companion.student", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("."), help="the book's root folder")
    parser.add_argument("--out", type=Path, default=Path("_build/student"))
    parser.add_argument("--notebooks-only", action="store_true", help="skip the site")
    parser.add_argument(
        "--repository-url",
        help="where the student notebooks are published; Colab and Binder buttons point there",
    )
    args = parser.parse_args(argv)
    root, out = args.root.resolve(), args.out.resolve()
    try:
        notebooks = write_notebooks(root, out / "notebooks")
        if not args.notebooks_only:
            stage_source(root, out / "source", notebooks, args.repository_url)
    except MarkerError as error:
        sys.exit(f"error: {error}")
    print(f"{len(notebooks)} student notebooks in {out / 'notebooks'}")
    if not args.notebooks_only:
        build_site(out / "source", out / "html")
        print(f"student site in {out / 'html'}")


if __name__ == "__main__":
    main()
