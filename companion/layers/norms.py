"""Root-mean-square layer normalization (sec-modern-decoder; Zhang and Sennrich, 2019), the
norm of Llama, Mistral, Qwen and Gemma in place of layer normalization, and :func:`make_norm`,
which builds either norm by name.

Parameter name ``weight`` and the default ``eps`` follow Hugging Face's ``LlamaRMSNorm``, so its
state dict loads here unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from companion._validate import check_like_weights, check_number, check_positive


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
        self.eps = _check_eps(eps)
        self.weight = nn.Parameter(torch.ones(num_hiddens))  # g

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_like_weights(X, self.weight)
        if X.dim() == 0 or X.shape[-1] != self.weight.shape[0]:
            raise ValueError(
                f"X must have num_hiddens={self.weight.shape[0]} features on its last axis; "
                f"got shape {tuple(X.shape)}"
            )
        X32 = X.float()
        mean_square = X32.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return self.weight * (X32 * torch.rsqrt(mean_square + self.eps)).to(X.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def _check_eps(eps: float) -> float:
    """A norm's ``eps``: a finite number > 0, returned as a ``float``."""
    return check_number("eps", eps, above=0, note="it keeps a zero vector finite")


def make_norm(norm: str, norm_shape: int | list[int] | torch.Size, eps: float = 1e-5) -> nn.Module:
    """``"layer"``: :class:`torch.nn.LayerNorm` over the last axes, ``norm_shape`` (a positive
    integer, or a list of them); ``"rms"``: :class:`RMSNorm` over the last axis, ``norm_shape``
    a positive integer. ``eps`` is a finite number > 0."""
    if not isinstance(norm, str) or norm not in ("layer", "rms"):
        raise ValueError(f"norm must be 'layer' or 'rms'; got {norm!r}")
    _check_eps(eps)
    if norm == "rms":
        if not isinstance(norm_shape, int):
            raise ValueError(f"an RMSNorm normalizes one axis; got norm_shape={norm_shape}")
        return RMSNorm(norm_shape, eps=eps)
    sizes = [norm_shape] if isinstance(norm_shape, int) else norm_shape
    if not isinstance(sizes, (list, tuple, torch.Size)) or not sizes:
        raise ValueError(
            "norm_shape must be a positive integer or a non-empty list of them, the sizes of "
            f"the last axes; got {norm_shape!r}"
        )
    for size in sizes:
        check_positive(norm_shape=size)
    return nn.LayerNorm(norm_shape, eps=eps)
