"""Measuring on the reader's machine: the thread count, waiting for the device, and peak memory.
What a benchmark or a chapter needs to time and weigh one step (sec-efficient-attention).

:func:`use_threads` pins torch's CPU threads to ``$COMPANION_NUM_THREADS`` (default 2), as the
Makefile does, so that measurements compare. :func:`synchronize` waits for a GPU's queued work.

:func:`memory_probe` returns a probe for a device: ``probe.start()`` before a step,
``probe.peak()`` after it gives the most bytes the step needed on top of what was resident
before. On CUDA that is ``max_memory_allocated``; on Linux CPUs it is the growth of the
process's resident set, read from its resettable high-water mark (``VmHWM``). Elsewhere
(macOS, MPS) ``probe.available`` is False.

:func:`run_in_fresh_process` calls a function in a new Python interpreter, so that nothing an
earlier measurement allocated (memory, thread pools, caches) is resident when the next one
starts.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from companion._validate import check_device
from companion.repro import configured_threads


def _device(device: object) -> torch.device:
    """``device``, a ``torch.device`` or its name such as ``"cpu"``, as a ``torch.device``."""
    checked = check_device(device)
    if checked is None:
        raise TypeError("device must be a torch.device or a name such as 'cpu'; got None")
    return checked


def use_threads(device: torch.device) -> int | None:
    """On the CPU, set torch's thread count from ``$COMPANION_NUM_THREADS`` and return it.
    ``device`` is a ``torch.device`` or its name."""
    device = _device(device)
    if device.type != "cpu":
        return None
    threads = configured_threads()
    torch.set_num_threads(threads)
    return threads


def _proc_status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise OSError(f"{field} not in /proc/self/status")


class _RSSProbe:
    """Growth of the resident set over a step, from Linux's resettable high-water mark."""

    def __init__(self) -> None:
        self.before = 0
        try:
            self.start()
            self.available = True
        except OSError:
            self.available = False

    def start(self) -> None:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")  # reset VmHWM to the current VmRSS
        self.before = _proc_status_bytes("VmRSS")

    def peak(self) -> int:
        return _proc_status_bytes("VmHWM") - self.before


class _CUDAProbe:
    available = True

    def __init__(self, device: torch.device) -> None:
        self.device, self.before = device, 0

    def start(self) -> None:
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.before = torch.cuda.memory_allocated(self.device)

    def peak(self) -> int:
        torch.cuda.synchronize(self.device)
        return torch.cuda.max_memory_allocated(self.device) - self.before


class _NoProbe:
    available = False

    def start(self) -> None:
        pass

    def peak(self) -> int:
        return -1


def memory_probe(device: torch.device) -> _RSSProbe | _CUDAProbe | _NoProbe:
    """A probe of the peak memory of a step on ``device``, a ``torch.device`` or its name."""
    device = _device(device)
    if device.type == "cuda":
        return _CUDAProbe(device)
    if device.type == "cpu":
        probe = _RSSProbe()
        return probe if probe.available else _NoProbe()
    return _NoProbe()


def synchronize(device: torch.device) -> None:
    """Wait for the kernels queued on ``device`` (a ``torch.device`` or its name): GPU work runs
    asynchronously."""
    device = _device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


# The directory that holds the ``companion`` package: a child process imports this very copy.
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def run_in_fresh_process(
    module: str, function: str, *args: Any, release_freed_memory: bool = True
) -> Any:
    """``module.function(*args)`` in a new Python interpreter; returns its JSON-able result.

    The child imports the same ``companion`` as this process (its parent directory goes first on
    ``PYTHONPATH``). With ``release_freed_memory`` (for memory measurements), glibc hands every
    freed block of 64 KiB or more straight back to the system (``MALLOC_MMAP_THRESHOLD_``), so
    that the resident set shows what a step holds; timings leave the allocator as it is.
    ``module`` is a module's dotted name, ``function`` a name in it, and the arguments must be
    Python literals. A child that fails raises ``subprocess.CalledProcessError`` (its
    ``returncode`` is negative when a signal killed it).
    """
    _check_call(module, function, args)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), env.get("PYTHONPATH")]))
    if release_freed_memory:
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    code = (
        "import json\n"
        f"from {module} import {function}\n"
        f"print(json.dumps({function}(*{list(args)!r})))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True, check=True
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _check_call(module: object, function: object, args: tuple[Any, ...]) -> None:
    """:func:`run_in_fresh_process`'s call: names that are names, arguments that are literals
    (the child reads them back from their ``repr``)."""
    names = module.split(".") if isinstance(module, str) else [""]
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"module must be a dotted name such as 'json.decoder'; got {module!r}")
    if not isinstance(function, str) or not function.isidentifier():
        raise ValueError(f"function must be a name defined in module; got {function!r}")
    try:
        ast.literal_eval(repr(list(args)))
    except (ValueError, SyntaxError):
        raise ValueError(
            f"args must be Python literals (numbers, strings, lists, dicts); got {args!r:.80}"
        ) from None
