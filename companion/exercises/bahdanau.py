"""Checkers for the exercises of sec-bahdanau (Bahdanau attention).

- :func:`check_bahdanau_context`: the context vector of one decoder step, computed by hand from
  the encoder's time-major outputs, the decoder's previous state and the source lengths.
- :func:`check_bahdanau_step`: one whole decoder step, built from the modules of a
  ``Seq2SeqAttentionDecoder``: attend with the previous state, feed ``[c; e(y)]`` to the GRU,
  read the logits off the new state.
- :func:`check_length_normalized_scores`: the scores beam search ranks finished hypotheses by,
  ``log P(y) / L**alpha``.

Every size is drawn afresh on each call and none is the chapter's own (64 hidden units, one
GRU layer, 11 or 30 source steps, batches of 3 and 4, beams of 4, vocabularies of 14, 15 and
63 tokens), so a solution that reads the chapter's variables instead of its arguments fails.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check
from companion.exercises.sizes import draw
from companion.layers.attention import AdditiveAttention
from companion.models.seq2seq import Seq2SeqAttentionDecoder

CHAPTER_STEPS, CHAPTER_BATCHES, CHAPTER_WIDTHS = (11, 30), (3, 4), (64,)
CHAPTER_VOCABS, CHAPTER_BEAM = (14, 15, 63), 4


def _context_inputs(generator: torch.Generator) -> Inputs:
    # As many source steps as batch rows: a time-major tensor read as batch-major then has the
    # right shape, so a layout mix-up shows up as wrong numbers, as it does in a real model.
    steps = batch = draw(generator, 5, 9)
    enc_hiddens = draw(generator, 3, 12, avoid=[steps])
    dec_hiddens = draw(generator, 3, 12, avoid=[steps, enc_hiddens])
    attn_hiddens = draw(generator, 3, 12, avoid=[steps, enc_hiddens, dec_hiddens])
    enc_outputs = torch.randn(steps, batch, enc_hiddens, generator=generator)  # (T, batch, H)
    query = torch.randn(batch, dec_hiddens, generator=generator)  # s_{t'-1}: (batch, H_dec)
    valid_lens = torch.randint(1, steps + 1, (batch,), generator=generator)
    valid_lens[0] = steps - 2  # at least one row with padding to mask
    valid_lens[1] = steps  # and one without, so that no step is padding in every row
    W_q = torch.randn(dec_hiddens, attn_hiddens, generator=generator) / dec_hiddens**0.5
    W_k = torch.randn(enc_hiddens, attn_hiddens, generator=generator) / enc_hiddens**0.5
    w_v = torch.randn(attn_hiddens, generator=generator)
    return enc_outputs, query, valid_lens, W_q, W_k, w_v


def _bahdanau_context(
    enc_outputs: torch.Tensor,
    query: torch.Tensor,
    valid_lens: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    w_v: torch.Tensor,
    mask: bool = True,
    axis: int = -1,
    time_major: bool = False,
    use_tanh: bool = True,
) -> torch.Tensor:
    """The reference, and with a flag switched, each known mistake."""
    keys = enc_outputs if time_major else enc_outputs.permute(1, 0, 2)  # (batch, T, H_enc)
    features = query[:, None, :] @ W_q + keys @ W_k  # (batch, T, attn_hiddens)
    scores = (torch.tanh(features) if use_tanh else features) @ w_v  # (batch, T)
    if mask:
        padding = torch.arange(keys.shape[1])[None, :] >= valid_lens[:, None]  # (batch, T)
        scores = scores.masked_fill(padding, float("-inf"))
    weights = torch.softmax(scores, dim=axis)  # (batch, T): each row sums to 1 over time
    return (weights[:, :, None] * keys).sum(dim=1)  # (batch, H_enc)


def check_bahdanau_context(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-bahdanau: ``student_fn(enc_outputs, query, valid_lens, W_q, W_k, w_v)`` returns the
    ``(batch, H_enc)`` context ``c = sum_t softmax_t(w_v^T tanh(W_q^T s + W_k^T h_t)) h_t`` of one
    decoder step, with ``enc_outputs`` time-major ``(T, batch, H_enc)``, ``query`` the previous
    decoder state ``(batch, H_dec)``, ``W_q`` ``(H_dec, a)``, ``W_k`` ``(H_enc, a)``, ``w_v``
    ``(a,)``, and steps ``t >= valid_lens[b]`` masked out."""

    def mistake(**flags):
        return lambda *inputs: _bahdanau_context(*inputs, **flags)

    return check(
        student_fn,
        _bahdanau_context,
        _context_inputs,
        mistakes=[
            (
                mistake(mask=False),
                "padding got attention: give the steps t >= valid_lens[b] a score of -inf "
                "(or zero weight) before the softmax",
            ),
            (
                mistake(axis=0),
                "softmax over the wrong axis: the weights of one example must sum to 1 over "
                "its source steps, not over the batch",
            ),
            (
                mistake(time_major=True),
                "time and batch are mixed up: enc_outputs is time-major (T, batch, H); "
                "permute it to (batch, T, H) before using it as keys and values",
            ),
            (
                mistake(time_major=True, mask=False),
                "time and batch are mixed up (enc_outputs is time-major (T, batch, H)), and "
                "the padding is not masked",
            ),
            (
                mistake(use_tanh=False),
                "the tanh is missing: the score is w_v^T tanh(W_q^T s + W_k^T h_t)",
            ),
        ],
        seed=seed,
    )


def _scores_inputs(generator: torch.Generator) -> Inputs:
    num_hypotheses = draw(generator, 3, 9, avoid=[CHAPTER_BEAM])
    max_steps = draw(generator, 5, 14, avoid=[*CHAPTER_STEPS, num_hypotheses])
    # Log-probabilities of the chosen tokens; after a hypothesis's length they are junk.
    log_probs = -torch.rand(num_hypotheses, max_steps, generator=generator) * 3
    lengths = torch.randint(2, max_steps + 1, (num_hypotheses,), generator=generator)
    lengths[0] = max_steps - 1  # never all full length, so the junk always matters
    alpha = 0.5 + torch.rand(1, generator=generator).item()  # in [0.5, 1.5)
    return log_probs, lengths, alpha


def _length_normalized_scores(
    log_probs: torch.Tensor,
    lengths: torch.Tensor,
    alpha: float,
    mask: bool = True,
    power: bool = True,
    divide_by: str = "length",
) -> torch.Tensor:
    steps = torch.arange(log_probs.shape[1])[None, :]  # (1, max_steps)
    kept = steps < lengths[:, None] if mask else torch.ones_like(log_probs, dtype=torch.bool)
    total = (log_probs * kept).sum(dim=1)  # (num_hypotheses,): log P(y)
    length = lengths.float() if divide_by == "length" else torch.full_like(total, steps.numel())
    return total / (length**alpha if power else length)


def check_length_normalized_scores(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-bahdanau: ``student_fn(log_probs, lengths, alpha)`` returns the ``(k,)`` scores
    ``log P(y) / L**alpha`` of ``k`` hypotheses. ``log_probs`` is ``(k, max_steps)``, the
    log-probability of each chosen token; hypothesis ``i`` has ``lengths[i]`` tokens (its
    ``<eos>`` included) and the positions after them hold junk to ignore."""

    def mistake(**flags):
        return lambda *inputs: _length_normalized_scores(*inputs, **flags)

    return check(
        student_fn,
        _length_normalized_scores,
        _scores_inputs,
        mistakes=[
            (
                mistake(mask=False),
                "the positions after a hypothesis's length were summed too: keep only the "
                "first lengths[i] log-probabilities of row i",
            ),
            (
                mistake(power=False),
                "alpha is ignored: divide by lengths ** alpha, not by the length itself",
            ),
            (
                mistake(divide_by="max_steps"),
                "divided by the number of columns: each hypothesis has its own length L",
            ),
            (
                mistake(mask=False, power=False, divide_by="max_steps"),
                "that is the mean over all columns: sum only the first lengths[i] entries and "
                "divide by lengths[i] ** alpha",
            ),
        ],
        seed=seed,
    )


# ----------------------------------------------------------------------------- a decoder step


def _step_inputs(generator: torch.Generator) -> Inputs:
    vocab = draw(generator, 6, 20, avoid=CHAPTER_VOCABS)
    embed_size = draw(generator, 3, 10)
    hiddens = draw(generator, 4, 12, avoid=[*CHAPTER_WIDTHS, embed_size])
    layers = draw(generator, 2, 3)  # more than one: the query is the top layer's state
    batch = draw(generator, 2, 7, avoid=CHAPTER_BATCHES)
    steps = draw(generator, 3, 9, avoid=[*CHAPTER_STEPS, batch])
    with torch.random.fork_rng(devices=[]):  # the notebook's global random state stays as it was
        torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
        decoder = Seq2SeqAttentionDecoder(vocab, embed_size, hiddens, layers).eval()
    tokens = torch.randint(vocab, (batch,), generator=generator)  # y_{t'-1}: (batch,)
    enc_outputs = torch.randn(batch, steps, hiddens, generator=generator)  # (batch, T, H)
    hidden_state = torch.randn(layers, batch, hiddens, generator=generator)  # s_{t'-1}
    valid_lens = torch.randint(1, steps + 1, (batch,), generator=generator)
    valid_lens[0] = steps - 1  # at least one row with padding to mask
    return decoder, tokens, enc_outputs, hidden_state, valid_lens


@torch.no_grad()
def _reference_step(decoder, tokens, enc_outputs, hidden_state, valid_lens):
    """companion's own decoder, one step: the logits ``(batch, vocab)`` and the new state."""
    state = decoder.init_state((enc_outputs.permute(1, 0, 2), hidden_state), valid_lens)
    logits, state = decoder(tokens[:, None], state)  # (batch, 1, vocab)
    return logits[:, 0], state[1]


@torch.no_grad()
def _step(
    decoder,
    tokens,
    enc_outputs,
    hidden_state,
    valid_lens,
    *,
    context_first: bool = True,
    query_layer: int = -1,
    mask: bool = True,
    carry_state: bool = True,
    logits_from_new_state: bool = True,
):
    """One step written out, right (the defaults) or with one known mistake."""
    attention: AdditiveAttention = decoder.attention
    query = hidden_state[query_layer].unsqueeze(1)  # s_{t'-1}: (batch, 1, H)
    lens = valid_lens if mask else None
    context = attention(query, enc_outputs, enc_outputs, lens).squeeze(1)  # c_{t'}: (batch, H)
    embedded = decoder.embedding(tokens)  # e(y_{t'-1}): (batch, embed_size)
    pair = (context, embedded) if context_first else (embedded, context)
    x = torch.cat(pair, dim=-1).unsqueeze(0)  # (1, batch, H + embed_size): one time step
    _, new_state = decoder.rnn(x, hidden_state if carry_state else None)  # (layers, batch, H)
    top = new_state[-1] if logits_from_new_state else hidden_state[-1]
    return decoder.dense(top), new_state  # (batch, vocab), (layers, batch, H)


def check_bahdanau_step(
    student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor]], *, seed: int | None = None
) -> bool:
    """sec-bahdanau: ``student_fn(decoder, tokens, enc_outputs, hidden_state, valid_lens)``
    computes one step of ``decoder``, a ``Seq2SeqAttentionDecoder`` with several GRU layers,
    from its modules (``decoder.attention``, ``decoder.embedding``, ``decoder.rnn``,
    ``decoder.dense``) and returns ``(logits, new_hidden_state)``: ``(batch, vocab)`` and
    ``(layers, batch, H)``. ``tokens`` are the previous tokens ``(batch,)``, ``enc_outputs``
    the batch-major encoder outputs ``(batch, T, H)``, ``hidden_state`` the decoder's state
    ``(layers, batch, H)`` and ``valid_lens`` the source lengths ``(batch,)``."""

    def mistake(**flags):
        return lambda *inputs: _step(*inputs, **flags)

    return check(
        student_fn,
        _reference_step,
        _step_inputs,
        mistakes=[
            (
                mistake(context_first=False),
                "the GRU input is in the wrong order: companion's Seq2SeqAttentionDecoder "
                "concatenates [c; e(y)], the context first, then the embedding",
            ),
            (
                mistake(query_layer=0),
                "the query is the bottom layer's state: use the top layer's previous state, "
                "hidden_state[-1]",
            ),
            (
                mistake(mask=False),
                "padding got attention: pass valid_lens to the attention, so that source "
                "steps t >= valid_lens[b] get weight 0",
            ),
            (
                mistake(carry_state=False),
                "the GRU started from zeros: pass the previous hidden_state to decoder.rnn",
            ),
            (
                mistake(logits_from_new_state=False),
                "the logits come from the previous state: read them off the new state, "
                "decoder.dense(new_hidden_state[-1])",
            ),
        ],
        atol=1e-5,
        seed=seed,
        output_names=("logits", "new hidden state"),
    )
