"""Argument checks shared by the layers: each failure is a ``ValueError`` naming the argument
and the value or shape it saw, raised before any matmul can fail cryptically."""

from __future__ import annotations

import torch


def check_dropout(dropout: float) -> float:
    """Return ``dropout`` if it is a probability in [0, 1); raise a ``ValueError`` otherwise."""
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1); got {dropout}")
    return dropout


def check_positive(**sizes: int) -> None:
    """Each keyword must be a positive integer, e.g. ``check_positive(num_layers=2)``."""
    for name, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name} must be a positive integer; got {size!r}")


def check_token_ids(X: torch.Tensor, vocab_size: int, name: str = "X") -> torch.Tensor:
    """``X`` must be a ``(batch, num_steps)`` integer tensor of ids in ``[0, vocab_size)``."""
    if not isinstance(X, torch.Tensor):
        raise ValueError(f"{name} must be a tensor of token ids; got {type(X).__name__}")
    if X.dim() != 2:
        raise ValueError(f"{name} must be 2-D (batch, num_steps); got shape {tuple(X.shape)}")
    if X.dtype.is_floating_point or X.dtype.is_complex or X.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids (torch.long); got {X.dtype}")
    if X.numel() and (X.min() < 0 or X.max() >= vocab_size):
        raise ValueError(
            f"{name} holds token ids from {X.min().item()} to {X.max().item()}, "
            f"outside the vocabulary [0, {vocab_size})"
        )
    return X
