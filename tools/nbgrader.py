"""An nbgrader course from the book: one assignment per chapter, graded by the book's checkers.

    python -m tools.nbgrader                         # every chapter, into _build/nbgrader
    python -m tools.nbgrader --out course attention-pooling self-attention

It writes an nbgrader course directory: ``nbgrader_config.py`` and
``source/<chapter>/<chapter>.ipynb``, the chapter notebook with nbgrader's cell metadata,
everything read from the notebook itself (``tools/exercises.py``):

* the solution cell of a coding exercise (the one that calls its checker) becomes an
  *autograded answer* cell, ``grade_id`` = the exercise's label; after it comes a read-only
  *autograder test* cell worth the exercise's points, which asserts the checker's verdict;
* a written exercise gets a *manually graded answer* cell worth its points, whose source is the
  book's written solution (nbgrader releases it as ``YOUR ANSWER HERE``); its solution code, if
  any, becomes an ungraded answer cell;
* a solution region outside any function is wrapped in ``try`` / ``except
  NotImplementedError``, so that nbgrader's stub there prints ``not implemented yet: <label>``
  and "Run all" goes on; inside a function the stub raises, and the checker reports it;
* the sphinx-exercise solution cells are removed (their prose is the written answer).

nbgrader's own settings stay at their defaults, ``ClearSolutions.enforce_metadata`` included;
the configuration only names the course and lets one cell run as long as a chapter may
(``Execute.timeout``). The instructor guide page shows the workflow: generate, release,
collect, autograde, feedback.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

from tools.exercises import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    CheckerCall,
    Exercise,
    exercises,
    solution_regions,
)
from tools.record import NOTEBOOK_BUDGET_S, ROOT
from tools.toc import chapter_notebooks

COURSE_ID = "attention-book"
SCHEMA_VERSION = 3

CONFIG = f'''\
# nbgrader configuration of the course made from the book (python -m tools.nbgrader).
# Everything else stays at nbgrader's defaults, ClearSolutions.enforce_metadata included.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{COURSE_ID}"
# One cell may run twice as long as a whole chapter should (nbgrader's default is 30 s), so a
# student's slow machine still grades.
c.Execute.timeout = {int(2 * NOTEBOOK_BUDGET_S)}
'''


def nbgrader_metadata(
    grade_id: str, *, solution: bool, grade: bool, locked: bool, points: int = 0
) -> dict:
    """nbgrader's cell metadata (schema version 3)."""
    metadata = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": SCHEMA_VERSION,
        "solution": solution,
        "task": False,
    }
    if grade:
        metadata["points"] = points
    return metadata


def guard_top_level_regions(source: str, label: str) -> str:
    """Wrap each solution region outside a function in ``try``/``except NotImplementedError``.

    nbgrader replaces a region by ``raise NotImplementedError()``; outside a function that
    would stop the notebook. Wrapped, the stub prints ``not implemented yet: <label>``.
    """
    outside = {begin: end for begin, end, inside in solution_regions(source) if not inside}
    lines, out, number = source.split("\n"), [], 1
    while number <= len(lines):
        line = lines[number - 1]
        if number in outside:
            end = outside[number]
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}try:")
            out += [f"    {inner}" if inner.strip() else inner for inner in lines[number - 1 : end]]
            out.append(f"{indent}except NotImplementedError:")
            out.append(f'{indent}    print("not implemented yet: {label}")')
            number = end + 1
        else:
            out.append(line)
            number += 1
    return "\n".join(out)


def test_cell_source(exercise: Exercise, calls: list[CheckerCall]) -> str:
    """The autograder test of a coding exercise: the checkers' verdicts, asserted."""
    imports = []
    for call in calls:
        for statement in call.imports or (f"from companion.exercises import {call.checker}",):
            if statement not in imports:
                imports.append(statement)
    points = f"{exercise.points} point{'s' if exercise.points != 1 else ''}"
    lines = [
        f"# Autograder test of {exercise.label} ({points}): the checker prints pass or a hint.",
        *imports,
        "",
    ]
    for call in calls:
        lines.append(
            f"assert {call.checker}({call.function}), "
            f'"{call.function} does not pass {call.checker} yet"'
        )
    return "\n".join(lines)


def course_notebook(notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The chapter ``notebook`` as the source of an nbgrader assignment."""
    found = exercises(notebook)
    for exercise in found:
        if exercise.solution_start < 0 or exercise.solution_end < 0:
            raise ValueError(f"{name}: {exercise.label} has no solution-start/solution-end")
    removed = {
        index
        for e in found
        for index in range(e.solution_start, e.solution_end + 1)
        if notebook.cells[index].cell_type == "markdown"
    }
    by_code_cell = {index: e for e in found for index in e.code_cells}
    test_after = {max(call.cell for call in e.checks): e for e in found if e.checks}
    answer_after = {e.exercise_end: e for e in found if e.kind == "written"}
    source = copy.deepcopy(notebook)
    cells = []
    for index, cell in enumerate(source.cells):
        coded = by_code_cell.get(index)
        if coded is not None:
            number = coded.code_cells.index(index) + 1
            cell.source = guard_top_level_regions(cell.source, coded.label)
            graded = any(call.cell == index for call in coded.checks)
            grade_id = coded.label if number == 1 else f"{coded.label}-code-{number}"
            if BEGIN_SOLUTION in cell.source or graded:
                cell.metadata["nbgrader"] = nbgrader_metadata(
                    grade_id, solution=True, grade=False, locked=False
                )
            cells.append(cell)
        elif index not in removed:
            cells.append(cell)
        if index in test_after:
            e = test_after[index]
            test = nbformat.v4.new_code_cell(test_cell_source(e, e.checks))
            test.id = f"{e.label}-test"
            test.metadata["nbgrader"] = nbgrader_metadata(
                f"{e.label}-test", solution=False, grade=True, locked=True, points=e.points
            )
            cells.append(test)
        if index in answer_after:
            e = answer_after[index]
            answer = nbformat.v4.new_markdown_cell(e.prose or "(no written solution)")
            answer.id = f"{e.label}-answer"
            answer.metadata["nbgrader"] = nbgrader_metadata(
                f"{e.label}-answer", solution=True, grade=True, locked=False, points=e.points
            )
            cells.append(answer)
    source.cells = cells
    for cell in source.cells:
        if END_SOLUTION in cell.source and "nbgrader" not in cell.metadata:
            raise ValueError(f"{name}: cell {cell.id} has solution markers outside an exercise")
    return source


def write_course(out: Path, notebooks: list[Path]) -> list[Path]:
    """Write the course directory ``out`` for ``notebooks``; return the source notebooks."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "nbgrader_config.py").write_text(CONFIG)
    written = []
    for path in notebooks:
        assignment = path.stem
        target = out / "source" / assignment / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        notebook = course_notebook(nbformat.read(path, as_version=4), path.name)
        nbformat.validate(notebook)
        nbformat.write(notebook, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nbgrader", description=__doc__)
    parser.add_argument("chapters", nargs="*", help="notebook names without .ipynb; all if none")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "nbgrader")
    args = parser.parse_args(argv)
    notebooks = chapter_notebooks(ROOT)
    if args.chapters:
        known = {path.stem: path for path in notebooks}
        unknown = sorted(set(args.chapters) - set(known))
        if unknown:
            print(f"error: no chapter {', '.join(unknown)}; chapters: {', '.join(known)}")
            return 2
        notebooks = [known[name] for name in args.chapters]
    written = write_course(args.out.resolve(), notebooks)
    print(f"nbgrader course in {args.out}: {len(written)} assignments in source/")
    print(f"next: cd {args.out} && nbgrader generate_assignment {written[0].parent.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
