"""Figures for the book: curves and attention heatmaps, in notebooks and saved to files.

The functions draw with matplotlib and return ``None``, as d2l's do, so a call at the end of a
notebook cell shows the figure once. Pass ``path=`` to also save it (PNG, PDF or SVG by suffix).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from companion._validate import check_number, check_sequence, check_type, describe


def _as_numpy(data):
    if isinstance(data, torch.Tensor):
        return data.detach().cpu().numpy()
    return data


def _finish(fig: Figure | SubFigure, path: str | Path | None) -> None:
    if path is not None:  # the whole figure: a subfigure (axes given by the caller) cannot save
        check_type("path", path, (str, os.PathLike), "a file's path, a str or a Path, or None")
        fig.figure.savefig(path, bbox_inches="tight")


def _check_labels(
    name: str, labels: Sequence[str], count: int, things: str, text: bool = False
) -> None:
    """``labels``: a list (with ``text``, a str too: a label per character) of ``count``
    labels, one for each of the ``things``, e.g. ``"curves"``."""
    if not (text and isinstance(labels, str)):
        check_sequence(name, labels, f"a list of labels, one for each of the {things}")
    if len(labels) != count:
        labels_ = "label" if len(labels) == 1 else "labels"
        raise ValueError(f"{name} has {len(labels)} {labels_} for {count} {things}")


def _check_curves(X: list, Y: list, legend: Sequence[str] | None, fmts: Sequence[str]) -> None:
    """What :func:`plot` draws, once ``X`` and ``Y`` are lists of curves."""
    if len(X) not in (1, len(Y)):
        raise ValueError(f"X holds {len(X)} curves' x values for the {len(Y)} curves of Y")
    check_sequence("fmts", fmts, "a list of line formats such as ('-', 'm--')")
    if len(fmts) < len(Y):
        raise ValueError(f"fmts has {len(fmts)} formats for {len(Y)} curves: pass one per curve")
    if legend is not None:
        _check_labels("legend", legend, len(Y), "curves")


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

    ``X`` and ``Y`` are each a tensor, an array, a list of numbers or a list of those (never
    empty; a dict of curves is ``list(d.values())``, with ``legend=list(d)``). With ``Y``
    omitted, ``X`` is plotted against its index. ``legend`` has one label per curve and
    ``fmts`` a format for each.
    """
    for name, data in (("X", X), ("Y", Y)):
        if isinstance(data, Mapping):
            raise TypeError(
                f"{name} must be a curve or a list of curves; got a dict: pass "
                "list(d.values()), with legend=list(d)"
            )
        if data is not None and not isinstance(data, str) and len(data) == 0:
            raise ValueError(f"{name} is empty; there is nothing to plot")

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
    _check_curves(X, Y, legend, fmts)
    if len(X) != len(Y):
        X = X * len(Y)
    fig: Figure | SubFigure
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
    axes.set_xlabel(xlabel or "")
    axes.set_ylabel(ylabel or "")
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
    is shown on its own; no axis may be empty. ``titles`` names the columns, one title each.
    Tick labels, when given, label the keys (x) and the queries (y), one per key or query, for
    example with tokens (a str gives one label per character).
    """
    matrices = torch.as_tensor(_as_numpy(matrices))
    if matrices.dim() == 2:
        matrices = matrices[None, None]
    if matrices.dim() != 4 or 0 in matrices.shape:
        raise ValueError(
            "matrices must have shape (rows, cols, queries, keys) or (queries, keys), no axis "
            f"empty; got {tuple(matrices.shape)}"
        )
    num_rows, num_cols = matrices.shape[:2]
    _check_heatmap_labels(matrices.shape, titles, xticklabels, yticklabels)
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


def _check_heatmap_labels(
    shape: torch.Size,
    titles: Sequence[str] | None,
    xticklabels: Sequence[str] | None,
    yticklabels: Sequence[str] | None,
) -> None:
    """:func:`show_heatmaps`'s labels: a title per column, a tick label per key and query."""
    if titles:
        _check_labels("titles", titles, shape[1], "columns")
    if xticklabels is not None:
        _check_labels("xticklabels", xticklabels, shape[3], "keys", text=True)
    if yticklabels is not None:
        _check_labels("yticklabels", yticklabels, shape[2], "queries", text=True)


def plot_kernel_regression(
    x_train,
    y_train,
    x_test,
    curves: dict[str, torch.Tensor],
    figsize: tuple[float, float] = (4.5, 3.0),
    *,
    path: str | Path | None = None,
) -> None:
    """Training pairs as dots and one line per curve over ``x_test`` (sec-attention-pooling).

    ``curves`` maps a legend label to the ``(len(x_test),)`` values to draw, for example
    ``{"truth": y_truth, "Nadaraya-Watson": predictions}``; ``x_train`` and ``y_train`` have
    one length.
    """
    _check_regression_curves(x_train, y_train, x_test, curves)
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


def _check_regression_curves(
    x_train: Sequence[float], y_train: Sequence[float], x_test: Sequence[float], curves: object
) -> None:
    if len(x_train) != len(y_train):
        raise ValueError(
            f"x_train and y_train must have the same length; got {len(x_train)} and {len(y_train)}"
        )
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(
            "curves must be a non-empty dict of legend label -> values over x_test, such as "
            f"{{'truth': y_truth}}; got {describe(curves)}"
        )
    for label, values in curves.items():
        if len(values) != len(x_test):
            raise ValueError(
                f"curves[{label!r}] has {len(values)} values for the {len(x_test)} points of x_test"
            )


def plot_history(
    history: dict[str, list],
    figsize: tuple[float, float] = (7.0, 2.5),
    *,
    path: str | Path | None = None,
) -> None:
    """Training curves from :func:`companion.training.train.train_seq2seq`'s history (sec-bahdanau,
    sec-transformer).

    Left: the training loss per epoch. Right: every held-out metric at the epochs where it
    was evaluated. ``history`` is the dict :func:`~companion.training.train.fit` returns.
    """
    if not isinstance(history, Mapping) or not {"epoch", "loss"} <= set(history):
        hint = ": pass its .history" if hasattr(history, "history") else ""
        raise TypeError(
            "history must be the dict fit returns, with 'epoch' and 'loss' lists; got "
            f"{describe(history)}{hint}"
        )
    metrics = [name for name in history if name not in ("epoch", "loss", "lr", "seconds")]
    fig, (loss_axes, metric_axes) = plt.subplots(1, 2, figsize=figsize)
    plot(history["epoch"], history["loss"], "epoch", "training loss", axes=loss_axes)
    for name in metrics:
        points = [(e, v) for e, v in zip(history["epoch"], history[name]) if v == v]  # not NaN
        metric_axes.plot([e for e, _ in points], [v for _, v in points], "o-", label=name)
    metric_axes.set_xlabel("epoch")
    metric_axes.set_ylabel("held-out score")
    metric_axes.grid(True)
    if metrics:
        metric_axes.legend()
    fig.tight_layout()
    _finish(fig, path)


def plot_attention(
    weights,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    titles: Sequence[str] | None = None,
    cell_size: float = 0.3,
    *,
    path: str | Path | None = None,
) -> None:
    """The attention of one target sequence over one source sequence, tokens as tick labels.

    ``weights`` is ``(target, source)`` for one layer and head, or ``(layers, heads, target,
    source)`` for a grid with a row per layer and a column per head; longer weight axes (such
    as padding) are cut to the given tokens, lists of tokens (a str gives one token per
    character). ``titles`` names the columns (default: heads); ``cell_size`` is a number > 0.
    """
    check_number("cell_size", cell_size, above=0)
    weights = torch.as_tensor(_as_numpy(weights)).float()
    if weights.dim() == 2:
        weights = weights[None, None]
    if weights.dim() != 4:
        raise ValueError(
            "weights must have shape (target, source) or (layers, heads, target, source); "
            f"got {tuple(weights.shape)}"
        )
    _check_tokens_fit(weights.shape, source_tokens, target_tokens)
    weights = weights[..., : len(target_tokens), : len(source_tokens)]
    num_layers, num_heads = weights.shape[:2]
    if titles is None and num_heads > 1:
        titles = [f"head {h + 1}" for h in range(num_heads)]
    width = cell_size * len(source_tokens) * num_heads + 1.5
    height = cell_size * len(target_tokens) * num_layers + 1.0
    show_heatmaps(
        weights,
        xlabel="source",
        ylabel="target",
        titles=titles,
        figsize=(width, height),
        xticklabels=list(source_tokens),
        yticklabels=list(target_tokens),
        path=path,
    )


def _check_tokens_fit(
    shape: torch.Size, source_tokens: Sequence[str], target_tokens: Sequence[str]
) -> None:
    """:func:`plot_attention`'s tokens: as many as the weights have steps at most, at least one."""
    for name, tokens, steps, axis in (
        ("source_tokens", source_tokens, shape[-1], "source"),
        ("target_tokens", target_tokens, shape[-2], "target"),
    ):
        if not isinstance(tokens, str):
            check_sequence(name, tokens, "a list of tokens (a str: one token per character)")
        if not 0 < len(tokens) <= steps:
            raise ValueError(
                f"{name} holds {len(tokens)} tokens for weights of {steps} {axis} steps: "
                "one token per step, at least one (a str is one token per character)"
            )


def show_graph_attention(
    weights,
    mask,
    nodes: Sequence[str],
    figsize: tuple[float, float] = (7.0, 3.0),
    cmap: str = "Reds",
    *,
    path: str | Path | None = None,
) -> None:
    """A graph beside the attention weights that its mask allows (sec-self-attention).

    ``mask`` is the ``(queries, keys)`` boolean mask of graph attention: ``mask[i, j]`` is True
    when node ``i`` may attend to node ``j``, that is when information flows from ``j`` to
    ``i``. The left panel draws the nodes on a circle, labelled with ``nodes``, and an arrow
    ``j -> i`` for every such pair of two different nodes (a double-headed arrow when it flows
    both ways, as on an undirected graph); a ring marks each node that attends to itself. The
    right panel is the ``(queries, keys)`` heatmap of ``weights``, node names as tick labels.
    """
    weights = torch.as_tensor(_as_numpy(weights)).float()
    mask = torch.as_tensor(_as_numpy(mask)).bool()
    check_sequence("nodes", nodes, "a list of node names, one per row of the weights")
    n = len(nodes)
    if weights.shape != (n, n) or mask.shape != (n, n):
        raise ValueError(
            f"weights and mask must both have shape (nodes, nodes) = ({n}, {n}); got "
            f"{tuple(weights.shape)} and {tuple(mask.shape)}"
        )
    fig, (graph_ax, heat_ax) = plt.subplots(
        1, 2, figsize=figsize, gridspec_kw={"width_ratios": [1, 1]}
    )
    angles = torch.arange(n) * (2 * torch.pi / n) + torch.pi / 2  # the first node on top
    xy = torch.stack([angles.cos(), angles.sin()], dim=1).tolist()
    radius = 0.16
    for i in range(n):
        for j in range(i):
            forward, backward = bool(mask[i, j]), bool(mask[j, i])  # j -> i, i -> j
            if not (forward or backward):
                continue
            start, end = (xy[j], xy[i]) if forward else (xy[i], xy[j])
            style = "<|-|>" if forward and backward else "-|>"
            graph_ax.annotate(
                "",
                xy=end,
                xytext=start,
                arrowprops=dict(
                    arrowstyle=style, color="0.35", shrinkA=14, shrinkB=14, mutation_scale=12
                ),
            )
    for i, ((x, y), name) in enumerate(zip(xy, nodes)):
        if mask[i, i]:  # a self-loop: a ring outside the node
            graph_ax.add_patch(
                plt.Circle((1.22 * x, 1.22 * y), 0.09, fill=False, color="0.35", linewidth=1)
            )
        graph_ax.add_patch(plt.Circle((x, y), radius, color="#f4c7a1", ec="0.2", zorder=3))
        graph_ax.text(x, y, name, ha="center", va="center", fontsize=11, zorder=4)
    graph_ax.set_xlim(-1.45, 1.45)
    graph_ax.set_ylim(-1.45, 1.45)
    graph_ax.set_aspect("equal")
    graph_ax.axis("off")
    graph_ax.set_title("graph")
    image = heat_ax.imshow(weights.numpy(), cmap=cmap, vmin=0)
    heat_ax.set_xticks(range(n), labels=list(nodes))
    heat_ax.set_yticks(range(n), labels=list(nodes))
    heat_ax.set_xlabel("key node")
    heat_ax.set_ylabel("query node")
    heat_ax.set_title("attention weights")
    fig.colorbar(image, ax=heat_ax, shrink=0.8)
    _finish(fig, path)
