"""The gated feed-forward layer of modern decoders, SwiGLU (sec-modern-decoder; Shazeer, 2020).

Submodule names ``gate_proj``, ``up_proj`` and ``down_proj`` follow Hugging Face's ``LlamaMLP``,
so its state dict loads here unchanged. GPT-2's two-layer GELU MLP is
:class:`companion.models.vit.ViTMLP`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import check_dropout, check_positive


class SwiGLU(nn.Module):
    """A feed-forward layer whose hidden units are gated by another projection of the input:

        SwiGLU(x) = W_down (SiLU(W_gate x) * W_up x),   SiLU(z) = z sigmoid(z)

    with ``W_gate, W_up`` of shape ``(ffn_num_hiddens, num_hiddens)`` and ``W_down`` of shape
    ``(num_hiddens, ffn_num_hiddens)``, no biases by default. Three matrices instead of two: at
    equal parameter count its hidden width is 2/3 of a GELU MLP's (Llama's ``8d/3`` instead of
    ``4d``). Applied to each token on its own, ``(..., num_hiddens)`` in and out.
    """

    def __init__(
        self, num_hiddens: int, ffn_num_hiddens: int, dropout: float = 0.0, bias: bool = False
    ) -> None:
        super().__init__()
        check_positive(num_hiddens=num_hiddens, ffn_num_hiddens=ffn_num_hiddens)
        self.gate_proj = nn.Linear(num_hiddens, ffn_num_hiddens, bias=bias)  # W_gate
        self.up_proj = nn.Linear(num_hiddens, ffn_num_hiddens, bias=bias)  # W_up
        self.down_proj = nn.Linear(ffn_num_hiddens, num_hiddens, bias=bias)  # W_down
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if X.dim() == 0 or X.shape[-1] != self.gate_proj.in_features:
            raise ValueError(
                f"X must have num_hiddens={self.gate_proj.in_features} features on its last "
                f"axis; got shape {tuple(X.shape)}"
            )
        hidden = F.silu(self.gate_proj(X)) * self.up_proj(X)  # (..., ffn_num_hiddens)
        return self.dropout(self.down_proj(hidden))  # (..., num_hiddens)
