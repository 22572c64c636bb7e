"""The Transformer-against-GRU comparison of sec-transformer (companion.experiments.rnn_comparison):
its committed results were made with the module's current setting and sweep, a run trains and
scores both models and records its curve, and the learning rate is picked on validation data."""

from __future__ import annotations

import pytest
import torch

import companion.experiments.rnn_comparison as comparison
from companion.bench.rnn import settings_to_run


def test_the_committed_results_hold_every_setting_and_seed_of_the_current_sweep():
    results = comparison.load_comparison_results()
    assert results["settings"] == comparison.SETTINGS
    assert results["benchmark"] == "python -m companion.bench rnn"
    assert {k: tuple(v) for k, v in results["learning_rates"].items()} == comparison.LEARNING_RATES
    steps = results["runs"][0]["curve"]["lr"]
    for setting in settings_to_run():
        options = {k: setting[k] for k in ("dropout", "label_smoothing")}
        runs = comparison.select_runs(results, setting["model"], setting["lr"], **options)
        assert [run["seed"] for run in runs] == [0, 1, 2], setting
        for run in runs:
            assert 0 <= run["exact_match"] <= 1 and 0 <= run["bleu"] <= 1
            assert 0 <= run["val_exact_match"] <= 1
            assert 0 <= run["standard_bleu"] <= 100 and run["loss"] > 0 and run["seconds"] > 0
            assert len(run["curve"]["loss"]) == len(run["curve"]["lr"]) == len(steps)
            assert max(run["curve"]["lr"]) == pytest.approx(run["lr"], rel=1e-3)
    for name in comparison.MODELS:
        assert results["chosen_lr"][name] == comparison.chosen_lr(results, name)


def test_a_run_trains_and_scores_each_model(monkeypatch):
    tiny = {**comparison.SETTINGS, "num_examples": 400, "num_epochs": 1, "batch_size": 64}
    monkeypatch.setattr(comparison, "SETTINGS", tiny)
    cpu = torch.device("cpu")
    first = comparison.train_and_score("Bahdanau", seed=0, device=cpu, lr=1e-2)
    again = comparison.train_and_score("Bahdanau", seed=0, device=cpu, lr=1e-2)
    other = comparison.train_and_score("Transformer", seed=1, device=cpu, lr=3e-3, dropout=0.1)
    for key in ("loss", "bleu", "exact_match", "example", "curve"):  # a seed fixes the run
        assert first[key] == again[key]
    assert other["loss"] != first["loss"] and isinstance(other["example"], str)
    steps = len(first["curve"]["loss"])
    assert steps == 5 and len(first["curve"]["lr"]) == steps  # 320 pairs in batches of 64
    assert max(first["curve"]["lr"]) <= 1e-2 and first["curve"]["lr"][-1] < 1e-3  # one cycle


def test_the_learning_rate_is_chosen_on_validation_exact_match():
    def run(lr, seed, val):
        return {"model": "Bahdanau", "lr": lr, "dropout": 0.0, "label_smoothing": 0.0,
                "seed": seed, "val_exact_match": val, "exact_match": 1 - val}  # fmt: skip

    rates = comparison.LEARNING_RATES["Bahdanau"]
    runs = [run(lr, seed, 0.5 if lr == rates[1] else 0.2) for lr in rates for seed in range(3)]
    assert comparison.chosen_lr({"runs": runs}, "Bahdanau") == rates[1]


def test_an_unknown_model_is_a_value_error():
    _, src_vocab, tgt_vocab = comparison.task()
    with pytest.raises(ValueError, match="Transformer"):
        comparison.build_model("LSTM", src_vocab, tgt_vocab)


def test_the_baseline_is_bidirectional_and_about_as_large_as_the_transformer():
    _, src_vocab, tgt_vocab = comparison.task()
    sizes = {}
    for name in comparison.MODELS:
        model = comparison.build_model(name, src_vocab, tgt_vocab)
        sizes[name] = sum(p.numel() for p in model.parameters())
    assert comparison.build_model("Bahdanau", src_vocab, tgt_vocab).encoder.bidirectional
    assert abs(sizes["Bahdanau"] / sizes["Transformer"] - 1) < 0.05
