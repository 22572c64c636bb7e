"""The Vision Transformer chapter's experiment (sec-vit): the chapter's ViT against a CNN of about
the same size on the 8x8 digits, with all the training images, with a quarter of them, and with
a quarter whose pixels are all moved by one fixed permutation; and what the trained ViT does
with the image's layout. ``python -m companion.bench vit`` runs it over seeds.

One seed (:func:`vit_run`) draws the splits, the initial weights, the order of the batches and
the permutation of the pixels, and trains six models the way the chapter does (the recipe of
:class:`~companion.experiments.recipes.vit.DigitsRecipe`, 40 epochs; the batch shrinks with the
data, so every model makes 400 steps). On the ViT trained on all the images it also measures:

- ``zero_positions``: the test accuracy with the position table set to zero;
- ``permuted_positions``: the test accuracy with the rows of the patches' positions permuted
  among the patches (each image keeps its patches where they are, each patch gets another
  patch's position);
- ``ink``: per layer and head, the share of the ``<cls>`` query's weight on the patches that
  carry ink in the image at hand, and on those that carry ink in another test image
  (:func:`ink_shares`): the second is the baseline of a head that looks at fixed places;
- ``distance``: each head's mean attention distance in pixels;
- ``position_similarity``: the mean cosine similarity of the position vectors of patches that
  share an edge, and of all other pairs of patches.

Seed 0 is the chapter's own run: the same splits, weights, batches and permutation as its cells.
:func:`matmul_flops` counts one forward pass's floating-point operations with PyTorch's counter.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from companion.data.tasks.digits import ImageSet, load_digit_splits, stratified_subset
from companion.device import get_device
from companion.experiments.recipes.vit import (
    DigitsRecipe,
    classification_accuracy,
    train_classifier,
)
from companion.layers.attention import record_attention
from companion.models.cnn import SmallCNN
from companion.models.vit import ViT, mean_attention_distance

RESULTS = Path(__file__).resolve().parent / "results" / "vit.json"
CNN_CHANNELS = (32, 64)
QUARTER = 0.25
INK = 0.5  # a patch carries ink when one of its pixels is at least half the darkest value


def shuffle_pixels(data: ImageSet, permutation: torch.Tensor) -> ImageSet:
    """Every image of ``data`` with its pixels moved by the same ``permutation`` of the
    ``h * w`` places."""
    images = data.images.flatten(2)[..., permutation].reshape(data.images.shape)
    return ImageSet(images, data.labels)


def inked_patches(images: torch.Tensor, patch_size: int, threshold: float = INK) -> torch.Tensor:
    """``(batch, m)`` booleans, row by row: which patches of ``images`` ``(batch, 1, h, w)``
    hold a pixel of at least ``threshold``."""
    return F.max_pool2d(images, patch_size).flatten(1) >= threshold


def ink_shares(weights: torch.Tensor, inked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head, the mean share of the ``<cls>`` query's weight that falls on inked patches:
    ``(own, other)``, each ``(heads,)``. ``weights`` is one block's ``(batch, heads, 1 + m, 1 +
    m)``, ``<cls>`` first; ``inked`` is ``(batch, m)``. ``own`` uses each image's own ink,
    ``other`` the ink of the next image in the batch: a head that looks at fixed places scores
    the same on both, a head that looks for ink scores higher on ``own``."""
    cls = weights[:, :, 0, 1:]  # (batch, heads, m): the <cls> query on the patches
    own = (cls * inked[:, None]).sum(-1).mean(0)
    other = (cls * inked.roll(1, dims=0)[:, None]).sum(-1).mean(0)
    return own, other


def position_similarity(vit: ViT) -> tuple[float, float]:
    """The mean cosine similarity of the position vectors of patches that share an edge, and
    of all other pairs of distinct patches."""
    grid_h, grid_w = vit.patch_embedding.grid_size
    P = F.normalize(vit.pos_embedding[0, 1:].detach().cpu(), dim=-1)  # (m, d), <cls> left out
    similarity = P @ P.T  # (m, m)
    rows, cols = torch.meshgrid(torch.arange(grid_h), torch.arange(grid_w), indexing="ij")
    cells = torch.stack((rows.flatten(), cols.flatten()), dim=-1)  # (m, 2)
    steps = (cells[:, None] - cells[None]).abs().sum(-1)  # grid steps between patches
    return similarity[steps == 1].mean().item(), similarity[steps > 1].mean().item()


def with_positions(vit: ViT, rows: torch.Tensor | None) -> ViT:
    """A copy of ``vit`` whose position table is zero (``rows`` is ``None``) or has the
    patches' rows in the order ``rows`` (a permutation of the ``m`` patches; ``<cls>`` keeps
    its own)."""
    copied = copy.deepcopy(vit)
    with torch.no_grad():
        if rows is None:
            copied.pos_embedding.zero_()
        else:
            copied.pos_embedding[0, 1:] = vit.pos_embedding[0, 1:][
                rows.to(vit.pos_embedding.device)
            ]
    return copied


def vit_run(seed: int = 0, device: torch.device | None = None) -> dict[str, Any]:
    """One seed of the experiment (see the module docstring)."""
    recipe, device = DigitsRecipe(), device or get_device()
    splits = load_digit_splits(seed)
    quarter = stratified_subset(splits.train, QUARTER)
    torch.manual_seed(seed)
    permutation = torch.randperm(splits.train.images[0].numel())
    sets = {
        "all": (splits.train, splits.test, recipe.batch_size),
        "quarter": (quarter, splits.test, round(recipe.batch_size * QUARTER)),
        "quarter, shuffled": (
            shuffle_pixels(quarter, permutation),
            shuffle_pixels(splits.test, permutation),
            round(recipe.batch_size * QUARTER),
        ),
    }
    makers: dict[str, Callable[[], nn.Module]] = {
        "ViT": recipe.make_vit,
        "CNN": lambda: SmallCNN(channels=CNN_CHANNELS),
    }
    accuracy: dict[str, dict[str, float]] = {name: {} for name in makers}
    for name, make in makers.items():
        for setting, (train, test, batch_size) in sets.items():
            torch.manual_seed(seed)
            model = make()
            train_classifier(
                model,
                train,
                num_epochs=recipe.num_epochs,
                batch_size=batch_size,
                lr=recipe.lr,
                seed=seed,
                weight_decay=recipe.weight_decay,
                device=device,
            )
            accuracy[name][setting] = classification_accuracy(model, test)
            if name == "ViT" and setting == "all":
                vit = cast(ViT, model)  # the recipe's make_vit is typed nn.Module
    test = splits.test
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randperm(vit.pos_embedding.shape[1] - 1, generator=generator)
    with record_attention(vit), torch.no_grad():
        vit(test.images.to(device))
    weights = [w.cpu() for w in vit.attention_weights]
    inked = inked_patches(test.images, recipe.patch_size)
    shares = [ink_shares(w, inked) for w in weights]
    grid = vit.patch_embedding.grid_size
    neighbours, others = position_similarity(vit)
    return {
        "accuracy": accuracy,
        "zero_positions": classification_accuracy(with_positions(vit, None), test),
        "permuted_positions": classification_accuracy(with_positions(vit, rows), test),
        "ink": {
            "own": [s for own, _ in shares for s in own.tolist()],
            "other": [s for _, other in shares for s in other.tolist()],
            "inked_fraction": inked.float().mean().item(),
        },
        "distance": [
            d for w in weights for d in mean_attention_distance(w, grid, recipe.patch_size).tolist()
        ],
        "position_similarity": {"neighbours": neighbours, "others": others},
    }


def matmul_flops(model: nn.Module, images: torch.Tensor) -> int:
    """Floating-point operations of one forward pass of ``model`` on ``images``, as PyTorch's
    ``FlopCounterMode`` counts them (matrix products and convolutions, two per multiply-add),
    with attention on its explicit path so that its two products are counted too."""
    from torch.utils.flop_counter import FlopCounterMode

    with record_attention(model), torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    return int(counter.get_total_flops())


def load_vit_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench vit`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(f"no ViT results at {path}: run `python -m companion.bench vit`")
    return json.loads(path.read_text(encoding="utf-8"))
