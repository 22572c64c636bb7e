"""The status page's record: it covers every notebook as committed, the build refuses a stale
one, the page renders it, and ``make outputs`` writes it."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from sphinx.errors import ExtensionError
from sphinx.testing.util import SphinxTestApp

from companion.device import cpu_name
from tools.notebooks import NOTEBOOK_METADATA, execute_and_record, toc_notebooks
from tools.record import (
    RECORD,
    ROOT,
    notebook_sha256,
    read_record,
    record_entry,
    stale_entries,
)

# sphinx_external_toc's setup isinstance-checks every object in gc.get_objects(); in this test
# process that includes torch (imported by conftest), whose deprecated reduce_op warns then.
EXTERNAL_TOC_SCANS_TORCH = pytest.mark.filterwarnings(
    "ignore:`torch.distributed.reduce_op` is deprecated:FutureWarning"
)
RECORDED_VERSIONS = {"python", "torch", "numpy", "matplotlib", "companion", "nbclient"}
ENVIRONMENT = {"python": "3.11.2", "torch": "2.13.0+cpu", "threads": "2", "cpu": "Test CPU"}


def toc_names() -> list[str]:
    return [path.relative_to(ROOT).as_posix() for path in toc_notebooks()]


def test_committed_record_describes_every_notebook_as_committed():
    record = read_record(RECORD)
    assert stale_entries(record, ROOT, toc_names()) == [], "run `make outputs`"
    for entry in record["notebooks"].values():
        assert entry["result"] == "passed"
        assert entry["seconds"] > 0
        assert RECORDED_VERSIONS <= set(entry["environment"])


def test_committed_record_is_written_stably():
    text = RECORD.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


@pytest.fixture
def two_notebooks(tmp_path: Path) -> tuple[Path, list[str], dict]:
    """Copies of the first two chapter notebooks and a record that describes them."""
    names = toc_names()[:2]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    entries = {name: record_entry(tmp_path / name, 1.0, "passed", ENVIRONMENT) for name in names}
    return tmp_path, names, {"notebooks": entries}


def test_checker_accepts_a_record_that_matches(two_notebooks):
    root, names, record = two_notebooks
    assert stale_entries(record, root, names) == []


def test_checker_names_a_notebook_without_entry(two_notebooks):
    root, names, record = two_notebooks
    del record["notebooks"][names[1]]
    problems = stale_entries(record, root, names)
    assert problems == [f"{names[1]}: has no entry in the record"]


def edited(path: Path, cell_type: str) -> None:
    """Add a line to the last cell of ``cell_type`` in the notebook at ``path``."""
    notebook = nbformat.read(path, as_version=4)
    [cell for cell in notebook.cells if cell.cell_type == cell_type][-1].source += "\n# edited"
    nbformat.write(notebook, path)


def test_checker_names_a_notebook_whose_code_changed_after_its_run(two_notebooks):
    root, names, record = two_notebooks
    edited(root / names[0], "code")
    problems = stale_entries(record, root, names)
    assert len(problems) == 1
    assert problems[0].startswith(f"{names[0]}: its code changed after its last execution")


def test_prose_tags_and_metadata_need_no_new_run(two_notebooks):
    """Fixing a typo in a markdown cell, tagging a cell or changing the notebook's metadata
    changes nothing a run prints, so the record still describes the notebook."""
    root, names, record = two_notebooks
    edited(root / names[0], "markdown")
    notebook = nbformat.read(root / names[1], as_version=4)
    notebook.cells[-1].metadata["tags"] = ["hide-input"]
    notebook.metadata["title"] = "edited"
    nbformat.write(notebook, root / names[1])
    assert stale_entries(record, root, names) == []


def test_checker_names_a_failed_run_and_an_entry_outside_the_toc(two_notebooks):
    root, names, record = two_notebooks
    record["notebooks"][names[0]]["result"] = "failed: ZeroDivisionError"
    problems = stale_entries(record, root, names[:1])
    assert problems == [
        f"{names[0]}: its last execution failed: ZeroDivisionError",
        f"{names[1]}: has an entry but is not in the table of contents",
    ]


def tiny_book(root: Path) -> Path:
    """A book with one chapter notebook and the status page; returns its chapter notebook."""
    (root / "intro.md").write_text("# Tiny book\n")
    (root / "status.md").write_text("# Status\n\n```{execution-status}\n```\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: chapter\n  - file: status\n"
    )
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# The tiny chapter"), nbformat.v4.new_code_cell("1")],
        metadata=NOTEBOOK_METADATA,
    )
    nbformat.write(notebook, root / "chapter.ipynb")
    return root / "chapter.ipynb"


def build(root: Path, check: bool = True) -> str:
    """Build ``root`` to HTML with the extension, warnings as errors; the status page's HTML."""
    (root / "conf.py").write_text("")
    app = SphinxTestApp(
        "html",
        srcdir=root,
        confoverrides={
            "extensions": ["myst_nb", "sphinx_external_toc", "tools.execution_status"],
            "external_toc_path": "_toc.yml",
            "nb_execution_mode": "off",
            "execution_status_record": "status.json",
            "execution_status_check": check,
        },
        freshenv=True,
        warningiserror=True,
    )
    try:
        app.build()
    finally:
        app.cleanup()  # docutils keeps registered nodes and directives in globals
    return (app.outdir / "status.html").read_text()


def write_tiny_record(root: Path, chapter: Path) -> None:
    entry = record_entry(chapter, 12.3, "passed", ENVIRONMENT)
    (root / "status.json").write_text(json.dumps({"notebooks": {"chapter.ipynb": entry}}))


@EXTERNAL_TOC_SCANS_TORCH
def test_status_page_shows_the_record_with_links_to_chapters(tmp_path: Path):
    chapter = tiny_book(tmp_path)
    write_tiny_record(tmp_path, chapter)
    html = build(tmp_path)
    assert 'href="chapter.html"' in html
    assert "The tiny chapter" in html
    for shown in ("chapter.ipynb", "12.3", "passed", "UTC", "2.13.0+cpu", "Test CPU"):
        assert shown in html


@EXTERNAL_TOC_SCANS_TORCH
def test_build_stops_when_a_notebook_changed_after_its_run(tmp_path: Path):
    chapter = tiny_book(tmp_path)
    write_tiny_record(tmp_path, chapter)
    chapter.write_text(chapter.read_text().replace('"1"', '"2"'))
    with pytest.raises(ExtensionError, match=r"`make outputs`:\n  chapter.ipynb: its code changed"):
        build(tmp_path)
    # The student edition renders changed copies on purpose, with the check off.
    assert "12.3" in build(tmp_path, check=False)


@EXTERNAL_TOC_SCANS_TORCH
def test_build_stops_without_a_record(tmp_path: Path):
    tiny_book(tmp_path)
    with pytest.raises(ExtensionError, match=r"status.json is missing: run `make outputs`"):
        build(tmp_path)


def test_execute_records_each_run_and_keeps_other_entries(tmp_path: Path):
    cells = [nbformat.v4.new_code_cell("# replaced by the set-up cell")]
    passing = nbformat.v4.new_notebook(cells=[*cells, nbformat.v4.new_code_cell("print(6 * 7)")])
    failing = nbformat.v4.new_notebook(cells=[*cells, nbformat.v4.new_code_cell("1 / 0")])
    nbformat.write(passing, tmp_path / "passing.ipynb")
    nbformat.write(failing, tmp_path / "failing.ipynb")
    committed_failing = (tmp_path / "failing.ipynb").read_bytes()
    record_path = tmp_path / "record.json"
    earlier = {"notebooks": {"other.ipynb": {"result": "passed"}}}
    record_path.write_text(json.dumps(earlier))

    paths = [tmp_path / "passing.ipynb", tmp_path / "failing.ipynb"]
    assert execute_and_record(paths, record_path=record_path, root=tmp_path) is False

    record = json.loads(record_path.read_text())
    assert record_path.read_text().endswith("}\n")
    assert set(record["notebooks"]) == {"passing.ipynb", "failing.ipynb", "other.ipynb"}
    passed = record["notebooks"]["passing.ipynb"]
    assert passed["result"] == "passed"
    assert passed["code_sha256"] == notebook_sha256(tmp_path / "passing.ipynb")
    assert passed["seconds"] > 0
    assert datetime.fromisoformat(passed["executed_at"]).utcoffset().total_seconds() == 0
    assert RECORDED_VERSIONS | {"threads", "cpu"} <= set(passed["environment"])
    written = nbformat.read(tmp_path / "passing.ipynb", as_version=4)
    assert written.cells[1].outputs[0].text == "42\n"
    # A failed run leaves the notebook as it was and says which exception stopped it.
    assert record["notebooks"]["failing.ipynb"]["result"] == "failed: ZeroDivisionError"
    assert (tmp_path / "failing.ipynb").read_bytes() == committed_failing
    failed = record["notebooks"]["failing.ipynb"]
    assert failed["code_sha256"] == notebook_sha256(tmp_path / "failing.ipynb")

    # A run of all the book's notebooks drops the entries of notebooks no longer in it.
    assert execute_and_record(paths[:1], record_path=record_path, root=tmp_path, complete=True)
    assert set(json.loads(record_path.read_text())["notebooks"]) == {"passing.ipynb"}


def test_status_page_flags_a_notebook_over_its_budget():
    from tools.execution_status import seconds_cell
    from tools.record import NOTEBOOK_BUDGET_S, over_budget

    assert seconds_cell(12.34) == "12.3"
    assert seconds_cell(NOTEBOOK_BUDGET_S + 5) == "65.0 (over the 60 s budget)"
    assert seconds_cell(None) == ""
    assert not over_budget(60.0) and over_budget(60.1)


def test_a_missing_record_is_empty_for_the_writer_and_an_error_for_the_reader(tmp_path):
    from tools.record import RecordError

    assert read_record(tmp_path / "none.json", missing_ok=True) == {"notebooks": {}}
    with pytest.raises(RecordError, match="is missing: run `make outputs`"):
        read_record(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RecordError, match="is not valid JSON"):
        read_record(tmp_path / "bad.json")


def test_make_outputs_records_on_any_cpu_and_names_it(tmp_path):
    """Trained cells assert their claims instead of being compared, so any machine may
    re-record the book: a record made on another vendor's CPU does not stop `make outputs`,
    and the new entry names the machine that made it."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    nbformat.write(notebook, tmp_path / "one.ipynb")
    record_path = tmp_path / "record.json"
    elsewhere = {"environment": {"cpu": "A vendor no machine has, 2 cores"}, "result": "passed"}
    record_path.write_text(json.dumps({"notebooks": {"one.ipynb": elsewhere}}))
    assert execute_and_record([tmp_path / "one.ipynb"], record_path=record_path, root=tmp_path)
    entry = read_record(record_path)["notebooks"]["one.ipynb"]
    assert entry["environment"]["cpu"].startswith(cpu_name())
