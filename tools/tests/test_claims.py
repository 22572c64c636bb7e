"""Trained cells: their claims hold with measured margins, and no prose quotes their digits.

The convention (CONTRIBUTING.md): a cell that prints results of training is tagged ``trained``,
nbval runs it without comparing its output, and it asserts each claim the prose makes about it
with ``companion.claim``. ``tools/claims.py`` measured each claim over three seeds and two other
kinds of CPU numerics into ``book/claims.json``; these tests hold that record to the notebooks.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import nbformat
import pytest

from companion.claims import LOG_VARIABLE, TRAINED_TAG, ClaimError, claim
from tools import claims as sweep
from tools.record import ROOT

RECORD = sweep.read_claims()
TRAINED = [path.relative_to(ROOT).as_posix() for path in sweep.trained_notebooks()]
LIBRARY = sweep.library_sha256()


def test_claim_holds_fails_and_logs(tmp_path, monkeypatch):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    assert claim("accuracy is high", 0.97, above=0.9) is None  # a last line prints nothing
    claim("loss is in range", 1.5, above=1, below=2)
    with pytest.raises(ClaimError, match="gap is small: 0.3 is not below 0.2"):
        claim("gap is small", 0.3, below=0.2)
    with pytest.raises(ClaimError, match="nan is not above 0"):
        claim("a diverged loss fails", float("nan"), above=0)
    with pytest.raises(ValueError, match="needs a bound"):
        claim("no bound", 1.0)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [entry["held"] for entry in logged] == [True, True, False, False]
    assert logged[2] == {
        "claim": "gap is small",
        "value": 0.3,
        "above": None,
        "below": 0.2,
        "held": False,
    }


def notebook(*cells) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=list(cells))


def trained_cell(source: str, printed: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TRAINED_TAG]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    return cell


def test_nbval_runs_a_trained_cell_without_comparing_it_and_fails_on_a_broken_claim(tmp_path):
    """Under `pytest --nbval` the committed output of a trained cell is not compared (it says
    0.5, the run prints 0.7), but its claim is still checked (0.7 is not below 0.6)."""
    cells = [
        trained_cell("print(0.7)", "0.5\n"),
        trained_cell("from companion import claim\nclaim('small', 0.7, below=0.6)", ""),
    ]
    for number, cell in enumerate(cells, 1):
        cell.execution_count = number
    nbformat.write(notebook(*cells), tmp_path / "chapter.ipynb")
    result = subprocess.run(
        # -p conftest: the book's conftest.py, which maps the tag, for a notebook outside book/
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "conftest",
            "--rootdir",
            str(ROOT),
            "-c",
            str(ROOT / "pyproject.toml"),
            str(tmp_path / "chapter.ipynb"),
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "1 failed, 1 passed" in result.stdout, result.stdout[-2000:]
    assert "claim does not hold: small: 0.7 is not below 0.6" in result.stdout


def literal_claims(path) -> set[str]:
    """The statements of the claim(...) calls in a notebook's code whose text is a literal."""
    statements = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or "claim(" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "claim"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                statements.add(node.args[0].value)
    return statements


def test_the_sweep_record_names_every_run():
    assert [run["name"] for run in RECORD["runs"]] == [run.name for run in sweep.RUNS]


@pytest.mark.parametrize("name", TRAINED)
def test_each_claim_holds_over_seeds_and_numerics(name):
    """Every claim of the notebook was measured by `make claims` on the code as it is now, in
    every run that any CPU can do, and held in every run with no cell failing. A run that needs
    a CPU feature (AVX-512) may be missing, or kept from a sweep of the same notebook code with
    an earlier companion; the status page shows which."""
    entry = RECORD["notebooks"].get(name)
    fix = f"run `make claims NOTEBOOKS={name}` (any CPU)"
    assert entry is not None, f"{name} has trained cells but no sweep: {fix}"
    now = sweep.fingerprint(ROOT / name)
    for run in sweep.RUNS:
        stamp = entry["runs"].get(run.name)
        if run.every_cpu:
            assert stamp is not None, f"{name} was not swept in run {run.name!r}: {fix}"
            assert stamp["code_sha256"] == now["code_sha256"], f"{name}'s code changed: {fix}"
            assert stamp["library_sha256"] == LIBRARY, f"companion changed since: {fix}"
        elif stamp is not None:
            assert stamp["code_sha256"] == now["code_sha256"], f"{name}: a stale {run.name!r}"
    assert entry["errors"] == {}, f"cells failed in the sweep: {entry['errors']}"
    assert entry["claims"], f"{name} has trained cells but makes no claim about them"
    for made in entry["claims"]:
        assert sorted(made["values"]) == sorted(entry["runs"]), f"not in every run: {made}"
        assert all(made["held"].values()), f"does not hold in every run: {made}"
    missing = literal_claims(ROOT / name) - {made["claim"] for made in entry["claims"]}
    assert not missing, f"claims in the notebook that its sweep never saw: {missing}"


def test_the_record_has_no_notebook_without_trained_cells():
    assert sorted(RECORD["notebooks"]) == sorted(TRAINED)


def test_trained_cells_carry_no_nbval_marker():
    """The tag is the one way to mark a trained cell: a `# NBVAL_` comment in the same cell
    would overrule it (nbval prefers comments), and mean two conventions."""
    for name in TRAINED:
        for cell in nbformat.read(ROOT / name, as_version=4).cells:
            if sweep.is_trained(cell):
                assert "# NBVAL_" not in cell.source, f"{name}: a trained cell with a marker"


def stamp(code: str = "c", library: str = "l") -> dict:
    return {"code_sha256": code, "library_sha256": library, "machine": "M", "measured_at": "T"}


def test_a_sweep_entry_and_its_table_give_each_run_and_the_smallest_margin():
    made = {"claim": "A beats B", "above": 0.1, "below": None}
    measurements = {
        "seed 0": {
            "claims": [{**made, "value": 0.3, "held": True}],
            "errors": [],
            "stamp": stamp(),
        },
        "seed 1": {
            "claims": [{**made, "value": 0.15, "held": True}],
            "errors": ["cell 3: X"],
            "stamp": stamp(library="earlier"),
        },
    }
    entry = sweep.sweep_entry(measurements)
    assert entry["claims"] == [
        {
            **made,
            "values": {"seed 0": 0.3, "seed 1": 0.15},
            "held": {"seed 0": True, "seed 1": True},
        }
    ]
    assert entry["errors"] == {"seed 1": ["cell 3: X"]}
    assert entry["runs"] == {"seed 0": stamp(), "seed 1": stamp(library="earlier")}
    assert sweep.kept_run(entry, "seed 1") == measurements["seed 1"]
    record = {
        "runs": [{"name": "seed 0"}, {"name": "seed 1"}, {"name": "seed 2"}],
        "notebooks": {"book/chapter.ipynb": entry},
    }
    header, row = sweep.table_rows(record, library="l")
    assert header[-1] == "smallest margin"
    assert row == ["chapter", "A beats B", "> 0.1", "0.3", "0.15*", "–", "0.05"]


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A trained notebook in a book of its own, and sweeps that measure without running it:
    each run's claim is worth its seed offset plus 0.5."""
    path = tmp_path / "book" / "chapter.ipynb"
    path.parent.mkdir()
    nbformat.write(notebook(nbformat.v4.new_code_cell("x = 1")), path)
    made = {"claim": "x is positive", "above": 0, "below": None}

    def measure(path, run):
        value = run.seed_offset + 0.5
        claims = [{**made, "value": value, "held": True}]
        return {
            "claims": claims,
            "errors": [],
            "stamp": {**sweep.fingerprint(path), "machine": run.name, "measured_at": "T"},
        }

    monkeypatch.setattr(sweep, "measure", measure)
    return path


def test_a_cpu_without_avx512_sweeps_the_other_runs_and_keeps_it_while_the_code_is_unchanged(
    chapter, tmp_path, monkeypatch
):
    record = tmp_path / "claims.json"
    everything = [run.name for run in sweep.RUNS]
    optional = [run.name for run in sweep.RUNS if not run.every_cpu]
    monkeypatch.setattr(sweep, "can_do", lambda run: True)
    assert sweep.sweep([chapter], record, tmp_path)
    assert sorted(sweep.read_claims(record)["notebooks"]["book/chapter.ipynb"]["runs"]) == sorted(
        everything
    )

    # The CPU lacks AVX-512 (or --skip says so): the run is kept, stamped as it was measured.
    monkeypatch.setattr(sweep, "can_do", lambda run: run.every_cpu)
    before = sweep.read_claims(record)["notebooks"]["book/chapter.ipynb"]
    assert sweep.sweep([chapter], record, tmp_path)
    after = sweep.read_claims(record)["notebooks"]["book/chapter.ipynb"]
    assert all(after["runs"][name] == before["runs"][name] for name in optional)
    assert after["claims"] == before["claims"]

    # The notebook's code changes: the run this CPU cannot do is left out, not an error.
    nbformat.write(notebook(nbformat.v4.new_code_cell("x = 2")), chapter)
    assert sweep.sweep([chapter], record, tmp_path)
    after = sweep.read_claims(record)["notebooks"]["book/chapter.ipynb"]
    assert sorted(after["runs"]) == sorted(set(everything) - set(optional))
    assert all(sorted(made["values"]) == sorted(after["runs"]) for made in after["claims"])


def test_a_skipped_run_must_exist(chapter, tmp_path):
    with pytest.raises(SystemExit, match="no run named seed 9"):
        sweep.sweep([chapter], tmp_path / "claims.json", tmp_path, skip=["seed 9"])


def test_the_fingerprint_follows_code_not_prose_or_docstrings(tmp_path):
    """A markdown cell or a docstring changes no trained result; code in either place does."""
    path = tmp_path / "chapter.ipynb"
    cells = [nbformat.v4.new_markdown_cell("Prose."), nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(notebook(*cells), path)
    first = sweep.code_sha256(nbformat.read(path, as_version=4))
    cells[0].source = "Prose, edited."
    nbformat.write(notebook(*cells), path)
    assert sweep.code_sha256(nbformat.read(path, as_version=4)) == first
    cells[1].source = "x = 2"
    nbformat.write(notebook(*cells), path)
    assert sweep.code_sha256(nbformat.read(path, as_version=4)) != first

    library = tmp_path / "companion"
    (library / "figures").mkdir(parents=True)
    module = library / "layer.py"
    module.write_text('"""A layer."""\n\n\ndef f(x):\n    """Twice x."""\n    return 2 * x\n')
    first = sweep.library_sha256(library)
    module.write_text('"""A layer, edited."""\n\n\ndef f(x):  # why\n    return 2 * x\n')
    (library / "figures" / "plot.py").write_text("colour = 'red'\n")
    assert sweep.library_sha256(library) == first
    module.write_text('"""A layer."""\n\n\ndef f(x):\n    return 3 * x\n')
    assert sweep.library_sha256(library) != first
