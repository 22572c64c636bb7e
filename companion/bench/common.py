"""What every benchmark prints around its numbers: threads, device, load, progress."""

from __future__ import annotations

import os
import sys

import torch

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
