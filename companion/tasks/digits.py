"""Handwritten digits for the Vision Transformer (sec-vit): splits, accuracy, and the chapter's
training settings (:class:`DigitsRecipe`) and loop (:func:`train_classifier`). The timed
recipe is :func:`companion.recipes.vit.time_to_quality`.

The images are scikit-learn's 1,797 handwritten digits (``sklearn.datasets.load_digits``:
8x8 pixels, one channel, integer values 0 to 16, shipped inside the package). companion does
not depend on scikit-learn: a chapter loads the arrays and hands them to :func:`digit_splits`.
Only :func:`load_digit_splits` imports it, when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from companion.text import batches
from companion.train import eval_mode, fit

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


@torch.no_grad()
def classification_accuracy(model: nn.Module, data: ImageSet, batch_size: int = 512) -> float:
    """The fraction of ``data`` that ``model`` (images to logits) classifies correctly."""
    device = next(model.parameters()).device
    correct = torch.zeros((), dtype=torch.long, device=device)
    with eval_mode(model):
        for start in range(0, len(data.labels), batch_size):
            X = data.images[start : start + batch_size].to(device)
            y = data.labels[start : start + batch_size].to(device)
            correct += (model(X).argmax(dim=-1) == y).sum()
    return correct.item() / len(data.labels)


def classification_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Cross-entropy of ``model(images)`` against the labels: :func:`fit`'s ``loss_fn``."""
    images, labels = batch
    return F.cross_entropy(model(images), labels)


@dataclass(frozen=True)
class DigitsRecipe:
    """The settings that train the chapter's ViT on the digits (sec-vit)."""

    patch_size: int = 2
    num_hiddens: int = 32
    mlp_num_hiddens: int = 64
    num_heads: int = 4
    num_blks: int = 2
    dropout: float = 0.0
    num_epochs: int = 40
    batch_size: int = 128
    lr: float = 1e-2
    weight_decay: float = 0.01
    target: float = 0.95
    epochs_at_target: int = 3  # recipes.vit stops after this many in a row on validation

    def make_vit(self, img_size: int = 8, in_channels: int = 1) -> nn.Module:
        """The chapter's ViT, freshly initialised from torch's global generator."""
        from companion.vit import ViT

        return ViT(
            img_size,
            self.patch_size,
            self.num_hiddens,
            self.mlp_num_hiddens,
            self.num_heads,
            self.num_blks,
            self.dropout,
            self.dropout,
            in_channels=in_channels,
        )


def train_classifier(
    model: nn.Module,
    data: ImageSet,
    *,
    num_epochs: int,
    batch_size: int,
    lr: float,
    seed: int = 0,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    **options: Any,
) -> dict[str, list[Any]]:
    """Train an image classifier with :func:`companion.train.fit` and the cross-entropy loss,
    on batches shuffled by a generator seeded with ``seed``. ``options`` are ``fit``'s."""
    generator = torch.Generator().manual_seed(seed)
    return fit(
        model,
        lambda: batches(tuple(data), batch_size, generator=generator),
        classification_loss,
        num_epochs=num_epochs,
        lr=lr,
        evaluate=evaluate,
        **options,
    )


def load_digit_splits(seed: int = 0) -> DigitSplits:
    """scikit-learn's digits (imported here, not at import time), cut by :func:`digit_splits`."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digit_splits(digits.images, digits.target, seed=seed)
