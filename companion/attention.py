"""Attention layers: masked softmax, scaled dot-product, additive and multi-head attention.

Names, signatures and parameter names follow d2l's PyTorch edition, so a d2l ``state_dict``
loads into these layers. Two extensions: ``valid_lens`` is optional everywhere, and the
dot-product layers take a keyword-only ``causal=True`` for decoder self-attention.

**Two paths, one result.** The dot-product layers compute the same numbers in one of two ways:

- the *explicit* path builds the ``(queries, keys)`` weight matrix, keeps it in
  ``attention_weights`` and multiplies it with the values. It is the path to read, and the one
  that feeds heatmaps;
- the *fused* path calls ``torch.nn.functional.scaled_dot_product_attention``, which never
  materialises the weights in memory and is several times faster.

The switch is ``need_weights``: pass ``need_weights=True`` to the constructor, or wrap a whole
model's forward pass in ``with record_attention(model):``. Without it the fused path runs and
reading ``attention_weights`` raises an error that says how to get them.

**A query with no valid key** (``valid_lens`` of 0) gets all-zero weights and a zero output on
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
from torch.nn.parameter import UninitializedParameter

from companion.checks import check_dropout, check_qkv, check_valid_lens, describe_shapes


def _check_in_features(layer: nn.Linear, inputs: torch.Tensor, name: str) -> None:
    """A clear error instead of a matmul error once a lazy layer has fixed its input size."""
    if isinstance(layer.weight, UninitializedParameter):
        return
    in_features = layer.weight.shape[-1]  # in_features stays 0 when a state dict was loaded
    if inputs.shape[-1] != in_features:
        raise ValueError(
            f"{name} must have {in_features} features, as on this layer's first call; "
            f"got shape {tuple(inputs.shape)}"
        )


def attention_mask(
    valid_lens: torch.Tensor | None,
    scores_shape: torch.Size,
    causal: bool = False,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """Boolean mask, True where a query may attend to a key; ``None`` when nothing is masked.

    ``scores_shape`` is ``(batch, queries, keys)`` or ``(batch, heads, queries, keys)``; the mask
    broadcasts against it. ``valid_lens`` of shape ``(batch,)`` keeps the first ``valid_lens[b]``
    keys for every query; of shape ``(batch, queries)`` it sets a length per query. ``causal``
    also hides the keys after each query's own position.
    """
    batch_size, num_queries, num_keys = scores_shape[0], scores_shape[-2], scores_shape[-1]
    mask = None
    if valid_lens is not None:
        check_valid_lens(valid_lens, batch_size, num_queries, num_keys)
        lens = valid_lens.to(device)
        lens = lens[:, None] if lens.dim() == 1 else lens  # (batch, 1 or queries)
        mask = torch.arange(num_keys, device=device) < lens[..., None]  # (batch, q or 1, keys)
        if len(scores_shape) == 4:
            mask = mask.unsqueeze(1)  # (batch, 1, q or 1, keys): the same for every head
    if causal:
        past = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()
        mask = past if mask is None else mask & past  # (queries, keys) broadcasts
    return mask


def masked_softmax(
    X: torch.Tensor, valid_lens: torch.Tensor | None = None, *, causal: bool = False
) -> torch.Tensor:
    """Softmax over the last axis of ``X`` that gives masked keys exactly zero weight.

    ``X`` holds scores of shape ``(batch, queries, keys)`` (or with a heads axis after the
    batch). ``valid_lens`` is ``(batch,)`` or ``(batch, queries)``; see :func:`attention_mask`.
    A query with no valid key gets all-zero weights. Taught in chapter 2 (attention scoring
    functions).
    """
    if X.dim() not in (3, 4):
        raise ValueError(
            f"X must be 3-D (batch, queries, keys) or 4-D (batch, heads, queries, keys); "
            f"got shape {tuple(X.shape)}"
        )
    mask = attention_mask(valid_lens, X.shape, causal, X.device)
    if mask is None:
        return F.softmax(X, dim=-1)
    # The lowest float, not -inf: a fully masked row then stays finite (uniform), and is
    # zeroed below instead of turning into NaN.
    X = X.masked_fill(~mask, torch.finfo(X.dtype).min)
    weights = F.softmax(X, dim=-1)  # (..., queries, keys)
    return weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention (chapter 2):

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V

    with ``Q`` of shape ``(batch, queries, d)``, ``K`` of ``(batch, keys, d)`` and ``V`` of
    ``(batch, keys, v)``; a heads axis after the batch is allowed, as multi-head attention uses.
    The explicit path keeps ``attention_weights``; the fused path runs unless ``need_weights``.
    """

    def __init__(self, dropout: float, *, need_weights: bool = False) -> None:
        super().__init__()
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.need_weights = need_weights
        self._attention_weights: torch.Tensor | None = None

    @property
    def attention_weights(self) -> torch.Tensor:
        """The ``(batch, [heads,] queries, keys)`` weights of the last explicit forward pass."""
        if self._attention_weights is None:
            raise RuntimeError(
                "no attention weights were kept: the fused path ran. Construct the layer with "
                "need_weights=True, or run the model inside `with record_attention(model):`"
            )
        return self._attention_weights

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
    ) -> torch.Tensor:
        check_qkv(queries, keys, values, ranks=(3, 4))
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "queries and keys must have the same feature size d for dot-product attention; "
                f"got {describe_shapes(queries=queries, keys=keys)}"
            )
        if self.need_weights:  # explicit path
            scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
            weights = masked_softmax(scores, valid_lens, causal=causal)  # (..., queries, keys)
            self._attention_weights = weights
            return self.dropout(weights) @ values  # (..., queries, value features)

        self._attention_weights = None  # fused path
        dropout_p = self.dropout.p if self.training else 0.0
        if valid_lens is None:
            return F.scaled_dot_product_attention(
                queries, keys, values, dropout_p=dropout_p, is_causal=causal
            )
        scores_shape = (*queries.shape[:-1], keys.shape[-2])
        mask = attention_mask(valid_lens, scores_shape, causal, queries.device)
        has_key = mask.any(dim=-1, keepdim=True)  # (..., queries, 1)
        # A query with no valid key would come out NaN: let it see every key, then zero it.
        output = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask | ~has_key, dropout_p=dropout_p
        )
        return output.masked_fill(~has_key, 0.0)


class AdditiveAttention(nn.Module):
    """Additive attention (chapter 2; Bahdanau et al., 2015, used in chapter 3):

        a(q, k) = w_v^T tanh(W_q q + W_k k)

    Queries ``(batch, queries, q)`` and keys ``(batch, keys, k)`` may have different sizes.
    Always explicit: it keeps ``attention_weights`` of shape ``(batch, queries, keys)``.
    """

    def __init__(self, num_hiddens: int, dropout: float) -> None:
        super().__init__()
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        check_qkv(queries, keys, values, ranks=(3,))
        _check_in_features(self.W_q, queries, "queries")
        _check_in_features(self.W_k, keys, "keys")
        queries, keys = self.W_q(queries), self.W_k(keys)  # (batch, q or k steps, num_hiddens)
        # Broadcast every query against every key: (batch, queries, keys, num_hiddens)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (batch, queries, keys)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values  # (batch, queries, value features)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (chapter 6; Vaswani et al., 2017):

        head_i = Attention(Q W_q^(i), K W_k^(i), V W_v^(i)),  i = 1..num_heads
        MultiHead(Q, K, V) = concat(head_1, ..., head_h) W_o

    Each head is scaled dot-product attention on ``num_hiddens / num_heads`` features. The
    projections ``W_q``, ``W_k``, ``W_v`` and ``W_o`` are d2l's (lazy: their input sizes are
    fixed by the first call, or by loading a state dict). ``attention_weights`` has shape
    ``(batch, heads, queries, keys)``; ``.reshape(-1, queries, keys)`` gives d2l's layout.
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float,
        bias: bool = False,
        *,
        need_weights: bool = False,
    ) -> None:
        super().__init__()
        if num_heads <= 0 or num_hiddens % num_heads:
            raise ValueError(
                f"num_hiddens ({num_hiddens}) must be divisible by num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout, need_weights=need_weights)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    @property
    def need_weights(self) -> bool:
        return self.attention.need_weights

    @need_weights.setter
    def need_weights(self, value: bool) -> None:
        self.attention.need_weights = value

    @property
    def attention_weights(self) -> torch.Tensor:
        return self.attention.attention_weights

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
    ) -> torch.Tensor:
        check_qkv(queries, keys, values, ranks=(3,))
        for layer, inputs, name in (
            (self.W_q, queries, "queries"),
            (self.W_k, keys, "keys"),
            (self.W_v, values, "values"),
        ):
            _check_in_features(layer, inputs, name)
        batch_size, num_queries, num_keys = queries.shape[0], queries.shape[1], keys.shape[1]
        # Project, then split the features into heads: (batch, heads, steps, head_size)
        queries = self.W_q(queries).reshape(batch_size, num_queries, self.num_heads, -1)
        keys = self.W_k(keys).reshape(batch_size, num_keys, self.num_heads, -1)
        values = self.W_v(values).reshape(batch_size, num_keys, self.num_heads, -1)
        queries, keys, values = (t.transpose(1, 2) for t in (queries, keys, values))
        # Every head attends at once; valid_lens apply to all heads alike.
        output = self.attention(queries, keys, values, valid_lens, causal=causal)
        # Concatenate the heads again: (batch, queries, num_hiddens)
        output = output.transpose(1, 2).reshape(batch_size, num_queries, -1)
        return self.W_o(output)


@contextmanager
def record_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Run every attention layer in ``model`` on its explicit path, keeping its weights.

    ``with record_attention(model): model(...)`` and then read ``attention_weights`` of any
    layer. Each layer's previous setting is restored on exit.
    """
    layers = [m for m in model.modules() if isinstance(m, DotProductAttention)]
    before = [layer.need_weights for layer in layers]
    for layer in layers:
        layer.need_weights = True
    try:
        yield model
    finally:
        for layer, setting in zip(layers, before):
            layer.need_weights = setting
