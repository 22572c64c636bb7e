"""Scores for generated sequences: d2l's BLEU, its corpus average, the standard corpus BLEU,
and exact match.

d2l's BLEU (used wherever a chapter scores a translation) scores one prediction against
one label. With ``K = min(k, len_pred)`` and ``p_n`` the clipped n-gram precision (matches of
the prediction's n-grams, each label n-gram used at most as often as it occurs in the label,
divided by the prediction's number of n-grams)::

    bleu = exp(min(0, 1 - len_label / len_pred)) * prod_{n=1..K} p_n ** (1 / 2**n)

How this relates to sacrebleu's BLEU (``sacrebleu.metrics.BLEU``), on the same tokens
(``tokenize='none'``, one reference):

* Same ingredients. sacrebleu's brevity penalty ``bp`` (``exp(1 - ref_len / sys_len)`` if the
  hypothesis is shorter, else 1) equals d2l's factor, and its ``counts[n] / totals[n]`` are
  the same clipped precisions ``p_n``.
* Different weights. sacrebleu takes the plain geometric mean, weight ``1/K`` for each order;
  d2l weights order n by ``1/2**n`` (1/2, 1/4, 1/8, 1/16: they do not sum to 1), favouring
  unigrams. Plugging sacrebleu's ``bp`` and precisions into d2l's formula gives d2l's value.
* Which orders. d2l stops at ``min(k, len_pred)``; sacrebleu does the same only with
  ``effective_order=True`` (the default of ``sentence_bleu``, not of ``BLEU``). Without it, a
  prediction shorter than 4 tokens has no 4-grams and scores 0.
* Scale. sacrebleu reports 0-100, d2l 0-1.
* Zeros. If some ``p_n`` is 0, d2l gives 0; so does sacrebleu with ``smooth_method='none'``.
  sacrebleu's default ``'exp'`` smoothing replaces zero precisions and scores above 0.
* Corpus level. sacrebleu's corpus BLEU sums counts over all sentences before dividing (so
  long sentences weigh more); :func:`corpus_bleu` here averages d2l's sentence scores, an
  aggregation of companion's own (d2l scores single sentences only). The two differ on any
  corpus whose sentences score differently.
  :func:`standard_corpus_bleu` is the pooled one, on a 0-1 scale: sacrebleu's corpus BLEU
  (``tokenize='none'``, ``smooth_method='none'``) divided by 100, without sacrebleu.

So the two agree exactly (d2l x 100 = sacrebleu, ``smooth_method='none'``,
``effective_order=True``) when every precision is 1, e.g. a perfect prediction or a shorter
prediction that is a contiguous piece of the label (both then equal the brevity penalty), and
when some precision is 0 (both 0). In between they weight the same precisions differently.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from companion._validate import check_integer, check_sentences, check_tokens

Tokens = str | Sequence[str]  # a space-separated string, as d2l takes, or a list of tokens


def _as_tokens(sequence: Tokens) -> list[str]:
    # d2l splits on single spaces (not on any whitespace); keep that for identical values.
    return sequence.split(" ") if isinstance(sequence, str) else list(sequence)


def bleu(pred_tokens: Tokens, label_tokens: Tokens, k: int = 4) -> float:
    """d2l's sentence BLEU of one prediction against one label, in [0, 1].

    Takes one sentence each, a list of str tokens or a space-separated str (then it returns
    exactly ``d2l.bleu``), and ``k``, the highest n-gram order, a positive integer. An empty
    prediction scores 0 (d2l would divide by zero). See the module docstring for how this
    relates to sacrebleu.
    """
    _check_sentence_pair(pred_tokens, label_tokens, k)
    pred_tokens, label_tokens = _as_tokens(pred_tokens), _as_tokens(label_tokens)
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    if len_pred == 0:
        return 0.0
    score = math.exp(min(0, 1 - len_label / len_pred))  # brevity penalty
    for n in range(1, min(k, len_pred) + 1):
        label_ngrams = Counter(tuple(label_tokens[i : i + n]) for i in range(len_label - n + 1))
        num_matches = 0
        for i in range(len_pred - n + 1):
            ngram = tuple(pred_tokens[i : i + n])
            if label_ngrams[ngram] > 0:  # each label n-gram can be matched once (clipping)
                num_matches += 1
                label_ngrams[ngram] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def _check_sentence_pair(pred_tokens: object, label_tokens: object, k: object) -> None:
    check_tokens("pred_tokens", pred_tokens, text=True)
    check_tokens("label_tokens", label_tokens, text=True)
    check_integer("k", k)


def _check_corpora(predictions: Sequence, references: Sequence, k: object = 1) -> None:
    """Two lists of sentences (each a str or a list of str tokens) of one non-zero length, and
    ``k``, the highest n-gram order, a positive integer."""
    check_sentences("predictions", predictions, text=True)
    check_sentences("references", references, text=True)
    check_integer("k", k)
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions and references must have the same length; got "
            f"{len(predictions)} and {len(references)}"
        )
    if not predictions:
        raise ValueError("predictions is empty; there is nothing to score")


def corpus_bleu(predictions: Sequence[Tokens], references: Sequence[Tokens], k: int = 4) -> float:
    """The mean of :func:`bleu`, d2l's sentence-level BLEU, over sentence pairs, in [0, 1]:
    companion's own aggregation (d2l scores single sentences only).

    ``predictions`` and ``references`` are lists of one length, of sentences as :func:`bleu`
    takes them. This is not the standard corpus BLEU (sacrebleu's), which pools n-gram counts
    over the corpus before combining them; see the module docstring.
    """
    _check_corpora(predictions, references, k)
    return sum(bleu(p, r, k) for p, r in zip(predictions, references)) / len(predictions)


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def standard_corpus_bleu(
    predictions: Sequence[Tokens], references: Sequence[Tokens], k: int = 4
) -> float:
    """The standard corpus BLEU of Papineni et al. (sec-bahdanau), in [0, 1]: the number papers
    report (times 100), sacrebleu's ``corpus_score`` with ``tokenize='none'`` and no smoothing.

    The clipped n-gram matches ``m_n`` and the n-gram counts ``t_n`` are summed over *all*
    sentences before dividing, and so are the lengths for the brevity penalty::

        bleu = exp(min(0, 1 - ref_len / pred_len)) * exp(sum_{n=1..k} log(m_n / t_n) / k)

    It is 0 if some order has no match at all. One reference per prediction; the sentences as
    :func:`corpus_bleu` takes them.
    """
    _check_corpora(predictions, references, k)
    matches, totals = [0] * k, [0] * k  # summed over the corpus
    pred_len = ref_len = 0
    for prediction, reference in zip(predictions, references):
        prediction, reference = _as_tokens(prediction), _as_tokens(reference)
        pred_len, ref_len = pred_len + len(prediction), ref_len + len(reference)
        for n in range(1, k + 1):  # each reference n-gram matched at most as often as it occurs
            matches[n - 1] += sum((_ngrams(prediction, n) & _ngrams(reference, n)).values())
            totals[n - 1] += max(len(prediction) - n + 1, 0)
    if pred_len == 0 or 0 in matches:
        return 0.0
    brevity = math.exp(min(0.0, 1 - ref_len / pred_len))
    return brevity * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals)) / k)


def exact_match(predictions: Sequence[Tokens], references: Sequence[Tokens]) -> float:
    """The fraction of predictions identical to their reference token for token, in [0, 1]:
    two lists of one length, of sentences each a list of str tokens or a space-separated str."""
    _check_corpora(predictions, references)
    hits = sum(_as_tokens(p) == _as_tokens(r) for p, r in zip(predictions, references))
    return hits / len(predictions)
