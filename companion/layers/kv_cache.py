"""The key-value cache that decoding one token at a time reads from (sec-transformer).

:class:`KVCache` holds an attention layer's keys and values *after* their projections, per head:
a growing one for self-attention, a static one for cross-attention. The two designs it replaces,
kept as baselines the chapter compares it with, run a Transformer decoder's own weights and live
beside it, in :mod:`companion.models.transformer`.
"""

from __future__ import annotations

import torch


class KVCache:
    """What an attention layer keeps between decoding steps (sec-transformer): the keys
    and values *after* their projections, per head, of every step so far.

    Multi-head attention stores ``keys`` and ``values`` of shape ``(batch, heads, steps,
    head_dim)``; additive attention stores its projected keys ``W_k k`` and the values,
    ``(batch, steps, features)``. Decoding step ``t`` then projects only the new step, ``O(d^2)``
    work, instead of all ``t`` steps again.

    - A self-attention cache (the default) grows: each call writes the new steps after the
      cached ones, into room allocated ahead and doubled when full, so a step copies only its
      own keys and values (``torch.cat`` would copy the whole cache, ``O(t)``, at every step).
      ``keys`` and ``values`` are views of the filled part. Decode under ``torch.no_grad()``,
      as companion's decoders do: under autograd the writes, which are in place, would break
      the backward pass, so there the cache appends with ``torch.cat`` instead. One cache
      holds one batch, and one layer's steps: give each layer its own (``[KVCache() for _ in
      blocks]``, not ``[KVCache()] * n``); another batch size is a ``ValueError``.
    - A cross-attention cache is ``KVCache(static=True)``: the first call fills it with the
      projected encoder outputs, and every later step of every block reuses them. Once filled
      it ignores the keys and values a layer is given: use a new one for a new source batch.
    """

    def __init__(self, *, static: bool = False) -> None:
        self.static = static
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self._room: tuple[torch.Tensor, torch.Tensor] | None = None  # (..., capacity, features)

    def __len__(self) -> int:
        """The number of cached steps."""
        return 0 if self.keys is None else self.keys.shape[-2]

    @property
    def frozen(self) -> bool:
        """A static cache that has been filled: read it (:meth:`stored`), do not project again."""
        return self.static and self.keys is not None

    def stored(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The keys and values cached so far."""
        if self.keys is None or self.values is None:
            raise ValueError("this KVCache is empty: no keys and values were written to it yet")
        return self.keys, self.values

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new steps' projected keys and values after the cached ones; return all the
        cached ones."""
        if self.static:  # the encoder outputs' keys and values, kept as they are
            self.keys, self.values = keys, values
            return keys, values
        self._check_continues(keys)
        if torch.is_grad_enabled() and (keys.requires_grad or values.requires_grad):
            return self._concatenate(keys, values)  # autograd cannot go back through writes
        cached, total = len(self), len(self) + keys.shape[-2]
        if self._room is None or total > self._room[0].shape[-2]:
            self._room = self._grow(keys, values, capacity=2 * total)
        room_keys, room_values = self._room  # (..., capacity, features)
        room_keys[..., cached:total, :] = keys  # only the new steps are copied
        room_values[..., cached:total, :] = values
        self.keys, self.values = room_keys[..., :total, :], room_values[..., :total, :]
        return self.keys, self.values

    def _grow(
        self, keys: torch.Tensor, values: torch.Tensor, capacity: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Room for ``capacity`` steps, shaped like ``keys`` and ``values``, holding the steps
        cached so far."""
        room_keys = keys.new_empty((*keys.shape[:-2], capacity, keys.shape[-1]))
        room_values = values.new_empty((*values.shape[:-2], capacity, values.shape[-1]))
        if self.keys is not None and self.values is not None:
            room_keys[..., : len(self), :] = self.keys
            room_values[..., : len(self), :] = self.values
        return room_keys, room_values

    def _check_continues(self, keys: torch.Tensor) -> None:
        """New steps must continue the cached rows: same batch, heads and features."""
        if self.keys is not None and (
            keys.shape[:-2] != self.keys.shape[:-2] or keys.shape[-1] != self.keys.shape[-1]
        ):
            raise ValueError(
                f"keys of shape {tuple(keys.shape)} cannot continue a KVCache holding "
                f"{tuple(self.keys.shape)}: a cache holds one batch of one layer. Start a new "
                "KVCache for a new batch, and give each layer its own"
            )

    def _concatenate(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append out of place, as ``torch.cat`` does: under autograd (a cached forward pass
        that will be differentiated), an in-place write would break the backward pass."""
        if self.keys is not None and self.values is not None:
            keys = torch.cat((self.keys, keys), dim=-2)
            values = torch.cat((self.values, values), dim=-2)
        self.keys, self.values, self._room = keys, values, None
        return keys, values

    def select(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` (beam search: the rows of the beams it keeps), room
        included, so the next step writes in place again."""
        if self.keys is None or self.values is None:
            return
        if self._room is None:  # static: no room
            self.keys, self.values = self.keys[index], self.values[index]
            return
        steps = len(self)
        room_keys, room_values = self._room[0][index], self._room[1][index]
        self._room = room_keys, room_values
        self.keys, self.values = room_keys[..., :steps, :], room_values[..., :steps, :]
