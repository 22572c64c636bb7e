"""plot_doublings and show_weight_pair (companion.figures.efficient): what they draw, and the
clear errors for what they cannot."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from companion.figures.efficient import plot_doublings, show_weight_pair


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_doublings_labels_the_sizes_and_draws_the_guides():
    sizes = [128, 256, 512]
    plot_doublings(
        sizes,
        [[1, 4, 16], [1, 2, 4]],
        "n",
        "MiB",
        ["square", "line"],
        yscale="log",
        guides=[("grows like n^2", 2, 0), ("grows like n", 1, 1)],
    )
    ax = plt.gca()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "256", "512"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["grows like n^2"] == [1, 4, 16]  # through the last point, at the power given
    assert lines["grows like n"] == [1, 2, 4]
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["square", "line"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(curves=[[1, 2]]), "curves\\[0\\] has 2 values for 3 sizes"),
        (dict(legend=["a", "b"]), "legend has 2 labels for 1 curves?"),
        (dict(guides=[("g", 2, 1)]), "guide 'g' follows curve 1; there are 1"),
    ],
)
def test_plot_doublings_refuses_what_does_not_fit(kwargs, message):
    arguments = dict(sizes=[1, 2, 4], curves=[[1, 2, 3]], xlabel="x", ylabel="y", legend=["a"])
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        plot_doublings(**arguments)


def test_show_weight_pair_shares_one_scale():
    show_weight_pair(torch.rand(2, 5, 5) * 0.2, ["left", "right"])
    images = [ax.images[0] for ax in plt.gcf().axes if ax.images]
    assert len(images) == 2 and all(image.get_clim() == (0.0, 1.0) for image in images)
    with pytest.raises(ValueError, match="weights must have shape"):
        show_weight_pair(torch.rand(3, 5, 5), ["a", "b"])
    with pytest.raises(ValueError, match="titles has 1 labels? for 2 matrices"):
        show_weight_pair(torch.rand(2, 5, 5), ["a"])
