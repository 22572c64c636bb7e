"""What a layer costs: counted FLOPs and measured seconds (chapter 4, self-attention).

A claim about speed is made twice in the book: once as a count that does not depend on the
machine, once as a measurement on the reader's machine. The formulas below give the counts for
the three ways of mixing a sequence of ``n`` vectors of width ``d`` that chapter 4 compares;
:func:`count_flops` checks them against what PyTorch really runs, and :func:`time_call`
measures.

FLOPs count a multiply and an add as two operations, as ``torch.utils.flop_counter`` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode


def conv1d_flops(n: int, d: int, k: int, batch: int = 1) -> int:
    """A ``Conv1d(d, d, k)`` over ``n`` steps (padded to ``n`` outputs): each output step
    takes ``k`` input vectors through a ``d x d`` matrix each, so ``2 k n d^2``."""
    return 2 * k * n * d * d * batch


def rnn_flops(n: int, d: int, batch: int = 1) -> int:
    """A plain ``RNN(d, d)`` over ``n`` steps: each step multiplies the input and the previous
    state by a ``d x d`` matrix, so ``2 * 2 n d^2``."""
    return 4 * n * d * d * batch


def self_attention_flops(n: int, d: int, batch: int = 1) -> int:
    """Scaled dot-product attention of ``n`` queries over ``n`` keys and values of width ``d``:
    ``Q K^T`` and ``weights @ V`` are ``n x n x d`` products each, so ``2 * 2 n^2 d``. The
    projections that make ``Q``, ``K`` and ``V`` are not included."""
    return 4 * n * n * d * batch


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix products and convolutions that ``fn()`` runs, as PyTorch counts them.

    Fused attention runs on its math path here: the counter cannot see inside the CPU's fused
    kernel, which multi-head inputs would otherwise take. Count on the CPU or on the ``meta``
    device (shapes without data, so nothing is computed): cuDNN's fused RNN kernel is
    invisible to the counter as well.
    """
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
    GPU before and after each call, since CUDA kernels run asynchronously.
    """
    synchronize = torch.cuda.synchronize if torch.cuda.is_available() else lambda: None
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        best = float("inf")
        for _ in range(repeats):
            synchronize()
            start = time.perf_counter()
            fn()
            synchronize()
            best = min(best, time.perf_counter() - start)
    return best
