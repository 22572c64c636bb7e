"""The Transformer-against-GRU comparison of sec-transformer (companion.experiments.rnn_comparison):
its committed results were made with the module's current setting, and a run trains and scores
both models."""

from __future__ import annotations

import pytest
import torch

import companion.experiments.rnn_comparison as comparison


def test_the_committed_results_hold_every_model_and_seed_of_the_current_setting():
    results = comparison.load_comparison_results()
    assert results["settings"] == comparison.SETTINGS
    assert results["benchmark"] == "python -m companion.bench rnn"
    for name in comparison.MODELS:
        runs = results["runs"][name]
        assert [run["seed"] for run in runs] == [0, 1, 2]
        for run in runs:
            assert 0 <= run["exact_match"] <= 1 and 0 <= run["bleu"] <= 1
            assert 0 <= run["standard_bleu"] <= 100 and run["loss"] > 0 and run["seconds"] > 0


def test_a_run_trains_and_scores_each_model(monkeypatch):
    tiny = {**comparison.SETTINGS, "num_examples": 400, "num_epochs": 1, "batch_size": 64}
    monkeypatch.setattr(comparison, "SETTINGS", tiny)
    first = comparison.train_and_score("Bahdanau", seed=0, device=torch.device("cpu"))
    again = comparison.train_and_score("Bahdanau", seed=0, device=torch.device("cpu"))
    other = comparison.train_and_score("Transformer", seed=1, device=torch.device("cpu"))
    for key in ("loss", "bleu", "exact_match", "example"):  # a seed fixes the whole run
        assert first[key] == again[key]
    assert other["loss"] != first["loss"] and isinstance(other["example"], str)


def test_an_unknown_model_is_a_value_error():
    _, src_vocab, tgt_vocab = comparison.task()
    with pytest.raises(ValueError, match="Transformer"):
        comparison.build_model("LSTM", src_vocab, tgt_vocab)
