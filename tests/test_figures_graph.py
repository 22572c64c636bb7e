"""show_graph_attention (companion.figures.plot): the graph drawn from its mask, beside the
weights, and a clear error for weights and a mask that do not match the nodes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.patches import Circle

from companion.figures.plot import show_graph_attention


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_an_arrow_per_edge_double_headed_when_it_runs_both_ways_and_a_ring_per_self_loop():
    mask = torch.tensor([[1, 1, 0], [1, 0, 1], [0, 0, 1]], dtype=torch.bool)  # query, key
    weights = torch.softmax(torch.zeros(3, 3).masked_fill(~mask, float("-inf")), dim=-1)
    show_graph_attention(weights, mask, ["A", "B", "C"])
    graph_ax, heat_ax = plt.gcf().axes[:2]
    arrows = [a for a in graph_ax.texts if getattr(a, "arrow_patch", None) is not None]
    styles = sorted(type(a.arrow_patch.get_arrowstyle()).__name__ for a in arrows)
    assert styles == ["CurveFilledAB", "CurveFilledB"]  # A <-> B; and C -> B: B sees C
    (one_way,) = [a for a in arrows if type(a.arrow_patch.get_arrowstyle()).__name__[-2:] != "AB"]
    labels = {t.get_text(): t.get_position() for t in graph_ax.texts if t.get_text()}
    assert one_way.xyann == pytest.approx(labels["C"]) and one_way.xy == pytest.approx(labels["B"])
    assert {t.get_text() for t in graph_ax.texts} >= {"A", "B", "C"}
    circles = [p for p in graph_ax.patches if isinstance(p, Circle)]
    assert len(circles) == 3 + 2  # three nodes, and rings for A and C, which see themselves
    assert [t.get_text() for t in heat_ax.get_xticklabels()] == ["A", "B", "C"]


def test_weights_and_mask_must_match_the_nodes():
    with pytest.raises(ValueError, match="nodes"):
        show_graph_attention(torch.ones(3, 3), torch.ones(3, 3, dtype=torch.bool), ["A", "B"])
    with pytest.raises(TypeError, match="nodes"):
        show_graph_attention(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.bool), "AB")
