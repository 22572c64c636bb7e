"""The figures of sec-transformer: attention maps with a row per layer, the training curves of
the comparison with the GRU model with their learning-rate schedule, its learning-rate
sweep with every recorded run, and the table of that comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import torch

from companion._validate import check_number, check_sequence, check_type
from companion.experiments import rnn_comparison
from companion.figures.plot import _as_numpy, _finish


def show_layer_attention(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    query_label: str,
    key_label: str,
    cell_size: float = 0.22,
    *,
    path: str | Path | None = None,
) -> None:
    """Attention weights ``(layers, heads, queries, keys)`` as a grid of heatmaps: a row per
    layer, labelled "layer 1", "layer 2" ..., and a column per head, tokens as tick labels (the
    weights are cut to the tokens given: padding is left out). ``query_label`` names the rows
    of each map (the y axis), ``key_label`` its columns."""
    check_number("cell_size", cell_size, above=0)
    weights = torch.as_tensor(_as_numpy(weights)).float()
    if weights.dim() != 4:
        raise ValueError(
            f"weights must have shape (layers, heads, queries, keys); got {tuple(weights.shape)}"
        )
    for name, tokens, steps in (
        ("query_tokens", query_tokens, weights.shape[2]),
        ("key_tokens", key_tokens, weights.shape[3]),
    ):
        check_sequence(name, tokens, "a list of tokens, one per query or key")
        if not 0 < len(tokens) <= steps:
            raise ValueError(f"{name} holds {len(tokens)} tokens for {steps} steps")
    weights = weights[..., : len(query_tokens), : len(key_tokens)]
    layers, heads = weights.shape[:2]
    figsize = (
        cell_size * len(key_tokens) * heads + 2.0,
        cell_size * len(query_tokens) * layers + 1.2,
    )
    fig, axes = plt.subplots(
        layers, heads, figsize=figsize, sharex=True, sharey=True, squeeze=False
    )
    for layer, row in enumerate(axes):
        for head, ax in enumerate(row):
            image = ax.imshow(weights[layer, head].numpy(), cmap="Reds", vmin=0, vmax=1)
            if layer == 0:
                ax.set_title(f"head {head + 1}")
            if layer == layers - 1:
                ax.set_xlabel(key_label)
                ax.set_xticks(range(len(key_tokens)), labels=list(key_tokens), rotation=90)
            if head == 0:
                ax.set_ylabel(f"layer {layer + 1}\n{query_label}")
                ax.set_yticks(range(len(query_tokens)), labels=list(query_tokens))
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    _finish(fig, path)


def _check_runs(runs: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    check_sequence(name, runs, "a list of runs, each a dict with a 'curve' or scores")
    if not runs:
        raise ValueError(f"{name} holds no run")
    return list(runs)


def plot_training_curves(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    figsize: tuple[float, float] = (7.0, 4.6),
    *,
    path: str | Path | None = None,
) -> None:
    """The training loss at every step of every run (top, log scale), and the learning rate
    each step used (bottom), one colour per model. ``runs`` maps a model's name to its runs,
    each a dict whose ``"curve"`` holds the lists ``"loss"`` and ``"lr"`` (as
    :func:`companion.experiments.rnn_comparison.train_and_score` records them)."""
    check_type("runs", runs, Mapping, "a dict: model name -> list of runs")
    fig, (loss_ax, lr_ax) = plt.subplots(
        2, 1, figsize=figsize, sharex=True, height_ratios=(2, 1), layout="constrained"
    )
    for i, (name, model_runs) in enumerate(runs.items()):
        for j, run in enumerate(_check_runs(model_runs, f"runs[{name!r}]")):
            curve = run["curve"]
            steps = range(1, len(curve["loss"]) + 1)
            label = f"{name} (lr {run['lr']:g})" if j == 0 else None
            loss_ax.plot(steps, curve["loss"], color=f"C{i}", alpha=0.6, lw=0.9, label=label)
            lr_ax.plot(steps, curve["lr"], color=f"C{i}", lw=1.2, label=label if j == 0 else None)
    loss_ax.set_yscale("log")
    loss_ax.set_ylabel("training loss (log)")
    loss_ax.grid(True, which="both", alpha=0.3)
    loss_ax.legend()
    lr_ax.set_ylabel("learning rate")
    lr_ax.set_xlabel("training step")
    lr_ax.set_ylim(bottom=0)
    lr_ax.grid(True, alpha=0.3)
    _finish(fig, path)


def plot_lr_sweep(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    metric: str = "exact_match",
    label: str = "test exact match",
    figsize: tuple[float, float] = (5.0, 3.2),
    *,
    path: str | Path | None = None,
) -> None:
    """Every run of a learning-rate sweep as a point, ``run[metric]`` against ``run["lr"]``
    (log scale), with a line through each model's mean at each rate. ``runs`` maps a model's
    name to its runs."""
    check_type("runs", runs, Mapping, "a dict: model name -> list of runs")
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    for i, (name, model_runs) in enumerate(runs.items()):
        model_runs = _check_runs(model_runs, f"runs[{name!r}]")
        rates = sorted({run["lr"] for run in model_runs})
        means = [
            sum(r[metric] for r in model_runs if r["lr"] == lr)
            / sum(1 for r in model_runs if r["lr"] == lr)
            for lr in rates
        ]
        ax.plot(rates, means, "-", color=f"C{i}", label=f"{name} (mean)")
        ax.plot(
            [r["lr"] for r in model_runs],
            [r[metric] for r in model_runs],
            "o",
            color=f"C{i}",
            alpha=0.6,
            label=f"{name} (each seed)",
        )
    ax.set_xscale("log")
    ax.set_xlabel("peak learning rate (log)")
    ax.set_ylabel(label)
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    _finish(fig, path)


def comparison_table(results: dict[str, Any]) -> str:
    """The comparison of sec-transformer as a text table, a row per model and peak learning
    rate (every rate of :data:`~companion.experiments.rnn_comparison.LEARNING_RATES`), then the
    Transformer at the chapter's rate with each regulariser of ``REGULARISED``. Each row holds
    the mean training loss, mean validation exact match and mean standard BLEU of its runs and
    the range of their test exact match; a rate in ``results["chosen_lr"]`` is marked "chosen".
    ``results`` is :func:`~companion.experiments.rnn_comparison.load_comparison_results`'s."""
    check_type("results", results, dict, "the comparison's results, a dict")
    chosen = results["chosen_lr"]
    settings: list[tuple[str, float, dict[str, float]]] = [
        (name, lr, {})
        for name in rnn_comparison.MODELS
        for lr in rnn_comparison.LEARNING_RATES[name]
    ]
    settings += [("Transformer", rnn_comparison.CHAPTER_LR, r) for r in rnn_comparison.REGULARISED]
    lines = [
        f"{'model':12s}{'lr':>6s}{'':22s}{'loss':>6s}{'validation':>12s}"
        f"{'test exact match':>18s}{'BLEU':>7s}"
    ]
    for name, lr, options in settings:
        runs = rnn_comparison.select_runs(results, name, lr, **options)
        if not runs:
            raise ValueError(f"results hold no run of {name} at lr {lr} with {options}")
        mean = {
            key: sum(r[key] for r in runs) / len(runs)
            for key in ("loss", "val_exact_match", "standard_bleu")
        }
        em = [r["exact_match"] for r in runs]
        note = ", ".join(f"{k} {v}" for k, v in options.items())
        note = note or ("chosen" if lr == chosen[name] else "")
        lines.append(
            f"{name:12s}{lr:6.3f}  {note:20s}{mean['loss']:6.2f}"
            f"{mean['val_exact_match']:12.3f}{min(em):10.3f} to {max(em):.3f}"
            f"{mean['standard_bleu']:7.1f}"
        )
    return "\n".join(lines)
