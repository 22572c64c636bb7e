"""Training: the one loop of the book, and its use for sequence to sequence (sec-bahdanau,
sec-transformer).

:func:`fit` minimises any ``loss_fn(model, batch)`` with AdamW (weight decay by the rule below),
a clipped gradient norm and a one-cycle learning-rate schedule: a warm-up to ``lr`` and a decay,
both along a cosine. It returns the loss and metric history as plain data, which the caller
plots (``plot_history(history)``). :func:`train_seq2seq` is :func:`fit` with teacher forcing:
the decoder reads the gold target shifted right, and the loss is
:func:`~companion.layers.losses.sequence_loss`, cross-entropy on the non-padding positions
(optionally label-smoothed), whose padding index the caller passes.

**The loop knows no task**: a task brings its batches and its loss. The invented language's
next-token loss and its held-out cross-entropy are that task's own
(:func:`companion.data.tasks.language.next_token_loss` and
:func:`~companion.data.tasks.language.cross_entropy_per_token`, sec-language-models).

**Weight decay, one rule for every model:** decay every parameter of two or more dimensions,
except the tables of ``nn.Embedding`` and the gains of normalization layers; biases and other
vectors keep ``weight_decay = 0``. So an embedding stored as an ``nn.Embedding`` (tokens, GPT's
positions) is spared, and one stored as a plain ``nn.Parameter`` (ViT's ``cls_token`` and
positions, BERT's positions) is decayed like a weight matrix. That difference is a known wart:
sparing those parameters too was tried, and it broke five of the pretraining
chapter's fine-tuning claims on two of four runs (three seeds and another CPU's numerics), so
the book keeps the rule its chapters were measured with. :func:`weight_decay_groups` applies it.

Progress: in Jupyter or Colab a single status line updates live; a script prints one line
per evaluation to stderr. ``COMPANION_PROGRESS=off`` (set by ``make test`` and
``make outputs``) silences it, so committed notebook outputs never depend on timings.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

from companion._validate import (
    check_callable,
    check_device,
    check_integer,
    check_number,
    check_type,
    describe,
)
from companion.device import get_device
from companion.layers.losses import sequence_loss

PROGRESS_VARIABLE = "COMPANION_PROGRESS"

Batch = tuple[torch.Tensor, ...]  # e.g. (src, tgt_input, src_valid_len, label)
LossFn = Callable[[nn.Module, Batch], torch.Tensor]  # (model, batch on the device) -> loss


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


SPARED_LAYERS = (nn.Embedding, nn.LayerNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm)


def weight_decay_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW parameter groups by the weight-decay rule of the module docstring: parameters of
    two or more dimensions outside :data:`SPARED_LAYERS` with ``weight_decay`` (a number >= 0),
    all others 0."""
    check_type("model", model, nn.Module, "a torch.nn.Module")
    check_number("weight_decay", weight_decay, at_least=0)
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad:
                continue
            matrix = param.dim() >= 2 and not name.startswith("bias")
            (no_decay if isinstance(module, SPARED_LAYERS) or not matrix else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


HISTORY_COLUMNS = ("epoch", "loss", "lr", "seconds")  # fit's own columns, before the metrics


def _check_fit_arguments(
    model: object,
    batches: object,
    loss_fn: object,
    evaluate: object,
    stop_when: object,
    **numbers: object,
) -> tuple[int, int]:
    """What :func:`fit` takes, checked before anything trains; returns ``num_epochs`` and
    ``eval_every`` as ints (numpy's integers are accepted, torch's scheduler takes ints)."""
    check_type("model", model, nn.Module, "a torch.nn.Module (a model, not its class)")
    check_callable(
        "batches",
        batches,
        "a function that returns one epoch of batches, such as "
        "lambda: companion.batches(arrays, 64)",
    )
    check_callable("loss_fn", loss_fn, "a function loss_fn(model, batch) returning the loss")
    for name, function in (("evaluate", evaluate), ("stop_when", stop_when)):
        if function is not None:
            check_callable(name, function, "a function of the model's metrics, or None")
    if stop_when is not None and evaluate is None:
        raise ValueError("stop_when needs evaluate: it is asked about the metrics evaluate returns")
    check_number("lr", numbers["lr"], above=0)
    check_number("warmup", numbers["warmup"], at_least=0, below=1, what="a fraction")
    check_number("weight_decay", numbers["weight_decay"], at_least=0)
    check_number(
        "grad_clip",
        numbers["grad_clip"],
        above=0,
        finite=False,
        note="the largest gradient norm; math.inf for no clipping",
    )
    return check_integer("num_epochs", numbers["num_epochs"]), check_integer(
        "eval_every", numbers["eval_every"]
    )


def _check_batch(batch: object) -> None:
    """A batch of ``batches()`` must be a tuple (or list) of tensors with at least one row."""
    if not isinstance(batch, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in batch):
        lone = ": wrap a lone tensor as (X,)" if isinstance(batch, torch.Tensor) else ""
        raise TypeError(
            "batches() must yield tuples of tensors such as (inputs, labels); it yielded "
            f"{describe(batch)}{lone}"
        )
    if batch and batch[0].dim() and len(batch[0]) == 0:
        raise ValueError(f"batches() yielded an empty batch: {describe(batch[0])}")


def _check_loss(loss: object) -> None:
    """``loss_fn`` must return one number to minimise, a 0-d tensor that carries gradients."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise ValueError(
            "loss_fn must return the loss as a 0-d tensor (the mean over the batch); "
            f"got {describe(loss)}"
        )
    if not loss.requires_grad:
        raise ValueError(
            "loss_fn returned a loss that carries no gradient: was it computed under "
            "torch.no_grad(), from .item() or .detach() values, or by a frozen model?"
        )


def _check_metrics(metrics: object) -> None:
    """``evaluate`` must return a dict of numbers whose names are not the history's own."""
    if not isinstance(metrics, dict):
        raise TypeError(
            f"evaluate must return a dict of metrics such as {{'accuracy': 0.9}}; got "
            f"{describe(metrics)}"
        )
    for name, value in metrics.items():
        if name in HISTORY_COLUMNS:
            raise ValueError(
                f"evaluate returned a metric named {name!r}, a column fit's history has "
                f"already ({', '.join(HISTORY_COLUMNS)}): call it, e.g., 'val_{name}'"
            )
        one_number = isinstance(value, numbers.Real) or (
            isinstance(value, torch.Tensor) and value.dim() == 0
        )
        if not one_number:  # nan is a number: a diverged run's metric is kept, not refused
            raise TypeError(f"evaluate's metric {name!r} must be a number; got {describe(value)}")


def _materialize_lazy(model: nn.Module, loss_fn: LossFn, batch: Batch) -> None:
    """Run one forward pass without gradients if a lazy layer has not yet fixed its sizes: the
    optimizer needs real parameters (d2l does the same with a dummy batch)."""
    if any(isinstance(p, UninitializedParameter) for p in model.parameters()):
        with torch.no_grad():
            loss_fn(model, batch)


def fit(
    model: nn.Module,
    batches: Callable[[], Iterable[Batch]],
    loss_fn: LossFn,
    *,
    num_epochs: int,
    lr: float = 3e-3,
    warmup: float = 0.1,
    weight_decay: float = 0.01,
    grad_clip: float = 1.0,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    eval_every: int = 1,
    stop_when: Callable[[dict[str, float]], bool] | None = None,
    device: torch.device | None = None,
) -> dict[str, list[Any]]:
    """Train ``model`` by minimising ``loss_fn(model, batch)``, the one training loop of the book.

    ``batches()`` returns one epoch of batches (tuples of tensors, moved to ``device`` here), for
    example ``lambda: companion.batches(arrays, 64, generator=g)``. AdamW with
    :func:`weight_decay_groups`, the gradient norm clipped to ``grad_clip``, and a one-cycle
    schedule (``OneCycleLR``, cosine): the learning rate rises along a half cosine over the first
    ``warmup`` fraction of the steps to ``lr``, then falls along another to almost zero, while
    AdamW's beta_1 moves the other way, from 0.95 down to 0.85 at the peak and back (the
    scheduler's ``cycle_momentum``). Every ``eval_every`` epochs (and after the last),
    ``evaluate(model)`` returns held-out metrics; training stops early once
    ``stop_when(metrics)`` is true.

    Takes: a ``model`` (an ``nn.Module``); ``batches``, a function; ``loss_fn(model, batch)``
    returning a 0-d tensor; positive integers ``num_epochs`` and ``eval_every``; ``lr > 0``,
    ``warmup`` in [0, 1), ``weight_decay >= 0``, ``grad_clip > 0`` (``math.inf``: no clipping);
    ``evaluate(model)`` returning a dict of numbers, and ``stop_when`` only with ``evaluate``;
    ``device`` a ``torch.device``, its name, or ``None`` for :func:`get_device`'s.

    Returns the history as lists, keys in a fixed order: ``epoch``, ``loss`` (mean training loss
    of the epoch), ``lr`` (at the end of the epoch), ``seconds`` (since the start), then one list
    per metric in the order ``evaluate`` returns them (``nan`` at epochs not evaluated).
    """
    num_epochs, eval_every = _check_fit_arguments(
        model,
        batches,
        loss_fn,
        evaluate,
        stop_when,
        num_epochs=num_epochs,
        eval_every=eval_every,
        lr=lr,
        warmup=warmup,
        weight_decay=weight_decay,
        grad_clip=grad_clip,
    )
    device = check_device(device) or get_device()
    model.to(device)
    # The first epoch is drawn once and kept: calling batches() again just to count the steps
    # would use up a shuffle of its generator, and every later epoch would see other batches.
    first_epoch = list(batches())
    steps_per_epoch = len(first_epoch)
    if steps_per_epoch == 0:
        raise ValueError("batches() yielded no batch: is the training set empty?")

    def on_device(batch: Batch) -> Batch:
        _check_batch(batch)
        return tuple(t.to(device) for t in batch)

    _materialize_lazy(model, loss_fn, on_device(first_epoch[0]))
    optimizer = torch.optim.AdamW(weight_decay_groups(model, weight_decay), lr=lr)
    total_steps = num_epochs * steps_per_epoch
    pct_start = max(warmup, 1e-3)
    if pct_start * total_steps == 1:  # OneCycleLR would divide by (1 - 1): one step is none
        pct_start = 1e-3
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=total_steps, pct_start=pct_start, anneal_strategy="cos"
    )
    history: dict[str, list[Any]] = {"epoch": [], "loss": [], "lr": [], "seconds": []}
    progress, start = _Progress(), time.perf_counter()
    for epoch in range(1, num_epochs + 1):
        model.train()
        total = torch.zeros((), device=device)  # summed on the device: no sync per step
        for batch in first_epoch if epoch == 1 else batches():
            loss = loss_fn(model, on_device(batch))
            _check_loss(loss)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
            schedule.step()
            total += loss.detach()
        history["epoch"].append(epoch)
        history["loss"].append(total.item() / steps_per_epoch)
        history["lr"].append(schedule.get_last_lr()[0])
        metrics = {}
        if evaluate is not None and (epoch % eval_every == 0 or epoch == num_epochs):
            model.eval()
            with torch.no_grad():
                metrics = evaluate(model)
            _check_metrics(metrics)
        for name in metrics:  # a new metric gets its column, nan at earlier epochs
            history.setdefault(name, [math.nan] * (epoch - 1))
        for name in list(history)[4:]:  # the metric columns, in their order of first appearance
            history[name].append(metrics.get(name, math.nan))
        history["seconds"].append(time.perf_counter() - start)
        shown = "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        progress.update(
            f"epoch {epoch}/{num_epochs}  loss {history['loss'][-1]:.4f}  {shown}  "
            f"{history['seconds'][-1]:.1f} s"
        )
        if stop_when is not None and metrics and stop_when(metrics):
            break
    model.eval()
    return history


def train_seq2seq(
    model: nn.Module,
    batches: Callable[[], Iterable[Batch]],
    *,
    pad_index: int,
    label_smoothing: float = 0.0,
    **options: Any,
) -> dict[str, list[Any]]:
    """Train an encoder-decoder ``model(src, tgt_input, src_valid_len) -> logits`` with teacher
    forcing: :func:`fit` with :func:`sequence_loss` on ``(src, tgt_input, src_valid_len, label)``
    batches. ``pad_index`` is an integer >= 0, ``label_smoothing`` a fraction in [0, 1).
    ``options`` are :func:`fit`'s (``num_epochs``, ``lr``, ``evaluate`` ...)."""
    pad_index = check_integer("pad_index", pad_index, minimum=0)
    check_number("label_smoothing", label_smoothing, at_least=0, below=1, what="a fraction")

    def loss_fn(model: nn.Module, batch: Batch) -> torch.Tensor:
        if len(batch) != 4:
            raise ValueError(
                "train_seq2seq's batches must be (src, tgt_input, src_valid_len, label), as "
                f"build_arrays makes them; got a batch of {len(batch)} tensors"
            )
        src, tgt_input, src_valid_len, label = batch
        logits = model(src, tgt_input, src_valid_len)  # (batch, steps, vocab)
        return sequence_loss(logits, label, pad_index, label_smoothing)

    return fit(model, batches, loss_fn, **options)
