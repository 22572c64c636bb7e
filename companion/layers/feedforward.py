"""The feed-forward networks of the Transformer's blocks, applied to each position on its own:
the 2017 Transformer's ReLU network (:class:`PositionWiseFFN`, sec-transformer), the GELU MLP of
the ViT and GPT-2 (:class:`ViTMLP`, sec-vit), and the gated layer of modern decoders
(:class:`SwiGLU`, sec-modern-decoder; Shazeer, 2020).

The first two follow d2l's names; SwiGLU's submodule names ``gate_proj``, ``up_proj`` and
``down_proj`` follow Hugging Face's ``LlamaMLP``, so its state dict loads here unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import (
    check_dropout,
    check_in_features,
    check_like_weights,
    check_positive,
    check_type,
)
from companion.layers.attention import _linear


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network (sec-transformer):

        FFN(x) = W_2 relu(W_1 x + b_1) + b_2

    applied to every position's features ``x`` on its own, with the same weights at every
    position: a two-layer MLP on the last axis, ``dense1`` (``W_1``) and ``dense2`` (``W_2``).
    ``num_inputs`` fixes the input size; without it ``dense1`` is lazy, as in d2l, and the
    first call fixes it.
    """

    def __init__(
        self, ffn_num_hiddens: int, ffn_num_outputs: int, *, num_inputs: int | None = None
    ) -> None:
        super().__init__()
        check_positive(ffn_num_hiddens=ffn_num_hiddens, ffn_num_outputs=ffn_num_outputs)
        if num_inputs is not None:
            check_positive(num_inputs=num_inputs)
        self.dense1 = _linear(num_inputs, ffn_num_hiddens, bias=True)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_in_features(X=(self.dense1, X))
        # (..., features) -> (..., ffn_num_hiddens) -> (..., ffn_num_outputs)
        return self.dense2(self.relu(self.dense1(X)))


class ViTMLP(nn.Module):
    """The MLP of a pre-norm block (sec-vit; d2l's ``ViTMLP``, which GPT's blocks use too):
    GELU instead of ReLU, dropout after each layer:

        MLP(x) = Dropout(W_2 Dropout(GELU(W_1 x + b_1)) + b_2)

    applied to each token's features on its own, ``(..., num_inputs) -> (..., mlp_num_outputs)``.
    ``num_inputs`` fixes the input size; without it ``dense1`` is lazy, as in d2l.
    """

    def __init__(
        self,
        mlp_num_hiddens: int,
        mlp_num_outputs: int,
        dropout: float = 0.5,
        *,
        num_inputs: int | None = None,
    ) -> None:
        super().__init__()
        check_dropout(dropout)
        check_positive(mlp_num_hiddens=mlp_num_hiddens, mlp_num_outputs=mlp_num_outputs)
        if num_inputs is not None:
            check_positive(num_inputs=num_inputs)
        self.dense1 = _linear(num_inputs, mlp_num_hiddens, bias=True)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.Linear(mlp_num_hiddens, mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_in_features(x=(self.dense1, x))
        x = self.dropout1(self.gelu(self.dense1(x)))  # (..., mlp_num_hiddens)
        return self.dropout2(self.dense2(x))  # (..., mlp_num_outputs)


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
        check_type("bias", bias, bool, "True or False")
        self.gate_proj = nn.Linear(num_hiddens, ffn_num_hiddens, bias=bias)  # W_gate
        self.up_proj = nn.Linear(num_hiddens, ffn_num_hiddens, bias=bias)  # W_up
        self.down_proj = nn.Linear(ffn_num_hiddens, num_hiddens, bias=bias)  # W_down
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_like_weights(X, self.gate_proj.weight)
        if X.dim() == 0 or X.shape[-1] != self.gate_proj.in_features:
            raise ValueError(
                f"X must have num_hiddens={self.gate_proj.in_features} features on its last "
                f"axis; got shape {tuple(X.shape)}"
            )
        hidden = F.silu(self.gate_proj(X)) * self.up_proj(X)  # (..., ffn_num_hiddens)
        return self.dropout(self.down_proj(hidden))  # (..., num_hiddens)
