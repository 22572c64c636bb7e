"""Argument checks shared by the layers (attention, linear attention, Transformer, RNNs).

Each failure is a ``ValueError`` naming the argument and the value or shape it saw, raised
before any matmul can fail cryptically."""

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


def describe_shapes(**tensors: torch.Tensor) -> str:
    """``queries (2, 3, 4), keys (2, 5, 4)``: the shapes an error message names."""
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())


def check_qkv(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, ranks: tuple[int, ...]
) -> None:
    """Ranks, batch axes and step counts that every attention layer needs to agree on."""
    seen = describe_shapes(queries=queries, keys=keys, values=values)
    wanted = " or ".join(f"{r}-D" for r in ranks)
    if any(t.dim() not in ranks for t in (queries, keys, values)) or not (
        queries.dim() == keys.dim() == values.dim()
    ):
        raise ValueError(f"queries, keys and values must all be {wanted}; got {seen}")
    if not queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]:
        raise ValueError(f"queries, keys and values must have the same batch size; got {seen}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"keys and values must have the same number of steps; got {seen}")


def check_valid_lens(
    valid_lens: torch.Tensor, batch_size: int, num_queries: int, num_keys: int
) -> None:
    if not isinstance(valid_lens, torch.Tensor):
        raise ValueError(
            f"valid_lens must be a tensor of integers; got {type(valid_lens).__name__}"
        )
    if (
        valid_lens.dtype.is_floating_point
        or valid_lens.dtype.is_complex
        or (valid_lens.dtype == torch.bool)
    ):
        raise ValueError(f"valid_lens must hold integers (torch.long); got {valid_lens.dtype}")
    if valid_lens.shape not in ((batch_size,), (batch_size, num_queries)):
        raise ValueError(
            f"valid_lens must have shape (batch,) = ({batch_size},) or (batch, queries) = "
            f"({batch_size}, {num_queries}); got {tuple(valid_lens.shape)}"
        )
    if valid_lens.numel() and valid_lens.min() < 0:
        raise ValueError(f"valid_lens must be >= 0; got {valid_lens.min().item()}")
    if valid_lens.numel() and valid_lens.max() > num_keys:
        raise ValueError(
            f"valid_lens must be <= the number of keys ({num_keys}); got {valid_lens.max().item()}"
        )
