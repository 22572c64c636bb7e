"""Training sequence-to-sequence models with teacher forcing (chapters 3 and 7).

:func:`train_seq2seq` is the one training loop of the book. Each step feeds the decoder the
gold target shifted right (teacher forcing), computes cross-entropy on the non-padding
positions (optionally label-smoothed), clips the gradient norm and follows a one-cycle
learning-rate schedule: a linear warm-up to ``lr``, then a cosine decay. It returns the
loss and metric history as plain data and can plot it.

Progress: in Jupyter or Colab a single status line updates live; a script prints one line
per evaluation to stderr. ``COMPANION_PROGRESS=off`` (set by ``make test`` and
``make outputs``) silences it, so committed notebook outputs never depend on timings.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from companion.device import get_device

PROGRESS_VARIABLE = "COMPANION_PROGRESS"

Batch = tuple[torch.Tensor, ...]  # (src, tgt_input, src_valid_len, label)


def sequence_loss(
    logits: torch.Tensor, labels: torch.Tensor, pad_index: int, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not padding.

    ``logits`` is ``(batch, steps, vocab)`` and ``labels`` is ``(batch, steps)``.
    """
    if logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits (batch, steps, vocab) and labels (batch, steps) disagree: got "
            f"{tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),  # (batch * steps, vocab)
        labels.reshape(-1),  # (batch * steps,)
        ignore_index=pad_index,
        label_smoothing=label_smoothing,
    )


class _Progress:
    """A status line: live in a notebook, a line per update in a script, or nothing at all."""

    def __init__(self) -> None:
        setting = os.environ.get(PROGRESS_VARIABLE, "auto").lower()
        self.enabled = setting not in ("off", "0", "false", "no")
        self.handle = None
        if self.enabled and "ipykernel" in sys.modules:
            from IPython.display import display

            self.handle = display({"text/plain": "training..."}, raw=True, display_id=True)

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        if self.handle is not None:
            self.handle.update({"text/plain": text}, raw=True)
        else:
            print(text, file=sys.stderr)


def train_seq2seq(
    model: nn.Module,
    batches: Callable[[], Iterable[Batch]],
    *,
    pad_index: int,
    num_epochs: int,
    lr: float = 3e-3,
    warmup: float = 0.1,
    weight_decay: float = 0.01,
    grad_clip: float = 1.0,
    label_smoothing: float = 0.0,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    eval_every: int = 1,
    stop_when: Callable[[dict[str, float]], bool] | None = None,
    device: torch.device | None = None,
    plot: bool = False,
) -> dict[str, list[Any]]:
    """Train an encoder-decoder ``model(src, tgt_input, src_valid_len) -> logits``.

    ``batches()`` returns one epoch of ``(src, tgt_input, src_valid_len, label)`` batches, for
    example ``lambda: companion.batches(arrays, 64, generator=g)``. Every ``eval_every``
    epochs, ``evaluate(model)`` returns held-out metrics (such as exact match or BLEU), and
    training stops early once ``stop_when(metrics)`` is true.

    Returns the history as lists: ``epoch``, ``loss`` (mean training loss of the epoch),
    ``lr`` (at the end of the epoch), ``seconds`` (since the start), and one list per metric
    (recorded at evaluated epochs, ``nan`` elsewhere).
    """
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be positive; got {num_epochs}")
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup must be a fraction in [0, 1); got {warmup}")
    device = device or get_device()
    model.to(device)
    steps_per_epoch = sum(1 for _ in batches())
    if steps_per_epoch == 0:
        raise ValueError("batches() yielded no batch: is the training set empty?")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=lr,
        total_steps=num_epochs * steps_per_epoch,
        pct_start=max(warmup, 1e-3),
        anneal_strategy="cos",
    )
    history: dict[str, list[Any]] = {"epoch": [], "loss": [], "lr": [], "seconds": []}
    progress, start = _Progress(), time.perf_counter()
    for epoch in range(1, num_epochs + 1):
        model.train()
        total, count = 0.0, 0
        for batch in batches():
            src, tgt_input, src_valid_len, label = (t.to(device) for t in batch)
            logits = model(src, tgt_input, src_valid_len)  # teacher forcing: (batch, steps, vocab)
            loss = sequence_loss(logits, label, pad_index, label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
            schedule.step()
            total, count = total + loss.item(), count + 1
        history["epoch"].append(epoch)
        history["loss"].append(total / count)
        history["lr"].append(schedule.get_last_lr()[0])
        metrics = {}
        if evaluate is not None and (epoch % eval_every == 0 or epoch == num_epochs):
            model.eval()
            with torch.no_grad():
                metrics = evaluate(model)
        for name in set(metrics) | (set(history) - {"epoch", "loss", "lr", "seconds"}):
            column = history.setdefault(name, [math.nan] * (epoch - 1))
            column.append(metrics.get(name, math.nan))
        history["seconds"].append(time.perf_counter() - start)
        shown = "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        progress.update(
            f"epoch {epoch}/{num_epochs}  loss {total / count:.4f}  {shown}  "
            f"{history['seconds'][-1]:.1f} s"
        )
        if stop_when is not None and metrics and stop_when(metrics):
            break
    model.eval()
    if plot:
        from companion.plot import plot_history

        plot_history(history)
    return history
