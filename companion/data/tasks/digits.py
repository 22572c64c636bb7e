"""Handwritten digits for the Vision Transformer (sec-vit): the images and their splits. The
chapter's training settings, loop and accuracy are in :mod:`companion.experiments.recipes.vit`.

The images are scikit-learn's 1,797 handwritten digits (``sklearn.datasets.load_digits``:
8x8 pixels, one channel, integer values 0 to 16, shipped inside the package). companion does
not depend on scikit-learn: a chapter loads the arrays and hands them to :func:`digit_splits`.
Only :func:`load_digit_splits` imports it, when called.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

MAX_PIXEL = 16  # the digits' pixel values are integers 0..16


class ImageSet(NamedTuple):
    """Images ``(n, 1, 8, 8)`` as floats in [0, 1], and their labels ``(n,)``."""

    images: torch.Tensor
    labels: torch.Tensor


class DigitSplits(NamedTuple):
    """Train, validation and test sets, each with every class in the same proportion."""

    train: ImageSet
    val: ImageSet
    test: ImageSet


def digit_splits(
    images: Any,
    labels: Any,
    *,
    seed: int = 0,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
) -> DigitSplits:
    """Cut the digits into stratified train, validation and test sets.

    ``images`` holds ``n`` images of 8x8 pixels valued 0..16, as ``(n, 8, 8)`` or flattened
    ``(n, 64)`` (``load_digits().images`` or ``.data``); ``labels`` is ``(n,)``. From each
    class, ``round(fraction * count)`` images go to validation and to test, picked by a
    generator seeded with ``seed``; the rest is the training set, in a shuffled order.
    """
    images = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    if images.dim() == 2 and images.shape[1] == 64:
        images = images.reshape(-1, 8, 8)
    if images.dim() != 3 or images.shape[1:] != (8, 8) or labels.shape != images.shape[:1]:
        raise ValueError(
            "images must be (n, 8, 8) or (n, 64) and labels (n,); got images "
            f"{tuple(images.shape)}, labels {tuple(labels.shape)}"
        )
    for name, fraction in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if not 0 < fraction < 0.5:
            raise ValueError(f"{name} must be in (0, 0.5); got {fraction}")
    generator = torch.Generator().manual_seed(seed)
    parts: dict[str, list[torch.Tensor]] = {"train": [], "val": [], "test": []}
    for label in labels.unique():
        rows = torch.nonzero(labels == label).squeeze(1)
        rows = rows[torch.randperm(len(rows), generator=generator)]
        num_val, num_test = round(val_fraction * len(rows)), round(test_fraction * len(rows))
        parts["val"].append(rows[:num_val])
        parts["test"].append(rows[num_val : num_val + num_test])
        parts["train"].append(rows[num_val + num_test :])
    X = (images / MAX_PIXEL).unsqueeze(1)  # (n, 1, 8, 8), in [0, 1]
    sets = {}
    for name, part in parts.items():
        rows = torch.cat(part)
        rows = rows[torch.randperm(len(rows), generator=generator)]
        sets[name] = ImageSet(X[rows], labels[rows])
    return DigitSplits(**sets)


def stratified_subset(data: ImageSet, fraction: float, seed: int = 0) -> ImageSet:
    """The first ``round(fraction * count)`` images of each class (at least one), in their
    order in ``data``: a smaller training set with the same class proportions."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1]; got {fraction}")
    keep = torch.zeros(len(data.labels), dtype=torch.bool)
    for label in data.labels.unique():
        rows = torch.nonzero(data.labels == label).squeeze(1)
        keep[rows[: max(1, round(fraction * len(rows)))]] = True
    return ImageSet(data.images[keep], data.labels[keep])


def load_digit_splits(seed: int = 0) -> DigitSplits:
    """scikit-learn's digits (imported here, not at import time), cut by :func:`digit_splits`."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digit_splits(digits.images, digits.target, seed=seed)
