"""The pretraining chapter's tables: the learning curve's runs and the guesses by word class."""

from __future__ import annotations

import pytest

from companion.figures.pretraining import learning_curve_table, word_class_table


def test_learning_curve_table_lists_every_run_and_the_mean_training_accuracy():
    curves = {"pretrained": [[0.5, 0.7]], "from scratch": [[0.25, 0.5]]}
    train = {("pretrained", 50, 0): 1.0, ("pretrained", 50, 1): 0.5}
    train |= {("from scratch", 50, 0): 0.25, ("from scratch", 50, 1): 0.75}
    rows = learning_curve_table([50], curves, train, seeds=[0, 1]).splitlines()
    assert rows[0].split() == [
        "labelled",
        "model",
        "test",
        "accuracy,",
        "two",
        "runs",
        "training",
        "accuracy",
    ]
    assert rows[1].split() == ["50", "pretrained", "0.5000", "0.7000", "0.7500"]
    assert rows[2].split() == ["50", "from", "scratch", "0.2500", "0.5000", "0.5000"]


def test_word_class_table_sorts_by_count_and_shows_agreement_only_where_asked():
    rows = word_class_table({"verb": (4, 1, 0), "noun": (10, 0, 8)}).splitlines()
    assert rows[1].split() == ["noun", "10", "0.0000", "0.8000"]
    assert rows[2].split() == ["verb", "4", "0.2500"]
    assert rows[3].split() == ["all", "14", f"{1 / 14:.4f}"]


@pytest.mark.parametrize("counts", [{}, {"noun": (0, 0, 0)}, {"noun": (3, 1)}])
def test_word_class_table_refuses_empty_or_malformed_counts(counts):
    with pytest.raises(ValueError, match="hidden > 0"):
        word_class_table(counts)
