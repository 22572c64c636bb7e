"""The student edition (tools/student.py): stubs, removed solutions, untouched cells, errors.

The last tests read the student edition that ``make student`` writes, built once for them
into a temporary folder (the ``student`` fixture), so they never read a stale build.
"""

from __future__ import annotations

import ast
import contextlib
import html
import io
import json
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch

import companion
import companion.exercises
from tools.exercises import exercises as exercises_in
from tools.exercises import solution_regions
from tools.student import (
    CODE_STUB,
    MarkerError,
    solution_cells,
    strip_code,
    strip_notebook,
    student_config,
)
from tools.toc import chapter_notebooks, toc_notebooks

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = toc_notebooks(ROOT)  # the student edition writes all of them
CHAPTERS = chapter_notebooks(ROOT)  # those with exercises
STUB = "\n".join(CODE_STUB)


def _notebook(*cells: tuple[str, str]) -> nbformat.NotebookNode:
    make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [make[kind](source) for kind, source in cells]
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell{index}"
    return notebook


START = "```{solution-start} ex-demo\n:class: dropdown\n```\nThe answer, in words."
END = "```{solution-end}\n```"


# --- code markers -----------------------------------------------------------------------------


def test_code_region_becomes_the_nbgrader_stub_at_its_indentation():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n\nf(1)"
    assert strip_code(source) == (
        "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nf(1)"
    )


def test_every_region_of_a_cell_is_stubbed_and_the_code_between_them_kept():
    region = "### BEGIN SOLUTION\n{}\n### END SOLUTION"
    source = "\n".join([region.format("a = 1"), "keep = 2", region.format("b = 3")])
    printing = '# YOUR CODE HERE\nprint("not implemented yet: ex-demo")'
    assert strip_code(source, label="ex-demo") == f"{printing}\nkeep = 2\n{printing}"


def test_only_a_stub_inside_a_function_raises():
    """A stub outside a function would stop "Run all"; inside one, the checker reports it."""
    source = (
        "if True:\n    ### BEGIN SOLUTION\n    x = 1\n    ### END SOLUTION\n"
        "def f():\n    y = 2\n    ### BEGIN SOLUTION\n    return y\n    ### END SOLUTION\n"
        "g = lambda: (\n    ### BEGIN SOLUTION\n    3\n    ### END SOLUTION\n)"
    )
    assert strip_code(source, label="ex-demo") == (
        'if True:\n    # YOUR CODE HERE\n    print("not implemented yet: ex-demo")\n'
        "def f():\n    y = 2\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
        "g = lambda: (\n    # YOUR CODE HERE\n    raise NotImplementedError()\n)"
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("### BEGIN SOLUTION\na = 1", "has no ### END SOLUTION"),
        ("a = 1\n### END SOLUTION", "line 2 has no BEGIN"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "nested"),
    ],
)
def test_unbalanced_or_nested_code_markers_name_the_notebook_and_cell(source, message):
    notebook = _notebook(("markdown", "# Title"), ("code", source))
    with pytest.raises(MarkerError, match=message) as error:
        strip_notebook(notebook, "book/demo.ipynb")
    assert "book/demo.ipynb, cell 1 (id cell1)" in str(error.value)


# --- markdown gates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cells", "bad_cell", "message"),
    [
        ([("markdown", START), ("markdown", "Text")], 0, "has no solution-end"),
        ([("markdown", "Text"), ("markdown", END)], 1, "solution-end without"),
        ([("markdown", START), ("markdown", START), ("markdown", END)], 1, "nested"),
        ([("markdown", START), ("code", "answer = 42"), ("markdown", END)], 1, "no ### BEGIN"),
        ([("markdown", "Some text\n\n" + START), ("markdown", END)], 0, "begin its own"),
        ([("markdown", START), ("markdown", END + "\n\nMore text")], 1, "cell of its own"),
        ([("markdown", "### BEGIN SOLUTION\nprose\n### END SOLUTION")], 0, "markdown cell"),
    ],
)
def test_bad_solution_gates_name_the_notebook_and_cell(cells, bad_cell, message):
    with pytest.raises(MarkerError, match=message) as error:
        strip_notebook(_notebook(*cells), "book/demo.ipynb")
    assert f"book/demo.ipynb, cell {bad_cell} (id cell{bad_cell})" in str(error.value)


def test_gated_solution_is_removed_its_code_stubbed_and_an_answer_cell_added():
    notebook = _notebook(
        ("markdown", "```{exercise-start}\n:label: ex-demo\n```\nDo it.\n```{exercise-end}\n```"),
        ("markdown", START),
        ("code", "### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION"),
        ("markdown", END),
        ("markdown", "## References"),
    )
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="42\n")]
    notebook.cells[2].execution_count = 7
    notebook.cells[2].metadata = {"mystnb": {"figure": {"caption": "The answer is 42"}}}
    student = strip_notebook(notebook, "demo")
    assert [cell.source for cell in student.cells] == [
        notebook.cells[0].source,
        "YOUR ANSWER HERE",
        '# YOUR CODE HERE\nprint("not implemented yet: ex-demo")',
        "## References",
    ]
    assert student.cells[1].cell_type == "markdown" and student.cells[1].id == "ex-demo-answer"
    stub = student.cells[2]
    assert stub.outputs == [] and stub.execution_count is None
    assert stub.metadata == {}, "no trace of the solution, not even its caption"
    assert notebook.cells[2].source.startswith("### BEGIN"), "the source notebook is not touched"
    nbformat.validate(student)


# --- the book's own notebooks -----------------------------------------------------------------


def _cell_json(cell) -> str:
    return json.dumps(cell, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_cells_that_are_not_solutions_are_kept_byte_for_byte(path):
    source = nbformat.read(path, as_version=4)
    verdicts = solution_cells(source, path.name)
    student = strip_notebook(source, path.name)
    kept = [cell for index, cell in enumerate(source.cells) if verdicts.get(index) != "remove"]
    answers = [cell for cell in student.cells if cell.get("id", "").endswith("-answer")]
    written = [e.label for e in exercises_in(source) if e.kind == "written"]
    assert [cell.id for cell in answers] == [f"{label}-answer" for label in written]
    assert all(cell.source == "YOUR ANSWER HERE" for cell in answers)
    others = [cell for cell in student.cells if cell not in answers]
    assert len(others) == len(kept)
    for original, stripped in zip(kept, others, strict=True):
        if "### BEGIN SOLUTION" in original.source:
            assert "# YOUR CODE HERE" in stripped.source and stripped.outputs == []
            assert stripped.metadata == {}
        else:
            assert _cell_json(stripped) == _cell_json(original)
    assert student.metadata == source.metadata
    exercises = sum(cell.source.count("{exercise-start}") for cell in source.cells)
    solutions = sum(cell.source.count("{solution-start}") for cell in source.cells)
    assert exercises == solutions, "every exercise has its solution"
    assert path not in CHAPTERS or exercises >= 4, "a chapter has at least four exercises"
    assert not any("{solution-" in cell.source for cell in student.cells)


# --- checkers against the stubs ---------------------------------------------------------------

CHECKERS = [name for name in companion.exercises.__all__ if name != "check"]


def _not_implemented(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_reports_a_stub_as_not_implemented(name, capsys):
    assert getattr(companion.exercises, name)(_not_implemented) is False
    assert "not implemented yet" in capsys.readouterr().out


def _stubbed_checker_calls() -> list[tuple[str, str]]:
    calls = []
    for path in NOTEBOOKS:
        student = strip_notebook(nbformat.read(path, as_version=4), path.name)
        for cell in student.cells:
            if cell.cell_type == "code" and "# YOUR CODE HERE" in cell.source:
                if re.search(r"\bcheck_\w+\(", cell.source):
                    calls.append((f"{path.stem}:{cell.id}", cell.source))
    return calls


STUBBED_CALLS = _stubbed_checker_calls()


def test_each_coding_exercise_is_found():
    coding = sum("*(Coding" in c.source for p in NOTEBOOKS for c in nbformat.read(p, 4).cells)
    assert len(STUBBED_CALLS) == coding >= 2 * len(CHAPTERS)


@pytest.mark.parametrize(("where", "source"), STUBBED_CALLS, ids=[w for w, _ in STUBBED_CALLS])
def test_checker_run_on_the_student_stub_says_not_implemented(where, source):
    """Run the student cell's imports and definitions, then its checker calls, as a student
    who has not started would: each prints "not implemented yet" and returns False."""
    tree = ast.parse(source)
    namespace = {"torch": torch, "math": math, "nn": torch.nn, "F": torch.nn.functional}
    namespace.update({name: getattr(companion, name) for name in companion.__all__})
    # An exercise of two cells may import its checker in the first (chapter 7's decoder block).
    namespace.update({n: getattr(companion.exercises, n) for n in companion.exercises.__all__})
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    body = [node for node in tree.body if isinstance(node, definitions)]
    exec(compile(ast.Module(body, type_ignores=[]), where, "exec"), namespace)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.startswith("check_")
    ]
    assert calls, f"{where}: no checker call"
    for call in calls:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            verdict = eval(compile(ast.Expression(call), where, "eval"), namespace)
        assert verdict is False
        assert printed.getvalue().startswith("not implemented yet"), printed.getvalue()


# --- the built student edition ----------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9_]+")


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _solution_lines(notebook: nbformat.NotebookNode, name: str) -> list[str]:
    """The lines of prose and code that are solutions, gates and markers left out."""
    verdicts = solution_cells(notebook, name)
    lines = []
    for index, verdict in verdicts.items():
        source = notebook.cells[index].source
        if verdict == "stub":
            inside = False
            for line in source.split("\n"):
                if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
                    inside = line.strip() == "### BEGIN SOLUTION"
                elif inside:
                    lines.append(line)
        else:
            lines += [line for line in source.split("\n") if not line.startswith(("```", ":"))]
    return lines


def _fingerprints() -> set[str]:
    """Solution lines of five words or more that appear nowhere else in the notebooks.

    The pages (``book/*.md``) are not searched: they go into the student site as they are, so a
    solution line quoted there is a leak too."""
    solution, elsewhere = [], []
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        solution += _solution_lines(notebook, path.name)
        elsewhere.append(_words(_text(strip_notebook(notebook, path.name))))
    everything_else = " | ".join(elsewhere)
    return {
        words
        for words in map(_words, solution)
        if len(words.split()) >= 5 and words not in everything_else
    }


def _text(notebook: nbformat.NotebookNode) -> str:
    return "\n".join(
        cell.source + "".join(str(output) for output in cell.get("outputs", []))
        for cell in notebook.cells
    )


FINGERPRINTS = _fingerprints()


def _leaks(text: str, markup: bool = False) -> list[str]:
    """The solution fingerprints found in ``text`` (an HTML file's when ``markup``)."""
    if markup:
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    words = _words(text)
    return sorted(fingerprint for fingerprint in FINGERPRINTS if fingerprint in words)


def test_the_leak_detector_sees_solutions_where_they_are():
    assert len(FINGERPRINTS) >= 100
    found = set().union(*(_leaks(path.read_text()) for path in NOTEBOOKS))
    assert found == FINGERPRINTS, "the instructor notebooks hold every solution line"
    # One solution sentence pasted into an HTML page is caught through its markup.
    sentence = sorted(FINGERPRINTS)[0].split()
    page = "<p>" + " <em>".join(sentence) + "</em></p>"
    assert _leaks(page, markup=True) == [" ".join(sentence)]


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    """The student edition, written as ``make student`` writes it: notebooks/ and html/."""
    out = tmp_path_factory.mktemp("student")
    built = subprocess.run(
        [sys.executable, "-m", "tools.student", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    return out


def _student_files(student: Path, folder: str, suffixes: tuple[str, ...]) -> list[Path]:
    base = student / folder
    assert base.is_dir(), f"{base} is missing"
    return [p for p in sorted(base.rglob("*")) if p.is_file() and p.suffix in suffixes]


def test_student_notebooks_on_disk_are_the_stripped_sources(student):
    written = _student_files(student, "notebooks", (".ipynb",))
    assert [path.name for path in written] == sorted(path.name for path in NOTEBOOKS)
    for path in NOTEBOOKS:
        expected = strip_notebook(nbformat.read(path, as_version=4), path.name)
        assert nbformat.read(student / "notebooks" / path.name, as_version=4) == expected


@pytest.mark.parametrize("folder", ["notebooks", "html"])
def test_no_solution_text_survives_in_the_student_edition(student, folder):
    files = _student_files(student, folder, (".ipynb", ".html", ".js", ".txt", ".md", ".json"))
    pages = [path for path in files if path.suffix == ".html"]
    if folder == "html":
        chapters = {path.stem for path in NOTEBOOKS}
        assert chapters <= {page.stem for page in pages}, "every chapter page is built"
        assert len(_student_files(student, "html/_sources", (".ipynb",))) == len(NOTEBOOKS)
    leaks = {
        str(path.relative_to(student)): _leaks(path.read_text(), markup=path.suffix == ".html")
        for path in files
    }
    assert {path: found for path, found in leaks.items() if found} == {}


def test_student_site_hides_solutions_and_has_no_launch_buttons_into_the_solutions(student):
    config = student_config({"title": "T", "launch_buttons": {"colab_url": "x"}}, None)
    assert config["sphinx"]["config"]["hide_solutions"] is True
    assert config["launch_buttons"] == {}
    published = student_config({"repository": {"url": "a"}}, "https://github.com/u/students")
    assert published["repository"]["url"] == "https://github.com/u/students"
    page = (student / "html" / "book" / "attention-pooling.html").read_text()
    assert "colab.research.google.com" not in page
    assert "# YOUR CODE HERE" in html.unescape(re.sub(r"<[^>]+>", "", page))


def test_student_site_leaves_out_the_instructor_guide(student):
    assert not (student / "html" / "book" / "instructor-guide.html").exists()
    assert (ROOT / "book" / "instructor-guide.md").exists(), "the full book keeps it"
    index = (student / "html" / "book" / "exercises-how-to.html").read_text()
    assert "instructor-guide" not in index


# --- what stripping can change in a run --------------------------------------------------------
#
# A student notebook differs from the book only in its stubbed cells, and nbval runs the book.
# Its run can go differently from the book's only where later code reads what a solution bound
# or changed, or calls a function whose body is now a stub (outside a checker, which reports
# it). Such notebooks, found from their code, are run below; so is the smallest chapter always,
# end to end. The stub cells' checker calls are run for every notebook above.

ALWAYS_RUN = "attention-pooling"


def _python(source: str) -> ast.Module:
    """A code cell as Python: IPython's ``%`` and ``!`` lines blanked."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    return ast.parse("\n".join(lines))


def _owner(node: ast.AST) -> str | None:
    """The variable at the root of ``a.b[c].d()``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _written(tree: ast.AST) -> set[str]:
    """The names ``tree`` binds, or whose objects it may change: an attribute or item stored,
    a method called for its effect (its value unused, as in ``xs.append(1)``) or in place
    (torch's ``x.add_(1)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Store):
            names.add(_owner(node))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if isinstance(node.value.func, ast.Attribute):
                names.add(_owner(node.value.func.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
                names.add(_owner(node.func.value))
    return names - {None}


def _read(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _solutions(source: str) -> list[ast.Module]:
    """Each solution region of a code cell outside a function, parsed on its own. (What a
    region inside a function binds is local; it runs when a checker calls the function.)"""
    lines = source.split("\n")
    return [
        _python(textwrap.dedent("\n".join(lines[begin : end - 1])))
        for begin, end, in_function in solution_regions(source)
        if not in_function
    ]


def _stubbed_calls(tree: ast.AST, stubbed: set[str]) -> list[str]:
    """Calls of the ``stubbed`` functions that run when the cell runs: not inside a function
    (whose caller is checked instead), not inside a checker's call or under ``if check_...:``
    (a checker fails on a stub). A function that calls a stubbed one joins ``stubbed``."""

    def is_checker(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (_owner(node.func) or "").startswith("check_")

    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if any(isinstance(n, ast.Call) and _owner(n.func) in stubbed for n in ast.walk(node)):
                stubbed.add(getattr(node, "name", "<lambda>"))
            continue
        if is_checker(node):
            continue
        if isinstance(node, ast.If) and is_checker(node.test):
            found += [call for child in node.orelse for call in _stubbed_calls(child, stubbed)]
            continue
        if isinstance(node, ast.Call) and _owner(node.func) in stubbed:
            found.append(_owner(node.func))
        found += _stubbed_calls(node, stubbed)
    return found


def stripping_changes(book: nbformat.NotebookNode, student: nbformat.NotebookNode) -> list[str]:
    """Where the run of ``student`` could go otherwise than the book's, beyond what the stubs
    print: ``"cell <id>: reads <names>"`` or ``"cell <id>: calls stub <name>"``. [] if nowhere."""
    imported = set()  # a module's attributes are not a solution's state
    for cell in book.cells:
        if cell.cell_type == "code":
            imported |= {
                (alias.asname or alias.name).split(".")[0]
                for node in ast.walk(_python(cell.source))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names
            }
    stripped = {cell.get("id"): cell.source for cell in student.cells}
    touched: set[str] = set()  # what solutions bound or changed
    stubbed: set[str] = set()  # the functions whose body is a raising stub
    changes = []
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = _python(stripped.get(cell.id, ""))
            solutions = _solutions(cell.source) if stripped.get(cell.id) != cell.source else []
        except SyntaxError:
            changes.append(f"cell {cell.id}: not parsed")
            continue
        solved = set().union(*map(_written, solutions)) - imported
        lost_here = (solved - _written(tree)) if solutions else set()
        reads = _read(tree) & (touched | lost_here)
        touched |= solved
        stubbed |= {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and CODE_STUB[1] in ast.unparse(node)
        }
        if reads:
            changes.append(f"cell {cell.id}: reads {', '.join(sorted(reads))}")
        changes += [f"cell {cell.id}: calls stub {name}" for name in _stubbed_calls(tree, stubbed)]
    return changes


def _notebooks_to_run() -> list[Path]:
    return [
        path
        for path in NOTEBOOKS
        if path.stem == ALWAYS_RUN
        or stripping_changes(book := nbformat.read(path, 4), strip_notebook(book, path.name))
    ]


def test_what_stripping_changes_is_found():
    def notebook(*sources: str) -> nbformat.NotebookNode:
        return _notebook(*(("code", source) for source in sources))

    def region(code: str, indent: str = "") -> str:
        return f"{indent}### BEGIN SOLUTION\n{code}\n{indent}### END SOLUTION"

    def changes(book: nbformat.NotebookNode) -> list[str]:
        return stripping_changes(book, strip_notebook(book, "demo"))

    checked = "def f(x):\n" + region("    return x + 1", "    ") + "\ncheck_f(f)"
    assert changes(notebook("import torch", checked, "print(torch.ones(2))")) == []
    assert changes(notebook(checked.replace("check_f(f)", "if check_f(f):\n    f(1)"))) == []
    assert changes(notebook(region("answer = 42"), "print(answer)")) == ["cell cell1: reads answer"]
    assert changes(notebook("xs = []", region("xs.append(1)"), "xs[0]")) == ["cell cell2: reads xs"]
    assert changes(notebook(region("y = 2") + "\nprint(y)")) == ["cell cell0: reads y"]
    assert changes(notebook(checked, "print(f(3))")) == ["cell cell1: calls stub f"]
    assert changes(notebook(checked + "\nf(1)")) == ["cell cell0: calls stub f"]
    assert changes(notebook(checked, "def g():\n    return f(1)\ng()")) == [
        "cell cell1: calls stub g"
    ]
    assert changes(notebook("x = 1", region("print(x.bit_length())"), "x")) == []
    assert changes(notebook("x = t()", region("x.add_(1)\ny = x.sum()"), "x")) == [
        "cell cell2: reads x"
    ]


# --- the student edition, run as a student meets it -------------------------------------------


@pytest.mark.parametrize("path", _notebooks_to_run(), ids=lambda path: path.stem)
def test_student_notebook_runs_to_its_end_and_says_what_is_not_implemented(student, path):
    """Run all, nothing solved: no cell raises, and every exercise with code says
    "not implemented yet" (its own stub, or its checker about the function's stub)."""
    from nbclient import NotebookClient

    written = _student_files(student, "notebooks", (".ipynb",))
    notebook = nbformat.read(student / "notebooks" / path.name, as_version=4)
    assert student / "notebooks" / path.name in written
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(student / "notebooks")}},
    ).execute()  # raises CellExecutionError at the first cell that raises
    printed = {
        cell.get("id"): "".join(o.get("text", "") for o in cell.get("outputs", []))
        for cell in notebook.cells
    }
    book = nbformat.read(path, as_version=4)
    for exercise in exercises_in(book):
        said = [printed.get(book.cells[index].id, "") for index in exercise.code_cells]
        if not said:
            continue
        assert any("not implemented yet" in text for text in said), exercise.label
        if exercise.kind == "written":
            assert any(f"not implemented yet: {exercise.label}" in text for text in said)
