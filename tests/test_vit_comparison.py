"""The ViT chapter's experiment (companion.experiments.vit_comparison): pixels shuffled alike in
every image, patches that carry ink, the <cls> query's share of weight on them, position tables
zeroed or permuted, the FLOP counts the chapter computes by hand, the figure of every run, and the
committed results."""

from __future__ import annotations

import pytest
import torch

from companion.data.tasks.digits import ImageSet
from companion.experiments.recipes.vit import DigitsRecipe
from companion.experiments.vit_comparison import (
    RESULTS,
    ink_shares,
    inked_patches,
    load_vit_results,
    matmul_flops,
    position_similarity,
    shuffle_pixels,
    with_positions,
)
from companion.models.cnn import SmallCNN


def test_shuffle_pixels_moves_every_image_alike_and_keeps_its_values():
    images = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 1, 8, 8)
    permutation = torch.randperm(64, generator=torch.Generator().manual_seed(0))
    moved = shuffle_pixels(ImageSet(images, torch.tensor([0, 1])), permutation).images
    assert torch.equal(moved.flatten(1), images.flatten(1)[:, permutation])
    assert torch.equal(moved.flatten(1).sort().values, images.flatten(1))


def test_inked_patches_are_the_patches_with_a_dark_enough_pixel():
    images = torch.zeros(1, 1, 4, 4)
    images[0, 0, 0, 3] = 0.6  # in patch 1 (top right)
    images[0, 0, 3, 0] = 0.4  # in patch 2, too light
    assert inked_patches(images, 2).tolist() == [[False, True, False, False]]


def test_ink_shares_compare_each_image_with_the_next_images_ink():
    weights = torch.zeros(2, 1, 3, 3)  # 2 images, 1 head, <cls> and 2 patches
    weights[0, 0, 0] = torch.tensor([0.0, 1.0, 0.0])  # image 0's <cls> looks at patch 1
    weights[1, 0, 0] = torch.tensor([0.0, 0.0, 1.0])  # image 1's at patch 2
    inked = torch.tensor([[True, False], [False, True]])  # each looks at its own ink
    own, other = ink_shares(weights, inked)
    assert own.tolist() == [1.0] and other.tolist() == [0.0]


def test_with_positions_zeroes_or_permutes_a_copy():
    torch.manual_seed(0)
    vit = DigitsRecipe().make_vit()
    zero = with_positions(vit, None)
    assert zero.pos_embedding.abs().sum() == 0 and vit.pos_embedding.abs().sum() > 0
    rows = torch.arange(16).flip(0)
    permuted = with_positions(vit, rows)
    assert torch.equal(permuted.pos_embedding[0, 0], vit.pos_embedding[0, 0])  # <cls> kept
    assert torch.equal(permuted.pos_embedding[0, 1:], vit.pos_embedding[0, 1:].flip(0))
    neighbours, others = position_similarity(vit)
    assert -1 <= neighbours <= 1 and -1 <= others <= 1


def test_the_counted_flops_are_the_chapters_count_by_hand():
    """The chapter counts two FLOPs per multiply-add of every product, attention's included."""
    torch.manual_seed(0)
    image = torch.zeros(1, 1, 8, 8)
    m, d, mlp, tokens = 16, 32, 64, 17
    per_block = tokens * (4 * d * d + 2 * d * mlp) + 2 * tokens * tokens * d
    assert matmul_flops(DigitsRecipe().make_vit(), image) == 2 * (
        m * 4 * d + 2 * per_block + d * 10
    )
    cnn = 8 * 8 * 32 * 1 * 9 + 4 * 4 * 64 * 32 * 9 + 64 * 10
    assert matmul_flops(SmallCNN(channels=(32, 64)), image) == 2 * cnn


def test_the_figure_draws_every_run_and_refuses_unequal_settings():
    import matplotlib.pyplot as plt

    from companion.figures.vit import plot_accuracy_runs

    accuracy = {"ViT": {"all": [0.9, 0.95], "quarter": [0.8, 0.85]},
                "CNN": {"all": [0.99, 0.98], "quarter": [0.97, 0.96]}}  # fmt: skip
    plot_accuracy_runs(accuracy)
    ax = plt.gcf().axes[0]
    dots = [line for line in ax.get_lines() if line.get_marker() not in ("None", None, "")]
    assert sum(len(line.get_xdata()) for line in dots) == 8  # every run a dot
    plt.close("all")
    with pytest.raises(ValueError, match="settings"):
        plot_accuracy_runs({"ViT": {"all": [0.9]}, "CNN": {"quarter": [0.9]}})


def test_the_committed_results_cover_every_seed_and_ship_with_the_package():
    import tomllib
    from fnmatch import fnmatch
    from pathlib import Path

    results = load_vit_results()
    assert results["machine"] and results["versions"]["torch"]
    assert len(results["runs"]) == results["settings"]["seeds"] >= 3
    for run in results["runs"]:
        assert set(run["accuracy"]) == {"ViT", "CNN"}
        assert list(run["accuracy"]["ViT"]) == ["all", "quarter", "quarter, shuffled"]
        assert len(run["ink"]["own"]) == len(run["distance"]) == 8  # 2 layers of 4 heads
    package = Path(__file__).resolve().parents[1] / "companion"
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["companion"]
    assert any(fnmatch(RESULTS.relative_to(package).as_posix(), p) for p in shipped)
