import subprocess
import sys

from tools.notebooks import ROOT


def test_ruff_is_clean():
    paths = ["companion", "tests", "tools", "site_test", "conftest.py"]
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *paths], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
