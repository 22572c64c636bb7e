"""The language-model chapter's checkers (sec-language-models) pass correct answers, name the
typical mistakes, draw other sizes for every seed, and fail solutions hard-wired to the chapter.
Every call is seeded."""

from __future__ import annotations

import math

import pytest
import torch

from companion.exercises.lm import (
    check_causal_attention,
    check_top_p_filter,
)
from companion.layers.attention import lined_up_mask

# ----------------------------------------------------------------------------- top-p


def nucleus_by_mask(logits, p):
    probs = logits.softmax(dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass of the more likely tokens
    keep_sorted = before < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, -math.inf)


def nucleus_by_threshold(logits, p):
    """Another correct route: the smallest kept probability per row, then a threshold."""
    probs = logits.softmax(dim=-1)
    sorted_probs, _ = probs.sort(dim=-1, descending=True)
    count = ((sorted_probs.cumsum(-1) - sorted_probs) < p).sum(-1, keepdim=True)  # kept per row
    threshold = sorted_probs.gather(-1, count - 1)
    return logits.masked_fill(probs < threshold, -math.inf)


@pytest.mark.parametrize("answer", [nucleus_by_mask, nucleus_by_threshold])
def test_top_p_pass(answer, capsys):
    assert check_top_p_filter(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def inclusive(logits, p):
    probs = logits.softmax(-1)
    sorted_probs, order = probs.sort(-1, descending=True)
    drop = sorted_probs.cumsum(-1) > p
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), -math.inf)


def unsorted(logits, p):
    before = logits.softmax(-1).cumsum(-1) - logits.softmax(-1)
    return logits.masked_fill(before >= p, -math.inf)


def ascending(logits, p):
    probs = logits.softmax(-1)
    sorted_probs, order = probs.sort(-1)
    drop = sorted_probs.cumsum(-1) - sorted_probs >= p
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), -math.inf)


def left_sorted(logits, p):
    sorted_logits, _ = logits.sort(-1, descending=True)
    probs = sorted_logits.softmax(-1)
    return sorted_logits.masked_fill(probs.cumsum(-1) - probs >= p, -math.inf)


def zero_filled(logits, p):
    kept = nucleus_by_mask(logits, p) > -math.inf
    return logits.masked_fill(~kept, 0.0)


def on_logits(logits, p):
    sorted_logits, order = logits.sort(-1, descending=True)
    drop = sorted_logits.cumsum(-1) - sorted_logits >= p
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), -math.inf)


def batch_softmax(logits, p):
    probs = logits.softmax(0)
    sorted_probs, order = probs.sort(-1, descending=True)
    drop = sorted_probs.cumsum(-1) - sorted_probs >= p
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), -math.inf)


def probabilities(logits, p):
    kept = nucleus_by_mask(logits, p) > -math.inf
    return logits.softmax(-1) * kept


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (inclusive, "the token that crosses p is dropped"),
        (unsorted, "the cumulative sum runs in vocabulary order"),
        (ascending, "sorted in increasing order"),
        (left_sorted, "the logits come back in sorted order"),
        (zero_filled, "must get the logit -inf"),
        (on_logits, "the cumulative sum adds up logits"),
        (batch_softmax, "softmax over the batch axis"),
        (probabilities, "these are probabilities"),
        (lambda logits, p: nucleus_by_mask(logits, p) * 2, "values differ first at position (0, "),
        (lambda logits, p: nucleus_by_mask(logits, p)[:, :-1], "shape: expected"),
        (lambda logits, p: nucleus_by_mask(logits, p).tolist(), "expected a torch.Tensor"),
    ],
)
def test_top_p_hints(wrong, hint, capsys):
    assert not check_top_p_filter(wrong, seed=0)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- hard-wired answers


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    chapter_logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -2.0]])  # the chapter's 6 tokens
    hard_wired = [
        (check_top_p_filter, lambda logits, p: nucleus_by_mask(chapter_logits, p)),
        (check_top_p_filter, lambda logits, p: nucleus_by_mask(logits, 0.9)),
    ]
    for checker, wrong in hard_wired:
        for seed in range(3):
            assert not checker(wrong, seed=seed)
            assert "pass" not in capsys.readouterr().out


def test_sizes_vary_and_are_never_the_chapters():
    seen = []

    def spy(logits, p):
        seen[-1].append((*logits.shape, p))
        return nucleus_by_mask(logits, p)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        seen.append([])
        assert check_top_p_filter(spy, seed=seed)
    assert len({tuple(calls) for calls in seen}) == len(seen)
    assert all(p != 0.9 and vocab != 6 for calls in seen for _, vocab, p in calls)


# ----------------------------------------------------------------------------- the rules


def test_top_p_refuses_companions_own_filter(capsys):
    """An answer that calls the chapter's top_p_filter (or sample_next's module) gets the right
    numbers without doing the exercise: it fails, with a hint that says why."""
    from companion.generation.sampling import top_p_filter

    for answer in (top_p_filter, lambda logits, p: top_p_filter(logits.clone(), p)):
        assert not check_top_p_filter(answer, seed=0)
        out = capsys.readouterr().out
        assert "companion's own sampling" in out and "pass" not in out, out


# ----------------------------------------------------------------------------- causal attention


def causal_attention(Q, K, V):
    num_queries, num_keys = Q.shape[-2], K.shape[-2]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    visible = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
    return scores.masked_fill(~visible, -math.inf).softmax(dim=-1) @ V


def causal_attention_by_positions(Q, K, V):
    """Another correct route: the mask from positions, as companion's attention_mask does."""
    num_queries, num_keys = Q.shape[-2], K.shape[-2]
    m = torch.arange(num_keys - num_queries, num_keys)[:, None]  # the queries' positions
    n = torch.arange(num_keys)[None, :]
    weights = torch.softmax((Q @ K.mT) * Q.shape[-1] ** -0.5 + torch.where(n <= m, 0.0, -1e9), -1)
    return weights @ V


@pytest.mark.parametrize("answer", [causal_attention, causal_attention_by_positions])
def test_causal_attention_pass(answer, capsys):
    for seed in range(3):
        assert check_causal_attention(answer, seed=seed)
        assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


def test_causal_attention_equals_companions(capsys):
    """The reference is what companion's attention computes for the newest queries."""
    from companion.layers.attention import DotProductAttention

    def with_companion(Q, K, V):
        mask = lined_up_mask(None, (1, Q.shape[-2], K.shape[-2]), causal=True)
        return DotProductAttention(0.0)(Q, K, V, mask=mask)

    torch.manual_seed(0)
    Q, K, V = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 7, 5), torch.randn(2, 3, 7, 2)
    torch.testing.assert_close(causal_attention(Q, K, V), with_companion(Q, K, V))
    assert not check_causal_attention(with_companion, seed=0)  # it is companion's own code
    assert "companion's attention" in capsys.readouterr().out


def mask_then(Q, K, V, *, offset=None, lower=True, diagonal=True, fill=-math.inf, scale=None):
    num_queries, num_keys = Q.shape[-2], K.shape[-2]
    shift = num_keys - num_queries if offset is None else offset
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool)
    visible = ones.tril(shift if diagonal else shift - 1) if lower else ones.triu(shift)
    divisor = math.sqrt(Q.shape[-1]) if scale is None else scale
    return (Q @ K.mT / divisor).masked_fill(~visible, fill).softmax(-1) @ V


def test_causal_attention_hints(capsys):
    def after_softmax(Q, K, V):
        num_queries, num_keys = Q.shape[-2], K.shape[-2]
        visible = torch.ones(num_queries, num_keys).tril(num_keys - num_queries)
        return (Q @ K.mT / math.sqrt(Q.shape[-1])).softmax(-1) * visible @ V

    def over_queries(Q, K, V):
        num_queries, num_keys = Q.shape[-2], K.shape[-2]
        visible = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
        return (Q @ K.mT / math.sqrt(Q.shape[-1])).masked_fill(~visible, -math.inf).softmax(-2) @ V

    cases = [
        (lambda Q, K, V: mask_then(Q, K, V, offset=0), "lined up with the *first* keys"),
        (lambda Q, K, V: mask_then(Q, K, V, lower=False), "the wrong triangle"),
        (lambda Q, K, V: mask_then(Q, K, V, diagonal=False), "the diagonal is masked"),
        (after_softmax, "the mask is applied after the softmax"),
        (lambda Q, K, V: mask_then(Q, K, V, fill=0.0), "set them to -inf"),
        (lambda Q, K, V: torch.softmax(Q @ K.mT / math.sqrt(Q.shape[-1]), -1) @ V, "nothing is"),
        (lambda Q, K, V: mask_then(Q, K, V, scale=1.0), "the scores are not scaled"),
        (lambda Q, K, V: mask_then(Q, K, V, scale=Q.shape[-1]), "divided by d"),
        (over_queries, "softmax over the queries"),
        (lambda Q, K, V: causal_attention(Q, K, V)[..., :1, :], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_causal_attention(wrong, seed=1)
        out = capsys.readouterr().out
        assert hint in out, out


def test_causal_attention_refuses_the_fused_kernel(capsys):
    def fused(Q, K, V):
        num_queries, num_keys = Q.shape[-2], K.shape[-2]
        visible = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
        return torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=visible)

    assert not check_causal_attention(fused, seed=0)
    out = capsys.readouterr().out
    assert "scaled_dot_product_attention" in out and "pass" not in out, out


def test_causal_attention_sizes_are_never_the_chapters():
    seen = []

    def spy(Q, K, V):
        seen.append((Q.shape[-2], K.shape[-2], Q.shape[-1]))
        return causal_attention(Q, K, V)

    for seed in range(0, 40, 8):
        assert check_causal_attention(spy, seed=seed)
    assert all(d != 16 and k != 10 and q != 4 for q, k, d in seen)
    assert any(q < k for q, k, _ in seen) and any(q == k for q, k, _ in seen)
