"""Checkers for the exercises of sec-bahdanau (Bahdanau attention).

- :func:`check_bahdanau_context`: the context vector of one decoder step, computed by hand from
  the encoder's time-major outputs, the decoder's previous state and the source lengths.
- :func:`check_luong_step`: one step of a decoder with Luong's attention, built from its parts
  (:class:`LuongParts`): run the GRU first, query with the *new* state through the "general"
  score ``s^T W_a h_t``, then read the logits off ``tanh([c; s] W_c)``.
- :func:`check_length_normalized_scores`: the scores beam search ranks finished hypotheses by,
  ``log P(y) / L**alpha``.

Every size is drawn afresh on each call and none is the chapter's own (64 hidden units, one
GRU layer, 11 or 30 source steps, batches of 3 and 4, beams of 4, vocabularies of 14, 15 and
63 tokens), so a solution that reads the chapter's variables instead of its arguments fails.
The context and Luong's step are computed by hand: an answer that calls anything of
``companion.layers`` or ``companion.models`` (an attention layer, ``masked_softmax``, a
decoder), or torch's fused attention under any of its names, is told so, though its numbers
are right (``rules.forbidden_call``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw

CHAPTER_STEPS, CHAPTER_BATCHES, CHAPTER_WIDTHS = (11, 30), (3, 4), (64,)
CHAPTER_VOCABS, CHAPTER_BEAM = (14, 15, 63), 4
# An answer computes attention itself: calling companion's (a layer, masked_softmax, a
# decoder) gives the right numbers without doing the exercise, so the checker refuses it.
BY_HAND = {
    module: (
        "the answer calls companion's attention (its layers, masked_softmax or a decoder): "
        "compute the scores, the mask and the softmax yourself, with torch operations"
    )
    for module in ("companion.layers", "companion.models")
}
# torch's fused attention too, under any of its names (rules.same_torch_function): with the
# query scaled up by sqrt(d) it computes Luong's general score, mask and softmax in one call.
BY_HAND |= {
    name: (
        "the answer calls torch's fused attention or masked softmax: compute the scores, the "
        "mask and the softmax yourself, with torch operations"
    )
    for name in (
        "torch._C._nn.scaled_dot_product_attention",
        "torch._VariableFunctionsClass._masked_softmax",
        "torch.nn.functional.multi_head_attention_forward",
    )
}


def _calls_companion(student_fn: Callable, inputs: Inputs) -> bool:
    """Print the hint and return True when ``student_fn(*inputs)`` calls companion's
    attention instead of computing it."""
    hint = forbidden_call(student_fn, inputs, BY_HAND)
    if hint:
        print(f"hint: {hint}")
    return hint is not None


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

    start = first_seed(seed)
    if _calls_companion(student_fn, _context_inputs(seeded_generator(start))):
        return False
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
        seed=start,
    )


def _scores_inputs(generator: torch.Generator) -> Inputs:
    num_hypotheses = draw(generator, 3, 9, avoid=[CHAPTER_BEAM])
    max_steps = draw(generator, 5, 14, avoid=[*CHAPTER_STEPS, num_hypotheses])
    # Log-probabilities of the chosen tokens; after a hypothesis's length they are junk.
    log_probs = -torch.rand(num_hypotheses, max_steps, generator=generator) * 3
    lengths = torch.randint(2, max_steps + 1, (num_hypotheses,), generator=generator)
    lengths[0] = max_steps - 1  # never all full length, so the junk always matters
    # Beam-search buffers hold -inf after a hypothesis ends: some of the junk is -inf, always
    # the last entry of row 0, so that multiplying by a 0/1 mask (0 * -inf = NaN) shows.
    junk = torch.arange(max_steps)[None, :] >= lengths[:, None]  # (k, max_steps)
    minus_inf = junk & (torch.rand(num_hypotheses, max_steps, generator=generator) < 0.5)
    minus_inf[0, -1] = True
    log_probs = log_probs.masked_fill(minus_inf, float("-inf"))
    alpha = 0.5 + torch.rand(1, generator=generator).item()  # in [0.5, 1.5)
    return log_probs, lengths, alpha


def _length_normalized_scores(
    log_probs: torch.Tensor,
    lengths: torch.Tensor,
    alpha: float,
    mask: bool = True,
    power: bool = True,
    divide_by: str = "length",
    multiply: bool = False,
) -> torch.Tensor:
    steps = torch.arange(log_probs.shape[1])[None, :]  # (1, max_steps)
    kept = steps < lengths[:, None] if mask else torch.ones_like(log_probs, dtype=torch.bool)
    if multiply:  # a mistake: 0 * -inf is NaN
        total = (log_probs * kept).sum(dim=1)
    else:
        total = log_probs.masked_fill(~kept, 0.0).sum(dim=1)  # (num_hypotheses,): log P(y)
    length = lengths.float() if divide_by == "length" else torch.full_like(total, steps.numel())
    return total / (length**alpha if power else length)


def check_length_normalized_scores(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-bahdanau: ``student_fn(log_probs, lengths, alpha)`` returns the ``(k,)`` scores
    ``log P(y) / L**alpha`` of ``k`` hypotheses. ``log_probs`` is ``(k, max_steps)``, the
    log-probability of each chosen token; hypothesis ``i`` has ``lengths[i]`` tokens (its
    ``<eos>`` included) and the positions after them hold junk to ignore, ``-inf`` among it."""

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
                mistake(multiply=True),
                "NaN where the junk is -inf: multiplying by a 0/1 mask gives 0 * -inf = NaN; "
                "zero the junk with masked_fill or torch.where instead",
            ),
            (
                mistake(mask=False, power=False, divide_by="max_steps"),
                "that is the mean over all columns: sum only the first lengths[i] entries and "
                "divide by lengths[i] ** alpha",
            ),
        ],
        seed=seed,
    )


# ----------------------------------------------------------------------------- Luong's step


class LuongParts(NamedTuple):
    """The parameters of a GRU decoder with Luong's global attention and "general" score
    (sec-bahdanau's exercise; Luong et al., 2015), without input feeding. ``W_a`` and ``W_c``
    are plain matrices in row form: for row vectors ``s`` and ``c`` the score is
    ``(s @ W_a) . h_t`` and the attentional state ``tanh(cat(c, s) @ W_c)``. A named tuple, so
    that two draws of one seed compare equal field by field (tests/test_exercises.py)."""

    embedding: nn.Embedding  # e(y): vocab -> embed_size
    rnn: nn.GRU  # time-major, input embed_size, num_hiddens units, one or more layers
    W_a: torch.Tensor  # (H, H)
    W_c: torch.Tensor  # (2H, H)
    dense: nn.Linear  # H -> vocab: the logits


def make_luong_parts(
    vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1, *, seed: int = 0
) -> LuongParts:
    """Random :class:`LuongParts` of these sizes, drawn from ``seed`` on the CPU; the global
    random state is left as it was."""
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
        embedding = nn.Embedding(vocab_size, embed_size)
        rnn = nn.GRU(embed_size, num_hiddens, num_layers)
        dense = nn.Linear(num_hiddens, vocab_size)
    W_a = torch.randn(num_hiddens, num_hiddens, generator=generator) / num_hiddens**0.5
    W_c = torch.randn(2 * num_hiddens, num_hiddens, generator=generator) / num_hiddens**0.5
    return LuongParts(embedding.eval(), rnn.eval(), W_a, W_c, dense.eval())


def _luong_inputs(generator: torch.Generator) -> Inputs:
    vocab = draw(generator, 6, 20, avoid=CHAPTER_VOCABS)
    embed_size = draw(generator, 3, 10)
    hiddens = draw(generator, 4, 12, avoid=[*CHAPTER_WIDTHS, embed_size])
    layers = draw(generator, 2, 3)  # more than one: the query is the top layer's state
    batch = draw(generator, 2, 7, avoid=CHAPTER_BATCHES)
    steps = draw(generator, 3, 9, avoid=[*CHAPTER_STEPS, batch])
    seed = int(torch.randint(2**31, (1,), generator=generator))
    parts = make_luong_parts(vocab, embed_size, hiddens, layers, seed=seed)
    tokens = torch.randint(vocab, (batch,), generator=generator)  # y_{t'-1}: (batch,)
    enc_outputs = torch.randn(batch, steps, hiddens, generator=generator)  # (batch, T, H)
    hidden_state = torch.randn(layers, batch, hiddens, generator=generator)  # s_{t'-1}
    valid_lens = torch.randint(1, steps + 1, (batch,), generator=generator)
    valid_lens[0] = steps - 1  # at least one row with padding to mask
    valid_lens[1] = steps  # and one without, so that no step is padding in every row
    return parts, tokens, enc_outputs, hidden_state, valid_lens


@torch.no_grad()
def _luong_step(
    parts: LuongParts,
    tokens: torch.Tensor,
    enc_outputs: torch.Tensor,
    hidden_state: torch.Tensor,
    valid_lens: torch.Tensor,
    *,
    query_from: str = "new",
    query_layer: int = -1,
    transpose_W_a: bool = False,
    mask: bool = True,
    axis: int = -1,
    context_first: bool = True,
    attentional: bool = True,
    carry_state: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference (the defaults), and with a flag switched, each known mistake."""
    x = parts.embedding(tokens).unsqueeze(0)  # e(y_{t'-1}): (1, batch, embed_size)
    _, new_state = parts.rnn(x, hidden_state if carry_state else None)  # s_{t'}: (L, batch, H)
    query = (new_state if query_from == "new" else hidden_state)[query_layer]  # (batch, H)
    W_a = parts.W_a.T if transpose_W_a else parts.W_a
    scores = (enc_outputs @ (query @ W_a).unsqueeze(-1)).squeeze(-1)  # s^T W_a h_t: (batch, T)
    if mask:
        padding = torch.arange(enc_outputs.shape[1])[None, :] >= valid_lens[:, None]
        scores = scores.masked_fill(padding, float("-inf"))
    weights = torch.softmax(scores, dim=axis)  # (batch, T)
    context = (weights.unsqueeze(-1) * enc_outputs).sum(dim=1)  # c_{t'}: (batch, H)
    top = new_state[-1]  # (batch, H)
    pair = (context, top) if context_first else (top, context)
    attended = torch.tanh(torch.cat(pair, dim=-1) @ parts.W_c) if attentional else top
    return parts.dense(attended), new_state  # (batch, vocab), (layers, batch, H)


def check_luong_step(
    student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor]], *, seed: int | None = None
) -> bool:
    """sec-bahdanau: ``student_fn(parts, tokens, enc_outputs, hidden_state, valid_lens)``
    computes one step of a decoder with Luong's attention from its :class:`LuongParts`: the
    GRU runs first on ``e(y_{t'-1})`` alone; the new top state ``s`` queries the encoder with
    the score ``s^T W_a h_t``, padding masked; the logits are ``dense(tanh([c; s] W_c))``. It
    returns ``(logits, new_hidden_state)``: ``(batch, vocab)`` and ``(layers, batch, H)``.
    ``tokens`` are the previous tokens ``(batch,)``, ``enc_outputs`` the batch-major encoder
    outputs ``(batch, T, H)``, ``hidden_state`` the decoder's state ``(layers, batch, H)`` and
    ``valid_lens`` the source lengths ``(batch,)``. It may not call companion's attention."""

    def mistake(**flags):
        return lambda *inputs: _luong_step(*inputs, **flags)

    start = first_seed(seed)
    if _calls_companion(student_fn, _luong_inputs(seeded_generator(start))):
        return False
    return check(
        student_fn,
        _luong_step,
        _luong_inputs,
        mistakes=[
            (
                mistake(query_from="previous"),
                "the query is the state before the step, s_{t'-1}, as in Bahdanau's decoder: "
                "Luong's runs the GRU first and queries with the new state s_{t'}",
            ),
            (
                mistake(query_layer=0),
                "the query is the bottom layer's state: use the top layer's new state, "
                "new_hidden_state[-1]",
            ),
            (
                mistake(transpose_W_a=True),
                "W_a is transposed: the score is s^T W_a h_t, the row (s @ W_a) dotted with "
                "each h_t",
            ),
            (
                mistake(mask=False),
                "padding got attention: give the source steps t >= valid_lens[b] a score of "
                "-inf before the softmax",
            ),
            (
                mistake(axis=0),
                "softmax over the wrong axis: the weights of one example must sum to 1 over "
                "its source steps, not over the batch",
            ),
            (
                mistake(context_first=False),
                "the attentional layer's input is in the wrong order: it reads [c; s], the "
                "context first",
            ),
            (
                mistake(carry_state=False),
                "the GRU started from zeros: pass the previous hidden_state to parts.rnn",
            ),
            (
                mistake(attentional=False),
                "the logits come straight from s_{t'}: read them off tanh([c; s] W_c), which "
                "mixes in the context",
            ),
        ],
        atol=1e-5,
        seed=start,
        output_names=("logits", "new hidden state"),
    )
