"""The type hints of companion are checked, not only read: mypy with pyproject's [tool.mypy]."""

import subprocess
import sys

from tools.notebooks import ROOT


def test_mypy_is_clean():
    command = [sys.executable, "-m", "mypy"]  # what and how: pyproject's [tool.mypy]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
