"""plot_rotating_pair and show_score_panels (companion.figures.positional): what they draw, and
the clear errors for what they cannot."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest
import torch

from companion.figures.positional import plot_rotating_pair, show_score_panels


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig) -> list[str]:
    return [text.get_text() for ax in fig.axes for text in ax.texts]


def test_plot_rotating_pair_draws_the_sinusoid_clockwise_and_rope_counter_clockwise():
    plot_rotating_pair(omega=1.0, num_positions=4, offset=2)
    fig = plt.gcf()
    left, right = fig.axes
    dots = next(line for line in left.get_lines() if line.get_marker() == "o")
    xs, ys = dots.get_xdata(), dots.get_ydata()
    assert len(xs) == 4 and (xs[0], ys[0]) == (0.0, 1.0)  # position 0: (sin 0, cos 0)
    assert xs[1] == pytest.approx(math.sin(1.0)) and ys[1] == pytest.approx(math.cos(1.0))
    assert {"$i = 0$", "$i = 3$"} <= set(texts(fig)) and "$i = 4$" not in texts(fig)
    labels = set(texts(fig))
    assert {"$\\tilde q$, $i = 0$", "$\\tilde k$, $t = 2$", "$\\tilde k$, $t = 5$"} <= labels
    assert "clockwise" in left.get_title() and "counter-clockwise" in right.get_title()


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(omega=0.0), "omega"),
        (dict(num_positions=0), "num_positions"),
        (dict(offset=1.5), "offset"),
    ],
)
def test_plot_rotating_pair_refuses_what_it_cannot_draw(kwargs, error):
    with pytest.raises((ValueError, TypeError), match=error):
        plot_rotating_pair(**kwargs)


def test_show_score_panels_gives_each_panel_its_scale_unless_shared():
    small, large = torch.rand(4, 4), 10 + torch.rand(4, 4)
    show_score_panels(torch.stack([small, large]), ["small", "large"], "key", "query")
    images = [ax.images[0] for ax in plt.gcf().axes if ax.images]
    assert len(images) == 2 and images[0].get_clim()[1] < 1.0 < 10.0 < images[1].get_clim()[0]
    plt.close("all")
    masked = large.masked_fill(torch.ones(4, 4).triu(1).bool(), float("nan"))
    show_score_panels(
        torch.stack([small, masked]), ["small", "masked"], "key", "query", shared_scale=True
    )
    images = [ax.images[0] for ax in plt.gcf().axes if ax.images]
    assert images[0].get_clim() == images[1].get_clim()
    assert images[0].get_clim()[1] == pytest.approx(masked.nan_to_num(0).max().item())


def test_show_score_panels_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="matrices must have shape"):
        show_score_panels(torch.rand(4, 4), ["one"], "key", "query")
    with pytest.raises(ValueError, match="titles has 1 labels? for 2 panels"):
        show_score_panels(torch.rand(2, 4, 4), ["one"], "key", "query")
