"""What a layer costs: counted FLOPs, measured seconds and peak memory (sec-self-attention,
sec-efficient-attention).

A claim about speed is made twice in the book: once as a count that does not depend on the
machine, once as a measurement on the reader's machine. The formulas below give the counts for
the three ways of mixing a sequence of ``n`` vectors of width ``d`` that sec-self-attention
compares; :func:`count_flops` checks them against what PyTorch really runs, and
:func:`time_call` measures.

FLOPs count a multiply and an add as two operations, as ``torch.utils.flop_counter`` does.

:func:`peak_memory` measures how much memory one forward pass of an attention layer needs
(sec-efficient-attention), the way ``python -m companion.bench attention`` does: in a fresh
process, from the growth of its resident set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from companion._validate import check_callable, check_integer, check_sequence
from companion.device import get_device
from companion.layers.attention import DotProductAttention
from companion.layers.efficient import LinearAttention
from companion.measure import memory_probe, run_in_fresh_process, synchronize, use_threads


def _sizes(**sizes: int) -> list[int]:
    """Each size a positive integer (of any integer type), returned as ``int``s in order."""
    return [check_integer(name, size) for name, size in sizes.items()]


def conv1d_flops(n: int, d: int, k: int, batch: int = 1) -> int:
    """A ``Conv1d(d, d, k)`` over ``n`` steps (padded to ``n`` outputs): each output step
    takes ``k`` input vectors through a ``d x d`` matrix each, so ``2 k n d^2``. Every size is
    a positive integer, as in the other formulas."""
    n, d, k, batch = _sizes(n=n, d=d, k=k, batch=batch)
    return 2 * k * n * d * d * batch


def rnn_flops(n: int, d: int, batch: int = 1) -> int:
    """A plain ``RNN(d, d)`` over ``n`` steps: each step multiplies the input and the previous
    state by a ``d x d`` matrix, so ``2 * 2 n d^2``."""
    n, d, batch = _sizes(n=n, d=d, batch=batch)
    return 4 * n * d * d * batch


def self_attention_flops(n: int, d: int, batch: int = 1) -> int:
    """Scaled dot-product attention of ``n`` queries over ``n`` keys and values of width ``d``:
    ``Q K^T`` and ``weights @ V`` are ``n x n x d`` products each, so ``2 * 2 n^2 d``. The
    projections that make ``Q``, ``K`` and ``V`` are not included."""
    n, d, batch = _sizes(n=n, d=d, batch=batch)
    return 4 * n * n * d * batch


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix products and convolutions that ``fn()`` runs, as PyTorch counts them.

    Fused attention runs on its math path here: the counter cannot see inside the CPU's fused
    kernel, which multi-head inputs would otherwise take. Count on the CPU or on the ``meta``
    device (shapes without data, so nothing is computed): cuDNN's fused RNN kernel is
    invisible to the counter as well.
    """
    check_callable("fn", fn, "a function of no arguments, such as lambda: layer(X)")
    with (
        torch.no_grad(),
        sdpa_kernel(SDPBackend.MATH),
        FlopCounterMode(display=False) as counter,
    ):
        fn()
    return counter.get_total_flops()


def time_call(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """The fastest of ``repeats`` timed calls of ``fn()``, in seconds, after ``warmup`` calls.

    The minimum, not the mean: on a shared machine other jobs only ever add time. Waits for the
    GPU before and after each call, since CUDA kernels run asynchronously. ``repeats`` is a
    positive integer, ``warmup`` an integer >= 0.
    """
    check_callable("fn", fn, "a function of no arguments, such as lambda: layer(X)")
    repeats = check_integer("repeats", repeats)
    warmup = check_integer("warmup", warmup, minimum=0)
    device = get_device()
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        best = float("inf")
        for _ in range(repeats):
            synchronize(device)
            start = time.perf_counter()
            fn()
            synchronize(device)
            best = min(best, time.perf_counter() - start)
    return best


# Peak memory of one forward pass, measured as companion.bench measures it
# (sec-efficient-attention).

IMPLEMENTATIONS = ("explicit", "fused", "linear")
MIB = 2**20


def attention_layer(implementation: str) -> nn.Module:
    """The layer behind each name of :data:`IMPLEMENTATIONS`: ``"explicit"`` is
    ``DotProductAttention(need_weights=True)``, ``"fused"`` its default (fused) path and
    ``"linear"`` :class:`LinearAttention`."""
    if implementation == "explicit":
        return DotProductAttention(0.0, need_weights=True)
    if implementation == "fused":
        return DotProductAttention(0.0)
    if implementation == "linear":
        return LinearAttention()
    raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}; got {implementation!r}")


def _peak_memory_worker(
    implementations: Sequence[str], lengths: Sequence[int], batch: int, heads: int, head_size: int
) -> dict[str, dict[str, float | None]]:
    """Runs in the fresh process that :func:`peak_memory` starts."""
    device = get_device()
    use_threads(device)
    probe = memory_probe(device)
    results: dict[str, dict[str, float | None]] = {name: {} for name in implementations}
    with torch.no_grad():
        for n in lengths:
            generator = torch.Generator().manual_seed(n)
            Q, K, V = torch.randn(3, batch, heads, n, head_size, generator=generator).unbind(0)
            Q, K, V = Q.to(device), K.to(device), V.to(device)  # (batch, heads, n, head_size)
            for name in implementations:
                layer = attention_layer(name).to(device)
                layer(Q, K, V)  # warm-up: one-time buffers and thread pools
                synchronize(device)
                probe.start()
                layer(Q, K, V)
                synchronize(device)
                results[name][str(n)] = probe.peak() / MIB if probe.available else None
                del layer  # frees what it keeps, such as attention_weights
    return results


def peak_memory(
    implementations: Sequence[str] = IMPLEMENTATIONS,
    lengths: Sequence[int] = (512, 1024, 2048),
    *,
    batch: int = 1,
    heads: int = 8,
    head_size: int = 64,
) -> dict[str, dict[int, float | None]]:
    """Peak memory, in MiB, of one forward pass (no gradients) of each attention layer on
    self-attention inputs ``(batch, heads, n, head_size)``, for each ``n`` in ``lengths``.

    Measured as ``python -m companion.bench attention`` does (see its docstring): in a fresh
    Python process, where each layer runs once as a warm-up and then once more between
    ``probe.start()`` and ``probe.peak()``. On the CPU that is the growth of the resident set
    over the call (``VmHWM`` after it minus ``VmRSS`` before), with glibc told to hand every
    freed block of 64 KiB or more straight back, so that nothing from an earlier call hides
    the peak; on CUDA it is ``max_memory_allocated``. The inputs are allocated before and are
    not counted. Where it cannot be measured (macOS, MPS) the value is ``None``.
    ``implementations`` and ``lengths`` are non-empty lists; each length, ``batch``, ``heads``
    and ``head_size`` a positive integer.
    """
    check_sequence("implementations", implementations, f"a list of names from {IMPLEMENTATIONS}")
    check_sequence("lengths", lengths, "a list of sequence lengths, such as [512, 1024]")
    if not implementations or not lengths:
        raise ValueError(
            f"implementations and lengths must name at least one each; got {implementations!r} "
            f"and {lengths!r}"
        )
    for name in implementations:
        attention_layer(name)  # a clear ValueError for an unknown name, here and not in a child
    ns = [check_integer(f"lengths[{i}]", n) for i, n in enumerate(lengths)]
    batch, heads, head_size = _sizes(batch=batch, heads=heads, head_size=head_size)
    arguments = (list(implementations), ns, batch, heads, head_size)
    measured = run_in_fresh_process(
        "companion.experiments.complexity", "_peak_memory_worker", *arguments
    )
    return {name: {int(n): mib for n, mib in row.items()} for name, row in measured.items()}
