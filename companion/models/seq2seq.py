"""Sequence to sequence: the RNN encoder, the Bahdanau attention decoder, and decoding
(sec-bahdanau).

Names, signatures and parameter names follow d2l's PyTorch edition, so a d2l ``state_dict``
loads into these classes with ``strict=True`` and code moves between the two books:

- :class:`Seq2SeqEncoder` is d2l's, time-major like d2l: outputs ``(num_steps, batch,
  num_hiddens)``, state ``(num_layers, batch, num_hiddens)``.
- :class:`Seq2SeqDecoder` is d2l's plain GRU decoder, with one fixed context for every step
  (the baseline that attention improves on; only in the book, not in the ``d2l`` 1.0.3 package).
- :class:`Seq2SeqAttentionDecoder` is the decoder of d2l's Bahdanau-attention section (only in
  the book, not in the ``d2l`` 1.0.3 package).
- :class:`EncoderDecoder` and :class:`Seq2Seq` are d2l's, as plain PyTorch modules (no d2l
  trainer); ``predict_step`` is d2l's greedy prediction.

Decoding (greedy and beam search) lives in :mod:`companion.generation.decoding`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parameter import UninitializedParameter
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from companion._validate import (
    check_dropout,
    check_positive,
    check_token_ids,
    check_valid_lens,
)
from companion.generation.decoding import Decoded, Decoder, State, decode, decode_steps
from companion.layers.attention import AdditiveAttention
from companion.layers.kv_cache import KVCache
from companion.layers.losses import sequence_loss


def init_seq2seq(module: nn.Module) -> None:
    """d2l's initialisation for seq2seq (sec-bahdanau): Xavier-uniform weights in linear and GRU
    layers, biases left as PyTorch sets them. Use as ``model.apply(init_seq2seq)``.

    Lazy layers not yet materialised are skipped, as d2l (which tests ``type(m) == nn.Linear``)
    skips them too.
    """
    if isinstance(module, nn.Linear) and not isinstance(module.weight, UninitializedParameter):
        nn.init.xavier_uniform_(module.weight)
    if isinstance(module, nn.GRU):
        for name, param in module.named_parameters():
            if "weight" in name:
                nn.init.xavier_uniform_(param)


class GRU(nn.Module):
    """d2l's multilayer GRU (``d2l.GRU``; sec-bahdanau): a thin wrapper around ``nn.GRU``,

        h_t^(l) = GRU_l(h_t^(l-1), h_{t-1}^(l)),   h_t^(0) = x_t,   l = 1, ..., num_layers

    time-major: inputs ``(num_steps, batch, num_inputs)``, outputs ``(num_steps, batch,
    num_hiddens)`` (the top layer), state ``(num_layers, batch, num_hiddens)``. It exists so
    that the encoder's parameters are named ``rnn.rnn.weight_ih_l0`` ... as in d2l. ``dropout``
    acts between layers only, so it is passed on when ``num_layers > 1`` (PyTorch warns
    otherwise; the result is the same).
    """

    def __init__(
        self,
        num_inputs: int,
        num_hiddens: int,
        num_layers: int,
        dropout: float = 0,
        *,
        bidirectional: bool = False,
    ):
        super().__init__()
        check_positive(num_inputs=num_inputs, num_hiddens=num_hiddens, num_layers=num_layers)
        check_dropout(dropout)
        dropout = dropout if num_layers > 1 else 0.0  # nn.GRU drops out between layers only
        self.rnn = nn.GRU(
            num_inputs, num_hiddens, num_layers, dropout=dropout, bidirectional=bidirectional
        )

    def forward(
        self, inputs: torch.Tensor, H: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # inputs: (num_steps, batch, num_inputs); H: (num_layers, batch, num_hiddens)
        return self.rnn(inputs, H)


class Seq2SeqEncoder(nn.Module):
    """The RNN encoder of sequence-to-sequence learning (sec-bahdanau; Sutskever et al., 2014):

        h_t = GRU(e(x_t), h_{t-1}),   t = 1, ..., T

    ``e`` is the embedding. Returns ``(outputs, state)``: ``outputs`` holds the top layer's
    ``h_1 ... h_T``, shape ``(num_steps, batch, num_hiddens)`` (time-major, as d2l); ``state``
    holds every layer's ``h_T``, shape ``(num_layers, batch, num_hiddens)``. ``valid_lens``
    and other extra arguments are accepted and ignored, as in d2l: padding is read too, and
    the attention decoder masks it. Weights are initialised by :func:`init_seq2seq`.

    ``bidirectional=True`` (not in d2l; the default is d2l's encoder) is the encoder of Bahdanau
    et al. (2015), which sec-transformer compares with the Transformer: a forward and a backward
    GRU of ``num_hiddens // 2`` units each, so that ``h_t = [h_t^fwd; h_t^bwd]`` knows the words
    on both sides of ``t`` and the shapes stay those above (``num_hiddens`` even). It reads the
    real tokens only, the first ``valid_lens[b]`` of row ``b`` (the second argument, when
    given), so the backward GRU starts at the last word, not in the padding; outputs at padded
    steps are 0. ``state`` holds each layer's ``[h_T^fwd; h_1^bwd]``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        num_hiddens: int,
        num_layers: int,
        dropout: float = 0,
        *,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        check_positive(vocab_size=vocab_size, embed_size=embed_size)
        if bidirectional and num_hiddens % 2:
            raise ValueError(
                "a bidirectional encoder splits num_hiddens between its two directions: it "
                f"must be even; got {num_hiddens}"
            )
        self.bidirectional = bidirectional
        rnn_hiddens = num_hiddens // 2 if bidirectional else num_hiddens  # per direction
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = GRU(
            embed_size, rnn_hiddens, num_layers, check_dropout(dropout), bidirectional=bidirectional
        )
        self.apply(init_seq2seq)

    def forward(self, X: torch.Tensor, *args: Any) -> tuple[torch.Tensor, torch.Tensor]:
        X = check_token_ids(X, self.embedding.num_embeddings)  # (batch, num_steps)
        embs = self.embedding(X.t())  # (num_steps, batch, embed_size)
        if self.bidirectional:
            return self._both_directions(embs, args[0] if args else None)
        outputs, state = self.rnn(embs)
        # outputs: (num_steps, batch, num_hiddens); state: (num_layers, batch, num_hiddens)
        return outputs, state

    def _both_directions(
        self, embs: torch.Tensor, valid_lens: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bahdanau et al.'s encoder over the real tokens: outputs ``(num_steps, batch,
        num_hiddens)`` and state ``(num_layers, batch, num_hiddens)``, the two directions'
        halves side by side."""
        num_steps, batch = embs.shape[:2]
        if valid_lens is None:
            outputs, state = self.rnn(embs)
        else:
            check_valid_lens(valid_lens, batch, 1, num_steps, axis="source steps")
            lengths = valid_lens.detach().to("cpu", torch.long).clamp(min=1)  # pack needs >= 1
            packed = pack_padded_sequence(embs, lengths, enforce_sorted=False)
            outputs, state = self.rnn(packed)
            outputs, _ = pad_packed_sequence(outputs, total_length=num_steps)  # 0 past the end
        # state: (num_layers * 2, batch, H/2), ordered layer 0 forward, layer 0 backward, ...
        state = state.reshape(-1, 2, batch, state.shape[-1]).permute(0, 2, 1, 3)
        return outputs, state.reshape(state.shape[0], batch, -1)  # (num_layers, batch, H)


class Seq2SeqDecoder(nn.Module):
    """The plain RNN decoder of sequence-to-sequence learning, without attention (sec-bahdanau,
    the fixed-context baseline; d2l's ``Seq2SeqDecoder``). Every step reads the same context:

        c = h_T   (the encoder's top-layer output at its last step, padding included, as d2l)
        s_{t'} = GRU([e(y_{t'-1}); c], s_{t'-1}),    logits_{t'} = W_o s_{t'} + b_o

    with ``s_0`` the encoder's final state of every layer. The state is d2l's
    ``[enc_outputs, hidden_state]``, both time-major: ``(num_steps, batch, num_hiddens)`` and
    ``(num_layers, batch, num_hiddens)``. Parameter names are d2l's, so its ``state_dict``
    loads with ``strict=True``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        num_hiddens: int,
        num_layers: int,
        dropout: float = 0,
    ) -> None:
        super().__init__()
        check_positive(vocab_size=vocab_size, embed_size=embed_size, num_hiddens=num_hiddens)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = GRU(embed_size + num_hiddens, num_hiddens, num_layers, check_dropout(dropout))
        self.dense = nn.Linear(num_hiddens, vocab_size)  # d2l: LazyLinear; same parameters
        self.apply(init_seq2seq)

    def init_state(self, enc_all_outputs: tuple[torch.Tensor, torch.Tensor], *args: Any) -> State:
        outputs, hidden_state = enc_all_outputs  # (T, batch, H), (num_layers, batch, H)
        _check_encoder_state(outputs, hidden_state, self.rnn.rnn, "enc_all_outputs")
        return [outputs, hidden_state]

    def forward(self, X: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        enc_outputs, hidden_state = state  # (T, batch, H), (num_layers, rows, H)
        X = check_token_ids(X, self.embedding.num_embeddings)  # (rows, num_steps)
        beams = _beams_per_example(X, enc_outputs.shape[1], hidden_state)
        embs = self.embedding(X.t())  # (num_steps, rows, embed_size)
        # The same context at every step: the top layer's output after the last source token.
        context = enc_outputs[-1].repeat_interleave(beams, dim=0)  # (rows, H)
        context = context.expand(embs.shape[0], -1, -1)  # (num_steps, rows, H)
        outputs, hidden_state = self.rnn(torch.cat((embs, context), dim=-1), hidden_state)
        outputs = self.dense(outputs).swapaxes(0, 1)  # (rows, num_steps, vocab_size)
        return outputs, [enc_outputs, hidden_state]

    def reorder_state(self, state: State, index: torch.Tensor) -> State:
        """Beam search keeps the GRU state of rows ``index``; the encoder outputs stay, one
        copy per example."""
        enc_outputs, hidden_state = state
        return [enc_outputs, hidden_state[:, index]]


class Seq2SeqAttentionDecoder(nn.Module):
    """The RNN decoder with Bahdanau attention (sec-bahdanau; Bahdanau et al., 2015). At each
    decoding step t' the previous decoder state queries the encoder:

        c_{t'} = sum_t alpha(s_{t'-1}, h_t) h_t
        alpha(s, h_t) = softmax_t( w_v^T tanh(W_q s + W_k h_t) )      (additive attention)
        s_{t'} = GRU([c_{t'}; e(y_{t'-1})], s_{t'-1}),    logits_{t'} = W_o s_{t'} + b_o

    ``h_t`` are the encoder outputs (keys = values), ``s_{t'-1}`` the top GRU layer's previous
    state (``s_0``: the encoder's final state), padding masked by ``enc_valid_lens``.
    ``attention_weights`` is d2l's list of one ``(batch, 1, num_src_steps)`` tensor per step
    of the last forward pass. Parameter names are those of the book's class.

    The state is d2l's ``(enc_outputs, hidden_state, enc_valid_lens)`` and a static
    :class:`~companion.layers.kv_cache.KVCache` that holds the projected keys ``W_k h_t`` (and the
    values ``h_t``), computed at the first step and reused at every later one.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        num_hiddens: int,
        num_layers: int,
        dropout: float = 0,
    ) -> None:
        super().__init__()
        check_positive(vocab_size=vocab_size, embed_size=embed_size, num_hiddens=num_hiddens)
        check_positive(num_layers=num_layers)
        self.attention = AdditiveAttention(
            num_hiddens, check_dropout(dropout), query_size=num_hiddens, key_size=num_hiddens
        )
        self.embedding = nn.Embedding(vocab_size, embed_size)
        rnn_dropout = dropout if num_layers > 1 else 0.0  # between layers only
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=rnn_dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)  # d2l: LazyLinear; same parameters
        self._attention_weights: list[torch.Tensor] = []
        # As d2l: Xavier for the GRU and the output layer; attention keeps PyTorch's default.
        self.rnn.apply(init_seq2seq)
        self.dense.apply(init_seq2seq)

    def init_state(
        self, enc_outputs: tuple[torch.Tensor, torch.Tensor], enc_valid_lens: torch.Tensor | None
    ) -> State:
        outputs, hidden_state = enc_outputs  # (T, batch, H), (num_layers, batch, H)
        _check_encoder_state(outputs, hidden_state, self.rnn, "enc_outputs")
        # Batch-first outputs, and a cache for their projections: (batch, T, H)
        return outputs.permute(1, 0, 2), hidden_state, enc_valid_lens, KVCache(static=True)

    def forward(self, X: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        enc_outputs, hidden_state, enc_valid_lens, cache = state  # (batch, T, H), (L, rows, H)
        X = check_token_ids(X, self.embedding.num_embeddings)  # (rows, num_steps)
        beams = _beams_per_example(X, enc_outputs.shape[0], hidden_state)
        embs = self.embedding(X).permute(1, 0, 2)  # (num_steps, rows, embed_size)
        outputs, self._attention_weights = [], []
        for x in embs:  # x: (rows, embed_size)
            # s_{t'-1} queries the encoder; the beams of one example are queries of its outputs
            query = hidden_state[-1].reshape(-1, beams, hidden_state.shape[-1])  # (batch, beams, H)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens, cache=cache)
            context = context.reshape(-1, 1, context.shape[-1])  # (rows, 1, H)
            x = torch.cat((context, x.unsqueeze(1)), dim=-1)  # (rows, 1, H + embed_size)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # (1, rows, H)
            outputs.append(out)
            weights = self.attention.attention_weights  # (batch, beams, T)
            self._attention_weights.append(weights.reshape(-1, 1, weights.shape[-1]))
        outputs = self.dense(torch.cat(outputs, dim=0))  # (num_steps, rows, vocab_size)
        return outputs.permute(1, 0, 2), (enc_outputs, hidden_state, enc_valid_lens, cache)

    def reorder_state(self, state: State, index: torch.Tensor) -> State:
        """Beam search keeps the GRU state of rows ``index``; the encoder outputs, their
        lengths and the projected keys stay, one copy per example."""
        enc_outputs, hidden_state, enc_valid_lens, cache = state
        return enc_outputs, hidden_state[:, index], enc_valid_lens, cache

    @property
    def attention_weights(self) -> list[torch.Tensor]:
        return self._attention_weights


def _check_encoder_state(
    outputs: torch.Tensor, hidden_state: torch.Tensor, rnn: nn.GRU, name: str
) -> None:
    """What the encoder hands a GRU decoder: outputs ``(num_steps, batch, H)`` and the state
    ``(num_layers, batch, H)``, with the decoder GRU's ``H`` and ``num_layers``."""
    layers, hiddens = rnn.num_layers, rnn.hidden_size
    expected = (layers, outputs.shape[1], hiddens) if outputs.dim() == 3 else None
    if outputs.shape[-1] != hiddens or tuple(hidden_state.shape) != expected:
        raise ValueError(
            f"{name} must be (outputs (num_steps, batch, {hiddens}), state "
            f"({layers}, batch, {hiddens})); got {tuple(outputs.shape)} and "
            f"{tuple(hidden_state.shape)}"
        )


def _beams_per_example(X: torch.Tensor, batch_size: int, hidden_state: torch.Tensor) -> int:
    """Rows of ``X`` per example: 1, or the beam size while beam search decodes. ``X`` must
    have the rows of the GRU state ``(num_layers, rows, num_hiddens)``."""
    beams, left = divmod(X.shape[0], batch_size) if batch_size else (1, X.shape[0])
    if X.shape[0] != hidden_state.shape[1] or left:
        raise ValueError(
            f"X has batch {X.shape[0]}; the decoder state has {hidden_state.shape[1]} rows "
            f"for {batch_size} examples"
        )
    return beams


class EncoderDecoder(nn.Module):
    """The encoder-decoder architecture (sec-bahdanau), d2l's ``EncoderDecoder``:

        state = decoder.init_state(encoder(enc_X, *args), *args)
        Y_hat = decoder(dec_X, state)[0]        # (batch, num_steps, vocab_size)

    ``*args`` is typically ``enc_valid_len``. Any encoder/decoder pair with d2l's protocol fits.
    """

    def __init__(self, encoder: nn.Module, decoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder: Decoder = decoder  # init_state and all: d2l's protocol, duck-typed

    def forward(self, enc_X: torch.Tensor, dec_X: torch.Tensor, *args: Any) -> torch.Tensor:
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        return self.decoder(dec_X, dec_state)[0]  # the decoder output only

    def predict_step(
        self,
        batch: tuple[torch.Tensor, ...],
        device: torch.device | str,
        num_steps: int,
        save_attention_weights: bool = False,
    ) -> tuple[torch.Tensor, list[Any]]:
        """d2l's greedy prediction: ``batch`` is ``(src, tgt, src_valid_len, label)`` and
        ``tgt[:, 0]`` the ``<bos>`` tokens. Returns the ``(batch, num_steps)`` predicted ids,
        ``<eos>`` and what follows it included, and the decoder's attention weights of every step
        (empty unless asked). Runs in eval mode without gradients, unlike d2l.
        """
        check_positive(num_steps=num_steps)
        src, tgt, src_valid_len, _ = (None if a is None else a.to(device) for a in batch)
        tokens, _, weights = decode_steps(
            self, src, src_valid_len, tgt[:, 0], num_steps, None, None, save_attention_weights
        )
        return tokens, weights

    def decode(
        self,
        src: torch.Tensor,
        src_valid_len: torch.Tensor | None,
        bos_id: int,
        eos_id: int,
        num_steps: int,
        **options: Any,
    ) -> Decoded:
        """:func:`decode` with this model; ``options`` are ``strategy``, ``beam_size`` ..."""
        return decode(self, src, src_valid_len, bos_id, eos_id, num_steps, **options)


class Seq2Seq(EncoderDecoder):
    """d2l's RNN encoder-decoder for training (sec-bahdanau): the loss ignores padding,

        loss = sum_i m_i CE(Y_hat_i, Y_i) / sum_i m_i,    m_i = [Y_i != tgt_pad]

    and ``configure_optimizers`` gives Adam with learning rate ``lr``.
    """

    def __init__(self, encoder: nn.Module, decoder: nn.Module, tgt_pad: int, lr: float) -> None:
        super().__init__(encoder, decoder)
        self.tgt_pad, self.lr = tgt_pad, lr

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor, averaged: bool = True) -> torch.Tensor:
        # Y_hat: (batch, num_steps, vocab_size); Y: (batch, num_steps)
        if averaged:
            return sequence_loss(Y_hat, Y, self.tgt_pad)
        losses = F.cross_entropy(
            Y_hat.reshape(-1, Y_hat.shape[-1]), Y.reshape(-1), reduction="none"
        )  # (batch * num_steps,)
        mask = (Y.reshape(-1) != self.tgt_pad).float()  # (batch * num_steps,)
        return losses * mask

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)
