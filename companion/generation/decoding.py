"""Decoding an encoder-decoder: greedy search and beam search (sec-bahdanau; used in
sec-transformer).

**Decoding.** :func:`greedy_decode`, :func:`beam_search` and :func:`decode` work with any
encoder/decoder pair that follows d2l's protocol (the Transformer of sec-transformer included)::

    enc_all_outputs = encoder(src, src_valid_len)
    state = decoder.init_state(enc_all_outputs, src_valid_len)
    logits, state = decoder(X, state)        # X: (batch, 1) token ids, one step at a time
    decoder.attention_weights                # read after each step when asked to keep weights

They return a :class:`Decoded`: the token ids of each example up to (not including) its
``<eos>``, its log-probability, and, when asked, the decoder's attention weights of every step.

Beam search keeps ``beam_size`` rows per example and must reorder the decoder's state as beams
are picked. A decoder may define ``reorder_state(state, index)`` that returns the state of rows
``index``. companion's decoders define it and keep what comes from the encoder (its outputs,
their projected keys and values) once per example: only what differs between beams, the
self-attention caches or the GRU state, is reordered, and the decoder reads ``beams = rows /
batch`` from the shapes. Without ``reorder_state``, every tensor in the state is taken to have
its rows on axis 0 and is indexed; a tensor that does not is an error, not a silent mix-up.

**Stopping early** once every row has emitted ``<eos>`` needs the host to read a value from the
device. On the CPU that is free; on a GPU it would stall the queue of kernels at every step, so
there the test runs every :data:`EOS_CHECK_EVERY` steps (finished rows only add ``<eos>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import (
    check_integer,
    check_number,
    check_positive,
    check_steps,
    check_token_ids,
    check_type,
    values_checked,
)
from companion.layers.attention import record_attention
from companion.modes import eval_mode

State = Any  # whatever a decoder's init_state returns: tensors in tuples, lists or dicts
# A decoder with d2l's protocol (above): decoder(X, state), init_state, maybe reorder_state and
# attention_weights. Any module may follow it, so for the type checker it is Any.
Decoder = Any
EOS_CHECK_EVERY = 8  # steps between the (syncing) checks for the end on an accelerator


def _all_finished(finished: torch.Tensor, step: int) -> bool:
    """Whether every row has finished, read only where reading it does not stall a device."""
    if finished.device.type != "cpu" and (step + 1) % EOS_CHECK_EVERY:
        return False
    return bool(finished.all())


@dataclass
class Decoded:
    """The result of :func:`greedy_decode` and :func:`beam_search`.

    - ``tokens[i]``: the predicted token ids of example ``i``, up to but not including its
      first ``<eos>`` (at most ``num_steps`` ids; none is ``<eos>``).
    - ``scores[i]``: log P(tokens[i], <eos> | source), the sum of the log-probabilities of the
      chosen tokens, ``<eos>`` counted when it was emitted within ``num_steps``.
    - ``attention_weights``: empty unless ``save_attention_weights``; then one entry per
      decoding step, ``decoder.attention_weights`` after that step, for the whole batch (rows
      in batch order). For the Bahdanau decoder each entry is ``[(batch, 1, num_src_steps)]``;
      for a Transformer decoder, whatever its ``attention_weights`` holds (per layer, per head).
      Steps after example ``i``'s ``<eos>`` (at step ``len(tokens[i])``) are meaningless for it.
    """

    tokens: list[list[int]]
    scores: list[float]
    attention_weights: list[Any] = field(default_factory=list)


def _detached(weights: Any) -> Any:
    """A copy of a nest of lists, tuples and dicts of tensors that later steps cannot change."""
    if isinstance(weights, torch.Tensor):
        return weights.detach()
    if isinstance(weights, tuple):
        return tuple(_detached(w) for w in weights)
    if isinstance(weights, list):
        return [_detached(w) for w in weights]
    if isinstance(weights, dict):
        return {key: _detached(w) for key, w in weights.items()}
    return weights


def _reorder_state(decoder: Decoder, state: State, index: torch.Tensor, rows: int) -> State:
    """The state of batch rows ``index`` (a state with ``rows`` rows): the decoder's own
    ``reorder_state`` if it has one, else every tensor indexed on axis 0."""
    if hasattr(decoder, "reorder_state"):
        return decoder.reorder_state(state, index)
    if isinstance(state, torch.Tensor):
        if state.dim() == 0 or state.shape[0] != rows:
            raise ValueError(
                f"cannot reorder a decoder state tensor of shape {tuple(state.shape)} for beam "
                f"search: its axis 0 is not the batch ({rows} rows). Give the decoder a method "
                "reorder_state(state, index) that returns the state of batch rows index"
            )
        return state.index_select(0, index)
    if isinstance(state, (list, tuple)):
        return type(state)(_reorder_state(decoder, s, index, rows) for s in state)
    if isinstance(state, dict):
        return {key: _reorder_state(decoder, s, index, rows) for key, s in state.items()}
    return state  # None, numbers, ...


@contextmanager
def _inference(model: nn.Module, save_attention_weights: bool) -> Iterator[None]:
    """Eval mode and no gradients; the attention layers on their explicit path if asked."""
    keep = record_attention(model) if save_attention_weights else nullcontext()
    with eval_mode(model), torch.no_grad(), keep:
        yield


def _check_decode_args(
    model: nn.Module,
    src: torch.Tensor,
    src_valid_len: torch.Tensor | None,
    num_steps: int,
    save_attention_weights: bool,
    **ids: int,
) -> torch.Tensor:
    """The arguments of a decoding, checked before the encoder runs; returns ``src`` as
    ``torch.long`` token ids (any integer dtype, or a numpy array, goes)."""
    check_type("model", model, nn.Module, "an encoder-decoder torch.nn.Module")
    if not (hasattr(model, "encoder") and hasattr(model, "decoder")):
        raise TypeError(
            "model must have an encoder and a decoder, as d2l's EncoderDecoder has; got a "
            f"{type(model).__name__} without them"
        )
    if type(src).__module__ == "numpy" and hasattr(src, "dtype"):
        src = torch.as_tensor(src)
    if not isinstance(src, torch.Tensor) or src.dim() != 2:
        raise ValueError(f"src must be a 2-D (batch, num_steps) tensor; got {src!r:.80}")
    encoder, decoder = _encoder_decoder(model)
    src = check_token_ids(src, _vocab_size(encoder) or torch.iinfo(torch.long).max, "src")
    check_steps(src, "src")
    if src_valid_len is not None and (
        not isinstance(src_valid_len, torch.Tensor) or tuple(src_valid_len.shape) != (src.shape[0],)
    ):
        got = (
            f"shape {tuple(src_valid_len.shape)}"
            if isinstance(src_valid_len, torch.Tensor)
            else f"a {type(src_valid_len).__name__}"
        )
        raise ValueError(
            f"src_valid_len must be a tensor of shape (batch,) = ({src.shape[0]},); got {got}"
        )
    if src_valid_len is not None:
        _check_source_lengths(src_valid_len, src.shape[1])
    check_positive(num_steps=num_steps)
    check_type("save_attention_weights", save_attention_weights, bool, "True or False")
    vocab_size = _vocab_size(decoder)
    for name, token in ids.items():
        token = check_integer(name, token, minimum=0)  # a token id
        if vocab_size is not None and token >= vocab_size:
            raise ValueError(f"{name} {token} is outside the vocabulary [0, {vocab_size})")
    return src


def _check_source_lengths(src_valid_len: torch.Tensor, num_steps: int) -> None:
    """``src_valid_len`` must hold integer lengths in ``[0, num_steps]``, the steps of ``src``
    (read on the CPU only; see :mod:`companion._validate`)."""
    dtype = src_valid_len.dtype
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        raise ValueError(f"src_valid_len must hold integer lengths (torch.long); got {dtype}")
    if src_valid_len.numel() and values_checked(src_valid_len):
        low, high = int(src_valid_len.min()), int(src_valid_len.max())
        if low < 0 or high > num_steps:
            raise ValueError(
                f"src_valid_len must hold lengths in [0, {num_steps}], the steps of src; got "
                f"lengths from {low} to {high}"
            )


def _check_beam_options(beam_size: int, length_penalty: float) -> tuple[int, float]:
    """Beam search's options: ``beam_size`` a positive integer, ``length_penalty`` a finite
    number ``>= 0``; returned as an ``int`` and a ``float``."""
    beam_size = check_integer("beam_size", beam_size)
    length_penalty = check_number("length_penalty", length_penalty, at_least=0)
    return beam_size, length_penalty


def _vocab_size(decoder: nn.Module) -> int | None:
    """The decoder's vocabulary size, from its token embedding (``None`` if it has none: a
    decoder of another design is checked after its first step)."""
    embedding = getattr(decoder, "embedding", None)
    return embedding.num_embeddings if isinstance(embedding, nn.Embedding) else None


def _encoder_decoder(model: nn.Module) -> tuple[Any, Decoder]:
    """``model.encoder`` and ``model.decoder``, which follow d2l's protocol."""
    return model.encoder, model.decoder


def _step_log_probs(decoder: Decoder, last: torch.Tensor, state: State, eos_id: int | None):
    """One decoder step: the log-probabilities ``(rows, vocab_size)`` of the next token."""
    Y, state = decoder(last, state)  # (rows, 1, vocab_size)
    if eos_id is not None and not eos_id < Y.shape[-1]:
        raise ValueError(f"eos_id {eos_id} is outside the vocabulary [0, {Y.shape[-1]})")
    return F.log_softmax(Y[:, -1].float(), dim=-1), state


def decode_steps(
    model: nn.Module,
    src: torch.Tensor,
    src_valid_len: torch.Tensor | None,
    bos: torch.Tensor,
    num_steps: int,
    eos_id: int | None,
    forced: torch.Tensor | None,
    save_attention_weights: bool,
) -> tuple[torch.Tensor, torch.Tensor, list[Any]]:
    """Greedy decoding (or forced: ``forced[:, t]`` is the token of step t). Returns the ids and
    log-probabilities ``(batch, steps)`` and the attention weights of every step. With
    ``eos_id``, finished rows emit ``<eos>`` at no cost and decoding stops once all are done."""
    encoder, decoder = _encoder_decoder(model)
    with _inference(model, save_attention_weights):
        enc_all_outputs = encoder(src, src_valid_len)
        state = decoder.init_state(enc_all_outputs, src_valid_len)
        last = bos.reshape(-1, 1)  # (batch, 1)
        finished = torch.zeros(last.shape[0], dtype=torch.bool, device=last.device)
        tokens, log_probs, weights = [], [], []
        for t in range(num_steps):
            step, state = _step_log_probs(decoder, last, state, eos_id)  # (batch, vocab_size)
            token = step.argmax(dim=-1) if forced is None else forced[:, t]  # (batch,)
            log_prob = step.gather(1, token[:, None]).squeeze(1)  # (batch,)
            if eos_id is not None:
                token = token.masked_fill(finished, eos_id)
                log_prob = log_prob.masked_fill(finished, 0.0)
                finished = finished | (token == eos_id)
            tokens.append(token)
            log_probs.append(log_prob)
            if save_attention_weights:
                weights.append(_detached(decoder.attention_weights))
            last = token[:, None]
            if _all_finished(finished, t):
                break
    return torch.stack(tokens, dim=1), torch.stack(log_probs, dim=1), weights


def _trim(tokens: torch.Tensor, eos_id: int) -> list[list[int]]:
    """Each row of ``(batch, steps)`` ids up to, not including, its first ``<eos>``."""
    rows = []
    for row in tokens.tolist():
        rows.append(row[: row.index(eos_id)] if eos_id in row else row)
    return rows


def greedy_decode(
    model: nn.Module,
    src: torch.Tensor,
    src_valid_len: torch.Tensor | None,
    bos_id: int,
    eos_id: int,
    num_steps: int,
    *,
    save_attention_weights: bool = False,
) -> Decoded:
    """Greedy decoding (sec-bahdanau): at each step the most likely next token.

    ``model`` has an ``encoder`` and a ``decoder`` with d2l's protocol. ``src`` holds the
    ``(batch, src_steps)`` source ids, ``src_valid_len`` their ``(batch,)`` lengths or ``None``.
    Decodes at most ``num_steps`` tokens per example, stops an example at its ``<eos>`` and
    the batch when all have stopped. See :class:`Decoded` for what comes back.
    """
    src = _check_decode_args(
        model, src, src_valid_len, num_steps, save_attention_weights, bos_id=bos_id, eos_id=eos_id
    )
    if not len(src):
        return Decoded([], [])  # no rows, nothing to decode
    bos = torch.full((src.shape[0],), bos_id, dtype=torch.long, device=src.device)
    tokens, log_probs, weights = decode_steps(
        model, src, src_valid_len, bos, num_steps, eos_id, None, save_attention_weights
    )
    return Decoded(_trim(tokens, eos_id), log_probs.sum(dim=1).tolist(), weights)


def beam_search(
    model: nn.Module,
    src: torch.Tensor,
    src_valid_len: torch.Tensor | None,
    bos_id: int,
    eos_id: int,
    num_steps: int,
    beam_size: int,
    *,
    length_penalty: float = 0.0,
    save_attention_weights: bool = False,
) -> Decoded:
    """Beam search (sec-bahdanau): keep the ``beam_size`` best partial sequences of each example.

    Sequences are ranked by ``log P(y) / L**length_penalty`` (d2l's ``alpha``; ``L`` counts
    the tokens scored, ``<eos>`` included); 0 ranks by log-probability alone. A finished
    sequence keeps its place and score while others grow; the search stops when every beam
    has finished or after ``num_steps`` tokens. ``beam_size=1`` is greedy decoding. The
    attention weights of the best sequences come from decoding them once more, so they have
    the layout that :func:`greedy_decode` gives. Arguments as :func:`greedy_decode`.
    """
    src = _check_decode_args(
        model, src, src_valid_len, num_steps, save_attention_weights, bos_id=bos_id, eos_id=eos_id
    )
    encoder, decoder = _encoder_decoder(model)
    beam_size, length_penalty = _check_beam_options(beam_size, length_penalty)
    if not len(src):
        return Decoded([], [])  # no rows, nothing to decode
    batch_size, K, device = src.shape[0], beam_size, src.device
    with _inference(model, save_attention_weights=False):
        state = decoder.init_state(encoder(src, src_valid_len), src_valid_len)
        rows = torch.arange(batch_size, device=device)
        # K rows per example from now on (the encoder's part of the state stays one per example)
        state = _reorder_state(decoder, state, rows.repeat_interleave(K), batch_size)
        log_probs = torch.full((batch_size, K), float("-inf"), device=device)
        log_probs[:, 0] = 0.0  # at first only one live beam per example: (batch, K)
        lengths = torch.zeros(batch_size, K, dtype=torch.long, device=device)
        finished = torch.zeros(batch_size, K, dtype=torch.bool, device=device)
        tokens = torch.zeros(batch_size, K, 0, dtype=torch.long, device=device)
        last = torch.full((batch_size * K, 1), bos_id, dtype=torch.long, device=device)
        for t in range(num_steps):
            step, state = _step_log_probs(decoder, last, state, eos_id)  # (batch * K, vocab)
            step = step.unflatten(0, (batch_size, K))  # (batch, K, vocab_size)
            frozen = torch.full_like(step[0, 0], float("-inf"))
            frozen[eos_id] = 0.0  # a finished beam goes on with <eos>, at no cost
            step = torch.where(finished[..., None], frozen, step)
            candidates = log_probs[..., None] + step  # (batch, K, vocab_size)
            cand_lengths = lengths + (~finished).long()  # (batch, K)
            ranking = candidates / cand_lengths[..., None].float() ** length_penalty
            best = ranking.flatten(1).topk(K, dim=1).indices  # (batch, K)
            parent, token = best // step.shape[-1], best % step.shape[-1]  # (batch, K) each
            log_probs = candidates.flatten(1).gather(1, best)
            lengths = cand_lengths.gather(1, parent)
            finished = finished.gather(1, parent) | (token == eos_id)
            history = tokens.gather(1, parent[..., None].expand(-1, -1, t))  # (batch, K, t)
            tokens = torch.cat((history, token[..., None]), dim=-1)  # (batch, K, t + 1)
            index = (rows[:, None] * K + parent).reshape(-1)  # (batch * K,): parent rows
            state = _reorder_state(decoder, state, index, batch_size * K)
            last = token.reshape(-1, 1)  # (batch * K, 1)
            if _all_finished(finished, t):
                break
    final = log_probs / lengths.clamp(min=1).float() ** length_penalty  # (batch, K)
    top = final.argmax(dim=1)  # (batch,)
    best_tokens = tokens[rows, top]  # (batch, steps)
    weights: list[Any] = []
    if save_attention_weights:  # decode the winners once more, keeping the weights
        bos = torch.full((batch_size,), bos_id, dtype=torch.long, device=device)
        _, _, weights = decode_steps(
            model, src, src_valid_len, bos, best_tokens.shape[1], eos_id, best_tokens, True
        )
    return Decoded(_trim(best_tokens, eos_id), log_probs[rows, top].tolist(), weights)


def decode(
    model: nn.Module,
    src: torch.Tensor,
    src_valid_len: torch.Tensor | None,
    bos_id: int,
    eos_id: int,
    num_steps: int,
    *,
    strategy: str = "greedy",
    beam_size: int = 4,
    length_penalty: float = 0.0,
    save_attention_weights: bool = False,
) -> Decoded:
    """:func:`greedy_decode` (``strategy="greedy"``) or :func:`beam_search` (``"beam"``).

    ``beam_size`` (a positive integer) and ``length_penalty`` (a finite number ``>= 0``) are
    beam search's; greedy decoding ignores ``beam_size`` and takes no ``length_penalty`` but 0.
    """
    if not isinstance(strategy, str) or strategy not in ("greedy", "beam"):
        raise ValueError(f"unknown decoding strategy {strategy!r}; expected 'greedy' or 'beam'")
    beam_size, length_penalty = _check_beam_options(beam_size, length_penalty)
    if strategy == "greedy" and length_penalty != 0:
        raise ValueError(
            f"length_penalty={length_penalty} ranks the beams of beam search; greedy decoding "
            "has none: pass strategy='beam', or leave length_penalty at 0"
        )
    if strategy == "greedy":
        return greedy_decode(
            model,
            src,
            src_valid_len,
            bos_id,
            eos_id,
            num_steps,
            save_attention_weights=save_attention_weights,
        )
    return beam_search(
        model,
        src,
        src_valid_len,
        bos_id,
        eos_id,
        num_steps,
        beam_size,
        length_penalty=length_penalty,
        save_attention_weights=save_attention_weights,
    )
