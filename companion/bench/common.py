"""What every benchmark prints around its numbers: threads, device, load, progress."""

from __future__ import annotations

import os
import platform
import sys

import torch

from companion.repro import THREADS_VARIABLE


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def set_threads(device: torch.device) -> int | None:
    if device.type != "cpu":
        return None
    threads = int(os.environ.get(THREADS_VARIABLE, 2))
    torch.set_num_threads(threads)
    return threads


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "cpu":
        try:
            with open("/proc/cpuinfo") as cpuinfo:
                for line in cpuinfo:
                    if line.startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return platform.processor() or platform.machine()
    return device.type


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 1)
    except (AttributeError, OSError):
        return None
