"""The exercises of a chapter notebook, read from the notebook itself.

Every tool that treats exercises (the student edition, the nbgrader course, the instructor
guide's checks) reads them here, so that a new exercise joins all of them without a list to
update. An exercise is what sphinx-exercise's gates mark:

* ``exercise-start`` (with ``:label: ex-...``) up to ``exercise-end``: the text, which starts
  with a tag, ``*(Easy.)*``, ``*(Coding, medium.)*``, ``*(Open-ended.)*``;
* ``solution-start ex-...`` up to ``solution-end``: the written solution (markdown) and the
  solution code cells, whose code lies between ``### BEGIN SOLUTION`` and ``### END SOLUTION``.

An exercise is *coding* when its solution code calls a checker (``check_...(fn)``) and
*written* otherwise. Its points follow its difficulty (:data:`POINTS`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import nbformat

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"

GATE = re.compile(
    r"^```\{(exercise-start|exercise-end|solution-start|solution-end)\}[ \t]*(\S*)", re.M
)
LABEL = re.compile(r"^:label:[ \t]*(\S+)", re.M)
# The tag every exercise text starts with: *(Easy.)*, *(Coding, medium.)*, *(Open-ended.)* ...
TAG = re.compile(r"\*\((?:(Coding), )?(easy|medium|open-ended)(?:; build it yourself)?\.\)\*", re.I)

# Points per exercise in the nbgrader course, by difficulty.
POINTS = {"easy": 1, "medium": 2, "open-ended": 3}


@dataclass(frozen=True)
class CheckerCall:
    """``checker(function)`` in a solution code cell: the checker grades ``function``."""

    cell: int  # index of the code cell in the notebook
    checker: str  # e.g. "check_gaussian_weights"
    function: str  # the name of the student's function it is given, e.g. "gaussian_weights"
    imports: tuple[str, ...]  # the cell's import statements that bring the checker in


@dataclass
class Exercise:
    """One exercise of a notebook, with the indices of its cells."""

    label: str
    text: str = ""  # the exercise's text, gates left out
    difficulty: str | None = None  # easy, medium or open-ended; None without a tag
    tagged_coding: bool = False  # the tag says "Coding, ..."
    exercise_end: int = -1  # the cell holding the exercise-end gate
    solution_start: int = -1  # the cell holding the solution-start gate
    solution_end: int = -1  # the cell holding the solution-end gate
    prose: str = ""  # the written solution, gates left out
    code_cells: list[int] = field(default_factory=list)  # solution code cells, in order
    checks: list[CheckerCall] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "coding" if self.checks else "written"

    @property
    def points(self) -> int:
        return POINTS.get(self.difficulty or "", 1)

    @property
    def checkers(self) -> list[str]:
        return sorted({call.checker for call in self.checks})


def checker_calls(source: str, cell: int = -1) -> list[CheckerCall]:
    """Every ``check_*(name, ...)`` call in ``source``, in order, with the imports behind it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: a cell the tools cannot read is no checker cell
        return []
    imports = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name] = ast.unparse(node)
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name.startswith("check_") and node.args and isinstance(node.args[0], ast.Name):
            statement = imports.get(name)
            calls.append(
                CheckerCall(
                    cell=cell,
                    checker=name,
                    function=node.args[0].id,
                    imports=(statement,) if statement else (),
                )
            )
    return sorted(calls, key=lambda call: (call.checker, call.function))


def exercises(notebook: nbformat.NotebookNode) -> list[Exercise]:
    """Every exercise of ``notebook``, in order, read from its sphinx-exercise gates."""
    found: dict[str, Exercise] = {}
    state, current = None, None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            if state == "solution" and current is not None:
                current.code_cells.append(index)
                current.checks += checker_calls(cell.source, index)
            continue
        if cell.cell_type != "markdown":
            continue
        position = 0
        for gate in GATE.finditer(cell.source):
            before = cell.source[position : gate.start()]
            if state == "exercise" and current is not None:
                current.text += before
            elif state == "solution" and current is not None:
                current.prose += before
            kind, argument = gate.group(1), gate.group(2)
            if kind == "exercise-start":
                label = LABEL.search(cell.source, gate.end())
                name = label.group(1) if label else f"<unlabelled exercise {len(found) + 1}>"
                current = found.setdefault(name, Exercise(name))
                state = "exercise"
            elif kind == "exercise-end":
                if current is not None:
                    current.exercise_end = index
                state = None
            elif kind == "solution-start":
                current = found.setdefault(argument, Exercise(argument))
                current.solution_start = index
                state = "solution"
            else:
                if current is not None:
                    current.solution_end = index
                state = None
            line_end = cell.source.find("\n", gate.end())
            position = len(cell.source) if line_end < 0 else line_end + 1
        rest = cell.source[position:]
        if state == "exercise" and current is not None:
            current.text += rest
        elif state == "solution" and current is not None:
            current.prose += rest
    for exercise in found.values():
        exercise.text = _without_options(exercise.text)
        exercise.prose = _without_options(exercise.prose)
        tag = TAG.search(exercise.text)
        exercise.difficulty = tag.group(2).lower() if tag else None
        exercise.tagged_coding = bool(tag and tag.group(1))
    return list(found.values())


def _without_options(text: str) -> str:
    """Text after a gate, without the directive's ``:label:``/``:class:`` lines and its fence."""
    lines = text.split("\n")
    while lines and (lines[0].startswith(":") or lines[0].strip() in ("", "```")):
        lines.pop(0)
    while lines and lines[-1].strip() == "":
        lines.pop()
    return "\n".join(lines)


def solution_regions(source: str) -> list[tuple[int, int, bool]]:
    """``(begin line, end line, in a function)`` for each solution region of a code cell.

    Lines count from 1. A region is *in a function* when a ``def`` (or ``lambda``) encloses
    its ``### BEGIN SOLUTION`` line: its stub then runs only when the function is called (by a
    checker, which reports it), not when the cell runs. A cell that is not Python falls back to
    the indentation of the marker.
    """
    lines = source.split("\n")
    begins = [n for n, line in enumerate(lines, start=1) if line.strip() == BEGIN_SOLUTION]
    ends = [n for n, line in enumerate(lines, start=1) if line.strip() == END_SOLUTION]
    try:
        tree = ast.parse(source)
        spans = [
            (node.lineno, node.end_lineno or node.lineno)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        ]
    except SyntaxError:
        spans = None
    regions = []
    for begin, end in zip(begins, ends):
        if spans is None:
            inside = lines[begin - 1] != lines[begin - 1].lstrip()
        else:
            inside = any(first < begin <= last for first, last in spans)
        regions.append((begin, end, inside))
    return regions
