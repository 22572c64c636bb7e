"""tools/device_check.py: a notebook run on this machine's device, and what its report says."""

from __future__ import annotations

import os

import nbformat

from companion.claims import LOG_VARIABLE
from tools import device_check
from tools.device_check import check, compared, printed

SOURCES = [
    "print('set-up')",  # tagged remove-cell below: never compared
    "import sys\nprint(0x7f3a2b1c9d00 > 0, 1 / 3)",
    "from companion.claims import claim\nclaim('a third is below a half', 1 / 3, below=0.5)\n"
    "claim('a third is above a half', 1 / 3, above=0.5)",
    "print('to stderr', file=sys.stderr)",
    "# NBVAL_IGNORE_OUTPUT\nprint('measured', 12.5)",
    "print('after the error')",
]


def notebook(committed_outputs: dict[int, str]) -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_code_cell(source) for source in SOURCES]
    cells[0].metadata["tags"] = ["remove-cell"]
    for index, text in committed_outputs.items():
        cells[index].outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return nbformat.v4.new_notebook(cells=cells)


def test_printed_sanitises_addresses_and_compared_skips_setup_trained_and_timing_cells():
    book = notebook({1: "True 0x7f3a2b1c9d00\n"})
    assert printed(book.cells[1]) == "True 0xADDRESS\n"
    book.cells[2].metadata["tags"] = ["trained"]
    assert [compared(cell) for cell in book.cells] == [False, True, False, True, False, True]


def test_a_run_reports_errors_stderr_claims_measurements_and_changed_outputs(tmp_path, monkeypatch):
    monkeypatch.delenv(LOG_VARIABLE, raising=False)
    path = tmp_path / "demo.ipynb"
    # Cell 1 was committed with other digits, cell 5 exactly as it prints.
    nbformat.write(notebook({1: "True 0.3333\n", 5: "after the error\n"}), path)
    report = check((path, 0))
    assert LOG_VARIABLE not in os.environ, "the claims log is this run's alone"
    assert [claim["held"] for claim in report["claims"]] == [True, False]
    assert report["claims_failed"] == ["a third is above a half"]
    assert report["errors"] == [
        "cell 2: ClaimError: claim does not hold: a third is above a half: 0.3333 is not above 0.5"
    ]
    assert report["stderr"] == ["cell 3: to stderr\n"]
    assert report["measurements"] == [{"cell": 4, "device": "measured 12.5\n"}]
    # 1: other digits; 2 and 3 were committed without the error and the stderr they print now.
    assert [cell["cell"] for cell in report["differing_cells"]] == [1, 2, 3]
    assert report["differing_cells"][0]["device"] == "True 0.3333333333333333\n"


def test_a_shifted_seed_is_reported_and_its_outputs_are_not_compared(tmp_path):
    path = tmp_path / "demo.ipynb"
    nbformat.write(notebook({1: "other digits\n"}), path)
    report = check((path, 2))
    assert report["seed_offset"] == 2
    assert report["differing_cells"] == []
    assert len(report["claims"]) == 2


def test_a_print_that_arrives_in_parts_is_no_difference(tmp_path, monkeypatch):
    """A busy kernel may send one cell's stdout in several messages; the committed notebook
    holds them joined, as `make outputs` writes them."""
    path = tmp_path / "demo.ipynb"
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('a')\nprint('b')")])
    book.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\nb\n")]
    nbformat.write(book, path)

    def run_in_parts(notebook, folder, allow_errors=False):
        notebook.cells[0].outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=text) for text in ("a\n", "b\n")
        ]

    monkeypatch.setattr(device_check, "run_notebook", run_in_parts)
    assert check((path, 0))["differing_cells"] == []
