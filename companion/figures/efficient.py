"""Figures of growth and of efficient attention (sec-efficient-attention, sec-tokenization).

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and saves
the figure when given ``path=``.

:func:`plot_doublings` draws quantities against a size that doubles from point to point (a
sequence length, a vocabulary size) on a base-2 axis labelled with the sizes themselves, and can
add guide lines that grow like a power of the size, so a reader compares slopes at a glance.
:func:`show_weight_pair` draws two attention-weight matrices side by side on one colour scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from companion._validate import check_sequence
from companion.figures.plot import _as_numpy, _check_labels, _finish


def plot_doublings(
    sizes: Sequence[int],
    curves: Sequence[Sequence[float]],
    xlabel: str,
    ylabel: str,
    legend: Sequence[str],
    *,
    fmts: Sequence[str] = ("-o", "m--s", "g-.^", "r:v"),
    yscale: str = "linear",
    guides: Sequence[tuple[str, float, int]] = (),
    figsize: tuple[float, float] = (4.5, 3.0),
    path: str | Path | None = None,
) -> None:
    """``curves`` (one list of values per size each) against ``sizes`` on a base-2 axis whose
    ticks are the sizes. Each guide ``(label, power, curve)`` is a thin grey line (dotted, then
    dashed) through the last point of ``curves[curve]`` that grows like ``size ** power``: on a
    log scale a curve parallel to it grows at that power. The legend sits outside the plot, so
    it hides nothing.
    """
    check_sequence("sizes", sizes, "a list of sizes, the x values")
    check_sequence("curves", curves, "a list of curves, each a list of values")
    _check_labels("legend", legend, len(curves), "curves")
    if len(fmts) < len(curves):
        raise ValueError(f"fmts has {len(fmts)} formats for {len(curves)} curves")
    for k, curve in enumerate(curves):
        if len(curve) != len(sizes):
            raise ValueError(f"curves[{k}] has {len(curve)} values for {len(sizes)} sizes")
    fig, ax = plt.subplots(figsize=figsize)
    for curve, fmt, label in zip(curves, fmts, legend):
        ax.plot(sizes, list(curve), fmt, label=label)
    for (label, power, k), style in zip(guides, [":", "--", "-."] * len(guides)):
        if not 0 <= k < len(curves):
            raise ValueError(f"guide {label!r} follows curve {k}; there are {len(curves)}")
        end = curves[k][-1]
        ax.plot(
            sizes,
            [end * (size / sizes[-1]) ** power for size in sizes],
            style,
            color="grey",
            linewidth=1,
            label=label,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(sizes), [f"{size:,}" for size in sizes])
    ax.minorticks_off()
    ax.set_yscale(yscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    _finish(fig, path)


def show_weight_pair(
    weights,
    titles: Sequence[str],
    figsize: tuple[float, float] = (6.0, 3.0),
    *,
    path: str | Path | None = None,
) -> None:
    """Two ``(queries, keys)`` weight matrices, ``weights`` of shape ``(2, queries, keys)``, side
    by side on one colour scale from 0 to 1, so that equal colours are equal weights."""
    _check_labels("titles", titles, 2, "matrices")
    weights = torch.as_tensor(_as_numpy(weights))
    if weights.dim() != 3 or weights.shape[0] != 2:
        raise ValueError(f"weights must have shape (2, queries, keys); got {tuple(weights.shape)}")
    fig, axes = plt.subplots(1, 2, figsize=figsize, sharey=True)
    for ax, matrix, title in zip(axes, weights, titles):
        image = ax.imshow(matrix.numpy(), cmap="Reds", vmin=0.0, vmax=1.0)
        ax.set_title(title)
        ax.set_xlabel("keys")
    axes[0].set_ylabel("queries")
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    _finish(fig, path)
