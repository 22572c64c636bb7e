"""The FLOP formulas of chapter 4 agree with what PyTorch runs, and timing returns seconds."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from companion.experiments.complexity import (
    conv1d_flops,
    count_flops,
    rnn_flops,
    self_attention_flops,
    time_call,
)


@pytest.mark.parametrize("n, d, k, batch", [(8, 4, 3, 1), (16, 8, 5, 2), (7, 3, 1, 3)])
def test_formulas_match_the_flop_counter(n, d, k, batch):
    x = torch.randn(batch, n, d)  # (batch, n, d)
    conv = nn.Conv1d(d, d, k, padding=k // 2, bias=False)
    rnn = nn.RNN(d, d, batch_first=True, bias=False)
    assert count_flops(lambda: conv(x.transpose(1, 2))) == conv1d_flops(n, d, k, batch)
    assert count_flops(lambda: rnn(x)) == rnn_flops(n, d, batch)
    explicit = count_flops(lambda: torch.softmax(x @ x.transpose(1, 2), dim=-1) @ x)
    assert explicit == self_attention_flops(n, d, batch)
    assert count_flops(lambda: F.scaled_dot_product_attention(x, x, x)) == explicit


def test_fused_multi_head_attention_is_counted():
    q = torch.randn(2, 4, 16, 8)  # (batch, heads, n, head width): the fused CPU kernel's case
    assert count_flops(lambda: F.scaled_dot_product_attention(q, q, q)) == (
        self_attention_flops(16, 8, batch=2 * 4)
    )


def test_time_call_returns_the_fastest_call():
    calls = []
    seconds = time_call(lambda: calls.append(1), repeats=4, warmup=2)
    assert len(calls) == 6
    assert 0.0 <= seconds < 1.0
