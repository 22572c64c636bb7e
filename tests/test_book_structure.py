"""The book's structure: table of contents, set-up cells, layers only from companion."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from tools.notebooks import (
    MEASURED_FROM,
    ROOT,
    SETUP_CELL_TAG,
    book_config,
    coalesce_streams,
    keep_measurements,
    measures,
    place_setup_cell,
    setup_cell_source,
    source_digest,
    toc_files,
    toc_notebooks,
)
from tools.toc import chapter_notebooks

NOTEBOOKS = sorted(
    p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
)
# Notebooks of the Reference part of _toc.yml follow every notebook's rules, but not a
# chapter's (learning goals, a summary, exercises).
CHAPTERS = sorted(chapter_notebooks(ROOT))


def test_toc_and_notebooks_match_one_to_one():
    listed = toc_notebooks()
    assert sorted(listed) == NOTEBOOKS, "every notebook under book/ is in _toc.yml, and only those"
    assert len(set(listed)) == len(listed), "a notebook is listed twice"


def test_every_toc_entry_exists():
    for entry in toc_files():
        path = ROOT / entry
        found = path.exists() or any(path.with_suffix(s).exists() for s in (".md", ".ipynb"))
        assert found, f"_toc.yml lists {entry}, which is not in the repository"


def _solution_cells(notebook) -> set[int]:
    """Indices of the cells inside a sphinx-exercise solution or between solution markers."""
    inside, exempt = False, set()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            if "{solution-end}" in cell.source:
                inside = False
            if "{solution-start}" in cell.source:
                inside = True
        elif inside or "### BEGIN SOLUTION" in cell.source:
            exempt.add(index)
    return exempt


def layer_definitions(notebook) -> list[tuple[int, str]]:
    """(cell index, class name) of every nn.Module subclass defined outside a solution."""
    found = []
    exempt = _solution_cells(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or index in exempt:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # IPython magics: fall back to a pattern
            found += [(index, m) for m in re.findall(r"class\s+(\w+)\s*\([^)]*Module", cell.source)]
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                "Module" in ast.unparse(base) for base in node.bases
            ):
                found.append((index, node.name))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_defines_no_layer(path):
    assert layer_definitions(nbformat.read(path, as_version=4)) == []


def test_layer_detection_can_fail():
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("from torch import nn\nclass Mine(nn.Module):\n    pass"),
            nbformat.v4.new_markdown_cell("```{solution-start} ex\n```"),
            nbformat.v4.new_code_cell("class Allowed(nn.Module):\n    pass"),
            nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
            nbformat.v4.new_code_cell("%time x = 1\nclass Magic(torch.nn.Module): pass"),
        ]
    )
    assert layer_definitions(notebook) == [(0, "Mine"), (4, "Magic")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_is_the_colab_setup(path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "code"
    assert first.source == setup_cell_source(), "regenerate it with `make outputs`"
    assert book_config()["repository"]["url"] in first.source
    assert 'if "google.colab" in sys.modules:' in first.source
    assert first.outputs == [], "outside Colab the set-up cell prints nothing"
    assert first.metadata.get("tags") == [SETUP_CELL_TAG], "the site leaves it out"


@pytest.mark.parametrize(
    "first, replaced",
    [
        (nbformat.v4.new_code_cell("# replaced by the set-up cell"), True),
        (nbformat.v4.new_code_cell(""), True),
        (nbformat.v4.new_code_cell("# Colab set-up: an older release tag"), True),
        (nbformat.v4.new_markdown_cell("# A new chapter"), False),
        (nbformat.v4.new_code_cell("import torch"), False),
    ],
)
def test_make_outputs_writes_the_setup_cell_without_losing_a_first_cell(first, replaced):
    """A new notebook whose first cell is its title or its first code keeps that cell."""
    second = nbformat.v4.new_code_cell("print(1)")
    notebook = nbformat.v4.new_notebook(cells=[first, second])
    place_setup_cell(notebook)
    assert notebook.cells[0].source == setup_cell_source()
    assert notebook.cells[0].metadata["tags"] == [SETUP_CELL_TAG]
    kept = [second] if replaced else [first, second]
    assert [cell.source for cell in notebook.cells[1:]] == [cell.source for cell in kept]
    place_setup_cell(notebook)  # a second run replaces the set-up cell it wrote
    assert len(notebook.cells) == 1 + len(kept)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_outputs_are_clean(path):
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        if cell.outputs:
            assert cell.execution_count is not None, f"cell {index} has outputs but was not run"
        for output in cell.outputs:
            assert output.get("name") != "stderr", f"cell {index} wrote to stderr: {output.text!r}"
            assert output.output_type != "error", f"cell {index} raised {output.ename}"
            text = json.dumps(output.get("data", {}).get("text/plain", ""))
            assert not re.search(r"\bat 0x[0-9a-f]+", text), f"cell {index} shows an address"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_exercises_have_solutions_and_balanced_markers(path):
    notebook = nbformat.read(path, as_version=4)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    exercises = re.findall(r"```\{exercise-start\}\n:label: ([\w-]+)", markdown)
    solutions = re.findall(r"```\{solution-start\} ([\w-]+)\n:class: dropdown", markdown)
    assert len(exercises) >= 4, "every chapter has at least four exercises"
    assert exercises == solutions, "each exercise has one dropdown solution, in the same order"
    for index, cell in enumerate(notebook.cells):
        begins = cell.source.count("### BEGIN SOLUTION")
        assert begins == cell.source.count("### END SOLUTION"), f"cell {index}: unbalanced"


def test_book_config_builds_only_the_toc():
    config = book_config()
    assert config["only_build_toc_files"] is True
    assert {".venv", "_build", "tests"} <= set(config["exclude_patterns"])
    assert config["execute"]["execute_notebooks"] == "off"
    assert config["repository"]["url"].startswith("https://github.com/")
    assert "sphinx_exercise" in config["sphinx"]["extra_extensions"]


def test_readme_quick_start_shows_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_notebook_paths_are_under_book():
    assert all(Path(p).is_relative_to(ROOT / "book") for p in toc_notebooks())


def test_stream_outputs_are_coalesced():
    cell = nbformat.v4.new_code_cell("print(1); print(2)")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="a\n"),
        nbformat.v4.new_output("stream", name="stdout", text="b\n"),
        nbformat.v4.new_output("stream", name="stderr", text="c\n"),
        nbformat.v4.new_output("display_data", data={"text/plain": "d"}),
        nbformat.v4.new_output("stream", name="stdout", text="e\n"),
    ]
    coalesce_streams(cell)
    assert [(o.output_type, o.get("text")) for o in cell.outputs] == [
        ("stream", "a\nb\n"),
        ("stream", "c\n"),
        ("display_data", None),
        ("stream", "e\n"),
    ]


def test_public_api_is_complete_and_importable():
    import companion

    for name in companion.__all__:
        assert hasattr(companion, name), f"companion.__all__ names {name}, which is missing"
    assert companion.__version__ == release_tag_version()


def release_tag_version() -> str:
    from tools.notebooks import release_tag

    return release_tag().removeprefix("v")


def test_measurements_keep_their_committed_outputs_while_the_code_is_unchanged():
    def notebook(source_b, output_b, stamp=None):
        cells = [
            nbformat.v4.new_code_cell("print(1)", id="a"),
            nbformat.v4.new_code_cell(source_b, id="b"),
        ]
        cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=output_b)]
        if stamp is not None:
            cells[1].metadata[MEASURED_FROM] = stamp
        return nbformat.v4.new_notebook(cells=cells)

    timed = "# NBVAL_IGNORE_OUTPUT\nprint(time())"
    committed = notebook(timed, "0.31 s\n")  # no stamp yet: printed by its own code
    rerun = notebook(timed, "0.29 s\n")
    assert keep_measurements(committed, rerun) == 1
    assert rerun.cells[1].outputs[0].text == "0.31 s\n"
    assert rerun.cells[1].metadata[MEASURED_FROM] == source_digest(timed)
    assert MEASURED_FROM not in rerun.cells[0].metadata  # not a measurement
    changed = notebook(timed + " * 2", "0.58 s\n")
    assert keep_measurements(committed, changed) == 0
    assert changed.cells[1].outputs[0].text == "0.58 s\n"
    # Edited on disk but never run: the output is still the old code's, and its stamp says so.
    edited = notebook(timed + " * 2", "0.31 s\n", stamp=source_digest(timed))
    rerun = notebook(timed + " * 2", "0.60 s\n")
    assert keep_measurements(edited, rerun) == 0
    assert rerun.cells[1].outputs[0].text == "0.60 s\n"
    assert rerun.cells[1].metadata[MEASURED_FROM] == source_digest(timed + " * 2")
    refreshed = notebook(timed, "0.33 s\n")
    assert keep_measurements(committed, refreshed, refresh=True) == 0
    assert refreshed.cells[1].outputs[0].text == "0.33 s\n"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_measured_output_was_printed_by_its_cells_code(path: Path):
    """nbval does not compare a measurement cell's output, so nothing else would notice an
    output that an earlier version of the code printed (`make outputs` stamps each one)."""
    stale = [
        index
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
        if measures(cell) and cell.metadata.get(MEASURED_FROM) != source_digest(cell.source)
    ]
    assert not stale, f"cells {stale}: run `make outputs` to measure them with their own code"


def top_level_bullets(markdown: str) -> int:
    return len(re.findall(r"^[-*] ", markdown, re.M))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_goals_and_summary_keep_to_the_chapter_rules(path: Path):
    """The chapter standard (CONTRIBUTING.md): three to five learning goals up front, a summary
    of five bullets at most."""
    cells = nbformat.read(path, as_version=4).cells
    markdown = [cell.source for cell in cells if cell.cell_type == "markdown"]
    _, found, after = re.split(r"(?im)^(.*this chapter you can:\**)\s*$", markdown[0], maxsplit=1)
    goals = after.strip().split("\n\n")[0]
    assert 3 <= top_level_bullets(goals) <= 5, f"{found}: {top_level_bullets(goals)} goals"
    summary = re.search(r"^## Summary\n(.*?)(?=^#|\Z)", "\n\n".join(markdown), re.M | re.S)
    assert summary is not None, "no ## Summary section"
    assert top_level_bullets(summary.group(1)) <= 5, "the summary has more than five bullets"
