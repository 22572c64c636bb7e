"""What every benchmark prints around its numbers: threads, device, load, progress."""

from __future__ import annotations

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
