"""The invented language on its own: its recognizer, its exact probabilities and its entropy."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from companion.data.tasks.language import (
    ADJECTIVES,
    LEXICON,
    NEGATION,
    PLURAL_SUFFIX,
    Clause,
    NounPhrase,
    clause_log_prob,
    english,
    invented_sentences,
    invented_words,
    is_sentence,
    language_entropy,
    parse_sentence,
    sample_clause,
    sentence_log_prob,
    translate,
)


@pytest.fixture(scope="module")
def clauses() -> list[Clause]:
    rng = random.Random(0)
    return [sample_clause(rng) for _ in range(3000)]


# ----------------------------------------------------------------------------- recognizer


def test_every_generated_sentence_is_accepted_and_parses_back_to_its_clause(clauses):
    for clause in clauses:
        sentence = translate(clause)
        assert is_sentence(sentence)
        # A left inverse: translate is one-to-one, so a sentence has one clause's probability.
        assert parse_sentence(sentence) == clause


def test_the_corpus_uses_only_the_language_s_words():
    sentences = invented_sentences(500, seed=1)
    assert sentences == invented_sentences(500, seed=1)
    assert {w for s in sentences for w in s} <= set(invented_words())
    assert len(set(invented_words())) == len(invented_words())
    assert all(is_sentence(s) for s in sentences)


def example_clause() -> Clause:
    """The clause of the module docstring's example (the dog does not see red apples...)."""
    return Clause(
        subject=NounPhrase("dog", ("big",), plural=False, definite=True),
        verb="see",
        negated=True,
        object=NounPhrase("apple", ("red",), plural=True, definite=False),
        preposition="near",
        prepositional_object=NounPhrase("house", (), plural=False, definite=False),
    )


def example() -> list[str]:
    """ka miva riti mo falo tege mos gepon vani mivu ne (the module docstring's sentence)."""
    return translate(example_clause())


def swap(tokens: list[str], i: int, j: int) -> list[str]:
    tokens = list(tokens)
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


def replace(tokens: list[str], i: int, word: str) -> list[str]:
    return tokens[:i] + [word] + tokens[i + 1 :]


OLD, TALL = LEXICON.adjectives["old"], LEXICON.adjectives["tall"]
CORRUPTIONS = {
    "article of the wrong gender": lambda s: replace(s, 0, "ko"),  # dog is feminine: ka
    "article of the wrong number": lambda s: replace(s, 0, "kas"),  # singular noun
    "plural article, singular noun": lambda s: replace(s, 3, "mos"),
    "singular article, plural noun": lambda s: replace(s, 6, "mo"),
    "missing plural -n": lambda s: replace(s, 7, s[7][: -len(PLURAL_SUFFIX)]),
    "plural -n on a singular noun": lambda s: replace(s, 1, s[1] + PLURAL_SUFFIX),
    "adjective before its noun": lambda s: swap(s, 1, 2),
    "adjective before the article": lambda s: [s[2], *s[:2], *s[3:]],
    "verb not final": lambda s: swap(s, 9, 8),
    "verb first": lambda s: [s[9], *s[:9], s[10]],
    "negation before the verb": lambda s: swap(s, 9, 10),
    "negation twice": lambda s: [*s, NEGATION],
    "postposition before its noun phrase": lambda s: [*s[:3], s[5], *s[3:5], *s[6:]],
    "no verb": lambda s: [*s[:9], s[10]],
    "missing article": lambda s: s[1:],
    "object missing": lambda s: [*s[:6], *s[9:]],
    "three adjectives": lambda s: [*s[:3], OLD, TALL, *s[3:]],
    "the same adjective twice": lambda s: [*s[:3], s[2], *s[3:]],
    "an English word": lambda s: replace(s, 9, "see"),
    "a word of no class": lambda s: replace(s, 9, "xyzzy"),
    "empty": lambda s: [],
}


def test_the_example_is_accepted():
    assert example() == "ka miva riti mo falo tege mos gepon vani mivu ne".split()
    assert is_sentence(example())


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corruptions_are_rejected(name):
    corrupted = CORRUPTIONS[name](example())
    assert corrupted != example()
    assert not is_sentence(corrupted), (name, corrupted)
    assert sentence_log_prob(corrupted) == -math.inf


def test_length_limit_is_part_of_the_language():
    # A clause of 13 English words exists in the grammar but never in the generator's output.
    long = Clause(
        NounPhrase("dog", ("big", "red"), False, True),
        "see",
        True,
        NounPhrase("cat", ("old",), False, True),
        "near",
        NounPhrase("house", (), False, True),
    )
    assert len(english(long)) == 13
    assert parse_sentence(translate(long)) == long
    assert not is_sentence(translate(long))
    assert is_sentence(translate(long), max_words=13)


# ----------------------------------------------------------------------------- probabilities


def test_clause_probability_by_hand():
    """The module docstring's clause, its probability multiplied out choice by choice."""
    clause = parse_sentence(example())
    by_hand = (
        (0.35 * 0.2)  # a prepositional phrase; negated
        * (4 / 11 / 193 / 71 * 0.7 * 0.6)  # subject: one adjective, dog, singular, definite
        * (4 / 11 / 193 / 71 * 0.3 * 0.4)  # object: one adjective, apples, plural, indefinite
        * (5 / 11 / 193 * 0.7 * 0.4)  # the house: no adjective, singular, indefinite
        / 49
        / 8
    )
    accepted = math.exp(-clause_log_prob(clause) + math.log(by_hand))  # P(accepted)
    assert 0.9 < accepted < 1
    shorter = clause._replace(negated=False)
    assert clause_log_prob(shorter) - clause_log_prob(clause) == pytest.approx(math.log(0.8 / 0.2))
    assert clause_log_prob(clause, max_words=10) == -math.inf  # 11 English words
    # A second adjective: 2 adjectives instead of 1 (2/11 against 4/11), then 70 left to pick.
    two = shorter._replace(subject=shorter.subject._replace(adjectives=("big", "old")))
    assert clause_log_prob(two) - clause_log_prob(shorter) == pytest.approx(math.log(0.5 / 70))


def test_acceptance_probability_matches_the_sampler():
    """P(accepted) is in every clause's probability: compare it with the rejection rate."""
    clause = parse_sentence(example())
    unconditioned = clause_log_prob(clause, max_words=100)  # nothing is ever rejected
    accepted = math.exp(unconditioned - clause_log_prob(clause, max_words=12))
    rng, tries, kept = random.Random(3), 40_000, 0
    for _ in range(tries):
        has_pp = rng.random() < 0.35
        counts = rng.choices((0, 1, 2), weights=(5, 4, 2), k=3 if has_pp else 2)
        negated = rng.random() < 0.2
        length = sum(2 + k for k in counts) + (3 if negated else 1) + has_pp
        kept += length <= 12
    error = math.sqrt(accepted * (1 - accepted) / tries)
    assert abs(kept / tries - accepted) < 4 * error  # 4 standard errors: fails 1 time in 16,000


def test_impossible_clauses_have_probability_zero():
    phrase = NounPhrase("dog", (), False, True)
    good = Clause(phrase, "see", False, phrase, None, None)
    assert clause_log_prob(good) > -math.inf
    for bad in (
        good._replace(verb="eat"),
        good._replace(subject=phrase._replace(noun="unicorn")),
        good._replace(subject=phrase._replace(adjectives=("big", "big"))),
        good._replace(subject=phrase._replace(adjectives=tuple(ADJECTIVES[:3]))),
        good._replace(subject=phrase._replace(adjectives=("purplish",))),
        good._replace(preposition="near"),
        good._replace(preposition="inside", prepositional_object=phrase),
    ):
        assert clause_log_prob(bad) == -math.inf, bad


@pytest.mark.parametrize("max_words", [8, 12, 14])
def test_exact_entropy_agrees_with_monte_carlo(max_words):
    """-log P(S) averaged over 20,000 sampled sentences estimates H(S); so does the mean length.

    The estimate's standard error is its sample standard deviation / sqrt(20,000), about 0.05
    nats here; 4 standard errors fail a correct formula about once in 16,000 seeds (and the seed
    is fixed). A wrong choice probability shows up as a cross-entropy above the entropy: e.g. a
    plural probability of 0.5 instead of 0.3 adds about 0.2 nats, 4 standard errors.
    """
    exact = language_entropy(max_words)
    rng, n = random.Random(max_words), 20_000
    sentences = [translate(sample_clause(rng, max_words)) for _ in range(n)]
    surprisals = [-sentence_log_prob(s, max_words) for s in sentences]
    mean = statistics.fmean(surprisals)
    assert abs(mean - exact.per_sentence) < 4 * statistics.stdev(surprisals) / math.sqrt(n)
    lengths = [len(s) + 1 for s in sentences]  # + <eos>
    assert abs(statistics.fmean(lengths) - exact.tokens_per_sentence) < (
        4 * statistics.stdev(lengths) / math.sqrt(n)
    )
    assert exact.per_token == pytest.approx(exact.per_sentence / exact.tokens_per_sentence)


def test_entropy_is_sensible():
    exact = language_entropy()
    # Between the words' uniform choices alone and a crude upper bound:
    assert math.log(193) * 2 + math.log(49) < exact.per_sentence < 40
    assert 6 < exact.tokens_per_sentence < 13
    # A longer limit admits more (longer) sentences: more entropy per sentence.
    assert language_entropy(14).per_sentence > exact.per_sentence > language_entropy(8).per_sentence
    with pytest.raises(ValueError, match="max_words=4 admits no sentence"):
        language_entropy(4)
