"""What every benchmark prints around its numbers: threads, device, load, progress."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch

import companion
from companion.device import cpu_name


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "cpu":
        return cpu_name()
    return device.type


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 1)
    except (AttributeError, OSError):
        return None


def run_record(
    benchmark: str, device: torch.device, threads: int | None, load_before: float | None
) -> dict[str, Any]:
    """What a benchmark's results file says about the run that made it: the command, the
    machine, the versions and the load average before and now (add ``"seconds"``)."""
    return {
        "benchmark": f"python -m companion.bench {benchmark}",
        "machine": device_name(device),
        "device": device.type,
        "threads": threads,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "companion": companion.__version__,
        },
        "load_average": {"before": load_before, "after": load_average()},
    }


def write_results(results: dict[str, Any], path: Path, benchmark: str) -> None:
    """Write ``results`` as JSON to ``path``; ``-`` writes nothing."""
    if str(path) != "-":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        log(f"[{benchmark}] wrote {path}")


def add_output(parser: argparse.ArgumentParser, default: Path = Path("-")) -> None:
    """``--output PATH``: where :func:`write_results` writes the results (``-``: nowhere)."""
    parser.add_argument(
        "--output", type=Path, default=default, metavar="PATH", help="'-' writes no file"
    )


def results_parser(benchmark: str, description: str, *, output: Path) -> argparse.ArgumentParser:
    """The options of a benchmark that runs over seeds and writes a results file."""
    parser = argparse.ArgumentParser(
        prog=f"python -m companion.bench {benchmark}", description=description
    )
    parser.add_argument("--seeds", type=int, default=3)
    add_output(parser, output)
    return parser


def seeded_parser(
    benchmark: str, description: str, *, steps: int, batch_size: int, output: Path
) -> argparse.ArgumentParser:
    """:func:`results_parser` with the number of steps and the batch size of each run."""
    parser = results_parser(benchmark, description, output=output)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    return parser


def run_lines(results: dict[str, Any], details: str) -> list[str]:
    """The lines a benchmark prints under its title: the device, ``details`` and the seconds,
    then the load average (from a :func:`run_record` with ``"seconds"``)."""
    threads, load = results["threads"], results["load_average"]
    return [
        f"device: {results['device']} ({results['machine']})"
        + (f", {threads} thread{'s' if threads > 1 else ''}" if threads else "")
        + f", {details}, {results['seconds']} s",
        f"1-minute load average {load['before']} before, {load['after']} after",
    ]
