"""The nbgrader course (tools/nbgrader.py), checked with the real nbgrader.

Every chapter's course notebook goes through nbgrader's own preprocessors here, in process.
Then one round trip, with nbgrader's command line in temporary course directories, over the
smallest chapter (the course is made the same way for every chapter, and each checker's
mistakes are tested in its own test file): ``nbgrader generate_assignment``, then ``nbgrader
autograde`` and ``nbgrader generate_feedback`` of these submissions:

* ``solutions``: the book's own solutions, which must get every autograded point;
* ``untouched``: the released notebook as the student got it, which must get zero;
* ``mistake-<label>``, one per checker: the solutions, except that the checker's own first
  *typical mistake* (its list of known mistakes, read from the checker) stands in for the
  student's function. That exercise's points, and only those, must be deducted.

The scores are read from nbgrader's gradebook. Nothing about the exercises is written here:
labels, points, checkers and their mistakes all come from the notebooks and the checkers.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import nbformat
import pytest

import companion.exercises
from tools.exercises import exercises
from tools.nbgrader import course_notebook, write_course
from tools.record import ROOT
from tools.toc import chapter_notebooks

NOTEBOOKS = chapter_notebooks(ROOT)
ROUND_TRIP = "attention-pooling"  # the smallest chapter, with two checkers and written answers
BIN = Path(sys.executable).parent  # nbgrader runs `alembic` and the kernel from here


def _released(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What nbgrader's generate_assignment does to the cells, with its default settings."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, ClearSolutions

    released = nbformat.from_dict(notebook)
    for preprocessor in (CheckCellMetadata(), ClearSolutions(), ClearOutput()):
        released, _ = preprocessor.preprocess(released, {})
    return released


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_exercise_gets_its_nbgrader_cells(path):
    book = nbformat.read(path, as_version=4)
    found = exercises(book)
    course = course_notebook(book, path.name)
    graded = {
        cell.metadata["nbgrader"]["grade_id"]: cell
        for cell in course.cells
        if "nbgrader" in cell.metadata
    }
    for exercise in found:
        if exercise.kind == "coding":
            test = graded[f"{exercise.label}-test"]
            assert test.metadata["nbgrader"]["locked"] and test.metadata["nbgrader"]["grade"]
            assert test.metadata["nbgrader"]["points"] == exercise.points > 0
            for checker in exercise.checkers:
                assert f"assert {checker}(" in test.source
            solution = graded[exercise.label]
            assert solution.metadata["nbgrader"]["solution"]
            assert not solution.metadata["nbgrader"]["grade"]
        else:
            answer = graded[f"{exercise.label}-answer"]
            assert answer.cell_type == "markdown" and answer.metadata["nbgrader"]["solution"]
            assert answer.metadata["nbgrader"]["points"] == exercise.points > 0
    assert not any("{solution-start}" in cell.source for cell in course.cells)
    # nbgrader's defaults (enforce_metadata) accept it, and its release holds no solution.
    released = _released(course)
    for cell in released.cells:
        assert "### BEGIN SOLUTION" not in cell.source
        if cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-answer"):
            assert cell.source == "YOUR ANSWER HERE"
        if "raise NotImplementedError()" in cell.source and cell.cell_type == "code":
            # Outside a function the stub is caught, so "Run all" goes on.
            for line in cell.source.split("\n"):
                if line.strip() == "raise NotImplementedError()" and not line.startswith(" "):
                    pytest.fail(f"{path.name}: a top-level stub raises in cell {cell.id}")


def test_a_solution_region_outside_an_exercise_is_refused():
    book = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")]
    )
    with pytest.raises(ValueError, match="solution markers outside an exercise"):
        course_notebook(book, "made-up.ipynb")


# --- the round trip ---------------------------------------------------------------------------


def _mistakes(checker: str) -> list:
    """The typical mistakes ``checker`` knows: what it hands to ``core.check``."""
    function = getattr(companion.exercises, checker)
    module = sys.modules[function.__module__]
    seen = []

    def record(student_fn, reference_fn, make_inputs, mistakes=(), *args, **kwargs):
        seen.append(list(mistakes))
        return False

    with mock.patch.object(module, "check", record):
        function(lambda *args: None)
    assert seen, f"{checker} does not call companion.exercises.core.check"
    return seen[0]


TYPICAL_MISTAKE = """\
# A typical wrong answer, made by tools/tests/test_nbgrader.py: {checker}'s own first typical
# mistake ("{hint}") stands in for {function}.
import {module} as _checker_module
from companion.exercises.core import named_like as _named_like

_right_check = _checker_module.check


def _typical_mistake(student_fn, reference_fn, make_inputs, mistakes=(), *args, **kwargs):
    if getattr(student_fn, "__name__", None) == "{function}":
        student_fn = _named_like(mistakes[0][0], student_fn)
    return _right_check(student_fn, reference_fn, make_inputs, mistakes, *args, **kwargs)


_checker_module.check = _typical_mistake
"""


def _nbgrader(course: Path, *args: str) -> None:
    environment = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        # Two courses are graded side by side on two cores: one thread each.
        **{name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "COMPANION_NUM_THREADS")},
    }
    done = subprocess.run(
        [str(BIN / "nbgrader"), *args], cwd=course, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _submit(course: Path, chapter: str, student: str, notebook: nbformat.NotebookNode) -> None:
    target = course / "submitted" / student / chapter / f"{chapter}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def _chapter_course(course: Path, chapter: str, submissions: str) -> dict:
    """One chapter's course, generated, with its submissions in place. The ``submissions`` are
    ``"book"``: the book's solutions and the untouched release; or ``"mistakes"``: one typical
    mistake per checker. The expected scores per student:
    ``{student: (points of each test cell, the test cells that must fail, the hint)}``."""
    write_course(course, [ROOT / "book" / f"{chapter}.ipynb"])
    _nbgrader(course, "generate_assignment", chapter)
    source = nbformat.read(course / "source" / chapter / f"{chapter}.ipynb", as_version=4)
    released = nbformat.read(course / "release" / chapter / f"{chapter}.ipynb", as_version=4)
    book = nbformat.read(ROOT / "book" / f"{chapter}.ipynb", as_version=4)
    found = [e for e in exercises(book) if e.kind == "coding"]
    tests = {f"{e.label}-test": e.points for e in found}
    expected = {}
    if submissions == "book":
        _submit(course, chapter, "solutions", source)
        _submit(course, chapter, "untouched", released)
        expected = {"solutions": (tests, set(), None), "untouched": (tests, set(tests), None)}
    for exercise in found if submissions == "mistakes" else ():
        for call in {call.checker: call for call in exercise.checks}.values():
            mistakes = _mistakes(call.checker)
            assert mistakes, f"{call.checker} names no typical mistake"
            module = getattr(companion.exercises, call.checker).__module__
            wrong = nbformat.from_dict(source)
            cell = next(c for c in wrong.cells if c.get("id") == book.cells[call.cell].id)
            cell.source = (
                TYPICAL_MISTAKE.format(
                    checker=call.checker, hint=mistakes[0][1], function=call.function, module=module
                )
                + "\n\n"
                + cell.source
            )
            student = f"mistake-{call.checker}"
            _submit(course, chapter, student, wrong)
            expected[student] = (tests, {f"{exercise.label}-test"}, mistakes[0][1])
    return expected


def _grade(course: Path, chapter: str) -> None:
    _nbgrader(course, "autograde", chapter)
    _nbgrader(course, "generate_feedback", chapter)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory) -> dict:
    """The chapter in two course directories, graded side by side (one core each): the book's
    solutions and the untouched release in one, the typical mistakes in the other. The
    gradebooks' scores, the autograded notebooks and the feedback, by student."""
    start = time.perf_counter()
    courses = {kind: tmp_path_factory.mktemp(f"course-{kind}") for kind in ("book", "mistakes")}
    # Prepared one after the other: ast.parse is not thread-safe on Python 3.11
    # (python/cpython#106905). Only the nbgrader processes run side by side.
    results = {kind: _chapter_course(course, ROUND_TRIP, kind) for kind, course in courses.items()}
    with ThreadPoolExecutor(max_workers=len(courses)) as pool:
        for graded in [pool.submit(_grade, course, ROUND_TRIP) for course in courses.values()]:
            graded.result()
    expected = {student: want for result in results.values() for student, want in result.items()}
    course_of = {student: courses[kind] for kind, result in results.items() for student in result}
    seconds = time.perf_counter() - start
    print(f"nbgrader round trip: {seconds:.0f} s for {len(expected)} submissions")
    return {"course_of": course_of, "expected": expected}


def _grades(course: Path, chapter: str, student: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook(chapter, chapter, student)
        return {grade.name: (grade.score, grade.max_score) for grade in notebook.grades}


def test_round_trip_scores_from_the_gradebook(round_trip):
    chapter = ROUND_TRIP
    for student, (tests, failing, _) in round_trip["expected"].items():
        grades = _grades(round_trip["course_of"][student], chapter, student)
        autograded = {name: grades[name] for name in tests}
        for name, points in tests.items():
            assert autograded[name][1] == points, f"{chapter}/{student}: {name} max score"
        scores = {name: score for name, (score, _) in autograded.items()}
        wanted = {name: 0.0 if name in failing else float(points) for name, points in tests.items()}
        assert scores == wanted, f"{chapter}/{student}"
        if student == "untouched":
            # Written answers left as released score zero too: nothing was answered.
            assert all(score == 0 for score, _ in grades.values()), f"{chapter}: {grades}"


def test_untouched_release_runs_to_its_end_and_says_not_implemented(round_trip):
    chapter = ROUND_TRIP
    graded = round_trip["course_of"]["untouched"] / "autograded" / "untouched" / chapter
    notebook = nbformat.read(graded / f"{chapter}.ipynb", as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if grade_id.endswith("-test"):
            assert [e.ename for e in errors] == ["AssertionError"], grade_id
        else:
            assert errors == [], f"{chapter}, cell {cell.get('id')}: {errors}"
    printed = "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
    for exercise in exercises(nbformat.read(ROOT / "book" / f"{chapter}.ipynb", 4)):
        if exercise.code_cells:
            assert f"not implemented yet: {exercise.label}" in printed or (
                exercise.kind == "coding" and "not implemented yet: " in printed
            ), exercise.label


def test_feedback_shows_the_typical_mistakes_hint(round_trip):
    chapter, shown = ROUND_TRIP, 0
    for student, (_, _, hint) in round_trip["expected"].items():
        feedback = round_trip["course_of"][student] / "feedback" / student / chapter
        text = html.unescape((feedback / f"{chapter}.html").read_text())
        if hint is not None:
            assert f"hint: {hint}" in text, student
            shown += 1
    checkers = {
        checker
        for exercise in exercises(nbformat.read(ROOT / "book" / f"{chapter}.ipynb", 4))
        for checker in exercise.checkers
    }
    assert shown == len(checkers) >= 2


def test_course_command_writes_the_config_and_every_chapter(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tools.nbgrader", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "source").iterdir()) == sorted(
        p.stem for p in NOTEBOOKS
    )
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert "enforce_metadata" not in config.replace("ClearSolutions.enforce_metadata included", "")
    shutil.rmtree(tmp_path / "source")
