"""Sphinx extension behind the book's status page: when, how fast and with what each notebook
last ran.

``make outputs`` (``tools/notebooks.py execute``) runs every notebook and writes what it saw
into a record, ``book/execution-status.json``; ``tools/record.py``, the one module that reads
and writes it, documents its format. This extension

* renders the record with the ``{execution-status}`` directive, and
* fails the build, with or without ``-W``, when the record no longer describes the notebooks
  of ``_toc.yml``: one has no entry, one's code changed after it ran (a sha256 of its code
  cells, since file times mean nothing in a fresh clone; prose, tags and metadata may change
  freely), or one's last run failed.

``execution_status_check = False`` turns the check off, for a build whose notebooks are not
the ones executed (the student edition renders stripped copies next to the original record).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

if not __package__:  # loaded by Jupyter Book as a local extension, with tools/ on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools import claims as trained_claims
from tools import record as execution_record

RECORD_PATH = execution_record.RECORD_PATH
FIX = execution_record.FIX
stale_entries = execution_record.stale_entries

# Row labels of the versions table, in this order; keys the record adds later show as they are.
ENVIRONMENT_LABELS = {
    "python": "Python",
    "torch": "PyTorch",
    "numpy": "NumPy",
    "matplotlib": "Matplotlib",
    "companion": "companion",
    "nbclient": "nbclient",
    "threads": "CPU threads",
    "cpu_capability": "CPU math path (ATEN_CPU_CAPABILITY)",
    "cpu": "CPU",
}


def read_record(path: Path) -> dict:
    """The record at ``path``; an ``ExtensionError`` that says how to make it if it is unusable."""
    try:
        return execution_record.read_record(path)
    except execution_record.RecordError as error:
        raise ExtensionError(str(error)) from None


def toc_notebooks(app: Sphinx) -> list[str]:
    """The notebooks of ``_toc.yml``, in reading order, as posix paths under the source folder.

    Jupyter Book's ``sphinx_external_toc`` parses ``_toc.yml`` at ``config-inited``.
    """
    site_map = getattr(app.config, "external_site_map", None)
    if site_map is None:
        raise ExtensionError("execution_status needs _toc.yml (the sphinx_external_toc extension)")
    srcdir = Path(app.srcdir)
    names = [docname.removesuffix(".ipynb") + ".ipynb" for docname in site_map]
    return [name for name in names if (srcdir / name).is_file()]


def record_path(app: Sphinx) -> Path:
    return Path(app.srcdir) / app.config.execution_status_record


def check_record(app: Sphinx) -> None:
    """Stop the build when the record is missing or older than a notebook (``builder-inited``)."""
    if not app.config.execution_status_check:
        return
    path = record_path(app)
    problems = stale_entries(read_record(path), Path(app.srcdir), toc_notebooks(app))
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise ExtensionError(
            f"{app.config.execution_status_record} does not describe the notebooks being built; "
            f"{FIX}:\n{lines}"
        )


def table(header: Sequence[str], rows: Sequence[Sequence[nodes.Node | str]]) -> nodes.table:
    """A docutils table; a cell is text or an inline node."""
    group = nodes.tgroup(cols=len(header))
    group += [nodes.colspec(colwidth=1) for _ in header]

    def row(cells: Sequence[nodes.Node | str]) -> nodes.row:
        result = nodes.row()
        for cell in cells:
            paragraph = nodes.paragraph()
            paragraph += nodes.Text(cell) if isinstance(cell, str) else cell
            result += nodes.entry("", paragraph)
        return result

    group += nodes.thead("", row(header))
    group += nodes.tbody("", *(row(cells) for cells in rows))
    return nodes.table("", group, classes=["colwidths-auto", "execution-status"])


def readable_time(iso: str) -> str:
    """``2026-05-01T09:30:12Z`` as ``2026-05-01 09:30 UTC``."""
    return iso.replace("T", " ")[:16] + " UTC" if iso else ""


def seconds_cell(seconds: float | None) -> str:
    """The run time, flagged when it is over the budget of each notebook."""
    if seconds is None:
        return ""
    budget = execution_record.NOTEBOOK_BUDGET_S
    flag = f" (over the {budget:.0f} s budget)" if seconds > budget else ""
    return f"{seconds:.1f}{flag}"


def environment_rows(environments: Sequence[Mapping[str, str]]) -> list[list[str]]:
    keys = list(ENVIRONMENT_LABELS)
    keys += sorted({key for env in environments for key in env} - set(keys))
    return [
        [ENVIRONMENT_LABELS.get(key, key), *(env.get(key, "") for env in environments)]
        for key in keys
        if any(key in env for env in environments)
    ]


class ExecutionStatusDirective(SphinxDirective):
    """``{execution-status}``: the record as a table of notebooks and a table of versions."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        path = record_path(self.env.app)
        self.env.note_dependency(str(path))
        try:
            record = read_record(path)
        except ExtensionError as error:
            raise self.error(str(error)) from None
        entries = record.get("notebooks", {})
        notebooks = toc_notebooks(self.env.app)

        rows = []
        for name in notebooks:
            entry = entries.get(name, {})
            rows.append(
                [
                    self.chapter_link(name),
                    nodes.literal(text=Path(name).name),
                    readable_time(entry.get("executed_at", "")),
                    seconds_cell(entry.get("seconds")),
                    entry.get("result", "not executed"),
                ]
            )
        total = sum(entries.get(name, {}).get("seconds", 0.0) for name in notebooks)
        rows.append(["All notebooks", "", "", f"{total:.1f}", ""])
        budget = execution_record.NOTEBOOK_BUDGET_S
        header = ["Chapter", "Notebook", "Executed at", f"Seconds (budget {budget:.0f})", "Result"]

        # Notebooks re-run one by one may have run with other versions: one column each.
        environments: list[dict] = []
        users: list[list[str]] = []
        for name in notebooks:
            env = entries.get(name, {}).get("environment")
            if env is None:
                continue
            if env not in environments:
                environments.append(env)
                users.append([])
            users[environments.index(env)].append(Path(name).stem)
        env_header = ["Version"] if len(environments) == 1 else [", ".join(u) for u in users]
        return [
            table(header, rows),
            table(["Environment", *env_header], environment_rows(environments)),
        ]

    def chapter_link(self, notebook: str) -> pending_xref:
        """A ``{doc}`` reference to the notebook's page, shown as the chapter's title."""
        docname = notebook.removesuffix(".ipynb")
        reference = pending_xref(
            "",
            refdomain="std",
            reftype="doc",
            reftarget="/" + docname,
            refdoc=self.env.docname,
            refexplicit=False,
            refwarn=True,
        )
        reference += nodes.inline("", docname, classes=["xref", "std", "std-doc"])
        return reference


class TrainedClaimsDirective(SphinxDirective):
    """``{trained-claims}``: each trained claim's value in every run of ``book/claims.json``."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        path = Path(self.env.app.srcdir) / trained_claims.CLAIMS_PATH
        self.env.note_dependency(str(path))
        record = trained_claims.read_claims(path)
        if not record["notebooks"]:
            raise self.error(f"{trained_claims.CLAIMS_PATH} has no claims: run `make claims`")
        header, *rows = trained_claims.table_rows(record, trained_claims.library_sha256())
        note = nodes.paragraph(
            text=f"{trained_claims.machines(record)} A value marked * was measured with an "
            "earlier version of companion on the same notebook code (a run this CPU cannot "
            "repeat, kept from an earlier sweep); – marks a run not measured on the notebook's "
            "code."
        )
        return [note, table(header, rows)]


def setup(app: Sphinx) -> dict:
    app.add_config_value("execution_status_check", True, "env", types=[bool])
    app.add_config_value("execution_status_record", RECORD_PATH, "env", types=[str])
    app.add_directive("execution-status", ExecutionStatusDirective)
    app.add_directive("trained-claims", TrainedClaimsDirective)
    app.connect("builder-inited", check_record)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
