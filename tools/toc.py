"""The book's table of contents, ``_toc.yml``: the pages and notebooks it lists, in order.

The student edition (``tools/student.py``) and the tools that execute and check the
notebooks (``tools/notebooks.py``) read it from here. The chapters are the notebooks outside
the part captioned :data:`REFERENCE_PART`, whose notebooks are pages about the book (its
benchmarks): the instructor guide's schedules and the nbgrader course take the chapters only.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def toc_files(root: Path) -> list[str]:
    """Every ``file:`` entry of ``root/_toc.yml``, the root page first, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({key: value for key, value in toc.items() if key != "root"})
    return files


def toc_notebooks(root: Path) -> list[Path]:
    """The notebooks the table of contents lists (entries without a suffix resolved on disk)."""
    notebooks = []
    for entry in toc_files(root):
        path = root / entry
        candidate = path if path.suffix else path.with_suffix(".ipynb")
        if candidate.suffix == ".ipynb" and candidate.exists():
            notebooks.append(candidate)
    return notebooks


REFERENCE_PART = "Reference"


def chapter_notebooks(root: Path) -> list[Path]:
    """The notebooks of :func:`toc_notebooks` that are chapters: not in the Reference part."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    reference = [
        entry["file"]
        for part in toc.get("parts", [])
        if part.get("caption") == REFERENCE_PART
        for entry in part.get("chapters", [])
    ]
    pages = {(root / entry).with_suffix(".ipynb") for entry in reference}
    return [path for path in toc_notebooks(root) if path not in pages]
