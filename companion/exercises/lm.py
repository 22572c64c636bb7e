"""Checkers for the language-model chapter (sec-language-models).

``check_top_p_filter`` checks nucleus filtering built from scratch: logits ``(batch, vocab)``
in, the same logits out with every token outside the nucleus set to ``-inf``.
It names the usual mistakes: the token that crosses ``p`` dropped, no sort or the wrong order,
the kept logits left in sorted order, 0 instead of ``-inf``.

``check_causal_attention`` checks causal self-attention built from scratch, the layer the
chapter introduces: queries that are the newest steps after cached keys, scores scaled by
``sqrt(d)``, the keys after each query hidden before the softmax. It names a mask lined up with
the first keys, the wrong triangle, a masked diagonal, a mask applied after the softmax, a
missing or wrong scale and a softmax over the queries.

The sizes (and ``p``) are drawn afresh on every call (``seed=`` repeats a run, for tests) and are
never the chapter's own (its examples use a vocabulary of 6 tokens and ``p = 0.9``; its cache
example has 4 queries after 6 cached keys; its model's heads have 16 features), so a solution
that reads the notebook's variables instead of its arguments fails. An answer must compute
what it is asked for: one that calls the chapter's own ``top_p_filter`` (anything of
``companion.generation``), companion's attention (``companion.layers.attention``) or torch's
``scaled_dot_product_attention`` is told so, though its numbers are right
(:func:`companion.exercises.rules.forbidden_call`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.generation.sampling import top_p_filter

CHAPTER_VOCAB, CHAPTER_P = 6, 0.9
CHAPTER_QUERIES, CHAPTER_KEYS = 4, 10
CHAPTER_HEAD_DIM = 16  # the chapter's GPT: width 64, 4 heads

OWN_SAMPLING = {
    "companion.generation": (
        "the answer calls companion's own sampling (top_p_filter or sample_next): the exercise "
        "is to filter the logits yourself, with torch operations"
    )
}
OWN_ATTENTION = {
    "companion.layers.attention": (
        "the answer calls companion's attention (masked_softmax, DotProductAttention, "
        "MultiHeadAttention ...): the exercise is to compute it yourself, with torch operations"
    ),
    "torch._C._nn.scaled_dot_product_attention": (
        "the answer calls torch's scaled_dot_product_attention: the exercise is to compute the "
        "scores, the mask and the softmax yourself"
    ),
    "torch.nn.functional.multi_head_attention_forward": (
        "the answer calls torch's multi-head attention: the exercise is to compute the scores, "
        "the mask and the softmax yourself"
    ),
}


def _breaks_a_rule(student_fn: Callable, inputs: Inputs, rules: dict[str, str]) -> bool:
    """Print the hint and return True when ``student_fn(*inputs)`` calls what ``rules``
    forbid."""
    hint = forbidden_call(student_fn, inputs, rules)
    if hint:
        print(f"hint: {hint}")
    return hint is not None


# ----------------------------------------------------------------------------- top-p


def _nucleus(
    logits: torch.Tensor,
    p: float,
    *,
    exclusive: bool = True,
    order: str = "descending",
    cumulate_logits: bool = False,
    unsort: bool = True,
    fill: float = -math.inf,
    softmax_dim: int = -1,
) -> torch.Tensor:
    """Top-p filtering, right by default; each keyword reproduces one typical mistake."""
    probs = logits if cumulate_logits else logits.softmax(dim=softmax_dim)
    if order == "none":
        sorted_probs, indices = probs, torch.arange(probs.shape[-1]).expand_as(probs)
    else:
        sorted_probs, indices = probs.sort(dim=-1, descending=order == "descending", stable=True)
    total = sorted_probs.cumsum(dim=-1)  # (batch, vocab)
    drop = (total - sorted_probs >= p) if exclusive else (total > p)
    if not unsort:  # the sorted logits, filtered, never put back
        return logits.gather(-1, indices).masked_fill(drop, fill)
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, indices, drop), fill)


def _top_p_inputs(generator: torch.Generator) -> Inputs:
    batch = draw(generator, 2, 5)
    vocab = draw(generator, 7, 40, avoid=[batch])
    scale = 0.5 + 2.5 * torch.rand(batch, 1, generator=generator)  # flat and peaked rows
    shift = 1 + 2 * torch.rand(batch, 1, generator=generator)  # no effect on the softmax
    logits = torch.randn(batch, vocab, generator=generator) * scale + shift
    p = round(0.3 + 0.65 * float(torch.rand(1, generator=generator)), 3)
    return logits, p if p != CHAPTER_P else 0.8


def check_top_p_filter(
    student_fn: Callable[[torch.Tensor, float], torch.Tensor], *, seed: int | None = None
) -> bool:
    """``student_fn(logits, p)`` keeps, in each row of ``logits`` ``(batch, vocab)``, the fewest
    most likely tokens whose probabilities add up to at least ``p``, and sets every other logit
    to ``-inf``; it returns ``(batch, vocab)`` logits in the vocabulary's order."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _top_p_inputs(seeded_generator(start)), OWN_SAMPLING):
        return False
    return check(
        student_fn,
        top_p_filter,
        _top_p_inputs,
        mistakes=[
            (
                lambda x, p: _nucleus(x, p, exclusive=False),
                "the token that crosses p is dropped, so the kept mass is below p: keep a "
                "token while the mass of the tokens *before* it is below p (the cumulative sum "
                "minus its own probability); the most likely token is always kept",
            ),
            (
                lambda x, p: _nucleus(x, p, order="none"),
                "the cumulative sum runs in vocabulary order: sort the probabilities in "
                "decreasing order first (torch.sort(..., descending=True))",
            ),
            (
                lambda x, p: _nucleus(x, p, order="ascending"),
                "sorted in increasing order: the nucleus is made of the *most* likely tokens, "
                "sort with descending=True",
            ),
            (
                lambda x, p: _nucleus(x, p, cumulate_logits=True),
                "the cumulative sum adds up logits: turn them into probabilities with a softmax "
                "first",
            ),
            (
                lambda x, p: _nucleus(x, p, unsort=False),
                "the logits come back in sorted order: put each kept logit back at its token's "
                "position (scatter the mask with the sort indices)",
            ),
            (
                lambda x, p: _nucleus(x, p, fill=0.0),
                "a dropped token must get the logit -inf: a logit of 0 still has a probability "
                "after the softmax",
            ),
            (
                lambda x, p: _nucleus(x, p, softmax_dim=0),
                "softmax over the batch axis: each row is one distribution over the vocabulary, "
                "normalise it with softmax(dim=-1)",
            ),
            (
                lambda x, p: torch.where(_nucleus(x, p) > -math.inf, x.softmax(-1), 0.0),
                "these are probabilities: return the logits themselves, with the dropped ones "
                "set to -inf",
            ),
        ],
        seed=start,
    )


# ----------------------------------------------------------------------------- causal attention

WRONG_OFFSET = (
    "the queries are lined up with the *first* keys: they are the newest steps, so query i sits "
    "at position k - q + i (k keys, q queries) and sees every key up to it"
)
WRONG_TRIANGLE = (
    "the wrong triangle: each query must see the keys *before* it and itself (positions n <= m), "
    "and none after it"
)
DIAGONAL_MASKED = "the diagonal is masked: a query may see its own step"
MASK_AFTER_SOFTMAX = (
    "the mask is applied after the softmax: the kept weights no longer sum to 1. Fill the "
    "hidden scores with -inf *before* the softmax"
)
ZERO_FILL = (
    "hidden scores were set to 0, which still gets weight after the softmax: set them to -inf"
)
NO_MASK = "nothing is masked: each query must not see the keys after its own position"
NO_SCALE = "the scores are not scaled: divide Q K^T by sqrt(d), d the queries' last size"
SCALE_BY_D = "the scores are divided by d: divide by sqrt(d)"
SOFTMAX_OVER_QUERIES = (
    "softmax over the queries: each query's weights must sum to 1 over the keys (dim=-1)"
)


def _causal_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    *,
    offset: int | None = None,
    triangle: str = "lower",
    diagonal: bool = True,
    when: str = "before",
    fill: float = -math.inf,
    scale: str = "sqrt",
    dim: int = -1,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d), keys after each query hidden) V, right by default; each keyword
    reproduces one typical mistake. The queries are the last ``q`` of the ``k`` positions."""
    num_queries, num_keys, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    divisor = {"sqrt": math.sqrt(d), "none": 1.0, "d": float(d)}[scale]
    scores = Q @ K.transpose(-2, -1) / divisor  # (batch, heads, q, k)
    shift = num_keys - num_queries if offset is None else offset
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool)
    visible = ones.tril(shift) if triangle == "lower" else ones.triu(shift)
    if not diagonal:
        visible = ones.tril(shift - 1)
    if triangle == "none":
        visible = ones
    if when == "after":
        return (scores.softmax(dim=dim) * visible) @ V
    return scores.masked_fill(~visible, fill).softmax(dim=dim) @ V


def _causal_inputs(generator: torch.Generator) -> Inputs:
    batch, heads = draw(generator, 1, 3), draw(generator, 1, 3)
    num_keys = draw(generator, 3, 10, avoid=[CHAPTER_KEYS])
    num_queries = draw(generator, 1, num_keys, avoid=[CHAPTER_QUERIES])
    d = draw(generator, 2, 9, avoid=[CHAPTER_HEAD_DIM])
    d_v = draw(generator, 2, 9)
    Q = torch.randn(batch, heads, num_queries, d, generator=generator)
    K = torch.randn(batch, heads, num_keys, d, generator=generator)
    V = torch.randn(batch, heads, num_keys, d_v, generator=generator)
    return Q, K, V


def check_causal_attention(
    student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    seed: int | None = None,
) -> bool:
    """sec-language-models: ``student_fn(Q, K, V)`` is causal scaled dot-product attention for
    queries ``Q`` ``(batch, heads, q, d)``, keys ``K`` ``(batch, heads, k, d)`` and values ``V``
    ``(batch, heads, k, d_v)``, ``q <= k``: the queries are the newest ``q`` of the ``k`` steps
    (the first ``k - q`` came from a cache), and query ``i``, at position ``k - q + i``, may
    attend to the keys at positions up to its own. Returns ``(batch, heads, q, d_v)``."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _causal_inputs(seeded_generator(start)), OWN_ATTENTION):
        return False

    def mistake(**how: object) -> Callable[..., torch.Tensor]:
        return lambda Q, K, V: _causal_attention(Q, K, V, **how)  # type: ignore[arg-type]

    return check(
        student_fn,
        _causal_attention,
        _causal_inputs,
        mistakes=[
            (mistake(offset=0), WRONG_OFFSET),
            (mistake(triangle="upper"), WRONG_TRIANGLE),
            (mistake(diagonal=False), DIAGONAL_MASKED),
            (mistake(when="after"), MASK_AFTER_SOFTMAX),
            (mistake(fill=0.0), ZERO_FILL),
            (mistake(triangle="none"), NO_MASK),
            (mistake(scale="none"), NO_SCALE),
            (mistake(scale="d"), SCALE_BY_D),
            (mistake(dim=-2), SOFTMAX_OVER_QUERIES),
        ],
        seed=start,
        atol=1e-5,
    )
