"""Rotary position embedding, RoPE (sec-modern-decoder; Su et al., 2021): positions as rotations
of the queries and keys, so that a query-key score depends on the two tokens and their offset.

**Two pairings, one idea.** RoPE rotates the features of each head in pairs, pair ``i`` by the
angle ``m theta_i`` at position ``m``. Which features form a pair is a convention:

- ``"interleaved"``: pairs ``(2i, 2i+1)``, as the paper writes it (and Meta's original Llama
  code, which views the pairs as complex numbers);
- ``"half"``: pairs ``(i, i + d/2)``, as Hugging Face's Llama (``rotate_half``) and most
  checkpoints converted to it.

Both are the same model up to a fixed permutation of ``W_q``'s and ``W_k``'s output rows, so
either trains equally well; but a checkpoint trained with one pairing gives nonsense with the
other, which is why Hugging Face permutes Meta's weights when it converts them.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from companion._validate import check_integer, check_like_weights, check_number, check_positive

Pairing = Literal["half", "interleaved"]
PAIRINGS = ("half", "interleaved")


def check_pairing(pairing: str) -> None:
    """``pairing`` must be one of :data:`PAIRINGS`."""
    if not isinstance(pairing, str) or pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}; got {pairing!r}")


class RotaryEmbedding(nn.Module):
    """Rotate each pair ``(x_a, x_b)`` of a query's or key's features by ``m theta_i``:

        (x_a, x_b) -> (x_a cos(m theta_i) - x_b sin(m theta_i),
                       x_a sin(m theta_i) + x_b cos(m theta_i)),
        theta_i = base^(-2i/d),   i = 0 .. d/2 - 1

    for the token at position ``m`` and ``d = head_dim``. A rotation keeps lengths and
    ``<R_m q, R_n k> = <q, R_{n-m} k>``: the score sees only the offset ``n - m``. RoPE rotates
    queries and keys, never values. ``X`` is ``(batch, heads, steps, head_dim)`` in and out; its
    first step is at position ``offset``. ``pairing`` picks which features form a pair (see the
    module docstring). No table: the angles are computed for the positions asked, so any
    length works.
    """

    inv_freq: torch.Tensor  # theta_i, a buffer

    def __init__(self, head_dim: int, base: float = 10000.0, pairing: Pairing = "half") -> None:
        super().__init__()
        check_positive(head_dim=head_dim)
        if head_dim % 2:
            raise ValueError(f"head_dim must be even (RoPE rotates pairs); got {head_dim}")
        base = check_number("base", base, above=1)
        check_pairing(pairing)
        self.head_dim, self.pairing = head_dim, pairing
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # theta_i, (head_dim / 2,)

    def angles(self, num_steps: int, offset: int = 0) -> torch.Tensor:
        """``m theta_i`` for positions ``m = offset .. offset + num_steps - 1``: ``(steps, d/2)``;
        ``num_steps`` and ``offset`` are integers >= 0."""
        num_steps = check_integer("num_steps", num_steps, minimum=0)
        offset = check_integer("offset", offset, minimum=0)
        positions = torch.arange(offset, offset + num_steps, device=self.inv_freq.device)
        return positions.float()[:, None] * self.inv_freq[None, :]  # (steps, head_dim / 2)

    def forward(self, X: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        check_like_weights(X, self.inv_freq)
        if X.dim() != 4 or X.shape[-1] != self.head_dim:
            raise ValueError(
                f"X must be 4-D (batch, heads, steps, head_dim={self.head_dim}); "
                f"got shape {tuple(X.shape)}"
            )
        check_integer("offset", offset, minimum=0)
        angles = self.angles(X.shape[2], offset)
        cos, sin = angles.cos().to(X.dtype), angles.sin().to(X.dtype)  # (steps, head_dim / 2)
        if self.pairing == "half":  # pairs (i, i + d/2)
            x_a, x_b = X[..., : self.head_dim // 2], X[..., self.head_dim // 2 :]
            return torch.cat((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)
        x_a, x_b = X[..., 0::2], X[..., 1::2]  # pairs (2i, 2i + 1)
        rotated = torch.stack((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)
        return rotated.flatten(-2)  # (batch, heads, steps, head_dim), pairs side by side

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, pairing={self.pairing!r}"
