"""Figures of the modern decoder chapter (sec-modern-decoder).

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and saves
the figure when given ``path=``.
"""

from __future__ import annotations

import numbers
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from companion._validate import check_integer, describe
from companion.figures.plot import _finish


def _check_gaps(gaps: object, by_length: bool = False) -> None:
    """``gaps``: a dict of variant (or scheme) -> a non-empty list of gaps, one per seed; with
    ``by_length``, of scheme -> length -> such a list."""
    wanted = (
        "gaps must map each scheme to lengths, each with a non-empty list of gaps (one per seed)"
        if by_length
        else "gaps must map each variant's name to a non-empty list of gaps (one per seed)"
    )
    if not isinstance(gaps, Mapping) or not gaps:
        raise ValueError(f"{wanted}; got {describe(gaps)}")
    for name, row in gaps.items():
        if by_length and (not isinstance(row, Mapping) or not row):
            raise ValueError(f"{wanted}; gaps[{name!r}] is {describe(row)}")
        for key, values in row.items() if by_length else [(None, row)]:
            where = f"gaps[{name!r}]" + ("" if key is None else f"[{key!r}]")
            if key is not None:
                check_integer(f"{where}'s length", key)
            if (
                not isinstance(values, Sequence)
                or isinstance(values, str)
                or not values
                or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
            ):
                raise ValueError(f"{wanted}; {where} is {describe(values)}")


def plot_ablation(
    gaps: dict[str, list[float]],
    figsize: tuple[float, float] = (5.5, 2.6),
    *,
    path: str | Path | None = None,
) -> None:
    """One row per variant, top to bottom in the order of ``gaps`` (name -> the gap to the
    entropy floor of each seed): each seed a dot, the mean a bar, and a line from the lowest to
    the highest seed, the spread."""
    _check_gaps(gaps)
    fig, ax = plt.subplots(figsize=figsize)
    for row, values in enumerate(gaps.values()):
        ax.plot([min(values), max(values)], [row, row], color="C0", lw=1)
        ax.plot(values, [row] * len(values), "o", color="C0", ms=4, alpha=0.7)
        ax.plot([statistics.fmean(values)] * 2, [row - 0.3, row + 0.3], color="C1", lw=2)
    ax.set_yticks(range(len(gaps)), labels=list(gaps))
    ax.invert_yaxis()  # the first variant on top
    ax.set_xlabel("gap to the entropy floor (nats per token)")
    ax.grid(axis="x", alpha=0.3)
    _finish(fig, path)


def plot_length(
    gaps: dict[str, dict[int, list[float]]],
    train_length: int,
    figsize: tuple[float, float] = (5.5, 3.4),
    *,
    path: str | Path | None = None,
) -> None:
    """The gap to the entropy floor against the evaluation length, one line per position
    scheme (``gaps``: scheme -> length -> the gap of each seed): the line joins the means, the
    dots are the seeds, and a dashed line marks the training length. The gap axis is
    logarithmic when every gap is positive, so that small gaps stay apart beside large ones.
    ``train_length`` is a positive integer."""
    check_integer("train_length", train_length)
    _check_gaps(gaps, by_length=True)
    fig, ax = plt.subplots(figsize=figsize)
    for i, (scheme, row) in enumerate(gaps.items()):
        lengths = sorted(row)
        shift = 1 + 0.03 * (i - (len(gaps) - 1) / 2)  # side by side, on the log axis
        xs = [n * shift for n in lengths]
        ax.plot(xs, [statistics.fmean(row[n]) for n in lengths], "-", color=f"C{i}", label=scheme)
        for x, n in zip(xs, lengths):
            ax.plot([x] * len(row[n]), row[n], "o", color=f"C{i}", ms=3.5, alpha=0.7)
    ax.axvline(train_length, color="gray", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    values = [g for row in gaps.values() for seeds in row.values() for g in seeds]
    if min(values) > 0:
        ax.set_yscale("log")
        ticks = [t for t in (0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5) if min(values) <= t <= max(values)]
        ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
        ax.yaxis.set_minor_formatter("")
    ticks = sorted({n for row in gaps.values() for n in row})
    ax.set_xticks(ticks, labels=[str(n) for n in ticks])
    ax.set_xlabel(f"evaluation length (tokens); trained at {train_length}")
    ax.set_ylabel("gap to the floor (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize="small")
    _finish(fig, path)


def plot_ablation_pairs(
    gaps: dict[str, list[float]],
    baseline: str = "GPT-2 block",
    figsize: tuple[float, float] = (7.5, 3.2),
    *,
    path: str | Path | None = None,
) -> None:
    """Two panels, one row per variant in the order of ``gaps`` (name -> the gap to the entropy
    floor of each seed, the seeds in the same order for every variant). Left: each seed a dot,
    the mean a bar. Right: each seed's gap minus the ``baseline``'s on the same seed (the
    variants of one seed share its sentences), a dot per seed, the mean a bar, and a line at
    zero: left of it, the variant is closer to the floor than the baseline."""
    _check_gaps(gaps)
    if baseline not in gaps:
        raise ValueError(f"baseline {baseline!r} is not one of the variants {list(gaps)}")
    seeds = len(gaps[baseline])
    if any(len(values) != seeds for values in gaps.values()):
        raise ValueError("every variant needs one gap per seed, as many as the baseline's")
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, sharey=True)
    for row, values in enumerate(gaps.values()):
        differences = [v - b for v, b in zip(values, gaps[baseline])]
        for ax, points in ((left, values), (right, differences)):
            ax.plot(points, [row] * len(points), "o", color="C0", ms=4, alpha=0.7)
            ax.plot([statistics.fmean(points)] * 2, [row - 0.3, row + 0.3], color="C1", lw=2)
    left.set_yticks(range(len(gaps)), labels=list(gaps))
    left.invert_yaxis()  # the first variant on top
    left.set_xlabel("gap to the floor (nats per token)")
    right.axvline(0, color="gray", lw=1)
    right.set_xlabel(f"minus the {baseline}'s, same seed")
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    _finish(fig, path)


def plot_learning_curves(
    curves: dict[str, list[list[float]]],
    steps: Sequence[int],
    figsize: tuple[float, float] = (5.5, 3.2),
    *,
    path: str | Path | None = None,
) -> None:
    """The gap to the entropy floor during training, one colour per variant (``curves``: name
    -> for each seed, its gap after each of ``steps``): a thin line per seed and a thick one
    for the mean, on a logarithmic gap axis, so that the late differences stay visible."""
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(
            f"curves must map each variant to its seeds' curves; got {describe(curves)}"
        )
    steps = list(steps)
    for name, runs in curves.items():
        if not runs or any(len(run) != len(steps) for run in runs):
            raise ValueError(
                f"curves[{name!r}]: each seed's curve needs {len(steps)} points, one per step "
                f"of steps={steps}; got {[len(run) for run in runs]}"
            )
        if min(min(run) for run in runs) <= 0:
            raise ValueError(f"curves[{name!r}]: every gap must be positive for the log axis")
    fig, ax = plt.subplots(figsize=figsize)
    for i, (name, runs) in enumerate(curves.items()):
        for run in runs:
            ax.plot(steps, run, color=f"C{i}", lw=0.8, alpha=0.4)
        means = [statistics.fmean(points) for points in zip(*runs)]
        ax.plot(steps, means, color=f"C{i}", lw=2, label=name)
    ax.set_yscale("log")
    values = [g for runs in curves.values() for run in runs for g in run]
    ticks = [t for t in (0.02, 0.05, 0.1, 0.2, 0.5, 1, 2) if min(values) <= t <= max(values)]
    ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter("")
    ax.set_xticks(steps)
    ax.set_xlabel("training step")
    ax.set_ylabel("gap to the floor (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize="small")
    _finish(fig, path)


def plot_gap_by_position(
    stretches: dict[str, list[list[float]]],
    train_length: int,
    figsize: tuple[float, float] = (5.5, 3.2),
    *,
    path: str | Path | None = None,
) -> None:
    """The gap to the entropy floor of the sentences that end in each stretch of
    ``train_length`` positions of a long row, one line per position scheme (``stretches``:
    scheme -> for each stretch, the gap of each seed): dots are the seeds, the line joins the
    means, the gap axis is logarithmic when every gap is positive. The first stretch lies
    within the training length."""
    check_integer("train_length", train_length)
    if not isinstance(stretches, Mapping) or not stretches:
        raise ValueError(
            f"stretches must map each scheme to its stretches; got {describe(stretches)}"
        )
    fig, ax = plt.subplots(figsize=figsize)
    count = len(next(iter(stretches.values())))
    for i, (scheme, row) in enumerate(stretches.items()):
        if len(row) != count or any(not seeds for seeds in row):
            raise ValueError(f"stretches[{scheme!r}] needs {count} non-empty lists of gaps")
        xs = [s + 0.04 * (i - (len(stretches) - 1) / 2) for s in range(count)]
        ax.plot(xs, [statistics.fmean(seeds) for seeds in row], "-", color=f"C{i}", label=scheme)
        for x, seeds in zip(xs, row):
            ax.plot([x] * len(seeds), seeds, "o", color=f"C{i}", ms=3.5, alpha=0.7)
    values = [g for row in stretches.values() for seeds in row for g in seeds]
    if min(values) > 0:
        ax.set_yscale("log")
        ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5) if min(values) <= t <= max(values)]
        ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
        ax.yaxis.set_minor_formatter("")
    labels = [f"{s * train_length}–{(s + 1) * train_length - 1}" for s in range(count)]
    ax.set_xticks(range(count), labels=labels)
    ax.set_xlabel(f"positions where a sentence ends (trained on rows of {train_length})")
    ax.set_ylabel("gap to the floor (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize="small", ncol=2)
    _finish(fig, path)
