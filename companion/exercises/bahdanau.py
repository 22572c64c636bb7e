"""Checkers for chapter 3, Bahdanau attention.

- :func:`check_bahdanau_context`: the context vector of one decoder step, computed by hand from
  the encoder's time-major outputs, the decoder's previous state and the source lengths.
- :func:`check_length_normalized_scores`: the scores beam search ranks finished hypotheses by,
  ``log P(y) / L**alpha``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check


def _context_inputs(generator: torch.Generator) -> Inputs:
    # As many source steps as batch rows: a time-major tensor read as batch-major then has the
    # right shape, so a layout mix-up shows up as wrong numbers, as it does in a real model.
    steps = batch = int(torch.randint(4, 8, (1,), generator=generator))
    enc_hiddens, dec_hiddens, attn_hiddens = 5, 6, 7
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


def check_bahdanau_context(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 3: ``student_fn(enc_outputs, query, valid_lens, W_q, W_k, w_v)`` returns the
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
    )


def _scores_inputs(generator: torch.Generator) -> Inputs:
    num_hypotheses, max_steps = 6, 9
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


def check_length_normalized_scores(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 3: ``student_fn(log_probs, lengths, alpha)`` returns the ``(k,)`` scores
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
    )
