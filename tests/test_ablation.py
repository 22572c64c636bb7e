"""The ablation benchmark compares like with like: each variant changes only what it names, at
nearly the GPT-2 block's parameter count; the committed results say what made them."""

from __future__ import annotations

import math

import pytest

from companion.data.tasks.language import language_model_vocab
from companion.experiments.ablation import (
    LR_SWEEP,
    SWEPT,
    VARIANTS,
    gap_to_floor,
    gap_with_curve,
    language_data,
    load_results,
    num_parameters,
    variant_configs,
)

CONFIGS = variant_configs(len(language_model_vocab()))
BASELINE = CONFIGS["GPT-2 block"]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_changes_only_what_it_names_and_keeps_the_parameter_count(name):
    config = CONFIGS[name]
    assert config.replace(ffn_num_hiddens=BASELINE.ffn_num_hiddens) == BASELINE.replace(
        **VARIANTS[name]
    )
    assert abs(num_parameters(config) - num_parameters(BASELINE)) <= 0.002 * num_parameters(
        BASELINE
    )


def test_a_short_run_gives_a_finite_positive_gap():
    data = language_data(seed=0, num_train=4 * 8)
    gap = gap_to_floor(CONFIGS["all four"], data, seed=0, steps=4, batch_size=8)
    assert math.isfinite(gap) and gap > 0  # 4 steps are far from the floor


def test_leaving_one_out_keeps_the_other_three_changes():
    for name in ("RMSNorm", "RoPE", "SwiGLU", "GQA"):
        single, left_out = VARIANTS[f"+ {name}"], VARIANTS[f"all but {name}"]
        assert {**left_out, **single} == VARIANTS["all four"]
        assert not set(single) & set(left_out)


def test_the_learning_curve_is_the_same_training_cut_into_parts():
    data = language_data(seed=0, num_train=6 * 8)
    config = CONFIGS["all four"]
    gap = gap_to_floor(config, data, seed=0, steps=6, batch_size=8)
    final, curve = gap_with_curve(config, data, seed=0, steps=6, batch_size=8, points=3)
    assert final == gap and [step for step, _ in curve] == [2, 4, 6]
    assert curve[-1][1] == gap and curve[0][1] > curve[-1][1]  # it learns


def test_the_committed_results_name_their_machine_and_cover_every_variant():
    results = load_results()
    assert results["machine"] and results["versions"]["torch"]
    assert list(results["variants"]) == list(VARIANTS)
    settings = results["settings"]
    for name, row in results["variants"].items():
        assert len(row["gaps"]) == settings["seeds"] >= 3, name
        assert row["parameters"] == num_parameters(CONFIGS[name]), name
        assert len(row["curves"]) == settings["seeds"], name
        assert all(len(c) == len(settings["curve_steps"]) for c in row["curves"]), name
        assert [c[-1] for c in row["curves"]] == row["gaps"], name  # the last point is the gap
    assert list(results["lr_sweep"]) == list(SWEPT)
    for name, by_lr in results["lr_sweep"].items():
        assert sorted(map(float, by_lr)) == sorted([*LR_SWEEP, settings["lr"]]), name
        assert by_lr[format(settings["lr"], "g")]["gaps"] == results["variants"][name]["gaps"]


def test_the_committed_results_ship_with_the_package():
    """The chapter plots them in Colab too, where companion is pip-installed from a wheel."""
    import fnmatch
    import tomllib
    from pathlib import Path

    from companion.experiments.ablation import RESULTS

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["companion"]
    name = RESULTS.relative_to(root / "companion").as_posix()
    assert RESULTS.is_file() and any(fnmatch.fnmatch(name, p) for p in patterns), name


def test_the_llama_recipe_is_the_gpt_recipe_with_the_all_four_model(monkeypatch):
    import torch

    from companion.experiments.recipes import gpt, llama
    from companion.models.decoder import DecoderLM

    monkeypatch.setattr(gpt, "RECIPE_SENTENCES", 256)
    monkeypatch.setattr(gpt, "RECIPE_EPOCHS", 1)
    trained = []

    def fit(model, *args, **kwargs):  # record the model instead of training it
        trained.append(model)
        return {"gap": [9.0], "epoch": [1]}

    monkeypatch.setattr(gpt, "fit", fit)
    result = llama.time_to_quality(seed=0, device=torch.device("cpu"))
    (model,) = trained
    assert isinstance(model, DecoderLM) and model.config == CONFIGS["all four"]
    gpt_model, _ = gpt.recipe_gpt(len(language_model_vocab()))
    assert abs(num_parameters(model.config) - sum(p.numel() for p in gpt_model.parameters())) <= (
        0.002 * num_parameters(model.config)
    )  # the GPT recipe's size
    assert result.model.startswith("Llama-style") and result.reached is False


def test_the_ablation_figures_pair_each_seed_with_the_baseline():
    import matplotlib.pyplot as plt

    from companion.figures.decoder import plot_ablation_pairs, plot_learning_curves

    gaps = {"GPT-2 block": [0.08, 0.06], "all four": [0.05, 0.05]}
    plot_ablation_pairs(gaps)
    right = plt.gcf().axes[1]
    dots = [line for line in right.get_lines() if line.get_marker() == "o"]
    drawn = [[round(float(x), 6) for x in line.get_xdata()] for line in dots]
    assert drawn == [[0.0, 0.0], [-0.03, -0.01]]
    plt.close("all")
    with pytest.raises(ValueError, match="baseline"):
        plot_ablation_pairs({"all four": [0.1]})
    plot_learning_curves({"GPT-2 block": [[1.0, 0.2], [0.9, 0.1]]}, [150, 300])
    assert plt.gcf().axes[0].get_yscale() == "log"
    plt.close("all")
    with pytest.raises(ValueError, match="2 points"):
        plot_learning_curves({"GPT-2 block": [[1.0]]}, [150, 300])
