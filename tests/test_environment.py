"""The three descriptions of the environment agree: pyproject (loose), the lock (exact) and
environment.yml (conda and Binder), and the running environment is the locked one."""

from __future__ import annotations

import re
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


def test_environment_python_matches_the_running_one():
    python = next(
        d for d in ENVIRONMENT["dependencies"] if isinstance(d, str) and d.startswith("python=")
    )
    assert python == f"python={sys.version_info.major}.{sys.version_info.minor}"


def test_companion_stays_loose_and_d2l_is_not_a_dependency():
    runtime = PYPROJECT["dependencies"]
    assert "torch>=2.1" in runtime
    assert all("==" not in r for r in runtime), "companion's own dependencies are never pinned"
    everything = runtime + sum(PYPROJECT["optional-dependencies"].values(), [])
    assert "d2l" not in {requirement_name(r) for r in everything}
    assert "d2l" not in LOCK, "d2l is installed --no-deps by the Makefile, not from the lock"


def test_installed_packages_are_the_locked_versions():
    wrong = {}
    for name, version in LOCK.items():
        installed = metadata.version(name).split("+")[0]  # torch reports 2.13.0+cpu
        if installed != version:
            wrong[name] = (installed, version)
    assert not wrong, f"installed differs from requirements.lock: {wrong}"
