"""The proof beside the reading path (CONTRIBUTING.md, "The chapter standard"): a reader of a
chapter reads ideas, not bookkeeping.

- The main text (everything before the summary, figure captions included) says nothing of
  seeds swept, recorded runs, CPU arithmetic, load or what a cell asserts. An experiment about
  seed-to-seed spread may say so once, as science: seeds come up in at most one cell. The one
  collapsed note per chapter that links to the status page is not main text.
- ``claim(...)`` calls sit in cells of their own, folded on the site, in Colab and in
  JupyterLab (``make outputs`` folds them: ``tools.notebooks.fold_claims_cell``).
- Every figure has a caption and alt text.
- The main text is at most 4,000 words.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tools.notebooks import CLAIMS_TAG, CLAIMS_TITLE, is_claims_cell
from tools.toc import chapter_notebooks

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapter_notebooks(ROOT)
MAIN_TEXT_WORDS = 4000
CHECKED_NOTE = "How the numbers on this page were checked"
SUMMARY = re.compile(r"^#+\s*Summary", re.MULTILINE)

# Bookkeeping that belongs on the status page, not on the reading path.
BOOKKEEPING = re.compile(
    r"\bswe(?:ep|pt)s?\b"  # seed sweeps
    r"|\bAVX"
    r"|\b(?:CPU|float(?:ing-point)?|vendor)s?'?\s+(?:arithmetic|numerics)\b"
    r"|\bnumerics\b"
    r"|\b(?:recorded|other|all|every|five|four|three|eight) runs\b"
    r"|\bruns? (?:we|this page) recorded\b"
    r"|\bassert(?:s|ed|ing|ions?)?\b"
    r"|\bload average"
    r"|\btrial runs?\b",
    re.IGNORECASE,
)
SEEDS = re.compile(r"\bseeds?\b", re.IGNORECASE)


def main_text(notebook: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """``(cell index, text)`` of what a reader reads before the summary: markdown cells (less
    the collapsed note on how the numbers were checked) and figure captions."""
    texts = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            summary = SUMMARY.search(cell.source)
            text = cell.source[: summary.start()] if summary else cell.source
            if CHECKED_NOTE not in text:
                texts.append((index, text))
            if summary:
                break
        else:
            caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
            if caption:
                texts.append((index, caption))
    return texts


def bookkeeping(notebook: nbformat.NotebookNode) -> list[str]:
    """Each main-text sentence that talks about bookkeeping, and each cell beyond the first
    that talks about seeds, as ``cell N: '...'``."""
    found = []
    seed_cells = []
    for index, text in main_text(notebook):
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if BOOKKEEPING.search(sentence):
                found.append(f"cell {index}: {sentence!r}")
        if SEEDS.search(text):
            seed_cells.append(index)
    found += [f"cell {index}: seeds again (once is science)" for index in seed_cells[1:]]
    return found


def shown_claims(notebook: nbformat.NotebookNode) -> list[str]:
    """Code cells with ``claim(`` that a reader would read: mixed with other code, or not
    folded on the site, in Colab and in JupyterLab."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or "claim(" not in cell.source:
            continue
        if not is_claims_cell(cell):
            found.append(f"cell {index}: claims mixed with other code")
        elif not (
            CLAIMS_TAG in cell.metadata.get("tags", [])
            and cell.source.startswith(CLAIMS_TITLE)
            and cell.metadata.get("cellView") == "form"
            and cell.metadata.get("jupyter", {}).get("source_hidden")
        ):
            found.append(f"cell {index}: claims not folded (run `make outputs`)")
    return found


def figures_without_words(notebook: nbformat.NotebookNode) -> list[str]:
    """Cells that draw a figure without a caption or alt text."""
    found = []
    for index, cell in enumerate(notebook.cells):
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not images:
            continue
        mystnb = cell.metadata.get("mystnb", {})
        if not mystnb.get("figure", {}).get("caption"):
            found.append(f"cell {index}: a figure without a caption")
        if not mystnb.get("image", {}).get("alt", "").strip():
            found.append(f"cell {index}: a figure without alt text")
    return found


def main_text_words(notebook: nbformat.NotebookNode) -> int:
    return sum(
        len(text.split())
        for index, text in main_text(notebook)
        if notebook.cells[index].cell_type == "markdown"
    )


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_the_main_text_keeps_no_bookkeeping(path):
    assert bookkeeping(read(path)) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_claims_are_folded_cells_of_their_own(path):
    assert shown_claims(read(path)) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_every_figure_has_a_caption_and_alt_text(path):
    assert figures_without_words(read(path)) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_the_main_text_is_at_most_4000_words(path):
    assert main_text_words(read(path)) <= MAIN_TEXT_WORDS


def test_the_checks_can_fail():
    """Each check finds what it is for in a small chapter made to break it."""
    figure = nbformat.v4.new_code_cell("plot()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})]
    figure.metadata["mystnb"] = {"figure": {"caption": "Loss over three seeds, as asserted."}}
    chapter = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("It held in all five runs on AVX-512 arithmetic."),
            nbformat.v4.new_markdown_cell("The gap is smaller than the seed-to-seed spread."),
            nbformat.v4.new_markdown_cell(f"```{{admonition}} {CHECKED_NOTE}\nSeeds swept.\n```"),
            figure,
            nbformat.v4.new_code_cell("acc = 0.9\nclaim('high', acc, above=0.5)"),
            nbformat.v4.new_code_cell("claim('high', acc, above=0.5)"),
            nbformat.v4.new_markdown_cell("## Summary\n\nThe cell asserts it over seeds."),
        ]
    )
    assert [line.split(":")[0] for line in bookkeeping(chapter)] == [
        "cell 0",
        "cell 3",  # the caption: "as asserted"
        "cell 3",  # and seeds a second time
    ]
    assert shown_claims(chapter) == [
        "cell 4: claims mixed with other code",
        "cell 5: claims not folded (run `make outputs`)",
    ]
    assert figures_without_words(chapter) == ["cell 3: a figure without alt text"]
    assert main_text_words(chapter) == 17
