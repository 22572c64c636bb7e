"""Positions: the sinusoidal encoding added to the inputs (sec-positional-encoding), and ALiBi's
biases added to the attention scores (sec-modern-decoder). Rotary positions, which rotate the
queries and keys, are :mod:`companion.layers.rotary`.

:class:`PositionalEncoding` has the name, signature and numbers of d2l's. Two extensions: any
width works (d2l fails on an odd ``num_hiddens``), and ``forward`` takes a keyword-only
``offset``, the position of the first step, which incremental decoding needs.
"""

from __future__ import annotations

import torch
from torch import nn

from companion._validate import check_dropout, check_like_weights, check_positive


class PositionalEncoding(nn.Module):
    """Add a fixed sinusoidal encoding of each step's position, then apply dropout:

        p_{i,2j}   = sin(i / 10000^{2j/d})
        p_{i,2j+1} = cos(i / 10000^{2j/d})

    for position ``i`` and feature ``2j`` or ``2j+1`` of ``d = num_hiddens``. Each pair of
    features is a point on a circle turning at its own frequency, so moving ``delta`` steps
    rotates every pair by a fixed angle: the encoding of ``i + delta`` is a linear function of
    the encoding of ``i``. ``P`` of shape ``(1, max_len, num_hiddens)`` holds the table; it is a
    non-persistent buffer, so ``.to(device)`` moves it and a d2l ``state_dict`` (where ``P`` is a
    plain attribute) still loads with ``strict=True``.
    """

    P: torch.Tensor  # (1, max_len, num_hiddens): a buffer, moved with the module

    def __init__(self, num_hiddens: int, dropout: float, max_len: int = 1000) -> None:
        super().__init__()
        check_positive(num_hiddens=num_hiddens, max_len=max_len)
        self.dropout = nn.Dropout(check_dropout(dropout))
        # The angles i / 10000^{2j/d}, computed exactly as d2l does: (max_len, ceil(d / 2))
        angles = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens
        )
        P = torch.zeros((1, max_len, num_hiddens))
        P[:, :, 0::2] = torch.sin(angles)
        P[:, :, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # odd d: one cosine fewer
        self.register_buffer("P", P, persistent=False)

    def forward(self, X: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """``X`` of shape ``(batch, steps, num_hiddens)``; its first step is at ``offset``."""
        max_len, num_hiddens = self.P.shape[1], self.P.shape[2]
        check_like_weights(X, self.P)
        if X.dim() != 3 or X.shape[-1] != num_hiddens:
            raise ValueError(
                f"X must have shape (batch, steps, num_hiddens={num_hiddens}); got {tuple(X.shape)}"
            )
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(f"offset must be an int, the first step's position; got {offset!r}")
        if offset < 0 or offset + X.shape[1] > max_len:
            raise ValueError(
                f"X has {X.shape[1]} steps from offset {offset}, positions {offset}.."
                f"{offset + X.shape[1] - 1}, but max_len={max_len}; construct the encoding "
                "with a larger max_len"
            )
        X = X + self.P[:, offset : offset + X.shape[1], :]  # (batch, steps, num_hiddens)
        return self.dropout(X)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's slope per head (Press et al., 2022): ``2^(-8 h / num_heads)``, ``h = 1..heads``,
    a geometric sequence from ``2^(-8/num_heads)`` down to ``2^-8``."""
    check_positive(num_heads=num_heads)
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1) / num_heads)  # (heads,)


def alibi_bias(
    slopes: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor
) -> torch.Tensor:
    """ALiBi (sec-modern-decoder): what head ``i`` adds to the score of the query at position
    ``m`` and the key at position ``n``, a penalty growing with their distance,

        bias_i(m, n) = -slope_i (m - n),

    ``(heads, queries, keys)``. No positions are added to the inputs: the scores alone see them,
    as offsets, so the model meets no position it was not trained on."""
    distance = query_positions[:, None] - key_positions[None, :]  # m - n: (queries, keys)
    return -slopes[:, None, None] * distance.to(slopes.dtype)  # (heads, queries, keys)
