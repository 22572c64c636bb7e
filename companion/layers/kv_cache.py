"""The key-value cache that decoding one token at a time reads from (sec-transformer), and its
rolling kind for a sliding window (sec-modern-decoder).

:class:`KVCache` holds one attention layer's keys and values *after* their projections, per
head; :class:`ModelCaches` holds one per layer of a model, made together. The two designs it
replaces, kept as baselines the chapter compares it with, run a Transformer decoder's own
weights and live beside it, in :mod:`companion.models.transformer`.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from companion._validate import check_positive


class KVCache:
    """What an attention layer keeps between decoding steps (sec-transformer): the keys
    and values *after* their projections, per head. Decoding step ``t`` then projects only the
    new step, ``O(d^2)`` work, instead of all ``t`` steps again.

    Multi-head attention stores ``keys`` and ``values`` of shape ``(batch, kv_heads, steps,
    head_dim)``; additive attention stores its projected keys ``W_k k`` and the values,
    ``(batch, steps, features)``. Three kinds:

    - ``KVCache()`` grows, for self-attention: each call writes the new steps after the cached
      ones, into room allocated ahead and doubled when full, so a step copies only its own keys
      and values (``torch.cat`` would copy the whole cache, ``O(t)``, at every step).
    - ``KVCache(static=True)``, for cross-attention: the first call fills it with the projected
      encoder outputs, and every later step reuses them. Once filled it ignores the keys and values
      a layer is given: use a new one for a new source batch.
    - ``KVCache(window=w)`` rolls, for sliding-window attention (sec-modern-decoder): a ring of
      ``w`` slots, step ``m`` in slot ``m mod w``, so memory stays ``w`` steps however long
      decoding runs. It serves a layer whose window is at most ``w``: an older key would be
      masked anyway.

    **One contract.** ``update(keys, values)`` takes the new steps' keys and values and returns
    what their queries attend to. ``positions`` then holds the positions of those keys (a ring
    keeps them out of order; masks are computed from positions), and ``seen`` the number of
    steps seen, the position of the next one. ``keys`` and ``values`` are what the cache holds,
    ``len(cache)`` steps.

    **Autograd.** The in-place writes above cannot be differentiated through. Under autograd
    (keys that require grad, gradients enabled), every kind appends out of place with
    ``torch.cat`` instead: the same numbers, more copies. Decode under ``torch.no_grad()``.

    One cache holds one batch, and one layer's steps: a model's caches come from its
    ``new_caches()``; another batch size is a ``ValueError``.
    """

    def __init__(self, *, static: bool = False, window: int | None = None) -> None:
        if window is not None:
            check_positive(window=window)
            if static:
                raise ValueError("a KVCache is static or rolls (window=...), not both")
        self.static, self.window = static, window
        self.seen = 0  # steps seen: the position of the next step
        self.keys: torch.Tensor | None = None  # (batch, kv_heads, len(self), head_dim)
        self.values: torch.Tensor | None = None
        self.positions = torch.empty(0, dtype=torch.long)  # of the keys update() returned
        self._room: tuple[torch.Tensor, torch.Tensor] | None = None  # (..., capacity, features)

    def __len__(self) -> int:
        """The number of steps held: every step seen, or the last ``window`` of them."""
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
        """Write the new steps' projected keys and values, ``(..., new steps, features)``;
        return what the new steps attend to: every step held, then the new ones."""
        self._check_continues(keys, values)
        start, self.seen = self.seen, self.seen + keys.shape[-2]  # the new steps' positions
        if self.static:  # the encoder outputs' keys and values, kept as they are
            self.keys, self.values, self.seen = keys, values, keys.shape[-2]
            self.positions = torch.arange(keys.shape[-2], device=keys.device)
            return keys, values
        wraps = self.window is not None and 1 < keys.shape[-2] and self.seen > self.window
        if wraps or (torch.is_grad_enabled() and (keys.requires_grad or values.requires_grad)):
            return self._concatenate(keys, values, start)  # out of place: autograd, a wrap
        capacity = 2 * self.seen if self.window is None else self.window
        if self._room is None or self._room[0].shape[-2] < min(self.seen, capacity):
            self._room = self._grow(keys, values, capacity)
        room_keys, room_values = self._room  # (..., capacity, features)
        slot = start if self.window is None else start % self.window  # the ring's slot
        room_keys[..., slot : slot + keys.shape[-2], :] = keys  # only the new steps are copied
        room_values[..., slot : slot + keys.shape[-2], :] = values
        self._hold_room()
        return self.stored()

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

    def _hold_room(self) -> None:
        """``keys`` and ``values``: the room's first ``len`` slots; ``positions``: theirs."""
        assert self._room is not None
        held = self.seen if self.window is None else min(self.seen, self.window)
        self.keys, self.values = (room[..., :held, :] for room in self._room)
        slots = torch.arange(held, device=self.keys.device)
        if self.window is not None:  # slot s holds the step m of the last `window` with m = s mod w
            slots = (slots - self.seen) % self.window + self.seen - self.window
        self.positions = slots

    def _concatenate(
        self, keys: torch.Tensor, values: torch.Tensor, start: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append out of place, as ``torch.cat`` does: under autograd an in-place write would
        break the backward pass, and several new steps that wrap around a ring would overwrite
        keys that the first of them still sees. A rolling cache then keeps the last ``window``
        steps, each in its slot."""
        if self.keys is not None and self.values is not None:
            held_keys, held_values = self._in_order(start)
            keys = torch.cat((held_keys, keys), dim=-2)  # (..., held + new steps, features)
            values = torch.cat((held_values, values), dim=-2)
        self.keys, self.values, self._room = keys, values, None
        if self.window is not None:  # the last `window` steps, step m in slot m mod window
            shift = self.seen % self.window if self.seen > self.window else 0
            kept_keys, kept_values = keys[..., -self.window :, :], values[..., -self.window :, :]
            self._room = kept_keys.roll(shift, dims=-2), kept_values.roll(shift, dims=-2)
            self._hold_room()
        self.positions = torch.arange(self.seen - keys.shape[-2], self.seen, device=keys.device)
        return keys, values

    def _in_order(self, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The steps held before a call whose first step is ``start``, oldest first: a full
        ring rotated back so that its oldest slot comes first."""
        assert self.keys is not None and self.values is not None
        if self.window is None or start <= self.window:
            return self.keys, self.values
        shift = -(start % self.window)  # the oldest step, start - window, is in slot start mod w
        return self.keys.roll(shift, dims=-2), self.values.roll(shift, dims=-2)

    def select(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` (beam search: the rows of the beams it keeps), room
        included, so the next step writes in place again."""
        if self.keys is None or self.values is None:
            return
        if self._room is None:  # static, or appended out of place: no room
            self.keys, self.values = self.keys[index], self.values[index]
            return
        self._room = self._room[0][index], self._room[1][index]
        self._hold_room()

    def check_serves(self, batch_size: int, *, window: int | None, causal: bool) -> None:
        """A ``ValueError`` unless this cache can serve a layer whose queries are ``batch_size``
        rows, see the last ``window`` positions (``None``: every one) and are ``causal``."""
        if self.static and causal:
            raise ValueError(
                "a static KVCache (cross-attention: keys projected once, then frozen) cannot "
                "serve causal self-attention, whose keys grow at each step: use KVCache()"
            )
        if self.window is not None and (window is None or window > self.window):
            sees = "every earlier step" if window is None else f"the last {window} steps"
            raise ValueError(
                f"a rolling KVCache(window={self.window}) keeps the last {self.window} steps, "
                f"but this layer's queries see {sees} (window={window}): the keys it drops "
                "would be missing. Use KVCache(window=w) with w >= the layer's window, or "
                "KVCache()"
            )
        if self.keys is not None and self.keys.shape[0] != batch_size:
            raise ValueError(
                f"this KVCache holds a batch of {self.keys.shape[0]} rows; the queries have "
                f"{batch_size}. A cache holds one batch: start new caches for a new batch"
            )

    def _check_continues(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """New steps must continue the cached rows: same batch, heads and features."""
        if self.keys is not None and (
            keys.shape[:-2] != self.keys.shape[:-2] or keys.shape[-1] != self.keys.shape[-1]
        ):
            raise ValueError(
                f"keys of shape {tuple(keys.shape)} cannot continue a KVCache holding "
                f"{tuple(self.keys.shape)}: a cache holds one batch of one layer. Start a new "
                "KVCache for a new batch, and give each layer its own"
            )


def check_cache(cache: object) -> KVCache:
    """``cache`` must be a :class:`KVCache`; a ``TypeError`` otherwise."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache or None; got {type(cache).__name__}")
    return cache


class ModelCaches:
    """A model's caches (sec-modern-decoder): one :class:`KVCache` per layer, made together by
    the model's ``new_caches()``, so they are distinct and of one kind, and advanced together by
    its forward pass, so that ``seen``, the steps they have seen, is one number: the position of
    the next step. Index it (``caches[0].keys``) or iterate over it for each layer's cache.
    ``window`` makes each layer's cache a rolling one.
    """

    def __init__(self, num_layers: int, *, window: int | None = None) -> None:
        check_positive(num_layers=num_layers)
        self.layers = tuple(KVCache(window=window) for _ in range(num_layers))

    @property
    def seen(self) -> int:
        """The steps seen, by every layer alike."""
        return self.layers[0].seen

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[KVCache]:
        return iter(self.layers)

    def __getitem__(self, index: int) -> KVCache:
        return self.layers[index]

    def select(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` in every layer's cache (see :meth:`KVCache.select`)."""
        for cache in self.layers:
            cache.select(index)
