"""Causal self-attention as modern decoders run it (sec-modern-decoder): grouped-query attention
(multi-head, grouped-query and multi-query attention as one layer), RoPE inside the attention,
an optional sliding window, and the rolling key-value cache a window needs.

**Two kinds of mask.** Without a window, ALiBi or a rolling cache, the layer is multi-head
attention with shared keys and values, and its heads attend through sec-attention-scoring's
:class:`~companion.layers.attention.DotProductAttention`: the same masks (``valid_lens``,
``causal``), the same two paths, the same ``attention_weights``. GPT, the ViT and the Llama-style
decoder all run this path. A window, ALiBi or a rolling cache instead computes its mask from the
*positions* of the queries and of the keys: key ``n`` is visible to query ``m`` when ``n <= m``
and, with a window ``w``, ``n > m - w`` (the ``w`` most recent tokens, itself included, as
Mistral counts). A rolling cache then only has to say which positions its keys hold, whatever
order it stores them in.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import check_hiddens, check_positive
from companion.layers.attention import DotProductAttention
from companion.layers.kv_cache import KVCache
from companion.layers.rotary import RotaryEmbedding


class RollingKVCache:
    """A key-value cache of fixed size for sliding-window attention (sec-modern-decoder): it
    keeps the keys and values of the last ``window`` steps only, in a ring of ``window`` slots,
    step ``m`` in slot ``m mod window``. Memory stays ``window`` steps however long decoding
    runs; a growing :class:`~companion.layers.kv_cache.KVCache` holds every step.

    ``update(keys, values)`` takes the new steps' keys and values, ``(batch, kv_heads, new
    steps, head_dim)``, and returns what they attend to: the cached steps, then the new ones.
    ``key_positions`` then holds those keys' positions (the ring's order is not the tokens'
    order; the mask is computed from positions), ``seen`` the number of steps seen so far.
    The ring is written in place: decode under ``torch.no_grad()``.
    """

    def __init__(self, window: int) -> None:
        check_positive(window=window)
        self.window = window
        self.seen = 0  # the position of the next step
        self.keys: torch.Tensor | None = None  # (batch, kv_heads, window, head_dim), the ring
        self.values: torch.Tensor | None = None
        self.slot_positions = torch.full((window,), -1)  # the position in each slot; -1: empty
        self.key_positions = torch.empty(0, dtype=torch.long)  # of the keys update returned

    def __len__(self) -> int:
        """The number of cached steps: at most ``window``."""
        return min(self.seen, self.window)

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if torch.is_grad_enabled() and (keys.requires_grad or values.requires_grad):
            raise ValueError(
                "keys require grad: a RollingKVCache writes each step in place, which autograd "
                "cannot differentiate through. Decode under torch.no_grad(); to train, feed "
                "whole sequences without a cache"
            )
        num_new = keys.shape[-2]
        if self.keys is None or self.values is None:
            shape = (*keys.shape[:-2], self.window, keys.shape[-1])
            self.keys, self.values = keys.new_zeros(shape), values.new_zeros(shape)
            self.slot_positions = self.slot_positions.to(keys.device)
        new_positions = torch.arange(self.seen, self.seen + num_new, device=keys.device)
        filled = self.slot_positions >= 0  # (window,)
        # What the new steps see: every cached step, then the new ones (the mask does the rest)
        all_keys = torch.cat((self.keys[..., filled, :], keys), dim=-2)  # (b, g, keys, d)
        all_values = torch.cat((self.values[..., filled, :], values), dim=-2)
        self.key_positions = torch.cat((self.slot_positions[filled], new_positions))
        # Keep the last `window` new steps, each in its slot, overwriting the oldest
        kept = new_positions[-self.window :]
        slots = kept % self.window
        self.keys[..., slots, :] = keys[..., -len(kept) :, :]
        self.values[..., slots, :] = values[..., -len(kept) :, :]
        self.slot_positions[slots] = kept
        self.seen += num_new
        return all_keys, all_values


Cache = KVCache | RollingKVCache


def steps_seen(cache: Cache | None) -> int:
    """The position of the next step: how many steps the cache has seen."""
    if cache is None:
        return 0
    return cache.seen if isinstance(cache, RollingKVCache) else len(cache)


def visible(
    query_positions: torch.Tensor, key_positions: torch.Tensor, window: int | None = None
) -> torch.Tensor:
    """``(queries, keys)`` boolean mask, True where query position ``m`` sees key position
    ``n``: ``n <= m``, and ``n > m - window`` with a window."""
    offsets = query_positions[:, None] - key_positions[None, :]  # m - n, (queries, keys)
    mask = offsets >= 0
    return mask if window is None else mask & (offsets < window)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's slope per head (Press et al., 2022): ``2^(-8 h / num_heads)``, ``h = 1..heads``,
    a geometric sequence from ``2^(-8/num_heads)`` down to ``2^-8``."""
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1) / num_heads)  # (heads,)


class GroupedQueryAttention(nn.Module):
    """Multi-head self-attention whose keys and values may have fewer heads than its queries
    (sec-modern-decoder; Ainslie et al., 2023):

        head_i = softmax(q_i K_g(i)^T / sqrt(d_h) + mask) V_g(i),   g(i) = floor(i / (h / g))

    with ``h = num_heads`` query heads and ``g = num_kv_heads`` key-value heads: query heads
    ``0 .. h/g - 1`` share key-value head 0, the next ``h/g`` share head 1, and so on (so the
    shared heads are expanded with ``repeat_interleave``, not ``repeat``). ``g = h`` is
    multi-head attention, ``g = 1`` multi-query attention. ``W_k`` and ``W_v`` are
    ``(g d_h, num_hiddens)``, and a cache stores ``g`` heads: the KV cache shrinks by ``h / g``.

    Options: ``rotary`` (a :class:`~companion.layers.rotary.RotaryEmbedding`) rotates queries and
    keys (after the projection, before the cache); ``window`` restricts each query to the last
    ``window`` positions; ``alibi`` adds ``-slope_i (m - n)`` to the scores (ALiBi).
    ``X`` is ``(batch, steps, num_hiddens)`` in and out; ``cache`` (a growing
    :class:`~companion.layers.kv_cache.KVCache` or a :class:`RollingKVCache`) holds the earlier
    steps, and ``X``'s steps continue them. ``causal=False`` (an encoder, as in the ViT) and
    ``valid_lens`` (padding, as in :class:`~companion.layers.attention.MultiHeadAttention`) are for
    the plain layer only: a window, ALiBi and a rolling cache are causal by construction.
    ``attention_weights`` is ``(batch, heads, queries, keys)``, kept as every attention layer
    keeps it (run inside ``with record_attention(model):``).
    """

    alibi_slopes: torch.Tensor | None  # a buffer

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        dropout: float = 0.0,
        bias: bool = False,
        *,
        rotary: RotaryEmbedding | None = None,
        window: int | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_positive(num_hiddens=num_hiddens, num_heads=num_heads, num_kv_heads=num_kv_heads)
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_hiddens ({num_hiddens}) must be divisible by num_heads ({num_heads})"
            )
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads}): "
                "each key-value head serves the same number of query heads"
            )
        if window is not None:
            check_positive(window=window)
        self.num_hiddens, self.num_heads, self.num_kv_heads = num_hiddens, num_heads, num_kv_heads
        self.head_dim = num_hiddens // num_heads
        if rotary is not None and rotary.head_dim != self.head_dim:
            raise ValueError(
                f"rotary must rotate head_dim={self.head_dim} features; got {rotary.head_dim}"
            )
        self.rotary, self.window = rotary, window
        self.attention = DotProductAttention(dropout)  # the heads' attention, and its weights
        self.W_q = nn.Linear(num_hiddens, num_heads * self.head_dim, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.head_dim, num_hiddens, bias=bias)
        slopes = alibi_slopes(num_heads) if alibi else None
        self.register_buffer("alibi_slopes", slopes, persistent=False)  # (heads,) or None

    @property
    def need_weights(self) -> bool:
        """Whether the heads' attention keeps its weights (see :func:`record_attention`)."""
        return self.attention.need_weights

    @need_weights.setter
    def need_weights(self, value: bool) -> None:
        self.attention.need_weights = value

    @property
    def attention_weights(self) -> torch.Tensor:
        """The ``(batch, heads, queries, keys)`` weights of the last forward pass."""
        return self.attention.attention_weights

    def split_heads(self, X: torch.Tensor, num_heads: int) -> torch.Tensor:
        """(batch, steps, heads * head_dim) -> (batch, heads, steps, head_dim)"""
        return X.reshape(X.shape[0], X.shape[1], num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        X: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = True,
        cache: Cache | None = None,
    ) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens)
        by_position = self.window is not None or self.alibi_slopes is not None
        by_position = by_position or isinstance(cache, RollingKVCache)
        if by_position and (valid_lens is not None or not causal):
            raise ValueError(
                "a window, ALiBi or a rolling cache masks by position and is causal: "
                f"got valid_lens={'a tensor' if valid_lens is not None else None} and "
                f"causal={causal}"
            )
        start = steps_seen(cache)  # the position of X's first step
        queries = self.split_heads(self.W_q(X), self.num_heads)  # (batch, h, steps, d_h)
        keys = self.split_heads(self.W_k(X), self.num_kv_heads)  # (batch, g, steps, d_h)
        values = self.split_heads(self.W_v(X), self.num_kv_heads)
        if self.rotary is not None:  # positions as rotations: queries and keys, never values
            queries, keys = self.rotary(queries, offset=start), self.rotary(keys, offset=start)
        if cache is not None:  # only the g shared heads are cached
            keys, values = cache.update(keys, values)  # (batch, g, keys, d_h)
        group = self.num_heads // self.num_kv_heads  # query heads per key-value head
        keys = keys.repeat_interleave(group, dim=1)  # (batch, h, keys, d_h): head i -> i // group
        values = values.repeat_interleave(group, dim=1)
        if by_position:
            output = self.attend_by_position(queries, keys, values, start, cache)
        else:  # queries lined up with the last keys (sec-attention-scoring)
            output = self.attention(queries, keys, values, valid_lens, causal=causal)
        output = output.transpose(1, 2).reshape(X.shape[0], X.shape[1], -1)  # heads concatenated
        return self.W_o(output)  # (batch, steps, num_hiddens)

    def attend_by_position(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        start: int,
        cache: Cache | None,
    ) -> torch.Tensor:
        """Attention under :meth:`scores_mask`, ``(batch, h, queries, d_h)``: explicit (weights
        kept) or fused, as the inner attention's ``need_weights`` says."""
        if isinstance(cache, RollingKVCache):
            key_positions = cache.key_positions
        else:  # no cache, or a growing one: the keys are positions 0, 1, ...
            key_positions = torch.arange(keys.shape[2], device=queries.device)
        query_positions = torch.arange(start, start + queries.shape[2], device=queries.device)
        mask = self.scores_mask(query_positions, key_positions)  # (1 or h, queries, keys)
        if self.need_weights:  # explicit: the weights kept for heatmaps
            scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)
            if mask.dtype == torch.bool:
                scores = scores.masked_fill(~mask, -math.inf)
            else:
                scores = scores + mask
            weights = torch.softmax(scores, dim=-1)  # (batch, h, queries, keys)
            self.attention._attention_weights = weights
            return self.attention.dropout(weights) @ values
        self.attention._attention_weights = None
        dropout_p = self.attention.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask, dropout_p=dropout_p
        )  # (batch, h, queries, d_h)

    def scores_mask(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> torch.Tensor:
        """What is added to the scores: a boolean ``(1, queries, keys)`` mask, or with ALiBi the
        float ``(heads, queries, keys)`` biases ``-slope (m - n)``, ``-inf`` where masked."""
        mask = visible(query_positions, key_positions, self.window)[None]  # (1, queries, keys)
        slopes = self.alibi_slopes
        if slopes is None:
            return mask
        distance = (query_positions[:, None] - key_positions[None, :]).float()  # m - n
        biases = -slopes[:, None, None] * distance  # (heads, queries, keys)
        return biases.masked_fill(~mask, -math.inf)
