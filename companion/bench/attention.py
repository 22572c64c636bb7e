"""``python -m companion.bench attention``: the cost of multi-head self-attention.

It times one training step (forward and backward) of multi-head self-attention at
batch 8, 256 hidden units, 8 heads, float32, with a padding mask whose valid length is drawn
per batch row, for three implementations:

- companion's *explicit* path (``MultiHeadAttention(..., need_weights=True)``), which builds
  the ``(batch, heads, n, n)`` weights;
- companion's *fused* path (the default), which calls ``scaled_dot_product_attention``;
- ``torch.nn.MultiheadAttention(batch_first=True)`` with the equivalent ``key_padding_mask``
  and ``need_weights=False`` (its own fused path).

All three have no bias and dropout 0, run in training mode, and take an input that requires
grad, as a layer inside a model does. Gradients are set to ``None`` after every step, as
``optimizer.zero_grad()`` does, so each step allocates its gradients afresh.

Each sequence length runs in two fresh subprocesses, one that measures memory and then one
that times.

**Time** is the median wall-clock time of the timed steps, after one untimed warm-up step.
Every implementation gets the same number of runs (2 to 10, about 8 s of timed steps each),
interleaved in rounds whose order rotates, so that a change in the machine's load hits all of
them alike. On the CPU, where the explicit path's weights alone reach 1 GiB (n = 4096: 4 GiB,
about 16 GiB at the peak of a step), one explicit step takes a minute or more, so it runs once,
first thing in the memory subprocess, without warm-up, and is marked ``*``: that single cold run
includes first-touch page faults and overstates the steady state. (Its tensors are far above
the threshold below, so glibc maps them afresh with or without it.)

**Peak memory** is the most memory that one step needs on top of what was resident just before
it: model, inputs and, for the explicit path, nothing else, as each implementation is measured
on its first step after a warm-up and released before the next one is. On CUDA it is
``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus
``memory_allocated`` before the step. On the CPU it is the growth of the process's resident set:
the subprocess resets its high-water mark (``VmHWM``) before the step by writing ``5`` to
``/proc/self/clear_refs`` and reads ``VmHWM - VmRSS(before)`` after it. It runs with
``MALLOC_MMAP_THRESHOLD_=65536``, so that glibc gives every freed block of 64 KiB or more
straight back to the system: by default it keeps blocks of up to 32 MiB for reuse, and the next
step's tensors put there would not show in the resident set. The timing subprocess keeps
glibc's defaults, since mapping every block afresh costs page faults (10-35% more time here).
Where ``/proc`` is missing (macOS) or on MPS, memory is reported as n/a.

Threads: ``torch.set_num_threads($COMPANION_NUM_THREADS, default 2)`` on the CPU. Device:
:func:`companion.device.get_device`, so ``COMPANION_DEVICE=cuda`` runs on a GPU. Before the
explicit path runs, the free memory is checked against an estimate of its peak; a length that
would not fit is skipped and reported as such, instead of pushing the machine into swap or the
OOM killer. Progress goes to stderr, the table to stdout (:mod:`companion.bench.report`), and
``--output PATH`` writes the results as JSON, with the machine and versions that produced them.
No test times anything: these are measurements to read, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch
from torch import nn

from companion.bench.common import (
    add_output,
    load_average,
    log,
    run_lines,
    run_record,
    write_results,
)
from companion.bench.report import attention_report
from companion.device import get_device
from companion.layers.attention import MultiHeadAttention
from companion.measure import memory_probe, run_in_fresh_process, synchronize, use_threads

BATCH, HIDDENS, HEADS = 8, 256, 8
LENGTHS = (128, 512, 1024, 4096)
IMPLEMENTATIONS = ("explicit", "fused", "torch")
TIME_BUDGET_S = 8.0  # timed seconds per implementation and length, after the warm-up
MAX_RUNS = 10
MIB = 2**20
# Peak of one explicit step, in units of one (batch, heads, n, n) float32 tensor: measured
# 4.1 on the CPU (scores, masked scores, weights, masked weights, their gradients); 4.5 leaves
# room for the allocator and the rest of the process.
EXPLICIT_PEAK_MATRICES = 4.5


def _free_bytes(device: torch.device) -> int | None:
    """Memory that a new allocation can still get, or None when it cannot be told."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type == "cpu":
        try:
            with open("/proc/meminfo") as meminfo:
                for line in meminfo:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return None


# ---------------------------------------------------------------------------------------------
# attention: the worker runs in its own process, one sequence length at a time.


def _attention_steps(n: int, device: torch.device) -> dict[str, Callable[[], None]]:
    """One forward+backward closure per implementation, on the same inputs and weights."""
    generator = torch.Generator().manual_seed(n)
    X = torch.randn(BATCH, n, HIDDENS, generator=generator)
    valid_lens = torch.randint(1, n + 1, (BATCH,), generator=generator)
    grad_output = torch.randn(BATCH, n, HIDDENS, generator=generator)
    X, valid_lens, grad_output = (
        X.to(device).requires_grad_(),
        valid_lens.to(device),
        grad_output.to(device),
    )
    key_padding_mask = torch.arange(n, device=device) >= valid_lens[:, None]  # True: ignore

    reference = nn.MultiheadAttention(HIDDENS, HEADS, bias=False, batch_first=True)
    W_q, W_k, W_v = reference.in_proj_weight.detach().chunk(3)
    state = {"W_q.weight": W_q, "W_k.weight": W_k, "W_v.weight": W_v}
    state["W_o.weight"] = reference.out_proj.weight.detach()
    reference.to(device)

    def step(model: nn.Module, forward: Callable[[], torch.Tensor]) -> Callable[[], None]:
        def run() -> None:
            forward().backward(grad_output)
            model.zero_grad(set_to_none=True)
            X.grad = None

        return run

    steps = {}
    for name in ("explicit", "fused"):
        model = MultiHeadAttention(HIDDENS, HEADS, 0.0, need_weights=name == "explicit")
        model.load_state_dict(state)
        model.to(device)
        steps[name] = step(model, partial(model, X, X, X, valid_lens))

    def torch_forward() -> torch.Tensor:
        return reference(X, X, X, key_padding_mask=key_padding_mask, need_weights=False)[0]

    steps["torch"] = step(reference, torch_forward)
    return steps


def _attention_worker(n: int, mode: str) -> dict:
    """Measure every implementation at sequence length ``n``: ``mode`` is "time" or "memory"."""
    device = get_device()
    use_threads(device)
    steps = _attention_steps(n, device)
    results: dict[str, dict] = {}
    cold = device.type == "cpu" and BATCH * HEADS * n * n * 4 >= 2**30

    def timed(name: str) -> float:
        synchronize(device)
        start = time.perf_counter()
        steps[name]()
        synchronize(device)
        return time.perf_counter() - start

    for name in IMPLEMENTATIONS:  # the explicit path first: the process is freshest then
        if name == "explicit":
            need, free = EXPLICIT_PEAK_MATRICES * BATCH * HEADS * n * n * 4, _free_bytes(device)
            if free is not None and need > free:
                why = f"needs ~{need / 2**30:.0f} GiB, {free / 2**30:.1f} GiB free"
                results[name] = {"skipped": why}
                log(f"  n={n} {name}: skipped ({why})")
                del steps[name]

    if mode == "memory":
        probe = memory_probe(device)
        for name in list(steps):
            single = name == "explicit" and cold
            if not single:
                timed(name)  # warm-up: lazy set-up, thread pools, one-time buffers
            probe.start()
            seconds = timed(name)
            results[name] = {"mib": probe.peak() / MIB if probe.available else None}
            if single:  # its one run is also its time: no second one in the timing process
                results[name].update(times=[seconds], cold=True)
            log(f"  n={n} {name}: peak memory {results[name]['mib'] or 0:.1f} MiB")
            del steps[name]  # frees what it keeps, such as attention_weights
        return results

    if cold:
        steps.pop("explicit", None)  # timed by its single run in the memory process
    warm_up = {}
    for name in steps:
        warm_up[name] = timed(name)  # lazy set-up, thread pools, first-touch pages
        log(f"  n={n} {name}: warm-up {warm_up[name] * 1e3:.0f} ms")
    # The same number of runs for every implementation, in rounds whose order rotates, so that
    # each sees the same share of the machine's ups and downs.
    rounds = 0
    if warm_up:
        rounds = int(TIME_BUDGET_S * len(warm_up) / sum(warm_up.values()))
        rounds = max(2, min(MAX_RUNS, rounds))
    order = list(warm_up)
    for name in order:
        results[name] = {"times": []}
    for round_ in range(rounds):
        for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
            results[name]["times"].append(timed(name))
            milliseconds = results[name]["times"][-1] * 1e3
            log(f"  n={n} {name}: run {round_ + 1}/{rounds} {milliseconds:.0f} ms")
    return results


def _run_worker(n: int, mode: str) -> dict:
    """Run :func:`_attention_worker` in a fresh interpreter; a crash becomes a skip reason."""
    try:
        return run_in_fresh_process(
            "companion.bench.attention",
            "_attention_worker",
            n,
            mode,
            release_freed_memory=mode == "memory",
        )
    except subprocess.CalledProcessError as failed:
        why = f"{mode} run failed (exit status {failed.returncode}"
        why += ", killed: out of memory?)" if failed.returncode in (-9, 137) else ")"
        log(f"  n={n}: {why}")
        return {name: {"skipped": why} for name in IMPLEMENTATIONS}


def _attention_length(n: int) -> dict[str, dict]:
    """Both runs at one length, merged: times, their median, peak memory, skip reasons."""
    memory, timing = _run_worker(n, "memory"), _run_worker(n, "time")
    row = {}
    for name in IMPLEMENTATIONS:
        result = {**memory.get(name, {}), **timing.get(name, {})}
        if "times" in memory.get(name, {}):  # a single cold run
            result["times"] = memory[name]["times"]
        if result.get("times"):
            result["ms"] = statistics.median(result["times"]) * 1e3
            result["runs"] = len(result["times"])
        row[name] = result
    return row


def _rounded(result: dict) -> dict:
    """One implementation's result as the file keeps it: times in s (6 decimals), ms and MiB."""
    kept = dict(result)
    if "times" in kept:
        kept["times"] = [round(t, 6) for t in kept["times"]]
    for key, digits in (("ms", 3), ("mib", 2)):
        if kept.get(key) is not None:
            kept[key] = round(kept[key], digits)
    return kept


def main(argv: Sequence[str]) -> int:
    """``python -m companion.bench attention [--lengths N ...] [--output PATH]``."""
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench attention",
        description="Forward+backward time and peak memory of multi-head self-attention.",
    )
    parser.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=list(LENGTHS),
        metavar="N",
        help=f"sequence lengths (default: {' '.join(map(str, LENGTHS))})",
    )
    add_output(parser)
    args = parser.parse_args(list(argv))
    if any(n < 1 for n in args.lengths):
        parser.error(f"--lengths must be positive; got {args.lengths}")

    device = get_device()
    threads = use_threads(device)
    probe = memory_probe(device)
    if device.type == "cuda":
        memory_method = "torch.cuda.max_memory_allocated over a step after a warm-up"
    elif probe.available:
        memory_method = (
            "resident-set growth over a step after a warm-up (VmHWM - VmRSS before), in a fresh "
            "process with MALLOC_MMAP_THRESHOLD_=65536"
        )
    else:
        memory_method = "n/a on this platform"

    table: dict[int, dict] = {}
    started, load_before = time.perf_counter(), load_average()
    for n in args.lengths:
        log(f"[attention] n={n} ({time.perf_counter() - started:.0f} s so far)")
        table[n] = _attention_length(n)
    elapsed = time.perf_counter() - started
    log(f"[attention] done in {elapsed:.0f} s")
    results: dict[str, Any] = {
        **run_record("attention", device, threads, load_before),
        "seconds": round(elapsed, 1),
        "settings": {
            "batch": BATCH,
            "hiddens": HIDDENS,
            "heads": HEADS,
            "dtype": "float32",
            "lengths": list(args.lengths),
            "memory": memory_method,
            "cpu_capability": torch.backends.cpu.get_cpu_capability() if threads else None,
        },
        "lengths": {
            str(n): {name: _rounded(result) for name, result in row.items()}
            for n, row in table.items()
        },
    }
    write_results(results, args.output, "attention")
    lines = [
        "Multi-head self-attention, forward + backward, one training step",
        *run_lines(results, f"torch {torch.__version__}"),
        "explicit = companion need_weights=True; fused = companion default (SDPA); "
        "torch = torch.nn.MultiheadAttention(batch_first=True, need_weights=False)",
        "",
        attention_report(results).markdown(),
    ]
    print("\n".join(lines))
    return 0
