"""Attention layers: masked softmax, scaled dot-product, additive and multi-head attention, and
the one rule their masks follow. The key-value cache they read from while decoding is
:class:`companion.layers.kv_cache.KVCache`.

Names, signatures and parameter names follow d2l's PyTorch edition, so a d2l ``state_dict``
loads into these layers. Extensions: ``valid_lens`` is optional everywhere; the dot-product
layers take a keyword-only ``causal=True``; the attention layers take a keyword-only ``cache=``
(a :class:`KVCache`), which holds keys and values already projected; and multi-head attention
takes the options of modern decoders (sec-modern-decoder): shared key-value heads, rotary
positions, a sliding window and ALiBi.

**Two paths, one result.** The dot-product layers compute the same numbers in one of two ways:

- the *explicit* path builds the ``(queries, keys)`` weight matrix, keeps it in
  ``attention_weights`` and multiplies it with the values. It is the path to read, and the one
  that feeds heatmaps;
- the *fused* path calls ``torch.nn.functional.scaled_dot_product_attention``, which need not
  materialise the weights in memory (sec-efficient-attention). Whether it is also faster
  depends on the device and the sizes: on a GPU it usually is; on a CPU at the book's sizes it
  can be slower (sec-attention-scoring times both paths).

The switch is ``need_weights``: pass ``need_weights=True`` to the constructor, or wrap a whole
model's forward pass in ``with record_attention(model):``. Without it the fused path runs.

**Attention weights** behave alike on every layer: ``attention_weights`` is the tensor of the
last forward pass, ``(batch, [heads,] queries, keys)``, and reading it when none was kept (the
fused path ran, or no forward pass yet) raises a ``RuntimeError`` that says how to get it.

**One mask rule, from positions** (:func:`attention_mask`). The query at position ``m`` may
attend to the key at position ``n`` when ``n < valid_lens`` (padding: the first ``valid_lens``
keys of a row are real), when ``n <= m`` with ``causal=True``, and when ``m - n < window`` with
a sliding window. Without a cache, ``q`` queries over ``k`` keys are *lined up with the last
keys*: the keys at positions ``0 .. k - 1``, the queries at ``k - q .. k - 1``; with ``q = k`` a
causal mask is the usual triangle (:func:`lined_up_mask`). With a cache the queries continue
the steps it has seen, and its keys are where it says (``cache.positions``).

**A query with no visible key** (``valid_lens`` of 0) gets all-zero weights and a zero output on
both paths, never NaN. d2l instead spreads its weight evenly over all keys, padding included;
attending to padding is never what a model wants, so here that query contributes nothing.
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
    check_attention_shape,
    check_dropout,
    check_in_features,
    check_scores,
)
from companion.layers.kv_cache import KVCache, check_cache
from companion.layers.positional import alibi_bias, alibi_slopes
from companion.layers.rotary import RotaryEmbedding


def attention_mask(
    query_positions: torch.Tensor,
    key_positions: torch.Tensor,
    valid_lens: torch.Tensor | None = None,
    *,
    causal: bool = False,
    window: int | None = None,
) -> torch.Tensor | None:
    """Boolean ``(batch or 1, queries or 1, keys)`` mask, True where the query at position ``m``
    may attend to the key at position ``n``; ``None`` when nothing is masked.

    ``query_positions`` ``(queries,)`` and ``key_positions`` ``(keys,)`` are integer positions.
    Each argument adds a term: ``valid_lens`` of shape ``(batch,)`` keeps the keys at positions
    below ``valid_lens[b]`` for every query (of shape ``(batch, queries)``, a length per query);
    ``causal`` hides the keys after the query, ``n > m``; ``window`` keeps only the ``window``
    most recent positions, the query's own included, ``m - n < window`` (as Mistral counts).
    The callers check ``valid_lens`` first (:func:`companion._validate.check_attention_inputs`).
    """
    mask = None
    m, n = query_positions[:, None], key_positions[None, :]  # (queries, 1), (1, keys)
    if valid_lens is not None:  # padding: the first valid_lens positions are real keys
        lens = valid_lens.to(n.device)
        lens = lens[:, None] if lens.dim() == 1 else lens  # (batch, 1 or queries)
        mask = n < lens[..., None]  # (batch, 1 or queries, keys)
    if causal:  # no key after the query
        mask = (n <= m)[None] if mask is None else mask & (n <= m)
    if window is not None:  # the `window` most recent positions only: m - n < window
        mask = (n > m - window)[None] if mask is None else mask & (n > m - window)
    return mask  # (batch or 1, queries or 1, keys)


def lined_up_mask(
    valid_lens: torch.Tensor | None,
    scores_shape: torch.Size | tuple[int, ...],
    causal: bool = False,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """:func:`attention_mask` without a cache: ``k`` keys at positions ``0 .. k - 1``, ``q``
    queries lined up with the last of them, at ``k - q .. k - 1``. With ``q = k`` a causal mask
    is the usual triangle; with ``q < k`` the queries are new steps after ``k - q`` earlier
    ones. The mask broadcasts against scores of ``scores_shape``, ``(batch, queries, keys)`` or
    ``(batch, heads, queries, keys)``, the same for every head."""
    if valid_lens is None and not causal:
        return None  # nothing is masked
    num_queries, num_keys = scores_shape[-2], scores_shape[-1]
    query_positions = torch.arange(num_keys - num_queries, num_keys, device=device)
    key_positions = torch.arange(num_keys, device=device)
    mask = attention_mask(query_positions, key_positions, valid_lens, causal=causal)
    return mask if mask is None or len(scores_shape) == 3 else mask[:, None]


def masked_softmax(
    X: torch.Tensor,
    valid_lens: torch.Tensor | None = None,
    *,
    causal: bool = False,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Softmax over the last axis of ``X`` that gives masked keys exactly zero weight
    (sec-attention-scoring).

    ``X`` holds scores of shape ``(batch, queries, keys)`` (or with a heads axis after the
    batch). The mask is ``valid_lens`` (``(batch,)`` or ``(batch, queries)``) and ``causal``,
    the queries lined up with the last keys (:func:`lined_up_mask`), or ``mask`` itself, a
    boolean tensor that broadcasts against ``X`` (:func:`attention_mask`). A query with no
    visible key gets all-zero weights.
    """
    check_scores(X, valid_lens, mask)
    if mask is None:  # valid_lens and causal, the queries lined up with the last keys
        mask = lined_up_mask(valid_lens, X.shape, causal, X.device)
    if mask is None:
        return F.softmax(X, dim=-1)
    # The lowest float, not -inf: a fully masked row then stays finite (uniform), and is
    # zeroed below instead of turning into NaN.
    X = X.masked_fill(~mask, torch.finfo(X.dtype).min)
    weights = F.softmax(X, dim=-1)  # (..., queries, keys)
    return weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


def share_kv_heads(
    queries: torch.Tensor,
    keys: torch.Tensor,
    mask: torch.Tensor | None,
    bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Grouped- and multi-query attention without copies (sec-modern-decoder): the ``group``
    query heads that share a key-value head become extra queries of it, ``(batch, heads, q, d)
    -> (batch, kv_heads, group * q, d)`` (head ``i`` reads key-value head ``i // group``), the
    mask tiled and the per-head bias folded alike. Only the small query tensor is reshaped: the
    keys and values, maybe a whole cache, are read as they are, where ``repeat_interleave`` or
    ``expand(...).reshape(...)`` would copy them. 3-D inputs (no heads) pass unchanged."""
    if queries.dim() == 3:
        return queries, mask, bias
    batch, heads, num_queries, d = queries.shape
    kv_heads = keys.shape[1]
    group = heads // kv_heads  # query heads per key-value head
    queries = queries.reshape(batch, kv_heads, group * num_queries, d)
    if mask is not None:  # (batch or 1, queries or 1, keys): the same for every head
        mask = mask.repeat(1, group, 1) if group > 1 and mask.shape[-2] > 1 else mask
        mask = mask[:, None]  # (batch or 1, 1, group * queries or 1, keys)
    if bias is not None and bias.dim() == 3:  # (heads, queries, keys): one per head
        bias = bias.reshape(kv_heads, group * num_queries, bias.shape[-1])
    return queries, mask, bias


def fused_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    bias: torch.Tensor | None,
    dropout_p: float,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d) + bias) V by PyTorch's fused kernel, with companion's masks: the
    weights are never stored, and a query with no visible key gets a zero output."""
    bias = None if bias is None else bias.to(queries.dtype)
    if mask is None:
        return F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=bias, dropout_p=dropout_p
        )
    has_key = mask.any(dim=-1, keepdim=True)  # (..., queries, 1)
    # A query with no visible key would come out NaN: let it see every key, then zero it.
    allowed = mask | ~has_key
    attn_mask = allowed if bias is None else bias.masked_fill(~allowed, -math.inf)
    output = F.scaled_dot_product_attention(
        queries, keys, values, attn_mask=attn_mask, dropout_p=dropout_p
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

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d) + bias) V

    with ``Q`` of shape ``(batch, queries, d)``, ``K`` of ``(batch, keys, d)`` and ``V`` of
    ``(batch, keys, v)``. A heads axis after the batch is allowed, as multi-head attention uses;
    keys and values may then have fewer heads than the queries, which share them
    (:func:`share_kv_heads`). The mask is ``valid_lens`` and ``causal``, the queries lined up
    with the last keys, or ``mask``, a boolean ``(batch or 1, queries, keys)`` tensor from
    :func:`attention_mask`, the same for every head; ``bias`` (ALiBi's, ``(heads, queries,
    keys)``) is added to the scores. The explicit path keeps ``attention_weights``; the fused
    path runs unless ``need_weights``.
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
        mask: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        check_attention_inputs(
            queries, keys, values, valid_lens, ranks=(3, 4), same_query_key_size=True, mask=mask
        )
        if mask is None:  # valid_lens and causal, the queries lined up with the last keys
            scores_shape = (queries.shape[0], queries.shape[-2], keys.shape[-2])
            mask = lined_up_mask(valid_lens, scores_shape, causal, queries.device)
        shape = queries.shape[:-1]  # (batch, [heads,] queries)
        queries, mask, bias = share_kv_heads(queries, keys, mask, bias)
        if self.need_weights:  # explicit path: build the weights, keep them, then mix values
            d = queries.shape[-1]
            scores = queries @ keys.transpose(-2, -1) / math.sqrt(d)  # (..., queries, keys)
            weights = masked_softmax(scores if bias is None else scores + bias, mask=mask)
            self._attention_weights = weights.reshape(*shape, keys.shape[-2])  # (b, [h,] q, k)
            output = self.dropout(weights) @ values  # (..., queries, v)
        else:  # fused path: the same numbers, the weights never stored
            self._attention_weights = None
            dropout_p = self.dropout.p if self.training else 0.0
            output = fused_attention(queries, keys, values, mask, bias, dropout_p)
        return output.reshape(*shape, values.shape[-1])  # (batch, [heads,] queries, v)


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
        if cache is not None:
            check_cache(cache).check_serves(queries.shape[0], window=None, causal=False)
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

        head_i = Attention(Q W_q^(i), K W_k^(j(i)), V W_v^(j(i))),  i = 1..num_heads
        MultiHead(Q, K, V) = concat(head_1, ..., head_h) W_o

    Each head is scaled dot-product attention on ``head_dim = num_hiddens / num_heads``
    features, and by default has keys and values of its own, ``j(i) = i``: d2l's layer.
    ``W_q``, ``W_k``, ``W_v`` and ``W_o`` are d2l's; the input sizes of the first three are
    fixed by ``query_size``, ``key_size`` and ``value_size`` when given, else by the first call
    (d2l's lazy layers). ``attention_weights`` has shape ``(batch, heads, queries, keys)``;
    ``.reshape(-1, queries, keys)`` gives d2l's layout.

    ``cache`` (a :class:`KVCache`) keeps the projected keys and values, ``(batch, kv_heads,
    steps, head_dim)``: a growing or rolling one for self-attention while decoding (the new
    steps' keys and values are appended), a static one for cross-attention (the encoder outputs
    are projected once). The queries continue the steps the cache has seen.

    The options of modern decoders (sec-modern-decoder), one line of ``forward`` each:

    - ``num_kv_heads=g`` with ``g < h``: grouped-query attention (Ainslie et al., 2023), ``g =
      1`` multi-query attention. Query head ``i`` reads key-value head ``j(i) = i // (h / g)``;
      ``W_k`` and ``W_v`` are ``(g head_dim, key_size)``, and the cache shrinks by ``h / g``;
    - ``rotary`` (a :class:`~companion.layers.rotary.RotaryEmbedding`): RoPE rotates the queries
      and keys by their positions, after the projections and before the cache;
    - ``window=w``: each query sees only the ``w`` most recent positions (sliding window);
    - ``alibi=True``: head ``i`` adds ``-slope_i (m - n)`` to its scores
      (:func:`~companion.layers.positional.alibi_bias`).

    A window and ALiBi are causal by construction: they need ``causal=True``.
    """

    alibi_slopes: torch.Tensor | None  # a buffer, (heads,)

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float,
        bias: bool = False,
        *,
        num_kv_heads: int | None = None,
        rotary: RotaryEmbedding | None = None,
        window: int | None = None,
        alibi: bool = False,
        query_size: int | None = None,
        key_size: int | None = None,
        value_size: int | None = None,
        need_weights: bool = False,
    ) -> None:
        super().__init__()
        num_kv_heads = check_attention_shape(num_hiddens, num_heads, num_kv_heads, window, rotary)
        self.num_hiddens, self.num_heads, self.num_kv_heads = num_hiddens, num_heads, num_kv_heads
        self.head_dim = num_hiddens // num_heads
        self.rotary, self.window = rotary, window
        self.attention = DotProductAttention(dropout, need_weights=need_weights)
        self.W_q = _linear(query_size, num_hiddens, bias)
        self.W_k = _linear(key_size, num_kv_heads * self.head_dim, bias)
        self.W_v = _linear(value_size, num_kv_heads * self.head_dim, bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        slopes = alibi_slopes(num_heads) if alibi else None
        self.register_buffer("alibi_slopes", slopes, persistent=False)

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
        """(batch, steps, heads * head_dim) -> (batch, heads, steps, head_dim)"""
        return X.unflatten(-1, (-1, self.head_dim)).transpose(1, 2)

    def merge_heads(self, X: torch.Tensor) -> torch.Tensor:
        """(batch, heads, steps, head_dim) -> (batch, steps, num_hiddens): concatenated heads"""
        return X.transpose(1, 2).flatten(2)

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
        self.check_inputs(queries, keys, values, valid_lens, causal, cache)
        seen = 0 if cache is None or cache.static else cache.seen  # steps before the new keys
        first = seen + keys.shape[1] - queries.shape[1]  # the queries are the last steps
        queries = self.split_heads(self.W_q(queries))  # (batch, heads, queries, head_dim)
        if cache is not None and cache.frozen:  # cross-attention: projected at the first step
            keys, values = cache.stored()  # (batch, kv_heads, keys, head_dim)
        else:
            keys = self.split_heads(self.W_k(keys))  # (batch, kv_heads, new steps, head_dim)
            values = self.split_heads(self.W_v(values))
            if self.rotary is not None:  # RoPE: positions as rotations, before the cache
                queries, keys = self.rotary(queries, offset=first), self.rotary(keys, offset=seen)
            if cache is not None:  # append, then attend to every step the cache holds
                keys, values = cache.update(keys, values)  # (batch, kv_heads, keys, head_dim)
        query_positions = torch.arange(first, first + queries.shape[2], device=queries.device)
        key_positions = torch.arange(keys.shape[2], device=keys.device)  # the steps 0, 1, ...
        if cache is not None:  # or where the cache says (a ring holds them out of order)
            key_positions = cache.positions
        mask = attention_mask(
            query_positions, key_positions, valid_lens, causal=causal, window=self.window
        )  # (batch or 1, queries, keys)
        slopes = self.alibi_slopes
        bias = None if slopes is None else alibi_bias(slopes, query_positions, key_positions)
        # Every head attends at once, each query head to its key-value head's keys
        output = self.attention(queries, keys, values, mask=mask, bias=bias)
        return self.W_o(self.merge_heads(output))  # (batch, queries, num_hiddens)

    def check_inputs(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None,
        causal: bool,
        cache: KVCache | None,
    ) -> None:
        """What :meth:`forward` needs of its arguments (:mod:`companion._validate`): shapes,
        dtypes and devices that fit the layer, a window or ALiBi only when ``causal``, and a
        cache that can serve this layer."""
        cache = None if cache is None else check_cache(cache)
        held = 0 if cache is None or cache.static else cache.seen  # valid_lens count them too
        check_attention_inputs(queries, keys, values, valid_lens, ranks=(3,), earlier_keys=held)
        check_in_features(
            queries=(self.W_q, queries), keys=(self.W_k, keys), values=(self.W_v, values)
        )
        if not causal and (self.window is not None or self.alibi_slopes is not None):
            raise ValueError(
                f"a window ({self.window}) and ALiBi ({self.alibi_slopes is not None}) mask by "
                "position and are causal: call the layer with causal=True"
            )
        if cache is not None:
            cache.check_serves(queries.shape[0], window=self.window, causal=causal)


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
