"""Figures of the Vision Transformer chapter (sec-vit).

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and saves
the figure when given ``path=``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from companion._validate import check_sequence
from companion.figures.plot import _as_numpy, _check_labels, _finish


def show_cls_attention(
    images,
    maps,
    titles: Sequence[str],
    row_labels: Sequence[str] | None = None,
    figsize: tuple[float, float] = (7.5, 3.5),
    *,
    path: str | Path | None = None,
) -> None:
    """Attention of ``<cls>`` to the patches drawn over the images (sec-vit).

    ``images`` is ``(rows, h, w)``; ``maps`` is ``(rows, cols, grid_h, grid_w)``, one map per
    column (for example per layer and head), each upsampled to the image by repeating every
    patch's weight over its pixels and drawn in red over the grey digit: the grid must divide
    the image. Column 0 shows the image alone; ``titles`` (a list) names the other columns,
    ``row_labels``, if given, the rows. Each map uses its own colour range.
    """
    check_sequence("titles", titles, "a list of titles, one per column of maps")
    images, maps = torch.as_tensor(_as_numpy(images)), torch.as_tensor(_as_numpy(maps))
    if images.dim() != 3 or maps.dim() != 4 or maps.shape[:2] != (len(images), len(titles)):
        raise ValueError(
            "images must be (rows, h, w) and maps (rows, len(titles), grid_h, grid_w); got "
            f"images {tuple(images.shape)}, maps {tuple(maps.shape)}, {len(titles)} titles"
        )
    rows, cols = maps.shape[:2]
    h, w = images.shape[-2:]
    if maps.shape[-2] == 0 or maps.shape[-1] == 0 or h % maps.shape[-2] or w % maps.shape[-1]:
        raise ValueError(
            f"each map's grid must divide the images: grids {tuple(maps.shape[-2:])} of patches "
            f"over images of {h}x{w} pixels"
        )
    if row_labels is not None:
        _check_labels("row_labels", row_labels, rows, "rows")
    scale = (h // maps.shape[-2], w // maps.shape[-1])
    fig, axes = plt.subplots(rows, cols + 1, figsize=figsize, squeeze=False)
    for i in range(rows):
        axes[i, 0].imshow(images[i].numpy(), cmap="gray_r")
        if row_labels is not None:
            axes[i, 0].set_ylabel(row_labels[i])
        for j in range(cols):
            a = maps[i, j].repeat_interleave(scale[0], 0).repeat_interleave(scale[1], 1)
            axes[i, j + 1].imshow(images[i].numpy(), cmap="gray_r")
            axes[i, j + 1].imshow(a.numpy(), cmap="Reds", alpha=0.6)
    for j, title in enumerate(["image", *titles]):
        axes[0, j].set_title(title, fontsize=8)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    _finish(fig, path)


def plot_accuracy_runs(
    accuracy: dict[str, dict[str, list[float]]],
    figsize: tuple[float, float] = (5.5, 3.0),
    *,
    path: str | Path | None = None,
) -> None:
    """Test accuracy of each model in each setting, one dot per run (sec-vit): ``accuracy``
    maps a model's name to its settings (``"all"``, ``"quarter"``, ...), each a non-empty list
    of accuracies. The settings are categories along the horizontal axis, the models side by
    side within each, a short line at each mean; nothing joins the settings, which are separate
    experiments."""
    if not isinstance(accuracy, dict) or not accuracy:
        raise ValueError("accuracy must map each model's name to its settings' accuracies")
    settings = list(next(iter(accuracy.values())))
    for model, row in accuracy.items():
        if not isinstance(row, dict) or list(row) != settings:
            raise ValueError(f"accuracy[{model!r}] must have the settings {settings}")
        for setting, values in row.items():
            check_sequence(f"accuracy[{model!r}][{setting!r}]", values, "a list of accuracies")
            if not values:
                raise ValueError(f"accuracy[{model!r}][{setting!r}] is empty")
    fig, ax = plt.subplots(figsize=figsize)
    width = 0.6 / len(accuracy)
    markers = "osD^v"
    for m, (model, row) in enumerate(accuracy.items()):
        offset = (m - (len(accuracy) - 1) / 2) * width
        for s, values in enumerate(row.values()):
            x = s + offset
            spread = [
                x + width * 0.35 * (i / max(1, len(values) - 1) - 0.5) for i in range(len(values))
            ]
            ax.plot(spread, values, markers[m % len(markers)], color=f"C{m}", ms=4.5, alpha=0.8,
                    label=model if s == 0 else None)  # fmt: skip
            mean = sum(values) / len(values)
            ax.plot([x - width * 0.4, x + width * 0.4], [mean, mean], color=f"C{m}", lw=2)
    ax.set_xticks(range(len(settings)), labels=settings)
    ax.set_xlim(-0.6, len(settings) - 0.4)
    ax.set_ylabel("test accuracy")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize="small")
    _finish(fig, path)
