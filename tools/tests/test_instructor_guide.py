"""The instructor guide's exercise table and schedules agree with the notebooks.

The table is the one place an instructor looks up what to assign, so it must list every
exercise of the book and nothing else, with the kind, difficulty and checker the notebooks
actually have. Everything is read from the notebooks at test time; nothing is copied here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat
import pytest

import companion.exercises
from tools.exercises import exercises as read_exercises
from tools.notebooks import ROOT
from tools.toc import chapter_notebooks

GUIDE = ROOT / "book" / "instructor-guide.md"
TABLE_HEADER = ("Chapter", "Exercise", "Kind", "Difficulty", "Checker", "Points", "Minutes")
NO_CHECKER = "—"

_GATE = re.compile(
    r"^```\{(exercise-start|exercise-end|solution-start|solution-end)\}[ \t]*(\S*)", re.M
)
_LABEL = re.compile(r"^:label:[ \t]*(\S+)", re.M)
# The tag every exercise text starts with: *(Easy.)*, *(Coding, medium.)*, *(Open-ended.)* ...
_TAG = re.compile(r"\*\((?:(Coding), )?(easy|medium|open-ended)\.\)\*", re.I)
_DOC = re.compile(r"\{doc\}`(?:[^`<]*<([^>`]+)>|([^`<>]+))`")
_EXERCISE_LABEL = re.compile(r"\{ref\}`(?:[^`<]*<)?(ex-[\w-]+)>?`|`(ex-[\w-]+)`")
_CHECKER_CELL = re.compile(r"`(check_\w+)`")


@dataclass(frozen=True)
class Exercise:
    """One exercise as the notebook defines it."""

    chapter: str  # the notebook's name without .ipynb, as {doc} names it from book/
    label: str
    kind: str  # "coding" when its solution code calls a checker, else "written"
    difficulty: str | None  # from the tag; None when the text has no tag
    checker: str | None
    tagged_coding: bool  # the tag says "Coding, ..."


@dataclass(frozen=True)
class Row:
    """One row of the guide's exercise table."""

    chapter: str
    label: str
    kind: str
    difficulty: str
    checker: str | None
    minutes: str


def exercises_in(notebook: nbformat.NotebookNode, chapter: str) -> list[Exercise]:
    """Every exercise of a notebook, as tools/exercises.py (the tools' one reader) finds it."""
    return [
        Exercise(
            chapter=chapter,
            label=e.label,
            kind=e.kind,
            difficulty=e.difficulty,
            checker=", ".join(e.checkers) or None,
            tagged_coding=e.tagged_coding,
        )
        for e in read_exercises(notebook)
    ]


def book_exercises() -> list[Exercise]:
    """Every exercise of every notebook in the table of contents, in reading order."""
    found = []
    for path in chapter_notebooks(ROOT):
        chapter = path.relative_to(ROOT / "book").with_suffix("").as_posix()
        found += exercises_in(nbformat.read(path, as_version=4), chapter)
    return found


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every pipe table in ``text``: its header cells and its rows of cells."""
    tables, lines = [], text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        below = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if line.startswith("|") and re.fullmatch(r"\|[\s:|-]+\|?", below) and "-" in below:
            header, rows = _cells(line), []
            index += 2
            while index < len(lines) and lines[index].strip().startswith("|"):
                rows.append(_cells(lines[index]))
                index += 1
            tables.append((header, rows))
        else:
            index += 1
    return tables


def _doc_target(cell: str) -> str | None:
    match = _DOC.search(cell)
    return (match.group(1) or match.group(2)).strip() if match else None


def _exercise_labels(cell: str) -> list[str]:
    return [a or b for a, b in _EXERCISE_LABEL.findall(cell)]


def exercise_table(text: str) -> list[Row]:
    """The rows of the table whose header is ``TABLE_HEADER``."""
    tables = [rows for header, rows in markdown_tables(text) if tuple(header) == TABLE_HEADER]
    assert len(tables) == 1, f"expected one table headed {' | '.join(TABLE_HEADER)}"
    parsed = []
    for cells in tables[0]:
        assert len(cells) == len(TABLE_HEADER), f"row with {len(cells)} cells: {cells}"
        chapter, label, kind, difficulty, checker, _points, minutes = cells
        labels = _exercise_labels(label)
        assert len(labels) == 1, f"the Exercise cell {label!r} names no single ex- label"
        checker_name = _CHECKER_CELL.search(checker)
        assert checker_name or checker == NO_CHECKER, f"{label}: checker cell {checker!r}"
        parsed.append(
            Row(
                chapter=_doc_target(chapter) or chapter,
                label=labels[0],
                kind=kind,
                difficulty=difficulty,
                checker=checker_name.group(1) if checker_name else None,
                minutes=minutes,
            )
        )
    return parsed


def table_problems(rows: list[Row], exercises: list[Exercise]) -> list[str]:
    """Everything on which the table and the notebooks disagree; empty when they agree."""
    problems = []
    known = {exercise.label: exercise for exercise in exercises}
    listed = [row.label for row in rows]
    for label in sorted({label for label in listed if listed.count(label) > 1}):
        problems.append(f"{label}: listed {listed.count(label)} times")
    for label in sorted(set(known) - set(listed)):
        problems.append(f"{label}: in {known[label].chapter}, missing from the table")
    for label in sorted(set(listed) - set(known)):
        problems.append(f"{label}: in the table, but no notebook has this exercise")
    for row in rows:
        exercise = known.get(row.label)
        if exercise is None:
            continue
        expected = {
            "chapter": exercise.chapter,
            "kind": exercise.kind,
            "difficulty": exercise.difficulty,
            "checker": exercise.checker,
        }
        for column, value in expected.items():
            if getattr(row, column) != value:
                problems.append(f"{row.label}: {column} is {getattr(row, column)!r}, not {value!r}")
        if not (row.minutes.isdigit() and int(row.minutes) > 0):
            problems.append(f"{row.label}: minutes {row.minutes!r} is not a positive integer")
    return problems


@pytest.fixture(scope="module")
def guide() -> str:
    return GUIDE.read_text()


@pytest.fixture(scope="module")
def exercises() -> list[Exercise]:
    return book_exercises()


def test_guide_keeps_its_label(guide):
    assert guide.startswith("(sec-instructor-guide)=\n")


def test_table_lists_every_exercise_and_nothing_else(guide, exercises):
    assert exercises, "no exercises found in the notebooks"
    assert table_problems(exercise_table(guide), exercises) == []


def test_table_follows_the_reading_order(guide, exercises):
    assert [row.label for row in exercise_table(guide)] == [e.label for e in exercises]


def test_every_exercise_is_tagged_and_the_tag_matches_its_checker(exercises):
    for exercise in exercises:
        where = f"{exercise.chapter}: {exercise.label}"
        assert exercise.difficulty is not None, f"{where}: no *(Easy.)*-style tag"
        assert exercise.tagged_coding == (exercise.kind == "coding"), (
            f"{where}: the tag says {'coding' if exercise.tagged_coding else 'written'}, "
            f"but the solution {'calls' if exercise.checker else 'calls no'} checker"
        )


def test_checkers_are_public(exercises):
    public = set(companion.exercises.__all__)
    for exercise in exercises:
        if exercise.checker is not None:
            assert exercise.checker in public, f"{exercise.label}: {exercise.checker} not public"


def test_problems_name_a_missing_and_an_extra_row(guide, exercises):
    rows = exercise_table(guide)
    dropped, bogus = rows[0], replace(rows[1], label="ex-not-in-the-book")
    doctored = [bogus, *rows[2:]]
    problems = table_problems(doctored, exercises)
    assert f"{dropped.label}: in {dropped.chapter}, missing from the table" in problems
    assert f"{rows[1].label}: in {rows[1].chapter}, missing from the table" in problems
    assert "ex-not-in-the-book: in the table, but no notebook has this exercise" in problems


def test_problems_name_wrong_columns(exercises):
    first = exercises[0]
    wrong = Row(
        chapter="transformer" if first.chapter != "transformer" else "self-attention",
        label=first.label,
        kind="coding" if first.kind == "written" else "written",
        difficulty="impossible",
        checker="check_nothing",
        minutes="0",
    )
    rows = [wrong] + [
        Row(e.chapter, e.label, e.kind, e.difficulty or "", e.checker, "10") for e in exercises[1:]
    ]
    problems = table_problems(rows, exercises)
    for column in ("chapter", "kind", "difficulty", "checker"):
        assert any(p.startswith(f"{first.label}: {column} is ") for p in problems), column
    assert f"{first.label}: minutes '0' is not a positive integer" in problems
    assert len(problems) == 5
    duplicated = table_problems([*rows, rows[-1]], exercises)
    assert f"{rows[-1].label}: listed 2 times" in duplicated


def test_parser_reads_a_made_up_notebook():
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "## Exercises\n\n```{exercise-start}\n:label: ex-a\n```\n*(Coding, medium.)* Do"
                " it.\n```{exercise-end}\n```"
            ),
            nbformat.v4.new_markdown_cell("```{solution-start} ex-a\n:class: dropdown\n```\nHow."),
            nbformat.v4.new_code_cell(
                "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END"
                " SOLUTION\n\n\nif check_f(f):\n    print(f(1))"
            ),
            nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
            nbformat.v4.new_markdown_cell(
                "```{exercise-start}\n:label: ex-b\n```\n*(Open-ended.)* Think.\n```{exercise-end}"
                "\n```\n\n```{solution-start} ex-b\n:class: dropdown\n```\nThus."
            ),
            nbformat.v4.new_code_cell("### BEGIN SOLUTION\nprint(check)\n### END SOLUTION"),
            nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
            nbformat.v4.new_code_cell("check_g(g)  # outside any solution: not ex-b's checker"),
        ]
    )
    assert exercises_in(notebook, "made-up") == [
        Exercise("made-up", "ex-a", "coding", "medium", "check_f", tagged_coding=True),
        Exercise("made-up", "ex-b", "written", "open-ended", None, tagged_coding=False),
    ]


def test_table_parser_reads_links_and_plain_labels():
    text = "\n".join(
        [
            "| " + " | ".join(TABLE_HEADER) + " |",
            "| --- | --- | --- | --- | --- | ---: | ---: |",
            "| {doc}`Pooling <attention-pooling>` | {ref}`ex-a <ex-a>` | coding | easy | "
            "`check_f` | 1 | 15 |",
            "| {doc}`transformer` | `ex-b` | written | open-ended | — | 3 | 60 |",
            "",
            "Not a row | either",
        ]
    )
    assert exercise_table(text) == [
        Row("attention-pooling", "ex-a", "coding", "easy", "check_f", "15"),
        Row("transformer", "ex-b", "written", "open-ended", None, "60"),
    ]


def _section(text: str, heading: str) -> str:
    """The text under the heading ``heading``, up to the next heading of any level."""
    match = re.search(rf"^#+ {re.escape(heading)}[ \t]*\n(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    assert match, f"no section headed {heading!r}"
    return match.group(1)


SCHEDULES = ("Four weeks", "Eight weeks")


@pytest.mark.parametrize("heading", SCHEDULES)
def test_schedule_covers_the_chapters_in_order(guide, heading):
    chapters = [
        p.relative_to(ROOT / "book").with_suffix("").as_posix() for p in chapter_notebooks(ROOT)
    ]
    tables = markdown_tables(_section(guide, heading))
    assert len(tables) == 1, f"{heading}: expected one table"
    header, rows = tables[0]
    assert header[:3] == ["Week", "Read", "Assign"], header
    weeks = [int(cells[0]) for cells in rows]
    assert weeks == list(range(1, len(weeks) + 1)), f"{heading}: weeks {weeks}"
    read = [_doc_target(part) for cells in rows for part in re.findall(r"\{doc\}`[^`]*`", cells[1])]
    assert set(read) <= set(chapters), f"{heading}: {set(read) - set(chapters)} not in the toc"
    assert read == chapters, f"{heading}: chapters read {read}, not the toc order {chapters}"


@pytest.mark.parametrize("heading", SCHEDULES)
def test_schedule_assigns_only_listed_exercises_already_read(guide, heading):
    table = {row.label: row for row in exercise_table(guide)}
    header, rows = markdown_tables(_section(guide, heading))[0]
    assert header == ["Week", "Read", "Assign", "Optional", "Lab minutes"], header
    read_so_far: set[str] = set()
    placed = []
    for week, read, assign, optional, minutes in rows:
        read_so_far |= {_doc_target(p) for p in re.findall(r"\{doc\}`[^`]*`", read)}
        assigned = _exercise_labels(assign)
        for label in assigned + _exercise_labels(optional):
            assert label in table, f"{heading}, week {week}: {label} is not in the exercise table"
            chapter = table[label].chapter
            assert chapter in read_so_far, f"{heading}, week {week}: {label} before {chapter}"
            placed.append(label)
        assert assigned, f"{heading}, week {week}: assigns nothing"
        total = sum(int(table[label].minutes) for label in assigned)
        assert minutes == str(total), f"{heading}, week {week}: lab minutes {minutes}, not {total}"
    assert len(placed) == len(set(placed)), f"{heading}: an exercise is placed twice"


def test_doc_links_resolve():
    for target in {_doc_target(m.group(0)) for m in _DOC.finditer(GUIDE.read_text())}:
        path = ROOT / "book" / target
        assert any(Path(f"{path}{s}").exists() for s in (".md", ".ipynb")), target


def test_guide_is_written_from_the_current_notebooks():
    """The table and schedules come from tools/instructor_guide.py: a new exercise or chapter
    only needs `python -m tools.instructor_guide` (make outputs runs it)."""
    from tools.instructor_guide import generated

    assert generated(GUIDE.read_text()) == GUIDE.read_text(), "run python -m tools.instructor_guide"
