"""d2l's BLEU, its corpus mean and exact match; how d2l's BLEU relates to sacrebleu's."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

from companion.training.metrics import bleu, corpus_bleu, exact_match, standard_corpus_bleu

PAIRS = [  # (prediction, label)
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("a b c", "a b c d e"),  # short and all n-grams right: only the brevity penalty
    ("a b c d e f", "a b c d"),  # longer than the label: no penalty
    ("x", "x y z"),
    ("a b a b c", "a b c a b d"),  # no 4-gram in common
    ("il pleut .", "il pleut ."),
    ("je suis chez moi .", "je suis à la maison ."),
    ("q r s", "t u v"),
]
sentences = st.lists(st.sampled_from("abcd"), min_size=1, max_size=9)
# smooth_method='none' so zero precisions give 0, effective_order so short predictions are
# scored on the orders they have, as d2l does; tokenize='none' keeps the same tokens.
SACREBLEU = BLEU(tokenize="none", smooth_method="none", effective_order=True)


@pytest.mark.parametrize(("pred", "label"), PAIRS)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_bleu_equals_d2l(d2l, pred, label, k):
    assert bleu(pred, label, k) == d2l.bleu(pred, label, k)
    assert bleu(pred.split(), label.split(), k) == d2l.bleu(pred, label, k)


@given(sentences, sentences, st.integers(1, 5))
def test_bleu_equals_d2l_on_random_sentences(d2l, pred, label, k):
    expected = d2l.bleu(" ".join(pred), " ".join(label), k)
    assert bleu(pred, label, k) == pytest.approx(expected, rel=1e-12, abs=0)


def test_bleu_edge_cases():
    assert bleu(["a", "b"], ["a", "b"]) == 1.0
    assert bleu([], ["a"]) == 0.0
    assert bleu(["a"], []) == 0.0
    # Tokens holding spaces are n-grams of their own, not joined into other tokens' n-grams.
    assert bleu(["a b", "c"], ["a", "b c"]) == 0.0
    with pytest.raises(ValueError, match="k must be a positive integer; got 0"):
        bleu("a", "a", k=0)


def test_corpus_bleu_is_the_mean_of_sentence_bleu(d2l):
    predictions, references = zip(*PAIRS)
    expected = sum(d2l.bleu(p, r, 4) for p, r in PAIRS) / len(PAIRS)
    assert corpus_bleu(predictions, references) == pytest.approx(expected, rel=1e-12)
    assert corpus_bleu([p.split() for p in predictions], references) == pytest.approx(expected)


def test_exact_match():
    predictions = [["a", "b"], ["a"], list("2026-11-21"), "x y"]
    references = [["a", "b"], ["a", "c"], list("2026-11-21"), ["x", "y"]]
    assert exact_match(predictions, references) == 3 / 4
    assert exact_match(references, references) == 1.0


@pytest.mark.parametrize("scorer", [corpus_bleu, standard_corpus_bleu, exact_match])
def test_corpus_scores_reject_bad_input(scorer):
    with pytest.raises(ValueError, match="same length; got 2 and 1"):
        scorer([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="predictions is empty"):
        scorer([], [])


def _sacrebleu(pred: str, label: str):
    return SACREBLEU.sentence_score(pred, [label])


@pytest.mark.parametrize(("pred", "label"), PAIRS)
def test_d2l_bleu_is_sacrebleu_statistics_with_other_weights(pred, label):
    """Same brevity penalty and clipped precisions; d2l weights order n by 1/2**n."""
    score = _sacrebleu(pred, label)
    num_orders = min(4, len(pred.split()))
    precisions = [score.counts[n] / score.totals[n] for n in range(num_orders)]
    d2l_from_sacrebleu = score.bp * math.prod(
        p ** (0.5 ** (n + 1)) for n, p in enumerate(precisions)
    )
    assert bleu(pred, label) == pytest.approx(d2l_from_sacrebleu, rel=1e-12, abs=1e-15)
    uniform = score.bp * math.prod(p ** (1 / num_orders) for p in precisions)
    assert score.score / 100 == pytest.approx(uniform, rel=1e-12, abs=1e-15)
    brevity = math.exp(min(0, 1 - len(label.split()) / len(pred.split())))
    assert score.bp == pytest.approx(brevity, rel=1e-15)


@pytest.mark.parametrize(
    ("pred", "label"),
    [
        ("the cat sat on the mat", "the cat sat on the mat"),  # perfect
        ("sat on the", "the cat sat on the mat"),  # a piece of the label: only the penalty
        ("a b", "a b c d e f g"),
        ("q r s t", "a b c d"),  # no shared unigram
        ("a b c a", "c a b c"),  # shared words, no shared 4-gram
    ],
)
def test_d2l_and_sacrebleu_agree_when_precisions_are_all_one_or_some_zero(pred, label):
    score = _sacrebleu(pred, label)
    assert bleu(pred, label) == pytest.approx(score.score / 100, rel=1e-12, abs=0)


def test_d2l_and_sacrebleu_differ_in_between():
    pred, label = "the cat sat on the mat", "the cat sat on a mat"
    assert bleu(pred, label) != pytest.approx(_sacrebleu(pred, label).score / 100, rel=1e-3)
    # sacrebleu's default smoothing scores a prediction above 0 where d2l gives 0.
    smoothed = BLEU(tokenize="none", effective_order=True).sentence_score("a b c a", ["c a b c"])
    assert bleu("a b c a", "c a b c") == 0.0 < smoothed.score


def test_corpus_bleu_is_not_sacrebleus_corpus_bleu():
    """d2l averages sentence scores; sacrebleu pools n-gram counts over the corpus."""
    predictions, references = ["a b c d e f g h", "x"], ["a b c d e f g h", "x y z w"]
    pooled = SACREBLEU.corpus_score(predictions, [references]).score / 100
    mean_of_sentences = sum(_sacrebleu(p, r).score / 100 for p, r in zip(predictions, references))
    mean_of_sentences /= len(predictions)
    assert corpus_bleu(predictions, references) == pytest.approx(mean_of_sentences, rel=1e-12)
    assert abs(corpus_bleu(predictions, references) - pooled) > 0.1


CORPUS_BLEU = BLEU(tokenize="none", smooth_method="none")  # sacrebleu's corpus BLEU, unsmoothed


def test_standard_corpus_bleu_is_sacrebleus_corpus_bleu():
    predictions, references = [p for p, _ in PAIRS], [r for _, r in PAIRS]
    expected = CORPUS_BLEU.corpus_score(predictions, [references]).score / 100
    assert 0.1 < expected < 0.9  # neither extreme: pooling, weights and penalty all matter
    assert standard_corpus_bleu(predictions, references) == pytest.approx(expected, rel=1e-12)
    token_lists = [p.split() for p in predictions], [r.split() for r in references]
    assert standard_corpus_bleu(*token_lists) == pytest.approx(expected, rel=1e-12)
    assert corpus_bleu(predictions, references) != pytest.approx(expected, rel=1e-2)


@given(st.lists(st.tuples(sentences, sentences), min_size=1, max_size=6))
def test_standard_corpus_bleu_equals_sacrebleu_on_random_corpora(pairs):
    predictions = [" ".join(p) for p, _ in pairs]
    references = [" ".join(r) for _, r in pairs]
    expected = CORPUS_BLEU.corpus_score(predictions, [references]).score / 100
    assert standard_corpus_bleu(predictions, references) == pytest.approx(
        expected, rel=1e-9, abs=1e-12
    )


def test_standard_corpus_bleu_edge_cases():
    assert standard_corpus_bleu(["a b c d e"], ["a b c d e"]) == 1.0
    assert standard_corpus_bleu(["a b c"], ["a b c"]) == 0.0  # no 4-gram: order 4 has no match
    assert standard_corpus_bleu(["a b c"], ["a b c"], k=3) == 1.0
    assert standard_corpus_bleu([""], ["a b"]) == 0.0  # an empty prediction: nothing to match
    with pytest.raises(ValueError, match="k must be a positive integer"):
        standard_corpus_bleu(["a"], ["a"], k=0)
