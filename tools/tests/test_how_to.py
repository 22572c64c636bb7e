"""Every command the how-to page shows runs as it says.

The commands are read from the page's ``bash`` blocks, so a command added to the page without a
way to run it here fails the test. ``make setup`` runs for real (the stamp makes it quick);
``make book`` and ``make test`` run as dry runs, since the suite is itself ``make test`` and
``make site-test`` builds the book; JupyterLab starts on a free localhost port, answers, shows
its extensions, and is stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from companion.device import CHOICES as DEVICE_CHOICES
from companion.device import DEVICE_VARIABLE
from tools.record import ROOT

PAGE = ROOT / "book" / "how-to-use.md"
BIN = Path(sys.executable).parent


def shown_commands() -> list[str]:
    """Each command line of the page's bash blocks, comments removed."""
    blocks = re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


COMMANDS = shown_commands()
JUPYTER_LAB = ".venv/bin/jupyter lab"


def test_the_page_shows_the_commands_a_reader_needs():
    assert {"make setup", "make book", "make test", JUPYTER_LAB} <= set(COMMANDS)


def _environment(assignments: list[str]) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(dict(a.split("=", 1) for a in assignments))
    return environment


def run_make(target: str, environment: dict[str, str]) -> None:
    dry = [] if target == "setup" else ["-n"]
    done = subprocess.run(
        ["make", *dry, target], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    if target == "book":
        assert "jupyter-book build . -W" in done.stdout
    if target == "test":
        assert "-m pytest" in done.stdout and "--dist loadscope" in done.stdout


def run_jupyter_lab(environment: dict[str, str], tmp_path: Path) -> None:
    """Start the server as the page says (plus: no browser, a free port), check it, stop it."""
    environment = {**environment, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with socket.socket() as probe:  # a free port on localhost
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "jupyter"),
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={tmp_path}",
            # CI's containers run as root, which Jupyter refuses unless told
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        url, log = None, []
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            log.append(line)
            found = re.search(rf"(http://127\.0\.0\.1:{port}/lab\?token=\w+)", line)
            url = found.group(1) if found else None
        assert url, "JupyterLab did not start:\n" + "".join(log)
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost only
        for attempt in range(20):  # the URL is logged as the server starts to listen
            try:
                with direct.open(url, timeout=30) as response:
                    assert response.status == 200
                    assert "JupyterLab" in response.read().decode()
                break
            except urllib.error.URLError:
                if attempt == 19:
                    raise
                time.sleep(0.5)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        server.stdout.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_of_the_page_runs(command, tmp_path):
    words = shlex.split(command)
    assignments = [w for w in words if re.fullmatch(r"[A-Z_]+=\S*", w)]
    words = words[len(assignments) :]
    environment = _environment(assignments)
    if words[0] == "make" and len(words) >= 2:
        for word in words[2:]:
            assert re.fullmatch(r"[A-Z0-9_]+=\S+", word), f"{command}: {word}"
        if any(word.startswith("PYTHON=") for word in words[2:]):
            # Another interpreter builds another .venv: here only the check that it is
            # supported runs (make -n shows what it would do).
            done = subprocess.run(
                ["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            return
        run_make(words[1], environment)
    elif words == JUPYTER_LAB.split() and assignments and JUPYTER_LAB in COMMANDS:
        # The server starts as for the plain command (its own case, one launch is enough);
        # what is new is the variable: one companion reads, with a value it accepts.
        for name, value in (a.split("=", 1) for a in assignments):
            assert name == DEVICE_VARIABLE, f"{command}: companion does not read {name}"
            assert value in DEVICE_CHOICES, f"{command}: {name}={value} is not a choice"
    elif words == JUPYTER_LAB.split():
        run_jupyter_lab(environment, tmp_path)
    else:
        pytest.fail(f"the how-to page shows {command!r}: teach this test to run it")


def test_jupyterlab_loads_the_myst_and_nbgrader_extensions():
    """An extension that does not fit this JupyterLab is listed, but with an X: not loaded."""
    done = subprocess.run(
        [str(BIN / "jupyter"), "labextension", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    for extension in ("jupyterlab-myst", "@jupyter/nbgrader"):
        line = next((ln for ln in listing.splitlines() if extension + " v" in ln), "")
        assert "enabled OK" in line, f"{extension}: {line or 'not installed'}\n{listing}"
    assert "is not compatible" not in listing, listing
