"""The figures of sec-transformer: a row of attention maps per layer, the training curves with
their schedule, and every run of a learning-rate search."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from companion.experiments import rnn_comparison
from companion.figures.transformer import (
    comparison_table,
    plot_lr_sweep,
    plot_training_curves,
    show_layer_attention,
)


def run(lr, seed, exact_match, steps=10):
    curve = {"loss": [2.0 / (1 + s + seed) for s in range(steps)], "lr": [lr] * steps}
    return {"lr": lr, "seed": seed, "exact_match": exact_match, "curve": curve}


def test_show_layer_attention_labels_each_layer_and_cuts_the_padding():
    weights = torch.rand(2, 3, 6, 7).softmax(dim=-1)  # (layers, heads, queries, keys)
    show_layer_attention(weights, list("abcde"), list("vwxyz"), "query", "key")
    fig = plt.gcf()
    try:
        maps = [ax for ax in fig.axes if ax.get_images()]
        assert len(maps) == 6
        assert maps[0].get_ylabel() == "layer 1\nquery" and maps[3].get_ylabel() == "layer 2\nquery"
        assert maps[0].get_title() == "head 1" and maps[0].get_images()[0].get_array().shape == (
            5,
            5,
        )
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="query_tokens holds 7 tokens for 6 steps"):
        show_layer_attention(weights, list("abcdefg"), list("vwxyz"), "query", "key")
    with pytest.raises(ValueError, match=r"\(layers, heads, queries, keys\)"):
        show_layer_attention(weights[0], list("ab"), list("vw"), "query", "key")


def test_plot_training_curves_draws_every_run_and_its_schedule():
    runs = {"A": [run(1e-3, s, 0.9) for s in range(3)], "B": [run(3e-2, s, 0.2) for s in range(2)]}
    plot_training_curves(runs)
    fig = plt.gcf()
    try:
        loss_ax, lr_ax = fig.axes
        assert len(loss_ax.get_lines()) == 5 and loss_ax.get_yscale() == "log"
        assert len(lr_ax.get_lines()) == 5 and lr_ax.get_ylim()[0] == 0
    finally:
        plt.close(fig)


def test_plot_lr_sweep_shows_every_run_and_the_means_on_honest_axes():
    runs = {"A": [run(lr, s, 0.5 + lr) for lr in (1e-3, 1e-2) for s in range(3)]}
    plot_lr_sweep(runs)
    fig = plt.gcf()
    try:
        (ax,) = fig.axes
        mean_line, points = ax.get_lines()
        assert len(points.get_xdata()) == 6 and list(mean_line.get_xdata()) == [1e-3, 1e-2]
        assert ax.get_xscale() == "log" and ax.get_ylim() == (0, 1.02)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="holds no run"):
        plot_lr_sweep({"A": []})


def test_comparison_table_has_a_row_per_setting_and_marks_the_chosen_rates():
    def runs(model, lr, exact_match, **options):
        setting = {"dropout": 0.0, "label_smoothing": 0.0, **options}
        return [
            {
                "model": model,
                "lr": lr,
                **setting,
                "loss": 0.5,
                "val_exact_match": exact_match,
                "exact_match": exact_match + s / 100,
                "standard_bleu": 90.0,
            }
            for s in range(3)
        ]

    results = {"chosen_lr": {"Transformer": 3e-3, "Bahdanau": 1e-2}, "runs": []}
    for name in rnn_comparison.MODELS:
        for lr in rnn_comparison.LEARNING_RATES[name]:
            results["runs"] += runs(name, lr, 0.5)
    for options in rnn_comparison.REGULARISED:
        results["runs"] += runs("Transformer", rnn_comparison.CHAPTER_LR, 0.4, **options)
    header, *rows = comparison_table(results).splitlines()
    assert "test exact match" in header and len(rows) == 8
    chosen = ["chosen" in row for row in rows[:6]]
    assert chosen == [False, True, False, False, True, False]
    assert "dropout 0.1" in rows[6] and "label_smoothing 0.1" in rows[7]
    assert "0.500 to 0.520" in rows[0]
    results["runs"] = [r for r in results["runs"] if r["model"] != "Bahdanau"]
    with pytest.raises(ValueError, match="no run of Bahdanau"):
        comparison_table(results)
