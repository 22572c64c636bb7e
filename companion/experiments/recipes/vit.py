"""Training the ViT on the handwritten digits (sec-vit): the chapter's settings
(:class:`DigitsRecipe`), its loop (:func:`train_classifier`) and accuracy, and the
time-to-quality recipe that ``python -m companion.bench train`` runs: the chapter's ViT trained
from scratch until its validation accuracy has met the target several epochs in a row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from companion._validate import (
    check_device,
    check_integer,
    check_number,
    check_seed,
    check_type,
)
from companion.data.tasks.digits import ImageSet, load_digit_splits
from companion.data.text import batches
from companion.device import get_device
from companion.experiments.recipes import TimeToQuality
from companion.modes import eval_mode
from companion.training.train import fit


@torch.no_grad()
def classification_accuracy(model: nn.Module, data: ImageSet, batch_size: int = 512) -> float:
    """The fraction of ``data`` (a non-empty :class:`ImageSet`) that ``model`` (images to
    logits) classifies correctly, in batches of ``batch_size``, a positive integer."""
    check_type("model", model, nn.Module, "a torch.nn.Module")
    check_type("data", data, ImageSet, "an ImageSet (images, labels), such as splits.test")
    check_integer("batch_size", batch_size)
    if len(data.labels) == 0:
        raise ValueError("data holds no image; there is nothing to classify")
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
    if len(batch) != 2:
        raise ValueError(f"batch must be (images, labels); got a batch of {len(batch)} tensors")
    images, labels = batch
    return F.cross_entropy(model(images), labels)


@dataclass(frozen=True)
class DigitsRecipe:
    """The settings that train the chapter's ViT on the digits (sec-vit), checked when made:
    positive integer sizes, a width divisible by the heads, ``epochs_at_target`` at most
    ``num_epochs``, ``lr > 0``, ``weight_decay >= 0``, ``dropout`` in [0, 1), ``target`` in
    (0, 1]."""

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
    epochs_at_target: int = 3  # time_to_quality stops after this many in a row on validation

    def __post_init__(self) -> None:
        for name in (
            "patch_size",
            "num_hiddens",
            "mlp_num_hiddens",
            "num_heads",
            "num_blks",
            "num_epochs",
            "batch_size",
            "epochs_at_target",
        ):
            check_integer(name, getattr(self, name))
        check_number("dropout", self.dropout, at_least=0, below=1, what="a fraction")
        check_number("lr", self.lr, above=0)
        check_number("weight_decay", self.weight_decay, at_least=0)
        check_number("target", self.target, above=0, at_most=1, what="an accuracy")
        if self.epochs_at_target > self.num_epochs:
            raise ValueError(
                f"epochs_at_target={self.epochs_at_target} can never be met in "
                f"num_epochs={self.num_epochs}"
            )
        if self.num_hiddens % self.num_heads:
            raise ValueError(
                f"num_hiddens={self.num_hiddens} must be divisible by num_heads={self.num_heads}"
            )

    def make_vit(self, img_size: int = 8, in_channels: int = 1) -> nn.Module:
        """The chapter's ViT, freshly initialised from torch's global generator."""
        from companion.models.vit import ViT

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
    """Train an image classifier with :func:`companion.training.train.fit` and the cross-entropy
    loss, on ``data`` (an :class:`ImageSet`) in batches shuffled by a generator seeded with
    ``seed``, an integer. ``options`` are ``fit``'s."""
    check_type("data", data, ImageSet, "an ImageSet (images, labels), such as splits.train")
    check_seed(seed)
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


def time_to_quality(seed: int = 0, device: torch.device | None = None) -> TimeToQuality:
    """Train the chapter's ViT (:class:`DigitsRecipe`) from scratch on the digits until its
    validation accuracy has reached the target (0.95) at ``epochs_at_target`` (3) epochs in a
    row, or for ``num_epochs`` epochs at most; then score it once on the test split, which
    neither training nor stopping saw.

    As in time-to-accuracy benchmarks (DAWNBench, MLPerf), the held-out set is evaluated after
    every epoch and training stops once it meets the target. The validation split has 179
    images, so its accuracy moves in steps of 0.0056 and runs ahead of the test accuracy by
    chance: stopping at the first epoch at 0.95 left a test accuracy of 0.925 to 0.947 for three
    of five seeds; three epochs in a row left 0.955 to 0.983 for all five (measured on a loaded
    machine, one thread).

    ``reached`` says whether the validation accuracy met the target at the last
    ``epochs_at_target`` epochs, ``seconds`` counts training and the per-epoch evaluations
    (after the data are built), and ``score`` is the test accuracy. ``seed`` is an integer;
    ``device`` a ``torch.device``, its name, or ``None``.
    """
    check_seed(seed)
    device = check_device(device)
    recipe = DigitsRecipe()
    device = device or get_device()
    splits = load_digit_splits(seed)
    torch.manual_seed(seed)
    model = recipe.make_vit().to(device)
    accuracies: list[float] = []  # on the validation split, one per epoch

    def at_target(metrics: dict[str, float] | None = None) -> bool:
        """Whether the last ``epochs_at_target`` validation accuracies all met the target."""
        accuracies.extend([metrics["accuracy"]] if metrics else [])
        last = accuracies[-recipe.epochs_at_target :]
        return len(last) == recipe.epochs_at_target and min(last) >= recipe.target

    start = time.perf_counter()
    history = train_classifier(
        model,
        splits.train,
        num_epochs=recipe.num_epochs,
        batch_size=recipe.batch_size,
        lr=recipe.lr,
        seed=seed,
        weight_decay=recipe.weight_decay,
        evaluate=lambda m: {"accuracy": classification_accuracy(m, splits.val)},
        stop_when=at_target,
        device=device,
    )
    seconds = time.perf_counter() - start
    return TimeToQuality(
        task=f"digits 8x8, {len(splits.train.labels)} training images",
        model=f"ViT, {recipe.patch_size}x{recipe.patch_size} patches, "
        f"{recipe.num_hiddens} wide, {recipe.num_blks} blocks",
        target=f"validation accuracy >= {recipe.target}, {recipe.epochs_at_target} epochs in a row",
        reached=at_target(),
        seconds=seconds,
        epochs=len(history["epoch"]),
        score=classification_accuracy(model, splits.test),
    )
