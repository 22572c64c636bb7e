"""Figures of the language-model chapter (sec-language-models).

Like :mod:`companion.figures.plot`, each function draws with matplotlib, returns ``None`` and saves
the figure when given ``path=``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from companion._validate import check_sequence
from companion.figures.plot import _as_numpy, _check_labels, _finish


def show_masks(
    masks,
    titles: Sequence[str],
    labels: Sequence[str] | None = None,
    figsize: tuple[float, float] = (7.5, 2.8),
    *,
    path: str | Path | None = None,
) -> None:
    """Boolean attention masks side by side, ``masks`` of shape ``(num_masks, queries,
    keys)``: dark where the query (row) may attend to the key (column), light where it may
    not. Unlike :func:`companion.figures.plot.show_heatmaps`, the colours are fixed to 0 and 1, so a
    mask that lets everything through is drawn dark, not scaled to its own range. ``titles`` is a
    list with a title per mask; ``labels``, if given, one per query and key (a str: one per
    character)."""
    check_sequence("titles", titles, "a list of titles, one per mask")
    masks = torch.as_tensor(_as_numpy(masks))
    if masks.dim() != 3 or masks.shape[0] != len(titles):
        raise ValueError(
            f"masks must have shape (len(titles)={len(titles)}, queries, keys); "
            f"got {tuple(masks.shape)}"
        )
    if labels is not None:
        _check_labels("labels", labels, masks.shape[2], "keys", text=True)
        _check_labels("labels", labels, masks.shape[1], "queries", text=True)
    fig, axes = plt.subplots(1, len(titles), figsize=figsize, sharey=True, squeeze=False)
    for ax, mask, title in zip(axes[0], masks.float(), titles):
        ax.imshow(mask.numpy(), cmap="Blues", vmin=0, vmax=1)
        ax.set_title(title)
        ax.set_xlabel("keys")
        if labels is not None:
            ax.set_xticks(range(len(labels)), labels=labels, rotation=90)
            ax.set_yticks(range(len(labels)), labels=labels)
    axes[0, 0].set_ylabel("queries")
    _finish(fig, path)


def loss_table(losses_by_class: Mapping[str, Sequence[float]]) -> str:
    """A table of per-label losses grouped by what the label is, one row per group, the most
    frequent group first: its share of all the labels, its mean loss in nats, and ``e`` to that
    mean (the perplexity of that kind of prediction). ``losses_by_class`` maps a group's name
    (a word class) to the losses of its labels, in nats; print the string it returns."""
    if not losses_by_class or any(len(v) == 0 for v in losses_by_class.values()):
        raise ValueError("losses_by_class must map each group to a non-empty list of losses")
    total = sum(len(v) for v in losses_by_class.values())
    rows = [f"{'label':13}{'share':>7}{'loss (nats)':>13}{'e^loss':>8}"]
    for name, values in sorted(losses_by_class.items(), key=lambda item: -len(item[1])):
        mean = sum(values) / len(values)
        rows.append(f"{name:13}{len(values) / total:7.3f}{mean:13.3f}{math.exp(mean):8.1f}")
    return "\n".join(rows)
