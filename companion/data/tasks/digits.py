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

from companion._validate import check_number, check_seed, check_type

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

    ``images`` holds ``n >= 1`` images of 8x8 pixels valued 0..16, as ``(n, 8, 8)`` or
    flattened ``(n, 64)`` (``load_digits().images`` or ``.data``); ``labels`` is ``(n,)``
    integers. From each class, ``round(fraction * count)`` images go to validation and to test
    (each fraction in (0, 0.5)), picked by a generator seeded with ``seed``, an integer; the
    rest is the training set, in a shuffled order.
    """
    images, labels = _digits_as_tensors(images, labels)
    check_seed(seed)
    for name, fraction in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        check_number(name, fraction, above=0, below=0.5, what="a fraction")
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


def _digits_as_tensors(images: Any, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`digit_splits`'s images ``(n, 8, 8)`` as floats 0..16 and labels ``(n,)`` as longs,
    checked: a float label would be cut to an integer, and images already scaled to [0, 1]
    would be scaled again."""
    image_array, label_array = np.asarray(images), np.asarray(labels)
    if image_array.ndim == 2 and image_array.shape[1] == 64:
        image_array = image_array.reshape(-1, 8, 8)
    if image_array.shape[1:] != (8, 8) or label_array.shape != image_array.shape[:1]:
        raise ValueError(
            "images must be (n, 8, 8) or (n, 64) and labels (n,); got images "
            f"{image_array.shape}, labels {label_array.shape}"
        )
    if image_array.dtype.kind not in "iuf" or label_array.dtype.kind not in "iu":
        raise ValueError(
            "images must hold numbers and labels integer classes; got images "
            f"{image_array.dtype}, labels {label_array.dtype}"
        )
    if len(image_array) == 0:
        raise ValueError("images holds no image; there is nothing to split")
    X = torch.as_tensor(image_array, dtype=torch.float32)
    if X.min() < 0 or X.max() > MAX_PIXEL:
        raise ValueError(
            f"images must hold pixel values 0..{MAX_PIXEL}, as load_digits gives them; got "
            f"values from {X.min().item():g} to {X.max().item():g}"
        )
    y = torch.as_tensor(label_array, dtype=torch.long)
    return X, y


def stratified_subset(data: ImageSet, fraction: float, seed: int = 0) -> ImageSet:
    """The first ``round(fraction * count)`` images of each class (at least one), in their
    order in ``data`` (an :class:`ImageSet`): a smaller training set with the same class
    proportions. ``fraction`` is in (0, 1]; ``seed`` (an integer) is not used."""
    check_type("data", data, ImageSet, "an ImageSet (images, labels), such as splits.train")
    check_number("fraction", fraction, above=0, at_most=1, what="a fraction")
    check_seed(seed)
    keep = torch.zeros(len(data.labels), dtype=torch.bool)
    for label in data.labels.unique():
        rows = torch.nonzero(data.labels == label).squeeze(1)
        keep[rows[: max(1, round(fraction * len(rows)))]] = True
    return ImageSet(data.images[keep], data.labels[keep])


def load_digit_splits(seed: int = 0) -> DigitSplits:
    """scikit-learn's digits (imported here, not at import time), cut by :func:`digit_splits`
    with ``seed``, an integer."""
    check_seed(seed)
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digit_splits(digits.images, digits.target, seed=seed)
