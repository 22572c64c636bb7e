"""The Transformer's blocks: the 2017 encoder and decoder blocks (sec-transformer; Vaswani et
al., 2017), post-norm, each sublayer in an :class:`AddNorm`; and the pre-norm block of every
model after it (:class:`PreNormBlock`: the ViT, GPT and the Llama-style decoder).

Names, signatures, submodule and parameter names follow d2l's PyTorch edition, so a d2l
``state_dict`` loads into these blocks with ``strict=True``. Where a layer's input size is known
(inside a block it is always ``num_hiddens``), it is an ``nn.Linear`` rather than d2l's lazy one;
the parameters are the same. The models that stack them are in :mod:`companion.models`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import nn

from companion._validate import check_dropout, check_hiddens, check_like_weights
from companion.layers.attention import MultiHeadAttention
from companion.layers.feedforward import PositionWiseFFN, SwiGLU, ViTMLP
from companion.layers.kv_cache import KVCache
from companion.layers.norms import make_norm
from companion.layers.rotary import RotaryEmbedding


def _block_attention(
    num_hiddens: int, num_heads: int, dropout: float, bias: bool = False, **options: Any
) -> MultiHeadAttention:
    """Multi-head attention inside a block, where queries, keys and values all have
    ``num_hiddens`` features (so its layers are not lazy); ``options`` are the modern
    decoder's (``num_kv_heads``, ``rotary``, ``window``, ``alibi``)."""
    return MultiHeadAttention(
        num_hiddens,
        num_heads,
        dropout,
        bias,
        query_size=num_hiddens,
        key_size=num_hiddens,
        value_size=num_hiddens,
        **options,
    )


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
        check_like_weights(X, self.ln.weight)
        check_like_weights(Y, self.ln.weight, "Y")
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
        check_hiddens(X, self.num_hiddens, like=self.addnorm1)
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))  # (batch, steps, num_hiddens)
        return self.addnorm2(Y, self.ffn(Y))  # (batch, steps, num_hiddens)


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
        check_hiddens(X, self.num_hiddens, like=self.addnorm1)
        check_hiddens(enc_outputs, self.num_hiddens, "enc_outputs", like=self.addnorm1)
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
        beams, left = divmod(rows, batch_size) if batch_size else (1, rows)  # rows per example
        if left:
            raise ValueError(
                f"X has {rows} rows, not a multiple of the {batch_size} rows of enc_outputs"
            )
        queries = Y.reshape(batch_size, beams * Y.shape[1], Y.shape[-1])  # (batch, beams*steps, d)
        output = self.attention2(queries, enc_outputs, enc_outputs, enc_valid_lens, cache=cache)
        return output.reshape(Y.shape)  # (rows, steps, num_hiddens)


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
    attention is sec-multihead-attention's
    :class:`~companion.layers.attention.MultiHeadAttention` either way, as self-attention.

    ``causal=True`` lets each step see only itself and the steps before it, the one change that
    turns this encoder block into a decoder-only language model's block; ``cache`` (a growing
    or rolling :class:`~companion.layers.kv_cache.KVCache`) is passed on to the attention, which
    then also attends to the steps cached before and appends these.
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
        self.attention = _block_attention(
            num_hiddens,
            num_heads,
            dropout,
            use_bias,
            num_kv_heads=num_kv_heads,
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
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens, like=self.ln1)
        Y = self.ln1(X)  # (batch, steps, num_hiddens)
        X = X + self.attention(Y, Y, Y, valid_lens, causal=causal, cache=cache)
        return X + self.mlp(self.ln2(X))  # (batch, steps, num_hiddens)
