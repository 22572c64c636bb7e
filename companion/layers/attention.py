"""Attention layers: masked softmax, scaled dot-product, additive and multi-head attention. The
key-value cache they read from while decoding is :class:`companion.layers.kv_cache.KVCache`.

Names, signatures and parameter names follow d2l's PyTorch edition, so a d2l ``state_dict``
loads into these layers. Extensions: ``valid_lens`` is optional everywhere; the dot-product
layers take a keyword-only ``causal=True``; and the attention layers take a keyword-only
``cache=`` (a :class:`KVCache`), which holds keys and values already projected.

**Two paths, one result.** The dot-product layers compute the same numbers in one of two ways:

- the *explicit* path builds the ``(queries, keys)`` weight matrix, keeps it in
  ``attention_weights`` and multiplies it with the values. It is the path to read, and the one
  that feeds heatmaps;
- the *fused* path calls ``torch.nn.functional.scaled_dot_product_attention``, which never
  materialises the weights in memory (sec-efficient-attention). Whether it is also faster
  depends on the device and the sizes: on a GPU it usually is; on a CPU at the book's sizes it
  can be slower (sec-attention-scoring times both paths).

The switch is ``need_weights``: pass ``need_weights=True`` to the constructor, or wrap a whole
model's forward pass in ``with record_attention(model):``. Without it the fused path runs.

**Attention weights** behave alike on every layer: ``attention_weights`` is the tensor of the
last forward pass, ``(batch, [heads,] queries, keys)``, and reading it when none was kept (the
fused path ran, or no forward pass yet) raises a ``RuntimeError`` that says how to get it.

**A query with no valid key** (``valid_lens`` of 0) gets all-zero weights and a zero output on
both paths, never NaN. d2l instead spreads its weight evenly over all keys, padding included;
attending to padding is never what a model wants, so here that query contributes nothing.

**Causal masks** line the queries up with the *last* keys: with ``q`` queries and ``k`` keys,
query ``i`` sits at position ``k - q + i`` and sees keys ``0 .. k - q + i``. With ``q = k`` this
is the usual triangle; with a cache of ``k - q`` earlier steps it is what the new steps may see.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import (
    check_attention_inputs,
    check_dropout,
    check_in_features,
    check_positive,
    check_valid_lens,
)
from companion.layers.kv_cache import KVCache


def attention_mask(
    valid_lens: torch.Tensor | None,
    scores_shape: torch.Size | tuple[int, ...],
    causal: bool = False,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """Boolean mask, True where a query may attend to a key; ``None`` when nothing is masked.

    ``scores_shape`` is ``(batch, queries, keys)`` or ``(batch, heads, queries, keys)``; the mask
    broadcasts against it. ``valid_lens`` of shape ``(batch,)`` keeps the first ``valid_lens[b]``
    keys for every query; of shape ``(batch, queries)`` it sets a length per query. ``causal``
    also hides the keys after each query's position (queries lined up with the last keys).
    The callers check ``valid_lens`` first (:func:`companion._validate.check_attention_inputs`).
    """
    num_queries, num_keys = scores_shape[-2], scores_shape[-1]
    mask = None
    if valid_lens is not None:
        lens = valid_lens.to(device)
        lens = lens[:, None] if lens.dim() == 1 else lens  # (batch, 1 or queries)
        mask = torch.arange(num_keys, device=device) < lens[..., None]  # (batch, q or 1, keys)
        if len(scores_shape) == 4:
            mask = mask.unsqueeze(1)  # (batch, 1, q or 1, keys): the same for every head
    if causal:
        past = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device)
        past = past.tril(diagonal=num_keys - num_queries)  # (queries, keys)
        mask = past if mask is None else mask & past
    return mask


def masked_softmax(
    X: torch.Tensor, valid_lens: torch.Tensor | None = None, *, causal: bool = False
) -> torch.Tensor:
    """Softmax over the last axis of ``X`` that gives masked keys exactly zero weight
    (sec-attention-scoring).

    ``X`` holds scores of shape ``(batch, queries, keys)`` (or with a heads axis after the
    batch). ``valid_lens`` is ``(batch,)`` or ``(batch, queries)``; see :func:`attention_mask`.
    A query with no valid key gets all-zero weights.
    """
    if X.dim() not in (3, 4):
        raise ValueError(
            f"X must be 3-D (batch, queries, keys) or 4-D (batch, heads, queries, keys); "
            f"got shape {tuple(X.shape)}"
        )
    if valid_lens is not None:
        check_valid_lens(valid_lens, X.shape[0], X.shape[-2], X.shape[-1])
    mask = attention_mask(valid_lens, X.shape, causal, X.device)
    if mask is None:
        return F.softmax(X, dim=-1)
    # The lowest float, not -inf: a fully masked row then stays finite (uniform), and is
    # zeroed below instead of turning into NaN.
    X = X.masked_fill(~mask, torch.finfo(X.dtype).min)
    weights = F.softmax(X, dim=-1)  # (..., queries, keys)
    return weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


def fused_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor | None,
    causal: bool,
    dropout_p: float,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d)) V by PyTorch's fused kernel, with companion's masks: the
    weights are never stored, and a query with no valid key gets a zero output."""
    if keys.dim() == 4 and keys.shape[1] != queries.shape[1]:  # one key/value head, shared
        keys = keys.expand(-1, queries.shape[1], -1, -1)
        values = values.expand(-1, queries.shape[1], -1, -1)
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    if valid_lens is None and (not causal or num_queries == 1 or num_queries == num_keys):
        # No mask tensor needed: one new step sees every cached step, q = k is the triangle.
        square_causal = causal and num_queries == num_keys
        return F.scaled_dot_product_attention(
            queries, keys, values, dropout_p=dropout_p, is_causal=square_causal
        )
    mask = attention_mask(valid_lens, (*queries.shape[:-1], num_keys), causal, queries.device)
    assert mask is not None  # valid_lens or a causal mask with q != k: the early return above
    has_key = mask.any(dim=-1, keepdim=True)  # (..., queries, 1)
    # A query with no valid key would come out NaN: let it see every key, then zero it.
    output = F.scaled_dot_product_attention(
        queries, keys, values, attn_mask=mask | ~has_key, dropout_p=dropout_p
    )
    return output.masked_fill(~has_key, 0.0)


class KeepsWeights(nn.Module):
    """The one way every attention layer keeps its weights (see the module docstring).

    A layer with two paths sets ``need_weights``; its explicit path stores the weights in
    ``_attention_weights`` (its fused path stores ``None``). :func:`record_attention` switches
    ``need_weights`` on for every ``KeepsWeights`` in a model. A layer with an explicit path
    only (additive attention) always keeps them. Multi-head attention's weights are those of
    its inner :class:`DotProductAttention`.
    """

    need_weights: bool = True  # a layer with a fused path sets its own in __init__
    _attention_weights: torch.Tensor | None = None

    @property
    def attention_weights(self) -> torch.Tensor:
        """The ``(batch, [heads,] queries, keys)`` weights of the last forward pass."""
        if self._attention_weights is None:
            raise RuntimeError(
                f"{type(self).__name__} kept no attention weights: either no forward pass ran "
                "yet, or the fused path ran. Construct the layer with need_weights=True, or run "
                "the model inside `with record_attention(model):`"
            )
        return self._attention_weights


class DotProductAttention(KeepsWeights):
    """Scaled dot-product attention (sec-attention-scoring):

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V

    with ``Q`` of shape ``(batch, queries, d)``, ``K`` of ``(batch, keys, d)`` and ``V`` of
    ``(batch, keys, v)``; a heads axis after the batch is allowed, as multi-head attention uses
    (keys and values may have 1 head that all query heads share). The explicit path keeps
    ``attention_weights``; the fused path runs unless ``need_weights``.
    """

    def __init__(self, dropout: float, *, need_weights: bool = False) -> None:
        super().__init__()
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.need_weights = need_weights

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
    ) -> torch.Tensor:
        check_attention_inputs(
            queries, keys, values, valid_lens, ranks=(3, 4), same_query_key_size=True
        )
        if self.need_weights:  # explicit path: build the weights, keep them, then mix values
            d = queries.shape[-1]
            scores = queries @ keys.transpose(-2, -1) / math.sqrt(d)  # (..., queries, keys)
            self._attention_weights = masked_softmax(scores, valid_lens, causal=causal)
            return self.dropout(self._attention_weights) @ values  # (..., queries, v)
        # fused path: the same numbers, the weights never stored
        self._attention_weights = None
        dropout_p = self.dropout.p if self.training else 0.0
        return fused_attention(queries, keys, values, valid_lens, causal, dropout_p)


class AdditiveAttention(KeepsWeights):
    """Additive attention (sec-attention-scoring; Bahdanau et al., 2015, in sec-bahdanau):

        a(q, k) = w_v^T tanh(W_q q + W_k k)

    Queries ``(batch, queries, q)`` and keys ``(batch, keys, k)`` may have different sizes;
    ``query_size`` and ``key_size``, when given, fix them (otherwise the first call does).
    With ``cache=KVCache(static=True)`` the projected keys ``W_k k`` and the values are
    computed once and reused at every decoding step. Always explicit: it keeps
    ``attention_weights`` of shape ``(batch, queries, keys)``.
    """

    def __init__(
        self,
        num_hiddens: int,
        dropout: float,
        *,
        query_size: int | None = None,
        key_size: int | None = None,
    ) -> None:
        super().__init__()
        self.W_k = _linear(key_size, num_hiddens)
        self.W_q = _linear(query_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        check_attention_inputs(queries, keys, values, valid_lens, ranks=(3,))
        check_in_features(queries=(self.W_q, queries), keys=(self.W_k, keys))
        if cache is not None and cache.frozen:
            keys, values = cache.stored()  # projected once, at the first step
        else:
            keys = self.W_k(keys)  # (batch, keys, num_hiddens)
            if cache is not None:
                keys, values = cache.update(keys, values)
        queries = self.W_q(queries)  # (batch, queries, num_hiddens)
        # Every query against every key: (batch, queries, keys, num_hiddens)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (batch, queries, keys)
        self._attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self._attention_weights) @ values  # (batch, queries, v)


def _linear(in_features: int | None, out_features: int, bias: bool = False) -> nn.Linear:
    """``nn.Linear`` when the input size is known, else d2l's ``nn.LazyLinear`` (the first call
    fixes it). Either way the parameters are ``weight`` (and ``bias``), as in d2l. Every layer
    of companion with an optional input size builds its linear maps with this."""
    if in_features is None:
        return nn.LazyLinear(out_features, bias=bias)
    return nn.Linear(in_features, out_features, bias=bias)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (sec-multihead-attention; Vaswani et al., 2017):

        head_i = Attention(Q W_q^(i), K W_k^(i), V W_v^(i)),  i = 1..num_heads
        MultiHead(Q, K, V) = concat(head_1, ..., head_h) W_o

    Each head is scaled dot-product attention on ``head_dim = num_hiddens / num_heads``
    features. ``W_q``, ``W_k``, ``W_v`` and ``W_o`` are d2l's; the input sizes of the first three
    are fixed by ``query_size``, ``key_size`` and ``value_size`` when given, else by the first
    call (d2l's lazy layers). ``attention_weights`` has shape ``(batch, heads, queries, keys)``;
    ``.reshape(-1, queries, keys)`` gives d2l's layout.

    ``cache`` (a :class:`KVCache`) keeps the projected keys and values, ``(batch, heads, steps,
    head_dim)``: a growing one for self-attention while decoding (the new steps' keys and
    values are appended), a static one for cross-attention (the encoder outputs are projected
    once).
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float,
        bias: bool = False,
        *,
        query_size: int | None = None,
        key_size: int | None = None,
        value_size: int | None = None,
        need_weights: bool = False,
    ) -> None:
        super().__init__()
        check_positive(num_hiddens=num_hiddens, num_heads=num_heads)
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_hiddens ({num_hiddens}) must be divisible by num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout, need_weights=need_weights)
        self.W_q = _linear(query_size, num_hiddens, bias)
        self.W_k = _linear(key_size, num_hiddens, bias)
        self.W_v = _linear(value_size, num_hiddens, bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    @property
    def need_weights(self) -> bool:
        """The inner :class:`DotProductAttention`'s switch: it computes and keeps the weights."""
        return self.attention.need_weights

    @need_weights.setter
    def need_weights(self, value: bool) -> None:
        self.attention.need_weights = value

    @property
    def attention_weights(self) -> torch.Tensor:
        """The inner layer's ``(batch, heads, queries, keys)`` weights."""
        return self.attention.attention_weights

    def split_heads(self, X: torch.Tensor) -> torch.Tensor:
        """(batch, steps, num_hiddens) -> (batch, heads, steps, head_dim)"""
        return X.reshape(X.shape[0], X.shape[1], self.num_heads, -1).transpose(1, 2)

    def merge_heads(self, X: torch.Tensor) -> torch.Tensor:
        """(batch, heads, steps, head_dim) -> (batch, steps, num_hiddens): concatenated heads"""
        return X.transpose(1, 2).reshape(X.shape[0], X.shape[2], -1)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        check_attention_inputs(queries, keys, values, valid_lens, ranks=(3,))
        check_in_features(
            queries=(self.W_q, queries), keys=(self.W_k, keys), values=(self.W_v, values)
        )
        queries = self.split_heads(self.W_q(queries))  # (batch, heads, queries, head_dim)
        if cache is not None and cache.frozen:  # cross-attention: projected at the first step
            keys, values = cache.stored()  # (batch, heads, keys, head_dim)
        else:
            keys = self.split_heads(self.W_k(keys))  # (batch, heads, new steps, head_dim)
            values = self.split_heads(self.W_v(values))
            if cache is not None:  # self-attention: append, then attend to every step so far
                keys, values = cache.update(keys, values)  # (batch, heads, keys, head_dim)
        # Every head attends at once; valid_lens apply to all heads alike.
        output = self.attention(queries, keys, values, valid_lens, causal=causal)
        return self.W_o(self.merge_heads(output))  # (batch, queries, num_hiddens)


@contextmanager
def record_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Run every attention layer in ``model`` on its explicit path, keeping its weights.

    ``with record_attention(model): model(...)`` and then read ``attention_weights`` of any
    layer. Each layer's previous setting is restored on exit. (Additive attention always keeps
    its weights.)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    layers = [m for m in model.modules() if isinstance(m, KeepsWeights)]
    before = [layer.need_weights for layer in layers]
    for layer in layers:
        layer.need_weights = True
    try:
        yield model
    finally:
        for layer, setting in zip(layers, before):
            layer.need_weights = setting
