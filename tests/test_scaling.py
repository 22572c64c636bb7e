"""The scaling measurement of sec-pretraining (companion.experiments.scaling): its committed results
hold every width, budget and seed of the module's setting, and a run scores every width."""

from __future__ import annotations

import math

import torch

import companion.experiments.scaling as scaling
from companion.data.tasks.language import language_model_vocab
from companion.models.decoder import DecoderLM


def test_the_committed_results_hold_the_current_setting():
    results = scaling.load_scaling_results()
    settings = results["settings"]
    assert settings["widths"] == list(scaling.WIDTHS)
    assert settings["steps"] == list(scaling.STEPS)
    assert settings["batch_size"] == scaling.BATCH_SIZE
    vocab_size = len(language_model_vocab())
    for width in scaling.WIDTHS:
        config = scaling.width_config(vocab_size, width)
        assert results["parameters"][str(width)] == scaling.non_embedding_parameters(config)
        for steps in scaling.STEPS:
            gaps = results["gaps"][str(steps)][str(width)]
            assert len(gaps) == settings["seeds"] and all(0 < g < 3 for g in gaps)


def test_non_embedding_parameters_leave_out_the_two_tables():
    config = scaling.width_config(30, 16)
    model = DecoderLM(config)
    blocks = sum(
        p.numel() for name, p in model.named_parameters() if not name.endswith("embedding.weight")
    )
    assert scaling.non_embedding_parameters(config) == blocks


def test_a_run_scores_every_width_and_a_seed_reproduces_it(monkeypatch):
    monkeypatch.setattr(scaling, "WIDTHS", (8, 16))
    vocab_size = len(language_model_vocab())
    first = scaling.gaps_by_width(vocab_size, seed=0, steps=4, device=torch.device("cpu"))
    again = scaling.gaps_by_width(vocab_size, seed=0, steps=4, device=torch.device("cpu"))
    assert list(first) == [8, 16] and first == again
    assert all(math.isfinite(gap) and gap > 0 for gap in first.values())
