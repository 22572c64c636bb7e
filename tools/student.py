"""The student edition: the book without its solutions, built from the same sources.

    python -m tools.student                      # notebooks, staged source and site
    python -m tools.student --notebooks-only     # just _build/student/notebooks/
    python -m tools.student --repository-url https://github.com/you/course-student

Two kinds of solution are stripped, the markers nbgrader and otter-grader also use:

* code between a ``### BEGIN SOLUTION`` line and a ``### END SOLUTION`` line becomes a stub at
  the same indentation, and the cell's outputs and metadata are cleared (they would give the
  answer away: a figure's caption, say). Inside a function, which a checker calls, the stub is
  nbgrader's ``# YOUR CODE HERE`` / ``raise NotImplementedError()``, and the checker reports
  "not implemented yet". Anywhere else the stub prints ``not implemented yet: <label>`` and the
  notebook runs on, so "Run all" reaches the end of a notebook with nothing solved;
* the markdown cells from a sphinx-exercise ``solution-start`` gate up to and including its
  ``solution-end`` gate are removed. Each gate starts its own markdown cell, so no cell that
  holds anything else is ever edited.

A written exercise (one whose solution calls no checker) gets a markdown cell
``YOUR ANSWER HERE`` after its text, where the student writes the answer; it is also the cell
that nbgrader grades by hand (``tools/nbgrader.py``). Every other cell is kept exactly as it
is. Markers that do not pair up, or that nest, raise a :class:`MarkerError` naming the notebook
and the cell. The instructor guide page of the book explains how to hand the result to
students; the student edition leaves that page out.
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

from tools.exercises import BEGIN_SOLUTION, END_SOLUTION, exercises, solution_regions
from tools.toc import toc_notebooks

CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")  # nbgrader's, in a function
ANSWER_STUB = "YOUR ANSWER HERE"  # nbgrader's text stub: a written answer goes here
# Pages for instructors only: the student site leaves them out.
INSTRUCTOR_PAGES = ("book/instructor-guide",)


def not_implemented_stub(label: str | None) -> tuple[str, str]:
    """The stub of a solution region outside any function: it says so and lets the run go on."""
    message = f"not implemented yet: {label}" if label else "not implemented yet"
    return ("# YOUR CODE HERE", f'print("{message}")')


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


def strip_code(source: str, where: Where | str = "code", label: str | None = None) -> str:
    """Replace each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region by its stub: the
    raising one inside a function, the printing one (naming ``label``) elsewhere."""
    check_markers(source, where)
    in_function = {begin: inside for begin, _, inside in solution_regions(source)}
    lines, begin = [], None
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            begin = number
            indent = line[: len(line) - len(line.lstrip())]
            stub = CODE_STUB if in_function[number] else not_implemented_stub(label)
            lines += [indent + stub_line for stub_line in stub]
        elif marker == END_SOLUTION:
            begin = None
        elif begin is None:
            lines.append(line)
    return "\n".join(lines)


def check_markers(source: str, where: Where | str = "code") -> None:
    """Raise a :class:`MarkerError` unless the solution markers of ``source`` pair up."""
    begin = None
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if begin is not None:
                raise MarkerError(
                    f"{where}: nested {BEGIN_SOLUTION} at line {number} "
                    f"(the one at line {begin} is not closed yet)"
                )
            begin = number
        elif marker == END_SOLUTION:
            if begin is None:
                raise MarkerError(f"{where}: {END_SOLUTION} at line {number} has no BEGIN")
            begin = None
    if begin is not None:
        raise MarkerError(f"{where}: {BEGIN_SOLUTION} at line {begin} has no {END_SOLUTION}")


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
                check_markers(cell.source, where)
                verdicts[index] = "stub"
            elif opened is not None:
                raise MarkerError(
                    f"{where}: a code cell inside the solution opened at {opened} has no "
                    f"{BEGIN_SOLUTION} / {END_SOLUTION} lines, so it would reach students"
                )
    if opened is not None:
        raise MarkerError(f"{opened}: solution-start has no solution-end")
    return verdicts


def answer_cell(label: str) -> nbformat.NotebookNode:
    """The markdown cell where the answer to the written exercise ``label`` goes."""
    cell = nbformat.v4.new_markdown_cell(ANSWER_STUB)
    cell["id"] = f"{label}-answer"
    return cell


def strip_notebook(notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The student version of ``notebook``; the cells that are not solutions are untouched."""
    verdicts = solution_cells(notebook, name)
    found = exercises(notebook)
    label_of = {index: e.label for e in found for index in e.code_cells}
    answers_after = {e.exercise_end: e.label for e in found if e.kind == "written"}
    student = copy.deepcopy(notebook)
    cells = []
    for index, cell in enumerate(student.cells):
        verdict = verdicts.get(index)
        if verdict == "stub":
            cell.source = strip_code(cell.source, label=label_of.get(index))
            cell.outputs = []
            cell.execution_count = None
            cell.metadata = nbformat.NotebookNode()  # a caption or a tag can tell the answer
        if verdict != "remove":
            cells.append(cell)
        if index in answers_after:
            cells.append(answer_cell(answers_after[index]))
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


def student_toc(toc: dict) -> dict:
    """``_toc.yml`` without the instructor pages, and without a part they leave empty."""

    def keep(node):
        if isinstance(node, list):
            kept = [keep(item) for item in node]
            return [item for item in kept if item is not None]
        if isinstance(node, dict):
            if node.get("file") in INSTRUCTOR_PAGES:
                return None
            kept = {key: keep(value) for key, value in node.items()}
            if any(isinstance(node.get(key), list) and not kept[key] for key in node):
                return None  # a part or chapter whose every entry was left out
            return kept
        return node

    return keep(toc)


def stage_source(root: Path, source: Path, notebooks: list[Path], repository_url: str | None):
    """Lay out a book source in ``source``: the pages as they are, the notebooks stripped."""
    if source.exists():
        shutil.rmtree(source)
    config = yaml.safe_load((root / "_config.yml").read_text())
    shutil.copytree(root / "book", source / "book", ignore=shutil.ignore_patterns("*.ipynb"))
    for markdown in (source / "book").rglob("*.md"):
        if "solution-start" in _gates(markdown.read_text()):
            raise MarkerError(f"{markdown.relative_to(source)}: solutions in a markdown page")
    for notebook in notebooks:
        shutil.copy2(notebook, source / "book" / notebook.name)
    for page in INSTRUCTOR_PAGES:
        (source / f"{page}.md").unlink(missing_ok=True)
    toc = student_toc(yaml.safe_load((root / "_toc.yml").read_text()))
    (source / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False, allow_unicode=True))
    for name in config.get("bibtex_bibfiles", []):
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
    parser = argparse.ArgumentParser(prog="python -m tools.student", description=__doc__)
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
