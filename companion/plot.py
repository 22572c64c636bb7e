"""Figures for the book: curves and attention heatmaps, in notebooks and saved to files.

The functions draw with matplotlib and return ``None``, as d2l's do, so a call at the end of a
notebook cell shows the figure once. Pass ``path=`` to also save it (PNG, PDF or SVG by suffix).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def _as_numpy(data):
    if isinstance(data, torch.Tensor):
        return data.detach().cpu().numpy()
    return data


def _finish(fig: Figure, path: str | Path | None) -> None:
    if path is not None:
        fig.savefig(path, bbox_inches="tight")


def plot(
    X,
    Y=None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    legend: Sequence[str] | None = None,
    xlim=None,
    ylim=None,
    xscale: str = "linear",
    yscale: str = "linear",
    fmts: Sequence[str] = ("-", "m--", "g-.", "r:"),
    figsize: tuple[float, float] = (3.5, 2.5),
    axes: Axes | None = None,
    *,
    path: str | Path | None = None,
) -> None:
    """Plot one or several curves, with d2l's signature.

    ``X`` and ``Y`` are each a tensor, an array, a list of numbers or a list of those. With
    ``Y`` omitted, ``X`` is plotted against its index.
    """

    def has_one_axis(data) -> bool:
        return (
            hasattr(data, "ndim")
            and data.ndim == 1
            or (isinstance(data, list) and not hasattr(data[0], "__len__"))
        )

    if has_one_axis(X):
        X = [X]
    if Y is None:
        X, Y = [[]] * len(X), X
    elif has_one_axis(Y):
        Y = [Y]
    if len(X) != len(Y):
        X = X * len(Y)
    if axes is None:
        fig, axes = plt.subplots(figsize=figsize)
    else:
        fig = axes.figure
    for x, y, fmt in zip(X, Y, fmts):
        x, y = _as_numpy(x), _as_numpy(y)
        if len(x):
            axes.plot(x, y, fmt)
        else:
            axes.plot(y, fmt)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    axes.set_xlim(xlim)
    axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid(True)
    _finish(fig, path)


def show_heatmaps(
    matrices,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
    *,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    path: str | Path | None = None,
) -> None:
    """Show a grid of heatmaps, with d2l's signature.

    ``matrices`` has shape ``(rows, cols, queries, keys)``; a single ``(queries, keys)`` matrix
    is shown on its own. ``titles`` names the columns. Tick labels, when given, label the keys
    (x) and the queries (y), for example with tokens.
    """
    matrices = torch.as_tensor(_as_numpy(matrices))
    if matrices.dim() == 2:
        matrices = matrices[None, None]
    if matrices.dim() != 4:
        raise ValueError(
            "matrices must have shape (rows, cols, queries, keys) or (queries, keys); "
            f"got {tuple(matrices.shape)}"
        )
    num_rows, num_cols = matrices.shape[:2]
    fig, axes = plt.subplots(
        num_rows, num_cols, figsize=figsize, sharex=True, sharey=True, squeeze=False
    )
    for i, (row_axes, row_matrices) in enumerate(zip(axes, matrices)):
        for j, (ax, matrix) in enumerate(zip(row_axes, row_matrices)):
            image = ax.imshow(matrix.numpy(), cmap=cmap)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
            if xticklabels is not None:
                ax.set_xticks(range(len(xticklabels)), labels=xticklabels, rotation=90)
            if yticklabels is not None:
                ax.set_yticks(range(len(yticklabels)), labels=yticklabels)
    fig.colorbar(image, ax=axes, shrink=0.6)
    _finish(fig, path)


def plot_kernel_regression(
    x_train,
    y_train,
    x_test,
    curves: dict[str, torch.Tensor],
    figsize: tuple[float, float] = (4.5, 3.0),
    *,
    path: str | Path | None = None,
) -> None:
    """Training pairs as dots and one line per curve over ``x_test`` (chapter 1).

    ``curves`` maps a legend label to the ``(len(x_test),)`` values to draw, for example
    ``{"truth": y_truth, "Nadaraya-Watson": predictions}``.
    """
    fig, axes = plt.subplots(figsize=figsize)
    plot(
        x_test,
        list(curves.values()),
        "x",
        "y",
        legend=list(curves),
        axes=axes,
        xlim=[float(x_test.min()), float(x_test.max())],
    )
    axes.plot(_as_numpy(x_train), _as_numpy(y_train), "o", alpha=0.4, markersize=4)
    _finish(fig, path)
