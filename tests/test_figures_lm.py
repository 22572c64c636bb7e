"""The language-model chapter's table of losses by word class."""

from __future__ import annotations

import math

import pytest

from companion.figures.lm import loss_table


def test_loss_table_puts_the_most_frequent_class_first_with_share_mean_and_exp():
    rows = loss_table({"verb": [1.0], "noun": [4.0, 5.0, 4.5]}).splitlines()
    assert rows[0].split() == ["label", "share", "loss", "(nats)", "e^loss"]
    assert rows[1].split() == ["noun", "0.750", "4.500", f"{math.exp(4.5):.1f}"]
    assert rows[2].split() == ["verb", "0.250", "1.000", "2.7"]


@pytest.mark.parametrize("losses", [{}, {"noun": []}])
def test_loss_table_refuses_empty_groups(losses):
    with pytest.raises(ValueError, match="non-empty"):
        loss_table(losses)
