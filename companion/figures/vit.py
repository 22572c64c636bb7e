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
