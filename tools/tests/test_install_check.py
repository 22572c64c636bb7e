"""The pieces of the install check and the Colab check (tools/colab_check.py), without
building a venv: `make colab-check` (run by .ci/run) does the real install.

Also the rule behind it: companion, what students install, never imports the book's tools.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import companion.exercises
from tools import colab_check
from tools.record import ROOT

PACKAGE = ROOT / "companion"


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_companion_never_imports_the_tools_or_the_tests(path):
    tops = {name.split(".")[0] for name in _imported_modules(path)}
    assert not tops & {"tools", "tests", "site_test", "conftest"}


def test_the_import_walk_finds_every_module_of_the_package(tmp_path):
    """The script run in the fresh venv imports what pkgutil finds: every file of companion."""
    on_disk = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in PACKAGE.rglob("*.py")
        if path.name != "__main__.py"
    }
    walk = colab_check.IMPORT_AND_CHECK.split("import companion.exercises")[0]
    probe = walk.replace("importlib.import_module(name)", "print('module', name)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("module ")}
    assert found == on_disk


def test_the_checked_exercise_is_the_books_solution_and_passes_its_checker():
    code, function, checker = colab_check.first_coding_exercise()
    assert f"def {function}(" in code and "### BEGIN SOLUTION" not in code
    namespace: dict = {"torch": __import__("torch")}
    exec(code, namespace)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert getattr(companion.exercises, checker)(namespace[function])
    assert printed.getvalue().startswith("pass")


def test_the_reader_environment_has_none_of_the_makefiles_pins(monkeypatch, tmp_path):
    for name in colab_check.PINNED_ENVIRONMENT:
        monkeypatch.setenv(name, "pinned")
    monkeypatch.setenv("PATH", os.pathsep.join([str(ROOT / ".venv" / "bin"), "/usr/bin"]))
    environment = colab_check.reader_environment(tmp_path / "venv")
    assert not set(colab_check.PINNED_ENVIRONMENT) & set(environment)
    assert environment["PATH"].split(os.pathsep) == [str(tmp_path / "venv" / "bin"), "/usr/bin"]
    assert "COMPANION_DEVICE" in colab_check.PINNED_ENVIRONMENT, "the device stays on auto"


def test_the_package_copy_holds_what_pip_needs_and_nothing_of_the_book(tmp_path):
    copy = colab_check.copy_package(ROOT, tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == ["README.md", "companion", "pyproject.toml"]
    assert not list(copy.rglob("__pycache__"))
    assert (copy / "companion" / "__init__.py").read_text() == (PACKAGE / "__init__.py").read_text()


def test_the_lock_names_the_local_torch():
    assert colab_check.locked_torch().startswith("torch==2.")


def test_colab_check_without_python_312_says_so_and_fails(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(colab_check, "find_python312", lambda: None)
    assert colab_check.main(["colab"]) == 1
    assert "needs Python 3.12" in capsys.readouterr().err


def test_python_312_is_found_only_if_it_runs(monkeypatch, tmp_path):
    fake = tmp_path / "python3.12"
    fake.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PYTHON312", str(fake))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    assert colab_check.find_python312() is None
    monkeypatch.setenv("PYTHON312", sys.executable)
    expected = sys.executable if sys.version_info[:2] == (3, 12) else None
    assert colab_check.find_python312() == expected


def test_without_a_local_torch_for_312_the_check_stays_on_312_and_says_it_downloads(
    monkeypatch, capsys
):
    """The check runs on Colab's Python 3.12. With no local wheel for it, torch comes from the
    index (the CUDA build, gigabytes, as Colab has), and the check says so first."""
    used = []
    monkeypatch.setattr(colab_check, "find_python312", lambda: "/somewhere/python3.12")
    monkeypatch.setattr(
        colab_check, "has_local_torch", lambda python, args: python != "/somewhere/python3.12"
    )
    monkeypatch.setattr(
        colab_check,
        "fresh_install",
        lambda python, workdir, args: used.append((python, args)) or workdir,
    )
    monkeypatch.setattr(colab_check, "run_notebooks", lambda venv, workdir: None)
    assert colab_check.main(["colab"]) == 0
    assert used == [("/somewhere/python3.12", [colab_check.locked_torch()])]  # no --no-index
    assert "no local wheel" in capsys.readouterr().out
    used.clear()
    assert colab_check.main(["colab", "--torch", "torch --index-url https://example.org/cpu"]) == 0
    assert used == [("/somewhere/python3.12", ["torch", "--index-url", "https://example.org/cpu"])]
