"""The Transformer encoder and decoder (sec-transformer; Vaswani et al., 2017).

Names, signatures, submodule and parameter names follow d2l's PyTorch edition, so a d2l
``state_dict`` loads into these classes with ``strict=True``. Where a layer's input size is known
(inside a block it is always ``num_hiddens``), it is an ``nn.Linear`` rather than d2l's lazy one;
the parameters are the same.

**The decoder's state** is d2l's ``[enc_outputs, enc_valid_lens, caches]``. ``caches[i]`` is
block ``i``'s :class:`DecoderCache`, a real key-value cache: its self-attention keys and values
of every step decoded so far, already projected and split into heads, ``(batch, heads, steps,
head_dim)``; and its cross-attention keys and values, the encoder outputs projected once per
source batch, ``(batch, heads, source steps, head_dim)``. A new step then costs the projections
of one position, not of the whole prefix.

**Attention weights** are kept only on the explicit path: run the model inside
``with record_attention(model):`` and then read ``attention_weights``. Outside it the fused path
runs, nothing is kept, and reading them raises an error that says so.

**Two deliberate differences from d2l's decoder**, both about positions and masks:

- the decoder self-attention is causal in training *and* evaluation mode (d2l masks only in
  training mode, so its validation loss lets each step see the steps after it). New steps after
  a cache see every cached step and the new steps up to their own;
- step by step decoding adds the positional encoding of the step's true position, the number
  of cached steps (d2l adds that of position 0 at every step). Decoding one step at a time
  then gives the outputs of decoding the whole sequence at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple, cast

import torch
from torch import nn

from companion._validate import (
    check_dropout,
    check_hiddens,
    check_positive,
    check_token_ids,
)
from companion.layers.attention import MultiHeadAttention, _linear
from companion.layers.feedforward import SwiGLU
from companion.layers.gqa import Cache, GroupedQueryAttention
from companion.layers.kv_cache import KVCache
from companion.layers.norms import RMSNorm
from companion.layers.positional import PositionalEncoding
from companion.layers.rotary import RotaryEmbedding


def _check_decoder_inputs(X: torch.Tensor, state: Any, vocab_size: int, num_blks: int) -> None:
    """``X``: token ids; ``state``: what ``init_state`` returns, one distinct
    :class:`DecoderCache` per block, whose cached rows (if any) are the rows of ``X``."""
    check_token_ids(X, vocab_size)
    if not (
        isinstance(state, list | tuple)
        and len(state) == 3
        and len(state[2]) == num_blks
        and all(isinstance(cache, DecoderCache) for cache in state[2])
    ):
        raise ValueError(
            "state must be [enc_outputs, enc_valid_lens, caches] with one DecoderCache per "
            f"block ({num_blks}), as init_state returns; got {type(state).__name__}"
        )
    if len({id(cache.self_attention) for cache in state[2]}) < num_blks:
        raise ValueError(
            "state's caches must be distinct, one DecoderCache per block, as init_state "
            "returns; got one shared by several blocks ([DecoderCache(...)] * num_blks)"
        )
    cached = state[2][0].self_attention.keys
    if cached is not None and cached.shape[0] != X.shape[0]:
        raise ValueError(f"X has batch {X.shape[0]}; the cache has {cached.shape[0]} rows")


def _block_attention(
    num_hiddens: int, num_heads: int, dropout: float, bias: bool = False
) -> MultiHeadAttention:
    """Multi-head attention inside a block, where queries, keys and values all have
    ``num_hiddens`` features (so its layers are not lazy)."""
    return MultiHeadAttention(
        num_hiddens,
        num_heads,
        dropout,
        bias,
        query_size=num_hiddens,
        key_size=num_hiddens,
        value_size=num_hiddens,
    )


def token_embedding(vocab_size: int, num_hiddens: int) -> nn.Embedding:
    """An embedding initialised with standard deviation ``1 / sqrt(num_hiddens)``.

    The model multiplies it by ``sqrt(num_hiddens)``, so token vectors start with entries of
    size about 1, like the positional encoding. d2l keeps PyTorch's N(0, 1) initialisation,
    which after the scaling drowns the positions: on the date task (sec-transformer) that model
    stalled below 80% exact match after six epochs, where this one passed 99% in four. Only
    the initial values differ; a d2l state dict loads as before.
    """
    embedding = nn.Embedding(vocab_size, num_hiddens)
    nn.init.normal_(embedding.weight, std=num_hiddens**-0.5)
    return embedding


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network (sec-transformer):

        FFN(x) = W_2 relu(W_1 x + b_1) + b_2

    applied to every position's features ``x`` on its own, with the same weights at every
    position: a two-layer MLP on the last axis, ``dense1`` (``W_1``) and ``dense2`` (``W_2``).
    ``num_inputs`` fixes the input size; without it ``dense1`` is lazy, as in d2l, and the
    first call fixes it.
    """

    def __init__(
        self, ffn_num_hiddens: int, ffn_num_outputs: int, *, num_inputs: int | None = None
    ) -> None:
        super().__init__()
        self.dense1 = _linear(num_inputs, ffn_num_hiddens, bias=True)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        # (..., features) -> (..., ffn_num_hiddens) -> (..., ffn_num_outputs)
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    """A residual connection followed by layer normalization (sec-transformer):

        AddNorm(X, Y) = LayerNorm(X + Dropout(Y))

    where ``Y`` is the sublayer's output for input ``X``. Layer normalization, unlike batch
    normalization, standardizes each position's features on their own: its statistics do not
    depend on the other sequences in the batch, on padding, or on training vs evaluation mode.
    ``norm_shape`` is the shape of the normalized trailing axes (``num_hiddens``).
    """

    def __init__(self, norm_shape: int | list[int] | torch.Size, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        if X.shape != Y.shape:
            raise ValueError(
                f"X and Y must have the same shape; got X {tuple(X.shape)}, Y {tuple(Y.shape)}"
            )
        return self.ln(self.dropout(Y) + X)  # (batch, steps, num_hiddens)


class TransformerEncoderBlock(nn.Module):
    """One Transformer encoder block (sec-transformer): self-attention, then the FFN, each in
    AddNorm:

        Y = AddNorm(X, MultiHead(X, X, X))
        Z = AddNorm(Y, FFN(Y))

    ``X`` and ``Z`` have shape ``(batch, steps, num_hiddens)``. ``valid_lens`` of shape
    ``(batch,)`` hides the padding keys. Nothing here depends on the order of the steps.
    """

    def __init__(
        self,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        dropout: float,
        use_bias: bool = False,
    ) -> None:
        super().__init__()
        self.num_hiddens = num_hiddens
        self.attention = _block_attention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens, num_inputs=num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens)
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))  # (batch, steps, num_hiddens)
        return self.addnorm2(Y, self.ffn(Y))  # (batch, steps, num_hiddens)


class ViTMLP(nn.Module):
    """The MLP of a pre-norm block (sec-vit; d2l's ``ViTMLP``, which GPT's blocks use too):
    GELU instead of ReLU, dropout after each layer:

        MLP(x) = Dropout(W_2 Dropout(GELU(W_1 x + b_1)) + b_2)

    applied to each token's features on its own, ``(..., num_inputs) -> (..., mlp_num_outputs)``.
    ``num_inputs`` fixes the input size; without it ``dense1`` is lazy, as in d2l.
    """

    def __init__(
        self,
        mlp_num_hiddens: int,
        mlp_num_outputs: int,
        dropout: float = 0.5,
        *,
        num_inputs: int | None = None,
    ) -> None:
        super().__init__()
        check_dropout(dropout)
        self.dense1 = _linear(num_inputs, mlp_num_hiddens, bias=True)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.Linear(mlp_num_hiddens, mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dropout1(self.gelu(self.dense1(x)))  # (..., mlp_num_hiddens)
        return self.dropout2(self.dense2(x))  # (..., mlp_num_outputs)


def make_norm(norm: str, norm_shape: int | list[int] | torch.Size, eps: float = 1e-5) -> nn.Module:
    """``"layer"``: :class:`torch.nn.LayerNorm`; ``"rms"``:
    :class:`~companion.layers.norms.RMSNorm`."""
    if norm == "rms":
        if not isinstance(norm_shape, int):
            raise ValueError(f"an RMSNorm normalizes one axis; got norm_shape={norm_shape}")
        return RMSNorm(norm_shape, eps=eps)
    if norm != "layer":
        raise ValueError(f"norm must be 'layer' or 'rms'; got {norm!r}")
    return nn.LayerNorm(norm_shape, eps=eps)


class PreNormBlock(nn.Module):
    """The pre-norm Transformer block, the one block of every model after the 2017 Transformer
    in this book: the ViT (sec-vit; d2l's ``ViTBlock``, which :mod:`companion.models.vit` keeps as
    an alias), GPT (sec-language-models) and the Llama-style decoder (sec-modern-decoder).
    Normalization comes *before* each sublayer, and the residual path from input to output
    stays a plain sum:

        X = X + Attention(Norm_1(X))
        X = X + FFN(Norm_2(X))

    ``X`` is ``(batch, steps, num_hiddens)`` in and out. The positional arguments are d2l's
    ``ViTBlock``'s, which build its block: layer norms over ``norm_shape``, multi-head
    attention, a GELU MLP. The keywords make the modern block, as
    :class:`~companion.models.decoder.DecoderConfig` sets them: ``norm="rms"``, ``ffn="swiglu"``,
    ``num_kv_heads`` (grouped-query attention), ``rotary``, ``window`` and ``alibi``. The
    attention is :class:`~companion.layers.gqa.GroupedQueryAttention` either way.

    ``causal=True`` lets each step see only itself and the steps before it, the one change that
    turns this encoder block into a decoder-only language model's block; ``cache`` (a
    :class:`~companion.layers.kv_cache.KVCache` or a rolling one) is passed on to the attention,
    which then also attends to the steps cached before and appends these.
    """

    def __init__(
        self,
        num_hiddens: int,
        norm_shape: int | list[int] | torch.Size,
        mlp_num_hiddens: int,
        num_heads: int,
        dropout: float,
        use_bias: bool = False,
        *,
        norm: str = "layer",
        norm_eps: float = 1e-5,
        ffn: str = "gelu",
        num_kv_heads: int | None = None,
        rotary: RotaryEmbedding | None = None,
        window: int | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        if ffn not in ("gelu", "swiglu"):
            raise ValueError(f"ffn must be 'gelu' or 'swiglu'; got {ffn!r}")
        self.num_hiddens = num_hiddens
        self.ln1 = make_norm(norm, norm_shape, norm_eps)
        self.attention = GroupedQueryAttention(
            num_hiddens,
            num_heads,
            num_kv_heads,
            dropout,
            use_bias,
            rotary=rotary,
            window=window,
            alibi=alibi,
        )
        self.ln2 = make_norm(norm, norm_shape, norm_eps)
        self.mlp: nn.Module = (
            SwiGLU(num_hiddens, mlp_num_hiddens, dropout)
            if ffn == "swiglu"
            else ViTMLP(mlp_num_hiddens, num_hiddens, dropout, num_inputs=num_hiddens)
        )

    def forward(
        self,
        X: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
        cache: Cache | None = None,
    ) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens)
        Y = self.ln1(X)  # (batch, steps, num_hiddens)
        X = X + self.attention(Y, valid_lens, causal=causal, cache=cache)
        return X + self.mlp(self.ln2(X))  # (batch, steps, num_hiddens)


class TransformerEncoder(nn.Module):
    """The Transformer encoder (sec-transformer): embed, add positions, then ``num_blks`` blocks:

        H_0 = sqrt(d) Embedding(X) + P,    H_l = EncoderBlock_l(H_{l-1}),  l = 1..num_blks

    The embeddings are scaled by ``sqrt(num_hiddens)`` because the positional encoding ``P``
    lies in [-1, 1]. ``X`` holds token ids of shape ``(batch, steps)``; the output has shape
    ``(batch, steps, num_hiddens)``. ``attention_weights`` lists each block's
    ``(batch, heads, steps, steps)`` weights after a pass inside ``record_attention`` (d2l's
    are ``(batch * heads, steps, steps)``: ``.reshape(-1, steps, steps)`` gives them).
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
        use_bias: bool = False,
    ) -> None:
        super().__init__()
        check_positive(num_blks=num_blks)
        self.num_hiddens = num_hiddens
        self.embedding = token_embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"block{i}",
                TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias),
            )

    @property
    def attention_weights(self) -> list[torch.Tensor]:
        blocks = cast(Iterable[TransformerEncoderBlock], self.blks)  # nn.Sequential: untyped
        return [blk.attention.attention_weights for blk in blocks]

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
        check_token_ids(X, self.embedding.num_embeddings)
        # (batch, steps) -> (batch, steps, num_hiddens)
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        for blk in self.blks:
            X = blk(X, valid_lens)  # (batch, steps, num_hiddens)
        return X


class DecoderCache(NamedTuple):
    """What one decoder block keeps between decoding steps (sec-transformer)."""

    self_attention: KVCache  # grows: (batch, heads, steps decoded, head_dim)
    cross_attention: KVCache  # static: (batch, heads, source steps, head_dim), projected once


class TransformerDecoderBlock(nn.Module):
    """One Transformer decoder block (sec-transformer): three sublayers, each in AddNorm:

        Y = AddNorm(X, MaskedMultiHead(X, X, X))                  # causal self-attention
        Z = AddNorm(Y, MultiHead(Y, enc_outputs, enc_outputs))    # encoder-decoder attention
        out = AddNorm(Z, FFN(Z))

    ``X`` is ``(batch, steps, num_hiddens)``. With a ``cache`` (a :class:`DecoderCache`), the
    self-attention also sees the keys and values of the steps cached before, and appends those
    of ``X``; the cross-attention projects ``enc_outputs`` at the first call only. ``i`` is
    d2l's block index, kept in the signature; the block needs no shared state to find its cache.
    """

    def __init__(
        self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float, i: int
    ) -> None:
        super().__init__()
        self.i, self.num_hiddens = i, num_hiddens
        self.attention1 = _block_attention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = _block_attention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens, num_inputs=num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(
        self,
        X: torch.Tensor,
        enc_outputs: torch.Tensor,
        enc_valid_lens: torch.Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens)
        check_hiddens(enc_outputs, self.num_hiddens, "enc_outputs")
        self_cache, cross_cache = cache if cache is not None else (None, None)
        # Each step sees itself and every step before it, cached or new.
        Y = self.addnorm1(X, self.attention1(X, X, X, causal=True, cache=self_cache))
        Y2 = self.cross_attention(Y, enc_outputs, enc_valid_lens, cross_cache)
        Z = self.addnorm2(Y, Y2)  # (batch, steps, num_hiddens)
        return self.addnorm3(Z, self.ffn(Z))  # (batch, steps, num_hiddens)

    def cross_attention(
        self,
        Y: torch.Tensor,
        enc_outputs: torch.Tensor,
        enc_valid_lens: torch.Tensor | None,
        cache: KVCache | None,
    ) -> torch.Tensor:
        """Queries ``Y`` attend to the encoder outputs. In beam search ``Y`` has ``beams`` rows
        per example but the encoder outputs one: the beams become extra queries of it."""
        batch_size, rows = enc_outputs.shape[0], Y.shape[0]
        if rows % batch_size:
            raise ValueError(
                f"X has {rows} rows, not a multiple of the {batch_size} rows of enc_outputs"
            )
        queries = Y.reshape(batch_size, -1, Y.shape[-1])  # (batch, beams * steps, num_hiddens)
        output = self.attention2(queries, enc_outputs, enc_outputs, enc_valid_lens, cache=cache)
        return output.reshape(Y.shape)  # (rows, steps, num_hiddens)


class TransformerDecoder(nn.Module):
    """The Transformer decoder (sec-transformer): embed, add positions, ``num_blks`` blocks,
    project:

        H_0 = sqrt(d) Embedding(X) + P,  H_l = DecoderBlock_l(H_{l-1}, enc_outputs),
        logits = H_L W + b

    ``X`` holds target token ids ``(batch, steps)``; ``forward`` returns the logits of shape
    ``(batch, steps, vocab_size)`` and the state, whose caches now hold these steps too. Feed
    the whole target sequence at once (training, teacher forcing) or one step at a time
    (prediction): in evaluation mode both give the same logits. ``attention_weights`` is
    ``[self-attention per block, encoder-decoder attention per block]``, each ``(batch, heads,
    steps, keys)``, after a pass inside ``record_attention``.
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
    ) -> None:
        super().__init__()
        check_positive(num_blks=num_blks)
        self.num_hiddens, self.num_blks = num_hiddens, num_blks
        self.embedding = token_embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"block{i}",
                TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i),
            )
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(
        self, enc_outputs: torch.Tensor, enc_valid_lens: torch.Tensor | None
    ) -> list[Any]:
        """``[enc_outputs, enc_valid_lens, caches]``, with an empty cache for every block."""
        caches = [DecoderCache(KVCache(), KVCache(static=True)) for _ in self.blks]
        return [enc_outputs, enc_valid_lens, caches]

    def reorder_state(self, state: list[Any], index: torch.Tensor) -> list[Any]:
        """Beam search keeps rows ``index`` of the self-attention caches. The encoder outputs
        and the cross-attention caches are per example and stay as they are."""
        for cache in state[2]:
            cache.self_attention.select(index)
        return state

    @property
    def attention_weights(self) -> list[list[torch.Tensor]]:
        blocks = cast(Iterable[TransformerDecoderBlock], self.blks)  # nn.Sequential: untyped
        return [
            [blk.attention1.attention_weights for blk in blocks],
            [blk.attention2.attention_weights for blk in blocks],
        ]

    def forward(self, X: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        _check_decoder_inputs(X, state, self.embedding.num_embeddings, self.num_blks)
        enc_outputs, enc_valid_lens, caches = state
        offset = len(caches[0].self_attention)  # steps already decoded
        # (batch, steps) -> (batch, steps, num_hiddens), at positions offset, offset + 1, ...
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens), offset=offset)
        for blk, cache in zip(self.blks, caches):
            X = blk(X, enc_outputs, enc_valid_lens, cache)  # (batch, steps, num_hiddens)
        return self.dense(X), state  # (batch, steps, vocab_size)
