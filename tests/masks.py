"""Reference masks for the attention tests: built one entry at a time, the slow obvious way."""

from __future__ import annotations

import torch


def randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def lengths(
    kind: str, batch: int, queries: int, keys: int, seed: int = 0, minimum: int = 1
) -> torch.Tensor | None:
    """valid_lens of a kind, "none", "1d" or "2d", each drawn from [minimum, keys]."""
    if kind == "none":
        return None
    shape = (batch,) if kind == "1d" else (batch, queries)
    return torch.randint(minimum, keys + 1, shape, generator=torch.Generator().manual_seed(seed))


def allowed(valid_lens, batch, queries, keys, causal=False) -> torch.Tensor:
    """(batch, queries, keys) bool, True where a query may attend to a key, one at a time."""
    mask = torch.ones(batch, queries, keys, dtype=torch.bool)
    for b in range(batch):
        for i in range(queries):
            for j in range(keys):
                if valid_lens is not None:
                    length = valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, i]
                    mask[b, i, j] &= bool(j < length)
                if causal:  # query i sits at position keys - queries + i: the last queries
                    mask[b, i, j] &= j <= keys - queries + i
    return mask
