"""Where tensors live: one switch, the ``COMPANION_DEVICE`` environment variable.

Every chapter creates its data and initialises its models on the CPU, then moves them with
``.to(get_device())``. The CPU and CUDA random generators differ, so drawing on the CPU keeps
the numbers the same whichever device does the arithmetic.
"""

from __future__ import annotations

import os
import platform

import torch

from companion._validate import describe

DEVICE_VARIABLE = "COMPANION_DEVICE"
CHOICES = ("auto", "cpu", "cuda", "mps")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def get_device(name: str | None = None) -> torch.device:
    """Return the device named by ``name``, or by ``$COMPANION_DEVICE`` (default ``auto``).

    ``auto`` picks CUDA, then Apple's MPS, then the CPU, so a Colab GPU runtime is used without
    any change to a notebook. Naming a device that this machine does not have raises a
    ``RuntimeError`` instead of silently falling back to the CPU. ``name`` is a str or None.
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(
            f"name must be one of {', '.join(CHOICES)} (a str) or None; got {describe(name)}"
        )
    requested = name if name is not None else os.environ.get(DEVICE_VARIABLE, "auto")
    requested = requested.strip().lower() or "auto"
    if requested not in CHOICES:
        source = "name" if name is not None else DEVICE_VARIABLE
        raise ValueError(f"{source} must be one of {', '.join(CHOICES)}; got {requested!r}")
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"{DEVICE_VARIABLE}=cuda was requested, but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}). In Colab choose Runtime > Change runtime type > GPU, "
            f"or set {DEVICE_VARIABLE}=auto to fall back to the CPU."
        )
    if requested == "mps" and not _mps_available():
        raise RuntimeError(
            f"{DEVICE_VARIABLE}=mps was requested, but torch.backends.mps.is_available() is "
            f"False. Set {DEVICE_VARIABLE}=auto to fall back to the CPU."
        )
    return torch.device(requested)


def cpu_name() -> str:
    """The processor's name as the operating system reports it, e.g. ``AMD EPYC 7B13``.

    Linux names it in ``/proc/cpuinfo``; elsewhere ``platform`` gives what it can. Benchmarks
    and the book's execution record print it next to their numbers.
    """
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
