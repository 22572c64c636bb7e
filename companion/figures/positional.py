"""Figures of the positional-encoding chapter (sec-positional-encoding).

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and
saves the figure when given ``path=``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes

from companion._validate import check_integer, check_number, check_sequence
from companion.figures.diagrams import COLORS
from companion.figures.plot import _as_numpy, _check_labels, _finish


def _unit_circle(ax: Axes, title: str, xlabel: str, ylabel: str) -> None:
    angles = torch.linspace(0, 2 * math.pi, 200)
    ax.plot(torch.cos(angles), torch.sin(angles), color="#bbbbbb", linewidth=1)
    ax.axhline(0, color="#dddddd", linewidth=0.8, zorder=0)
    ax.axvline(0, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.set_xticks([-1, 0, 1])
    ax.set_yticks([-1, 0, 1])
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _vector(ax: Axes, angle: float, length: float, color: str, label: str, faded: bool) -> None:
    """An arrow from the origin at ``angle`` (counter-clockwise from the x-axis), labelled."""
    x, y = length * math.cos(angle), length * math.sin(angle)
    alpha = 0.45 if faded else 1.0
    ax.annotate(
        "",
        (x, y),
        (0, 0),
        arrowprops={"arrowstyle": "-|>", "color": color, "alpha": alpha, "linewidth": 1.6},
    )
    ax.text(1.22 * x, 1.22 * y, label, ha="center", va="center", fontsize=8, alpha=alpha)


def _angle_arc(
    ax: Axes, start: float, end: float, radius: float, faded: bool, head: bool = False
) -> None:
    """The angle from ``start`` to ``end`` (radians) as an arc at ``radius``; with ``head``, an
    arrowhead at ``end`` shows the direction of the turn."""
    angles = torch.linspace(start, end, 40)
    xs, ys = radius * torch.cos(angles), radius * torch.sin(angles)
    color, alpha = COLORS["weight"], 0.45 if faded else 1.0
    ax.plot(xs, ys, linewidth=1.4, color=color, alpha=alpha)
    if head:
        ax.annotate(
            "",
            (xs[-1].item(), ys[-1].item()),
            (xs[-4].item(), ys[-4].item()),
            arrowprops={"arrowstyle": "-|>", "linewidth": 1.4, "color": color, "alpha": alpha},
        )


def plot_rotating_pair(
    omega: float = 1.0,
    num_positions: int = 6,
    rope_omega: float = 0.5,
    offset: int = 2,
    figsize: tuple[float, float] = (8, 4),
    *,
    path: str | Path | None = None,
) -> None:
    """One pair of features on the unit circle, two ways (sec-positional-encoding).

    Left, the sinusoidal encoding: pair ``j`` of position ``i`` is the point
    ``(sin(i omega), cos(i omega))`` (sine column across, cosine column up), drawn for
    ``i = 0 .. num_positions - 1``; each position turns it clockwise by ``omega``. Right, RoPE:
    a query pair and a key pair turned counter-clockwise by their positions' angles, for a query
    at ``i = 0`` and a key at ``t = offset``, and again (faded) both moved on by three positions:
    the angle between them, and so their dot product, is the same.
    """
    check_number("omega", omega, above=0)
    check_integer("num_positions", num_positions)
    check_number("rope_omega", rope_omega, above=0)
    check_integer("offset", offset)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize)
    _unit_circle(
        left,
        "sinusoids: each position turns the\npair clockwise by $\\omega_j$",
        "$p_{i,2j} = \\sin(i\\omega_j)$",
        "$p_{i,2j+1} = \\cos(i\\omega_j)$",
    )
    positions = torch.arange(num_positions, dtype=torch.float64)
    xs, ys = torch.sin(positions * omega), torch.cos(positions * omega)
    left.plot(xs, ys, "o", color=COLORS["key"], markersize=6)
    for i, (x, y) in enumerate(zip(xs.tolist(), ys.tolist())):
        left.text(1.22 * x, 1.22 * y, f"$i = {i}$", ha="center", va="center", fontsize=8)
    # the turn from position 0 to 1: clockwise, from 90 degrees down by omega
    _angle_arc(left, math.pi / 2, math.pi / 2 - omega, 0.45, faded=False, head=True)
    left.text(0.3, 0.2, "$\\omega_j$", fontsize=9, color=COLORS["weight"])

    _unit_circle(
        right,
        "RoPE: query and key turned\ncounter-clockwise by $i\\omega_j$, $t\\omega_j$",
        "feature $2j$",
        "feature $2j+1$",
    )
    query, key = math.radians(20), math.radians(70)  # the pair's own angles, before RoPE
    for shift, faded in ((0, False), (3, True)):
        i, t = shift, shift + offset
        turned_q, turned_k = query + i * rope_omega, key + t * rope_omega
        _vector(right, turned_q, 1.0, COLORS["query"], f"$\\tilde q$, $i = {i}$", faded)
        _vector(right, turned_k, 0.8, COLORS["key"], f"$\\tilde k$, $t = {t}$", faded)
        _angle_arc(right, turned_q, turned_k, 0.3 if faded else 0.4, faded)
    right.text(
        0,
        -1.35,
        f"$t - i = {offset}$ both times: the same angle, the same score",
        ha="center",
        fontsize=8,
        color=COLORS["weight"],
    )
    fig.tight_layout()
    _finish(fig, path)


def show_score_panels(
    matrices,
    titles: Sequence[str],
    xlabel: str,
    ylabel: str,
    figsize: tuple[float, float] = (9, 3),
    cmap: str = "RdBu",
    *,
    shared_scale: bool = False,
    path: str | Path | None = None,
) -> None:
    """Heatmaps side by side, each with its own colour bar (sec-positional-encoding).

    ``matrices`` is ``(panels, queries, keys)``, one panel per title. Unlike
    :func:`~companion.figures.plot.show_heatmaps`, whose one colour bar reads the last panel,
    each panel here has its own scale, so that scores of different sizes stay readable; with
    ``shared_scale`` every panel uses the range of all of them, so that their sizes compare. A
    NaN (a masked entry) is left blank.
    """
    check_sequence("titles", titles, "a list of titles, one per panel")
    matrices = torch.as_tensor(_as_numpy(matrices))
    if matrices.dim() != 3 or 0 in matrices.shape:
        raise ValueError(
            f"matrices must have shape (panels, queries, keys), no axis empty; got "
            f"{tuple(matrices.shape)}"
        )
    _check_labels("titles", titles, matrices.shape[0], "panels")
    finite = matrices[matrices.isfinite()]
    scale = {"vmin": finite.min().item(), "vmax": finite.max().item()} if shared_scale else {}
    fig, axes = plt.subplots(1, len(titles), figsize=figsize, squeeze=False)
    for k, (ax, matrix, title) in enumerate(zip(axes[0], matrices, titles)):
        image = ax.imshow(matrix.numpy(), cmap=cmap, **scale)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        if k == 0:
            ax.set_ylabel(ylabel)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    _finish(fig, path)
