"""Data for pretraining and fine-tuning a BERT on the invented language (sec-pretraining).

**Unlabelled text** is the invented side of the translation task, drawn by
:func:`companion.data.tasks.language.invented_sentences`: sentences ``subject [noun-phrase
postposition] object verb [ne]`` whose articles agree with their noun's gender and number.

**The labelled task: agreement.** :func:`agreement_task` asks of each sentence whether it is
grammatical (label 1) or whether two of its articles have been swapped (label 0), always two
that differ in gender or number, so that after the swap neither article agrees with its noun::

    kas lebon ...  ko fepo ... gudu          grammatical: kas (feminine plural) lebon
    ko lebon ...   kas fepo ... gudu         swapped: neither article agrees any more

Why it needs syntax: a swapped sentence holds exactly the words of the grammatical one, so its
bag of words is the same (:func:`bag_of_words` shows it). No classifier of the bag can do better
than chance. A model must know which article belongs to which noun (the one right after it) and
each noun's gender, which only its company in text reveals: *lebon* is feminine because *ka*,
*ma*, *kas* and *mas* come before it.

:func:`bert_vocab` has every word of the language plus ``<cls>``, ``<sep>`` and ``<mask>``;
:func:`bert_arrays` turns sentences into ``<cls> sentence <sep>`` id tensors.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import torch

from companion._validate import (
    check_integer,
    check_seed,
    check_sentences,
    check_tokens,
    check_type,
)
from companion.data.tasks.language import (
    ARTICLES,
    LEXICON,
    NEGATION,
    PLURAL_SUFFIX,
    invented_sentences,
    invented_words,
    sample_clause,
    translate,
)
from companion.data.text import Vocab
from companion.models.bert import CLS, MASK, SEP

_FEATURES = {article: key for key, article in ARTICLES.items()}  # (definite, gender, plural)


def bert_vocab() -> Vocab:
    """Every word the invented language can write, after ``<pad> <bos> <eos> <unk>`` and
    ``<cls> <sep> <mask>``, so a sentence never seen in pretraining has no unknown word."""
    return Vocab(invented_words(), reserved_tokens=[CLS, SEP, MASK])


class BERTArrays(NamedTuple):
    """BERT's inputs for a list of single sentences: ``<cls> words <sep>``, padded."""

    tokens: torch.Tensor  # (num_sentences, num_steps) token ids, <pad> after <sep>
    segments: torch.Tensor  # (num_sentences, num_steps) all 0: one sentence, segment A
    valid_lens: torch.Tensor  # (num_sentences,) tokens before the padding, <cls> and <sep> in


def bert_arrays(sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int) -> BERTArrays:
    """``<cls> sentence <sep>`` as ids, padded with ``<pad>`` to ``num_steps``.

    A sentence that does not fit (``len + 2 > num_steps``) is an error, not cut: a cut sentence
    loses its ``<sep>`` and, here, its verb. ``sentences`` is a non-empty list of sentences, each
    a list of words; ``vocab`` a :class:`Vocab`; ``num_steps`` a positive integer.
    """
    check_sentences("sentences", sentences)
    check_type("vocab", vocab, Vocab, "a Vocab, such as bert_vocab()")
    check_integer("num_steps", num_steps)
    if not sentences:
        raise ValueError("sentences is empty; there is nothing to build arrays from")
    longest = max(len(s) for s in sentences)
    if longest + 2 > num_steps:
        raise ValueError(
            f"num_steps={num_steps} is too short: the longest sentence has {longest} words, "
            f"{longest + 2} with <cls> and <sep>"
        )
    rows = [vocab[[CLS, *s, SEP]] + [vocab.pad] * (num_steps - len(s) - 2) for s in sentences]
    tokens = torch.tensor(rows)  # (num_sentences, num_steps)
    valid_lens = torch.tensor([len(s) + 2 for s in sentences])  # (num_sentences,)
    return BERTArrays(tokens, torch.zeros_like(tokens), valid_lens)


def pretraining_corpus(num_sentences: int, seed: int) -> list[list[str]]:
    """Unlabelled sentences of the invented language: the text a BERT is pretrained on."""
    return invented_sentences(num_sentences, seed)


def _swappable_pairs(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """Positions ``(i, j)`` of two articles that differ in gender or number."""
    articles = [i for i, token in enumerate(tokens) if token in _FEATURES]
    return [
        (i, j)
        for a, i in enumerate(articles)
        for j in articles[a + 1 :]
        if _FEATURES[tokens[i]][1:] != _FEATURES[tokens[j]][1:]
    ]


def swap_articles(tokens: Sequence[str], rng: random.Random) -> list[str] | None:
    """The sentence with two of its articles swapped, a pair that differs in gender or number
    (drawn with ``rng``, a ``random.Random``); ``None`` if no such pair exists (every article
    has the same gender and number). The result is ungrammatical and has the same words as
    ``tokens``, a list of words."""
    check_tokens("tokens", tokens)
    check_type("rng", rng, random.Random, "a random.Random such as random.Random(0)")
    pairs = _swappable_pairs(tokens)
    if not pairs:
        return None
    i, j = rng.choice(pairs)
    swapped = list(tokens)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    return swapped


class AgreementExamples(NamedTuple):
    """Sentences of the agreement task and their labels (1 grammatical, 0 articles swapped)."""

    sentences: list[list[str]]
    labels: torch.Tensor  # (num_examples,) long


def agreement_task(num_examples: int, seed: int) -> AgreementExamples:
    """``num_examples`` sentences, each grammatical or with two articles swapped, half and half
    in expectation (a fair coin per sentence).

    Every sentence is drawn from the sentences that have a swappable pair (about 3 in 4 do), for
    both labels, so the two classes see the same distribution of sentences and differ only in
    the swap. ``num_examples`` is a positive integer, ``seed`` an integer.
    """
    check_integer("num_examples", num_examples)
    check_seed(seed)
    rng = random.Random(seed)
    sentences: list[list[str]] = []
    labels: list[int] = []
    while len(sentences) < num_examples:
        sentence = translate(sample_clause(rng))
        swapped = swap_articles(sentence, rng)
        if swapped is None:
            continue
        grammatical = rng.random() < 0.5
        sentences.append(sentence if grammatical else swapped)
        labels.append(int(grammatical))
    return AgreementExamples(sentences, torch.tensor(labels))


def bag_of_words(sentences: Sequence[Sequence[str]], vocab: Vocab) -> torch.Tensor:
    """Word counts, ``(num_sentences, len(vocab))`` floats: what is left of a sentence when
    the order is thrown away. ``sentences`` is a list of sentences, each a list of words."""
    check_sentences("sentences", sentences)
    check_type("vocab", vocab, Vocab, "a Vocab, such as bert_vocab()")
    counts = torch.zeros(len(sentences), len(vocab))
    for row, sentence in enumerate(sentences):
        for index in vocab[list(sentence)]:
            counts[row, index] += 1
    return counts


def word_class(word: str) -> str:
    """``"article"``, ``"noun"``, ``"adjective"``, ``"verb"``, ``"postposition"``,
    ``"negation"`` for a word (a str) of the invented language, ``"special"`` for any other
    str."""
    check_type("word", word, str, "a str, one word")
    if word in _FEATURES:
        return "article"
    if word == NEGATION:
        return "negation"
    for name, words in _CLASSES.items():
        if word in words:
            return name
    return "special"


_CLASSES = {
    "noun": {w for w, _ in LEXICON.nouns.values()}
    | {w + PLURAL_SUFFIX for w, _ in LEXICON.nouns.values()},
    "adjective": set(LEXICON.adjectives.values()),
    "verb": set(LEXICON.verbs.values()),
    "postposition": set(LEXICON.prepositions.values()),
}


_NOUN_FEATURES = {word: (gender, False) for word, gender in LEXICON.nouns.values()} | {
    word + PLURAL_SUFFIX: (gender, True) for word, gender in LEXICON.nouns.values()
}


def agreement_features(word: str) -> tuple[str, bool] | None:
    """``(gender, plural)`` of an article or a noun (gender ``"m"`` or ``"f"``), the two
    features on which they must agree; ``None`` for any other word (a str)."""
    check_type("word", word, str, "a str, one word")
    if word in _FEATURES:
        _, gender, plural = _FEATURES[word]
        return gender, plural
    return _NOUN_FEATURES.get(word)
