"""The book imports each companion name one way: a name that ``companion`` exports at the top
level comes from ``companion``, anything else from its own module, and never both."""

from __future__ import annotations

import ast
import json
from collections import defaultdict

import companion
from tools.notebooks import ROOT


def companion_imports() -> dict[str, set[str]]:
    """name -> the modules the book's notebooks import it from."""
    sources: dict[str, set[str]] = defaultdict(set)
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            code = "".join(cell["source"])
            lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
            try:
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("companion"):
                    for alias in node.names:
                        sources[alias.name].add(node.module)
    return sources


def test_each_name_is_imported_one_way():
    imports = companion_imports()
    assert "companion" in set().union(*imports.values()), "no notebook import was read"
    twice = {name: sorted(modules) for name, modules in imports.items()}
    twice = {name: modules for name, modules in twice.items() if len(modules) > 1}
    assert not twice, twice


def test_exported_names_come_from_the_top_level():
    exported = set(companion.__all__)
    roundabout = {
        name: sorted(modules)
        for name, modules in companion_imports().items()
        if name in exported and modules != {"companion"}
    }
    assert not roundabout, roundabout
