"""Generated data, reproducibility settings and figures."""

from __future__ import annotations

import inspect

import matplotlib.pyplot as plt
import pytest
import torch

from companion import kernel_regression_data, plot, reproducible, show_heatmaps
from companion.data.regression import kernel_regression_target
from companion.figures.plot import plot_kernel_regression


def test_kernel_regression_data_is_deterministic_and_independent_of_global_state():
    first = kernel_regression_data(seed=5)
    torch.rand(100)  # draws from the global generator must not matter
    second = kernel_regression_data(seed=5)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    assert not torch.equal(first.y_train, kernel_regression_data(seed=6).y_train)


def test_kernel_regression_data_shapes_and_noise():
    data = kernel_regression_data(n_train=400, noise=0.5, seed=0)
    assert data.x_train.shape == data.y_train.shape == (400,)
    assert torch.all(data.x_train[1:] >= data.x_train[:-1]), "training inputs are sorted"
    assert 0 <= data.x_train.min() and data.x_train.max() < 5
    residual = data.y_train - kernel_regression_target(data.x_train)
    assert 0.4 < residual.std().item() < 0.6
    torch.testing.assert_close(data.y_truth, kernel_regression_target(data.x_test))
    with pytest.raises(ValueError, match="n_train must be a positive integer; got 0"):
        kernel_regression_data(n_train=0)


def test_reproducible_seeds_and_print_options(monkeypatch):
    monkeypatch.setenv("COMPANION_NUM_THREADS", "1")
    before = torch.get_num_threads()
    try:
        reproducible(seed=11)
        first = torch.rand(3)
        reproducible(seed=11)
        assert torch.equal(first, torch.rand(3))
        assert torch.get_num_threads() == 1
        assert repr(torch.tensor([1e-6, 123.0])) == "tensor([  0.0000, 123.0000])"
    finally:
        torch.set_num_threads(before)
        torch.set_printoptions(profile="default")


def test_signatures_follow_d2l(d2l):
    for ours, theirs in ((show_heatmaps, d2l.show_heatmaps), (plot, d2l.plot)):
        ours_names = list(inspect.signature(ours).parameters)
        theirs_names = list(inspect.signature(theirs).parameters)
        assert ours_names[: len(theirs_names)] == theirs_names


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_figures_save_to_files(tmp_path, suffix):
    data = kernel_regression_data(n_train=10)
    weights = torch.softmax(torch.randn(2, 3, 4, 5), dim=-1)
    show_heatmaps(weights, "keys", "queries", titles=["a", "b", "c"], path=tmp_path / f"h{suffix}")
    plot_kernel_regression(
        data.x_train,
        data.y_train,
        data.x_test,
        {"truth": data.y_truth},
        path=tmp_path / f"k{suffix}",
    )
    plot(
        data.x_test,
        [data.y_truth, 2 * data.y_truth],
        "x",
        "y",
        legend=["a", "b"],
        path=tmp_path / f"p{suffix}",
    )
    plt.close("all")
    for name in "hkp":
        assert (tmp_path / f"{name}{suffix}").stat().st_size > 1000


def test_heatmap_accepts_one_matrix_with_token_labels_and_rejects_other_ranks(tmp_path):
    show_heatmaps(
        torch.eye(3),
        "keys",
        "queries",
        xticklabels=list("abc"),
        yticklabels=list("xyz"),
        path=tmp_path / "one.png",
    )
    axes = plt.gcf().axes[0]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["a", "b", "c"]
    plt.close("all")
    with pytest.raises(ValueError, match=r"got \(2, 3, 4\)"):
        show_heatmaps(torch.zeros(2, 3, 4), "keys", "queries")


def test_attention_and_history_plots_save_to_files(tmp_path):
    from companion.figures.plot import plot_attention, plot_history

    source, target = ["the", "red", "dog", "<eos>"], ["ka", "dog", "red"]
    grid = torch.softmax(torch.randn(2, 4, 5, 6), dim=-1)  # (layers, heads, target, source)
    plot_attention(grid, source, target, path=tmp_path / "grid.png")
    figure = plt.gcf()
    assert len([a for a in figure.axes if a.get_title()]) == 8, "a panel per layer and head"
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == target
    plot_attention(grid[0, 0], source, target, path=tmp_path / "one.svg")
    history = {
        "epoch": [1, 2, 3],
        "loss": [2.0, 1.0, 0.5],
        "lr": [0.1] * 3,
        "seconds": [1, 2, 3],
        "bleu": [float("nan"), 0.5, 0.9],
    }
    plot_history(history, path=tmp_path / "history.pdf")
    plt.close("all")
    for name in ("grid.png", "one.svg", "history.pdf"):
        assert (tmp_path / name).stat().st_size > 1000
    with pytest.raises(ValueError, match=r"got \(4, 5, 6\)"):
        plot_attention(grid[0], source, target)
