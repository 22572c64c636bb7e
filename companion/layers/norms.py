"""Root-mean-square layer normalization (sec-modern-decoder; Zhang and Sennrich, 2019), the
norm of Llama, Mistral, Qwen and Gemma in place of layer normalization, and :func:`make_norm`,
which builds either norm by name.

Parameter name ``weight`` and the default ``eps`` follow Hugging Face's ``LlamaRMSNorm``, so its
state dict loads here unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from companion._validate import check_like_weights, check_positive


class RMSNorm(nn.Module):
    """Scale each vector by the root of its mean square, then by a learned gain ``g``:

        RMSNorm(x) = x / sqrt(mean_j x_j^2 + eps) * g,   x, g in R^d

    Layer normalization also subtracts the mean and adds a learned bias; RMSNorm does neither,
    so it has ``d`` parameters instead of ``2 d`` and one reduction instead of two. ``eps`` keeps
    an all-zero vector finite. ``X`` is ``(..., num_hiddens)`` in and out. The mean square is
    taken in float32 whatever the input's dtype, as Llama does.
    """

    def __init__(self, num_hiddens: int, eps: float = 1e-6) -> None:
        super().__init__()
        check_positive(num_hiddens=num_hiddens)
        if not eps > 0:
            raise ValueError(f"eps must be positive (it keeps a zero vector finite); got {eps}")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_hiddens))  # g

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if X.dim() == 0 or X.shape[-1] != self.weight.shape[0]:
            raise ValueError(
                f"X must have num_hiddens={self.weight.shape[0]} features on its last axis; "
                f"got shape {tuple(X.shape)}"
            )
        check_like_weights(X, self.weight)
        X32 = X.float()
        mean_square = X32.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return self.weight * (X32 * torch.rsqrt(mean_square + self.eps)).to(X.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def make_norm(norm: str, norm_shape: int | list[int] | torch.Size, eps: float = 1e-5) -> nn.Module:
    """``"layer"``: :class:`torch.nn.LayerNorm`; ``"rms"``:
    :class:`RMSNorm`."""
    if norm == "rms":
        if not isinstance(norm_shape, int):
            raise ValueError(f"an RMSNorm normalizes one axis; got norm_shape={norm_shape}")
        return RMSNorm(norm_shape, eps=eps)
    if norm != "layer":
        raise ValueError(f"norm must be 'layer' or 'rms'; got {norm!r}")
    return nn.LayerNorm(norm_shape, eps=eps)
