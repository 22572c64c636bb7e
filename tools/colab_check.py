"""Install companion as a reader does, away from the repository, and run the book there.

    python -m tools.colab_check install     # the install check: a fresh venv with companion's
                                            # declared dependencies only; import every module
                                            # and run one chapter's exercise checker
    python -m tools.colab_check colab       # the install check on Python 3.12, then every
                                            # notebook under `pytest --nbval-lax`, as in Colab

Both share one piece of machinery, in this order:

1. a fresh virtual environment (``colab``: Python 3.12, from ``$PYTHON312`` or found on this
   machine; there is none, it says so and exits non-zero);
2. torch installed first, as Colab has it preinstalled. ``--torch`` gives pip's arguments (the
   weekly workflow asks for the newest); by default it is the version in ``requirements.lock``,
   from local wheels only (``pip install --no-index``), since the package index's torch for
   Linux is the CUDA build, gigabytes. Where no local wheel fits Python 3.12, ``colab`` says so
   and installs that version from the index: the CUDA build, as Colab has (fetched once into
   pip's cache; it runs on the CPU here);
3. companion installed non-editable from a copy of its sources (pip writes ``build/`` into
   the tree it installs from), with only its declared dependencies;
4. the install check: every module of the package imported (found with ``pkgutil``, so a new
   module is covered without a list), and the first coding exercise of the first chapter
   graded by its checker, with the book's own solution;
5. (``colab`` only) nbval, pytest and ipykernel added, and scikit-learn, which Colab has
   preinstalled (the Vision Transformer chapter's digits); the notebooks copied to an empty folder
   outside the repository; ``pytest --nbval-lax`` run there with none of the Makefile's pinned
   environment (threads, seeds, CPU math path, ``COMPANION_DEVICE``: the device is ``auto``).

A notebook that only works from inside the repository fails it.
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

from tools.exercises import exercises
from tools.record import ROOT
from tools.toc import toc_notebooks

# What building companion needs: its package and the files pyproject.toml names.
PACKAGE_FILES = ("pyproject.toml", "README.md", "companion")
# Set by the Makefile for `make test` and `make outputs`; a reader in Colab has none of them.
PINNED_ENVIRONMENT = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "COMPANION_NUM_THREADS",
    "ATEN_CPU_CAPABILITY",
    "MKL_CBWR",
    "PYTHONHASHSEED",
    "COMPANION_DEVICE",
    "COMPANION_PROGRESS",
    "PYDEVD_DISABLE_FILE_VALIDATION",
    "PYTHONPATH",
    "VIRTUAL_ENV",
)
NOTEBOOK_TOOLS = ("pytest", "nbval", "ipykernel")
# Libraries Colab has preinstalled that a chapter imports but companion does not depend on:
# the Vision Transformer chapter loads scikit-learn's digits.
COLAB_PREINSTALLED = ("scikit-learn",)

# Run inside the fresh environment: import every module of companion, then grade the book's
# solution of one exercise with its checker. Arguments: the solution code, the function name
# and the checker's name.
IMPORT_AND_CHECK = """\
import importlib, pkgutil, sys
import companion

names = [companion.__name__] + [
    module.name
    for module in pkgutil.walk_packages(companion.__path__, companion.__name__ + ".")
    # a package's __main__ runs it (the benchmarks); importing it is not an import check
    if not module.name.endswith(".__main__")
]
for name in names:
    importlib.import_module(name)
print(f"imported {len(names)} modules of companion from {companion.__file__}")

import companion.exercises
import torch

code, function, checker = sys.argv[1:4]
namespace = {"torch": torch}
exec(code, namespace)
if not getattr(companion.exercises, checker)(namespace[function]):
    sys.exit(f"{checker} did not pass the book's own solution")
"""


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(command: Sequence[str | Path], **options: Any) -> None:
    say("$ " + " ".join(str(part) for part in command))
    subprocess.run([str(part) for part in command], check=True, **options)


def find_python312() -> str | None:
    """``$PYTHON312``, else a Python 3.12 on ``PATH`` or under pyenv that actually runs."""
    candidates = [os.environ.get("PYTHON312", "")]
    candidates += [shutil.which("python3.12") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.12*/bin/python3.12"), reverse=True)
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0 and done.stdout.strip() == "True":
            return candidate
    return None


def locked_torch(root: Path = ROOT) -> str:
    """``torch==X`` as ``requirements.lock`` pins it: the version whose wheel is local here."""
    match = re.search(r"^torch==([^\s+#]+)", (root / "requirements.lock").read_text(), re.M)
    if match is None:
        raise SystemExit("requirements.lock pins no torch")
    return f"torch=={match.group(1)}"


def has_local_torch(python: str, torch_args: list[str]) -> bool:
    """Whether pip can install ``torch_args`` for ``python`` without the package index."""
    done = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", *torch_args],
        capture_output=True,
    )
    return done.returncode == 0


def reader_environment(venv: Path) -> dict[str, str]:
    """This process's environment without the Makefile's pins, with ``venv`` first on PATH."""
    environment = {k: v for k, v in os.environ.items() if k not in PINNED_ENVIRONMENT}
    repository_bins = {str(ROOT / ".venv" / "bin")}
    path = [p for p in environment.get("PATH", "").split(os.pathsep) if p not in repository_bins]
    environment["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    return environment


def copy_package(root: Path, target: Path) -> Path:
    """The files that build companion, copied to ``target`` (pip may write into it)."""
    target.mkdir(parents=True)
    for name in PACKAGE_FILES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    return target


def first_coding_exercise(root: Path = ROOT) -> tuple[str, str, str]:
    """The book's solution of the first coding exercise: (its code, function, checker).

    The code is the solution cell's imports and definitions, as the cell defines them.
    """
    for path in toc_notebooks(root):
        notebook = nbformat.read(path, as_version=4)
        for exercise in exercises(notebook):
            for call in exercise.checks:
                tree = ast.parse(notebook.cells[call.cell].source)
                keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
                body: list[ast.stmt] = [node for node in tree.body if isinstance(node, keep)]
                return (
                    ast.unparse(ast.Module(body, type_ignores=[])),
                    call.function,
                    call.checker,
                )
    raise SystemExit("no chapter has a coding exercise with a checker")


def fresh_install(python: str, workdir: Path, torch_args: list[str], root: Path = ROOT) -> Path:
    """Steps 1 to 4: a venv in ``workdir`` with torch and companion only; the install check."""
    venv = workdir / "venv"
    run([python, "-m", "venv", venv])
    pip: list[str | Path] = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    environment = reader_environment(venv)
    if "--no-index" in torch_args:  # the local wheel; its own dependencies from the index
        run([*pip, "--no-deps", *torch_args], env=environment)
        torch_args = [arg for arg in torch_args if arg != "--no-index"]
    run([*pip, *torch_args], env=environment)  # preinstalled, as in Colab
    package = copy_package(root, workdir / "companion-source")
    run([*pip, package], env=environment, cwd=workdir)
    code, function, checker = first_coding_exercise(root)
    run(
        [venv / "bin" / "python", "-c", IMPORT_AND_CHECK, code, function, checker],
        env=environment,
        cwd=workdir,
    )
    return venv


def run_notebooks(venv: Path, workdir: Path, root: Path = ROOT) -> None:
    """Step 5: the notebooks, copied out of the repository, under ``pytest --nbval-lax``."""
    environment = reader_environment(venv)
    run(
        [
            venv / "bin" / "python",
            "-m",
            "pip",
            "install",
            "--quiet",
            *NOTEBOOK_TOOLS,
            *COLAB_PREINSTALLED,
        ],
        env=environment,
    )
    folder = workdir / "notebooks"
    folder.mkdir()
    for path in toc_notebooks(root):
        shutil.copy2(path, folder / path.name)
    versions = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import sys, torch, numpy, matplotlib; print(sys.version.split()[0], torch.__version__,"
            " numpy.__version__, matplotlib.__version__)",
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    say("Python {}, torch {}, numpy {}, matplotlib {}".format(*versions))
    run(
        [
            venv / "bin" / "python",
            "-m",
            "pytest",
            "--nbval-lax",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-q",
            ".",
        ],
        env=environment,
        cwd=folder,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.colab_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("stage", choices=["install", "colab"])
    parser.add_argument(
        "--python",
        help="the interpreter of the venv (install: this one; "
        "colab: $PYTHON312 or a Python 3.12 found here)",
    )
    parser.add_argument(
        "--torch",
        default=None,
        help="pip's arguments for torch, installed first (default: the lock's "
        "version, whose CPU wheel is on this machine)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    torch_args = shlex.split(args.torch) if args.torch else ["--no-index", locked_torch()]
    python = args.python
    if args.stage == "colab" and python is None:
        python = find_python312()
        if python is None:
            print(
                "error: make colab-check needs Python 3.12 (Colab's version) and found none: "
                "set PYTHON312=/path/to/python3.12",
                file=sys.stderr,
            )
            return 1
        if not args.torch and not has_local_torch(python, torch_args):
            # Colab's torch is a CUDA build, and so is the index's: several GB, fetched once
            # into pip's cache. The check stays on Python 3.12, the version readers run.
            print(
                f"note: no local wheel of {torch_args[-1]} fits Python 3.12 here: it comes "
                "from the package index (the CUDA build, as in Colab; several GB)",
                flush=True,
            )
            torch_args = [torch_args[-1]]
    python = python or sys.executable
    if "--no-index" in torch_args and not has_local_torch(python, torch_args):
        print(
            f"error: no local wheel of {torch_args[-1]} for {python}: set COLAB_TORCH "
            "(make) or --torch to pip's arguments for torch, e.g. 'torch', to download one",
            file=sys.stderr,
        )
        return 1
    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix=f"companion-{args.stage}-check-"))
    try:
        venv = fresh_install(python, workdir, torch_args)
        if args.stage == "colab":
            run_notebooks(venv, workdir)
    except subprocess.CalledProcessError as error:
        print(f"error: {args.stage} check failed: {error}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    say(f"{args.stage} check passed in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
