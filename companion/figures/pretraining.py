"""Figures of the pretraining chapter (sec-pretraining): the learning curve of fine-tuning, its
table of runs, the table of masked-word guesses by word class and T5's comparison of
objectives; and of the scaling section of sec-language-models: the
published scaling laws and the measured gap to the floor. The published numbers come from
:mod:`companion.experiments.published`.

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and saves
the figure when given ``path=``.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from companion._validate import check_integer, check_number, check_sequence, describe
from companion.experiments.published import (
    CHINCHILLA_OPTIMAL,
    KAPLAN_D,
    KAPLAN_N,
    KAPLAN_RANGES,
    T5_BASELINE_GLUE_SD,
    T5_CORRUPTION_RATE_GLUE,
    T5_NO_PRETRAINING_GLUE,
    T5_OBJECTIVES_GLUE,
    kaplan_loss,
)
from companion.figures.plot import _finish

COLORS = ("C0", "C3", "C2", "C1")


def plot_learning_curves(
    sizes: Sequence[int],
    accuracies: Mapping[str, Sequence[Sequence[float]]],
    chance: float | None = 0.5,
    figsize: tuple[float, float] = (4.5, 3.0),
    *,
    majority: float | None = None,
    path: str | Path | None = None,
) -> None:
    """Test accuracy against the number of labelled examples (log scale), one curve per
    entry of ``accuracies``: ``accuracies[name][i]`` holds the runs (seeds) at ``sizes[i]``,
    at least one. The line joins the means; each run is a dot, spread a little sideways so
    that equal runs stay visible. ``sizes`` are positive integers, at most four curves are
    drawn; ``chance`` (a coin) and ``majority`` (always answering the commoner class) are
    ``None`` or accuracies in [0, 1], drawn as dotted and dashed lines."""
    _check_learning_curves(sizes, accuracies, chance)
    if majority is not None:
        check_number("majority", majority, at_least=0, at_most=1, what="an accuracy")
    fig, ax = plt.subplots(figsize=figsize)
    for (name, runs), color in zip(accuracies.items(), COLORS):
        means = [float(np.mean(r)) for r in runs]
        ax.plot(sizes, means, "-", color=color, label=f"{name} (mean)")
        for size, r in zip(sizes, runs):
            spread = np.linspace(-0.04, 0.04, len(r)) if len(r) > 1 else np.zeros(1)
            ax.plot(size * (1 + spread), r, "o", color=color, alpha=0.6, markersize=4)
    if chance is not None:
        ax.axhline(chance, color="gray", linestyle=":", label="a coin")
    if majority is not None:
        ax.axhline(majority, color="gray", linestyle="--", label="always the commoner class")
    ax.set_xscale("log")
    ax.set_xticks(list(sizes), [str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("labelled examples")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.4, 1.0)
    ax.grid(True)
    ax.legend(fontsize=7, loc="upper left")
    _finish(fig, path)


_RUNS = {1: "one run", 2: "two runs", 3: "three runs", 4: "four runs", 5: "five runs"}


def learning_curve_table(
    sizes: Sequence[int],
    accuracies: Mapping[str, Sequence[Sequence[float]]],
    train_accuracies: Mapping[tuple[str, int, int], float],
    seeds: Sequence[int],
) -> str:
    """The learning curve as a table, one row per number of labels and curve: the test
    accuracy of every run and the mean training accuracy over the runs. ``accuracies`` is as
    for :func:`plot_learning_curves`, one run per seed; ``train_accuracies[name, size, seed]``
    holds each run's accuracy on its own labelled examples. Print the string it returns."""
    _check_learning_curves(sizes, accuracies, None)
    if not seeds:
        raise ValueError("seeds must name at least one run")
    runs_name = _RUNS.get(len(seeds), f"{len(seeds)} runs")
    rows = [
        f"{'labelled':>8}  {'model':13}{'test accuracy, ' + runs_name:>27}{'training accuracy':>19}"
    ]
    for i, size in enumerate(sizes):
        for name, runs in accuracies.items():
            tests = "  ".join(f"{a:.4f}" for a in runs[i])
            fits = sum(train_accuracies[name, size, seed] for seed in seeds) / len(seeds)
            rows.append(f"{size:8d}  {name:13}{tests:>27}{fits:19.4f}")
    return "\n".join(rows)


def word_class_table(
    counts: Mapping[str, Sequence[int]], agreeing: Collection[str] = ("article", "noun")
) -> str:
    """Guesses for hidden words by word class, the commonest class first: how many words were
    hidden, the share guessed exactly and, for the classes in ``agreeing``, the share whose
    guess has the right gender and number; a last row ``all`` sums the classes.
    ``counts[name]`` is ``(hidden, exact, agreeing)``, three counts with ``hidden`` positive.
    Print the string it returns."""
    if not counts or any(len(c) != 3 or c[0] <= 0 for c in counts.values()):
        raise ValueError(
            "counts must map each word class to (hidden, exact, agreeing) with hidden > 0; "
            f"got {describe(counts)}"
        )
    rows = [f"{'word class':13}{'hidden':>7}{'exact':>8}{'gender and number':>19}"]
    for name, (n, exact, agree) in sorted(counts.items(), key=lambda item: -item[1][0]):
        share = f"{agree / n:.4f}" if name in agreeing else ""
        rows.append(f"{name:13}{n:7d}{exact / n:8.4f}{share:>19}")
    hidden = sum(c[0] for c in counts.values())
    rows.append(f"all{hidden:17d}{sum(c[1] for c in counts.values()) / hidden:8.4f}")
    return "\n".join(rows)


def _check_learning_curves(sizes: Sequence[int], accuracies: object, chance: object) -> None:
    check_sequence("sizes", sizes, "a list of numbers of labelled examples")
    for i, size in enumerate(sizes):
        check_integer(f"sizes[{i}]", size)
    if not isinstance(accuracies, Mapping) or not accuracies:
        raise TypeError(
            "accuracies must be a non-empty dict of curve name -> runs per size; got "
            f"{describe(accuracies)}"
        )
    if len(accuracies) > len(COLORS):
        raise ValueError(
            f"accuracies has {len(accuracies)} curves; the figure has colours for {len(COLORS)}"
        )
    for name, runs in accuracies.items():
        if len(runs) != len(sizes):
            raise ValueError(f"accuracies[{name!r}] has {len(runs)} entries for {len(sizes)} sizes")
        for i, r in enumerate(runs):
            if not r or not all(isinstance(v, numbers.Real) for v in r):
                raise ValueError(
                    f"accuracies[{name!r}][{i}] must be a non-empty list of accuracies, one per "
                    f"run; got {describe(r)}"
                )
    if chance is not None:
        check_number("chance", chance, at_least=0, at_most=1, what="an accuracy")


def plot_t5_objectives(
    figsize: tuple[float, float] = (8.0, 3.0), *, path: str | Path | None = None
) -> None:
    """Raffel et al. (2020): GLUE average after pre-training with each objective (Tables 1, 4
    and 5), as bars from zero, and against the corruption rate (Table 6), as dots. Every score
    carries an error bar of the baseline's standard deviation over ten runs (Table 1, 0.235),
    the scale on which two objectives can be told apart."""
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, width_ratios=(3, 2))
    names = ["no pre-training", *T5_OBJECTIVES_GLUE]
    scores = [T5_NO_PRETRAINING_GLUE, *T5_OBJECTIVES_GLUE.values()]
    left.barh(
        names,
        scores,
        xerr=T5_BASELINE_GLUE_SD,
        color=["gray"] + ["C0"] * len(T5_OBJECTIVES_GLUE),
        error_kw={"elinewidth": 1, "capsize": 2},
    )
    for y, score in enumerate(scores):
        left.text(score + 1.0, y, f"{score:.2f}", va="center", fontsize=8)
    left.set_xlim(0, 100)
    left.invert_yaxis()
    left.set_xlabel("GLUE average")
    left.set_title("objective (Tables 1, 4, 5)", fontsize=9)
    rates = [100 * r for r in T5_CORRUPTION_RATE_GLUE]
    right.errorbar(
        rates,
        list(T5_CORRUPTION_RATE_GLUE.values()),
        yerr=T5_BASELINE_GLUE_SD,
        fmt="o",
        capsize=3,
    )
    right.set_xlabel("tokens corrupted (%)")
    right.set_ylabel("GLUE average")
    right.set_title("corruption rate (Table 6), ± 1 SD", fontsize=9)
    right.grid(True)
    fig.tight_layout()
    _finish(fig, path)


def plot_scaling_laws(
    ours: tuple[float, float] | None = None,
    figsize: tuple[float, float] = (9.0, 2.9),
    *,
    ours_label: str = "this book's model",
    path: str | Path | None = None,
) -> None:
    """Three panels, all on log-log axes, where a power law is a straight line. Left and middle:
    Kaplan et al.'s fitted laws L(N) and L(D), each over the range it was fitted on. Right:
    Hoffmann et al.'s compute-optimal tokens per model size (Table 3), with the line ``tokens =
    20 * parameters``; ``ours = (parameters, tokens)``, two positive numbers, marks another
    model, labelled ``ours_label``."""
    if ours is not None:
        _check_ours(ours)
    fig, (by_n, by_d, right) = plt.subplots(1, 3, figsize=figsize)
    for ax, law, key, label, color in (
        (by_n, KAPLAN_N, "N", "non-embedding parameters N", "C0"),
        (by_d, KAPLAN_D, "D", "training tokens D", "C3"),
    ):
        low, high = KAPLAN_RANGES[key]
        x = np.logspace(np.log10(low), np.log10(high), 50)
        ax.plot(x, [kaplan_loss(v, law) for v in x], color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_title(f"L({key}), Kaplan et al. (2020)", fontsize=9)
        ax.set_yticks([2, 3, 4, 5, 6, 7], ["2", "3", "4", "5", "6", "7"])
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
    by_n.set_ylabel("test loss (nats per token)")
    params = [p for p, _, _ in CHINCHILLA_OPTIMAL]
    tokens = [t for _, _, t in CHINCHILLA_OPTIMAL]
    right.plot(params, tokens, "o", color="C0", label="compute-optimal (Table 3)")
    grid = np.logspace(3, 13, 20)
    right.plot(grid, 20 * grid, ":", color="gray", label="20 tokens per parameter")
    if ours is not None:
        right.plot(*ours, "*", color="C3", markersize=10, label=ours_label)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("parameters")
    right.set_ylabel("training tokens")
    right.set_title("Hoffmann et al. (2022), Table 3", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    _finish(fig, path)


def plot_scaling_measurement(
    results: Mapping,
    figsize: tuple[float, float] = (4.5, 3.0),
    *,
    path: str | Path | None = None,
) -> None:
    """The gap to the entropy floor against the non-embedding parameters N, on log scales, one
    line per budget of training sentences: the mean over seeds, with a band from the lowest to
    the highest seed and a dot for every run (``python -m companion.bench scaling``'s results,
    sec-language-models): a dict
    with ``settings`` (``widths``, ``steps``, at most two budgets, ``batch_size``),
    ``parameters`` and ``gaps``."""
    _check_scaling_results(results)
    fig, axes = plt.subplots(figsize=figsize)
    widths = results["settings"]["widths"]
    params = [results["parameters"][str(w)] for w in widths]
    batch_size = results["settings"]["batch_size"]
    for steps, color in zip(results["settings"]["steps"], ("C0", "C3")):
        gaps = [results["gaps"][str(steps)][str(w)] for w in widths]
        axes.plot(
            params,
            [float(np.mean(g)) for g in gaps],
            "o-",
            color=color,
            label=f"{steps * batch_size:,} training sentences",
        )
        axes.fill_between(
            params, [min(g) for g in gaps], [max(g) for g in gaps], color=color, alpha=0.2
        )
        for n, runs in zip(params, gaps):  # every run, as a small dot
            axes.plot([n] * len(runs), runs, ".", color=color, alpha=0.6, markersize=4)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("non-embedding parameters N")
    axes.set_ylabel("gap to the floor (nats/token)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    fig.tight_layout()
    _finish(fig, path)


def _check_scaling_results(results: object) -> None:
    """:func:`plot_scaling_measurement`'s ``results``, as ``python -m companion.bench scaling``
    writes them."""
    settings = results.get("settings") if isinstance(results, Mapping) else None
    if (
        not isinstance(results, Mapping)
        or not {"settings", "parameters", "gaps"} <= set(results)
        or not isinstance(settings, Mapping)
        or not {"widths", "steps", "batch_size"} <= set(settings)
    ):
        raise ValueError(
            "results must be what python -m companion.bench scaling writes: settings (widths, "
            f"steps, batch_size), parameters and gaps; got {describe(results)}"
        )
    if len(settings["steps"]) > 2:
        raise ValueError(
            f"results hold {len(settings['steps'])} budgets of steps; the figure has colours for 2"
        )


def _check_ours(ours: tuple[float, float]) -> None:
    check_sequence("ours", ours, "a pair (parameters, tokens)")
    if len(ours) != 2:
        raise ValueError(f"ours must be a pair (parameters, tokens); got {ours!r}")
    for name, value in zip(("ours[0], the parameters", "ours[1], the tokens"), ours):
        check_number(name, value, above=0)
