"""The key-value cache that decoding one token at a time reads from (sec-transformer), and the
two designs it replaces, kept as baselines the chapter compares it with.

- :class:`KVCache` holds an attention layer's keys and values *after* their projections, per
  head: a growing one for self-attention, a static one for cross-attention.
- :class:`BlockInputCacheDecoder` caches each decoder block's *inputs* instead (d2l's design,
  and companion's before the KV cache): every step projects all of them again.
- :class:`NoCacheDecoder` caches nothing: every step runs the whole prefix again.

The two baselines run a :class:`companion.models.transformer.TransformerDecoder`'s own weights, so
all three decode the same tokens (``python -m companion.bench decode`` times them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

if TYPE_CHECKING:
    from companion.models.transformer import TransformerDecoder, TransformerDecoderBlock


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


class BlockInputCacheDecoder(nn.Module):
    """The decoder before its KV cache (d2l's design), run with ``decoder``'s own weights.

    Its state is ``[enc_outputs, enc_valid_lens, inputs]``, where ``inputs[i]`` holds block
    ``i``'s inputs at every step so far. Each step appends the new input, then projects *all*
    of them into keys and values, and projects the encoder outputs again for cross-attention.
    """

    def __init__(self, decoder: TransformerDecoder) -> None:
        super().__init__()
        self.decoder = decoder

    def init_state(self, enc_outputs: torch.Tensor, enc_valid_lens: torch.Tensor | None):
        return [enc_outputs, enc_valid_lens, [None] * len(self.decoder.blks)]

    def forward(self, X: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        decoder, (enc_outputs, enc_valid_lens, inputs) = self.decoder, state
        offset = 0 if inputs[0] is None else inputs[0].shape[1]
        X = decoder.pos_encoding(
            decoder.embedding(X) * math.sqrt(decoder.num_hiddens), offset=offset
        )
        blocks = cast("Iterable[TransformerDecoderBlock]", decoder.blks)  # nn.Sequential: untyped
        for i, blk in enumerate(blocks):
            inputs[i] = X if inputs[i] is None else torch.cat((inputs[i], X), dim=1)
            key_values = inputs[i]  # (batch, steps so far, num_hiddens): projected again below
            Y = blk.addnorm1(X, blk.attention1(X, key_values, key_values, causal=True))
            Y2 = blk.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)  # projected again
            Z = blk.addnorm2(Y, Y2)
            X = blk.addnorm3(Z, blk.ffn(Z))
        return decoder.dense(X), state


class NoCacheDecoder(nn.Module):
    """Keeps only the tokens so far and runs all of them through ``decoder`` at every step."""

    def __init__(self, decoder: TransformerDecoder) -> None:
        super().__init__()
        self.decoder = decoder

    def init_state(self, enc_outputs: torch.Tensor, enc_valid_lens: torch.Tensor | None):
        return [enc_outputs, enc_valid_lens, None]

    def forward(self, X: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        enc_outputs, enc_valid_lens, prefix = state
        prefix = X if prefix is None else torch.cat((prefix, X), dim=1)
        fresh = self.decoder.init_state(enc_outputs, enc_valid_lens)
        logits, _ = self.decoder(prefix, fresh)  # (batch, steps so far, vocab)
        return logits[:, -X.shape[1] :], [enc_outputs, enc_valid_lens, prefix]
