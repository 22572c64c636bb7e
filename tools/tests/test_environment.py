"""The three descriptions of the environment agree: pyproject (loose), the lock (exact) and
environment.yml (conda and Binder), and the running environment is the locked one."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata

import yaml

from tools.notebooks import ROOT


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[normalise(name)] = version.strip()
    return pins


LOCK = parse_pins((ROOT / "requirements.lock").read_text().splitlines())
ENVIRONMENT = yaml.safe_load((ROOT / "environment.yml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def environment_pip_entries() -> list[str]:
    for dependency in ENVIRONMENT["dependencies"]:
        if isinstance(dependency, dict) and "pip" in dependency:
            return dependency["pip"]
    raise AssertionError("environment.yml has no pip section")


def requirement_name(requirement: str) -> str:
    return normalise(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])


def test_environment_pins_equal_the_lock():
    pins = parse_pins(environment_pip_entries())
    assert pins, "environment.yml pins its packages"
    for name, version in pins.items():
        assert LOCK.get(name) == version, (
            f"{name}: environment.yml {version}, lock {LOCK.get(name)}"
        )


def test_environment_has_every_direct_dependency():
    pinned = set(parse_pins(environment_pip_entries()))
    direct = PYPROJECT["dependencies"] + sum(PYPROJECT["optional-dependencies"].values(), [])
    missing = {requirement_name(r) for r in direct} - pinned
    assert not missing, f"environment.yml lacks {sorted(missing)}"


def supported_pythons() -> list[str]:
    """The Makefile's SUPPORTED_PYTHONS: the one list of the versions the lock is tested on."""
    makefile = (ROOT / "Makefile").read_text()
    return re.search(r"^SUPPORTED_PYTHONS := (.+)$", makefile, re.M).group(1).split()


def test_the_running_python_is_a_supported_one():
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert running in supported_pythons()


def test_supported_pythons_agree_everywhere():
    supported = supported_pythons()
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    (job,) = ci["jobs"].values()
    assert job["strategy"]["matrix"]["python"] == supported
    conda = next(
        d for d in ENVIRONMENT["dependencies"] if isinstance(d, str) and d.startswith("python=")
    )
    assert conda.removeprefix("python=") in supported
    floor = PYPROJECT["requires-python"]
    assert floor == f">={supported[0]}", "companion is tested from the oldest supported Python"
    assert " or ".join(supported) in (ROOT / "README.md").read_text()


def test_an_unsupported_python_stops_before_anything_is_installed(tmp_path):
    """`make setup PYTHON=<3.10>` fails at once with a clear message, and makes no venv."""
    for name in ("Makefile", "requirements.lock", "pyproject.toml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    fake = tmp_path / "python3.10"
    pretend = "import sys\nsys.version_info = (3, 10, 0)\nexec(sys.argv[2])"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{pretend}" -c "$2"\n')
    fake.chmod(0o755)
    done = subprocess.run(
        ["make", "setup", f"PYTHON={fake}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "is Python 3.10; supported: Python 3.11 3.12" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_companion_stays_loose_and_d2l_is_not_a_dependency():
    runtime = PYPROJECT["dependencies"]
    torch = [r for r in runtime if requirement_name(r) == "torch"]
    assert len(torch) == 1 and re.fullmatch(r"torch>=\d+\.\d+", torch[0]), "a floor, no ceiling"
    assert all("==" not in r for r in runtime), "companion's own dependencies are never pinned"
    everything = runtime + sum(PYPROJECT["optional-dependencies"].values(), [])
    assert "d2l" not in {requirement_name(r) for r in everything}
    assert "d2l" not in LOCK, "d2l is installed --no-deps by the Makefile, not from the lock"


def test_installed_packages_are_the_locked_versions():
    wrong = {}
    for name, version in LOCK.items():
        installed = metadata.version(name)
        if installed != version:
            wrong[name] = (installed, version)
    assert not wrong, f"installed differs from requirements.lock: {wrong}"
