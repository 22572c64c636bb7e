"""Publishing: the repository URL lives in _config.yml alone, and every notebook's Colab
set-up cell installs companion from that repository at the tag of pyproject.toml's version.

Read here from the files themselves, not through tools/notebooks.py, which writes the cells:
a wrong generator would otherwise agree with itself.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib

import nbformat
import pytest
import yaml

from tools.record import ROOT
from tools.toc import toc_notebooks

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
URL = CONFIG["repository"]["url"].rstrip("/")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
NOTEBOOKS = toc_notebooks(ROOT)


def pip_arguments(source: str) -> list[str]:
    """The list literal handed to subprocess.run in the set-up cell."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List) and any(
            isinstance(e, ast.Constant) and e.value == "install" for e in node.elts
        ):
            return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    raise AssertionError("the set-up cell runs no pip install")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_colab_cell_installs_this_repository_at_the_release_tag(path):
    first = nbformat.read(path, as_version=4).cells[0]
    arguments = pip_arguments(first.source)
    requirement = arguments[-1]
    assert requirement == f"companion @ git+{URL}@v{VERSION}", requirement
    assert URL.startswith("https://github.com/")
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), "tag v<major>.<minor>.<patch>"


def test_the_repository_url_is_written_only_in_config_and_the_generated_cells():
    tracked = subprocess.run(
        ["git", "grep", "-l", "-F", URL.removeprefix("https://")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    files = set(tracked.stdout.split())
    notebooks = {path.relative_to(ROOT).as_posix() for path in NOTEBOOKS}
    assert files - notebooks == {"_config.yml"}


def test_contributing_documents_the_release_steps():
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    section = guide.split("## Releases", 1)[1].split("\n## ", 1)[0]
    for step in ("_config.yml", "git tag v", "git push", "make outputs", "pyproject.toml"):
        assert step in section, f"the release steps do not mention {step}"
