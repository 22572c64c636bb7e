"""The Transformer encoder and decoder (sec-transformer; Vaswani et al., 2017), stacks of the
blocks of :mod:`companion.layers.blocks`, and the two decoders the key-value cache replaced.

Names, signatures, submodule and parameter names follow d2l's PyTorch edition, so a d2l
``state_dict`` loads into these classes with ``strict=True``.

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

**The designs the cache replaced**, kept as baselines the chapter compares it with (``python -m
companion.bench decode`` times all three). Both run a :class:`TransformerDecoder`'s own weights,
so all three decode the same tokens:

- :class:`BlockInputCacheDecoder` caches each decoder block's *inputs* instead of the projected
  keys and values (d2l's design, and companion's before the KV cache): every step projects all
  of them again;
- :class:`NoCacheDecoder` caches nothing: every step runs the whole prefix again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

import torch
from torch import nn

from companion._validate import check_positive, check_token_ids
from companion.layers.blocks import DecoderCache, TransformerDecoderBlock, TransformerEncoderBlock
from companion.layers.kv_cache import KVCache
from companion.layers.positional import PositionalEncoding


def _check_decoder_inputs(
    X: torch.Tensor, state: Any, vocab_size: int, num_blks: int
) -> torch.Tensor:
    """``X``: token ids, returned as ``torch.long``; ``state``: what ``init_state`` returns,
    one distinct :class:`DecoderCache` per block (each attention layer checks its cache)."""
    X = check_token_ids(X, vocab_size)
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
    return X


def token_embedding(vocab_size: int, num_hiddens: int) -> nn.Embedding:
    """An embedding initialised with standard deviation ``1 / sqrt(num_hiddens)``.

    The model multiplies it by ``sqrt(num_hiddens)``, so token vectors start with entries of
    size about 1, like the positional encoding. d2l keeps PyTorch's N(0, 1) initialisation,
    which after the scaling drowns the positions: on the date task (sec-transformer) that model
    stalled below 80% exact match after six epochs, where this one passed 99% in four. Only
    the initial values differ; a d2l state dict loads as before.
    """
    check_positive(vocab_size=vocab_size, num_hiddens=num_hiddens)
    embedding = nn.Embedding(vocab_size, num_hiddens)
    nn.init.normal_(embedding.weight, std=num_hiddens**-0.5)
    return embedding


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
        X = check_token_ids(X, self.embedding.num_embeddings)
        # (batch, steps) -> (batch, steps, num_hiddens)
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        for blk in self.blks:
            X = blk(X, valid_lens)  # (batch, steps, num_hiddens)
        return X


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
        X = _check_decoder_inputs(X, state, self.embedding.num_embeddings, self.num_blks)
        enc_outputs, enc_valid_lens, caches = state
        offset = caches[0].self_attention.seen  # steps already decoded
        # (batch, steps) -> (batch, steps, num_hiddens), at positions offset, offset + 1, ...
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens), offset=offset)
        for blk, cache in zip(self.blks, caches):
            X = blk(X, enc_outputs, enc_valid_lens, cache)  # (batch, steps, num_hiddens)
        return self.dense(X), state  # (batch, steps, vocab_size)


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
