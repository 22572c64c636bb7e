"""Sampling the next token: the properties of temperature, top-k and top-p, and their errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from companion.generation.sampling import apply_temperature, sample_next, top_k_filter, top_p_filter


@st.composite
def logits_batches(draw) -> torch.Tensor:
    """(batch, vocab) float64 logits; half the time small integers, so that ties are common."""
    batch, vocab = draw(st.integers(1, 4)), draw(st.integers(1, 12))
    if draw(st.booleans()):
        values = st.integers(-3, 3).map(float)
    else:
        values = st.floats(-8, 8, allow_nan=False, allow_infinity=False)
    rows = draw(
        st.lists(st.lists(values, min_size=vocab, max_size=vocab), min_size=batch, max_size=batch)
    )
    return torch.tensor(rows, dtype=torch.float64)


def draws(logits: torch.Tensor, num_draws: int, seed: int = 0, **options) -> torch.Tensor:
    """(num_draws, batch) samples from ``sample_next``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.stack(
        [sample_next(logits, generator=generator, **options) for _ in range(num_draws)]
    )


# ----------------------------------------------------------------------------- top-k


@given(logits_batches(), st.integers(1, 14))
def test_top_k_never_samples_outside_the_k_best(logits, k):
    kept = top_k_filter(logits, k) > -math.inf  # (batch, vocab)
    # Kept: exactly the tokens with fewer than k tokens strictly better (ties at the k-th kept).
    strictly_better = (logits[:, None, :] > logits[:, :, None]).sum(-1)  # (batch, vocab)
    assert torch.equal(kept, strictly_better < k)
    assert (kept.sum(-1) >= min(k, logits.shape[-1])).all()
    samples = draws(logits, 20, top_k=k)  # (20, batch)
    assert kept.gather(1, samples.T).all()


def test_top_k_keeps_exactly_k_without_ties_and_every_tie_at_the_boundary():
    logits = torch.tensor([[0.1, 3.0, 2.0, -1.0, 2.5], [1.0, 2.0, 2.0, 2.0, 0.0]])
    kept = top_k_filter(logits, 2) > -math.inf
    assert kept.tolist() == [[False, True, False, False, True], [False, True, True, True, False]]
    torch.testing.assert_close(top_k_filter(logits, 2)[0, 1], logits[0, 1])  # kept: unchanged


# ----------------------------------------------------------------------------- top-p


@given(logits_batches(), st.floats(0.01, 1.0))
def test_top_p_keeps_a_minimal_set_of_mass_at_least_p(logits, p):
    probs = logits.softmax(-1)
    kept = top_p_filter(logits, p) > -math.inf
    mass = (probs * kept).sum(-1)  # (batch,)
    least_kept = probs.masked_fill(~kept, math.inf).min(-1).values  # (batch,)
    assert (mass >= p - 1e-9).all()
    assert (mass - least_kept < p + 1e-9).all() or p == 1.0
    # A top set: every kept token is at least as likely as every dropped one.
    most_dropped = probs.masked_fill(kept, -math.inf).max(-1).values
    assert (least_kept >= most_dropped).all()
    samples = draws(logits, 20, top_p=p)
    assert kept.gather(1, samples.T).all()


def test_top_p_example_and_ties_broken_by_the_lower_index():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]])
    kept = top_p_filter(probs.log(), 0.75) > -math.inf
    # 0.5 < 0.75 <= 0.5 + 0.3: two tokens; four equal ones: the first three by index.
    assert kept.tolist() == [[True, True, False, False], [True, True, True, False]]
    assert (top_p_filter(probs.log(), 1.0) > -math.inf).all()
    assert (top_p_filter(probs.log(), 0.5) > -math.inf).sum(-1).tolist() == [1, 2]


# ----------------------------------------------------------------------------- temperature


@given(logits_batches())
def test_temperature_zero_is_greedy(logits):
    assert torch.equal(sample_next(logits, temperature=0.0), logits.argmax(-1))
    assert torch.equal(sample_next(logits, temperature=0.0, top_k=1, top_p=0.1), logits.argmax(-1))


@given(logits_batches(), st.integers(0, 2**16))
def test_temperature_to_zero_samples_the_argmax(logits, seed):
    top2 = logits.topk(min(2, logits.shape[-1]), dim=-1).values
    margin = (top2[:, 0] - top2[:, -1]).min().item() if logits.shape[-1] > 1 else 1.0
    if margin < 1e-3:
        return  # tied maxima: the limit is uniform over them, there is no single argmax
    # At T = margin / 60 every other token has probability below exp(-60) relative to the max.
    samples = draws(logits, 5, seed, temperature=margin / 60)
    assert (samples == logits.argmax(-1)).all()


def test_temperature_scales_the_logits():
    logits = torch.tensor([[1.0, 2.0, 4.0]])
    torch.testing.assert_close(apply_temperature(logits, 0.5), logits * 2)
    flat = apply_temperature(logits, 100.0).softmax(-1)
    assert (flat.max() - flat.min()).item() < 0.05  # a high temperature flattens


@pytest.mark.parametrize("seed", [0, 1])
def test_temperature_one_without_filters_samples_the_softmax(seed):
    """Pearson's chi-square on 20,000 draws per row against softmax(logits).

    Under a correct sampler the statistic follows chi2 with vocab - 1 = 7 degrees of freedom;
    the threshold is its 1 - 1e-6 quantile (about 40.5), so a correct sampler fails with one
    chance in a million per row, and the seed is fixed anyway. Every expected count is at least
    about 300, far above the rule of thumb of 5, so the chi-square approximation holds. A wrong
    sampler, e.g. T = 1.2 or logits read as probabilities, gives statistics in the hundreds.
    """
    logits = torch.tensor(
        [[2.0, 1.0, 0.5, 0.0, -0.5, -1.0, 1.5, 0.2], [0.0, 0.0, 0.0, 0.0, 0.3, -0.3, 0.6, -0.6]]
    )
    num_draws, vocab = 20_000, logits.shape[-1]
    generator = torch.Generator().manual_seed(seed)
    samples = sample_next(logits.repeat(num_draws, 1), generator=generator)  # (2 * num_draws,)
    counts = torch.stack([torch.bincount(samples[row::2], minlength=vocab) for row in (0, 1)])
    expected = logits.softmax(-1) * num_draws  # (2, vocab)
    assert expected.min() > 300
    statistic = ((counts - expected) ** 2 / expected).sum(-1)  # (2,)
    threshold = stats.chi2.ppf(1 - 1e-6, df=vocab - 1)
    assert (statistic < threshold).all(), (statistic, threshold)
    # The same test rejects a sampler at the wrong temperature.
    wrong = sample_next(logits.repeat(num_draws, 1), temperature=1.2, generator=generator)
    counts = torch.stack([torch.bincount(wrong[row::2], minlength=vocab) for row in (0, 1)])
    assert (((counts - expected) ** 2 / expected).sum(-1) > threshold).any()


def test_seeded_generator_repeats_and_the_batch_rows_are_independent_draws():
    logits = torch.zeros(3, 50)
    first = draws(logits, 4, seed=7, temperature=0.8, top_k=30, top_p=0.9)
    assert torch.equal(first, draws(logits, 4, seed=7, temperature=0.8, top_k=30, top_p=0.9))
    assert not torch.equal(first[:, 0], first[:, 1])  # equal logits, different draws
    assert first.dtype == torch.long and first.shape == (4, 3)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "options, message",
    [
        ({"top_k": 0}, "top_k must be an integer >= 1; got 0"),
        ({"top_k": 2.0}, "top_k must be an integer >= 1; got 2.0"),
        ({"top_p": 0.0}, "top_p must be a number in (0, 1]; got 0.0"),
        ({"top_p": 1.5}, "top_p must be a number in (0, 1]; got 1.5"),
        ({"temperature": -0.1}, "temperature must be finite and >= 0; got -0.1"),
        ({"temperature": math.inf}, "temperature must be finite and >= 0; got inf"),
        ({"temperature": 0.0, "top_k": -1}, "top_k must be an integer >= 1; got -1"),
    ],
)
def test_bad_arguments(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample_next(torch.zeros(2, 5), **options)


def test_bad_logits_and_direct_calls():
    with pytest.raises(ValueError, match=r"2-D tensor \(batch, vocab\); got \(5,\)"):
        sample_next(torch.zeros(5))
    with pytest.raises(ValueError, match="floating point"):
        top_k_filter(torch.zeros(2, 5, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        apply_temperature(torch.zeros(2, 5), 0.0)
    with pytest.raises(ValueError, match="top_p must be a number"):
        top_p_filter(torch.zeros(2, 5), -0.5)
