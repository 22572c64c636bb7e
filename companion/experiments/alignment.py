"""Which English word each word of the invented language translates (sec-transformer), so that
a trained model's cross-attention can be read against the translation it wrote.

The grammar of :mod:`companion.data.tasks.language` translates word by word, so every target
word but ``<eos>`` translates English words of a known form: a noun its singular (or, with the
plural suffix, its plural), an adjective or postposition its English word, a verb its plain or
third-person form, an article its determiner (``the``; ``a`` or ``an``; ``some``), ``ne`` the
``not``. :func:`aligned_positions` finds them in a source sentence. Where a word occurs twice
(``the``), every occurrence counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from companion.data.tasks.language import ARTICLES, LEXICON, NEGATION, PLURAL_SUFFIX
from companion.data.tasks.language import _english_plural as english_plural
from companion.data.tasks.language import _english_third_person as english_third_person


def _english_forms() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {NEGATION: {"not"}}
    for noun, (word, _) in LEXICON.nouns.items():
        forms.setdefault(word, set()).add(noun)
        forms.setdefault(word + PLURAL_SUFFIX, set()).add(english_plural(noun))
    for table in (LEXICON.adjectives, LEXICON.prepositions):
        for english, word in table.items():
            forms.setdefault(word, set()).add(english)
    for verb, word in LEXICON.verbs.items():
        forms.setdefault(word, set()).update((verb, english_third_person(verb)))
    for (definite, _, plural), article in ARTICLES.items():
        determiners = {"the"} if definite else {"some"} if plural else {"a", "an"}
        forms.setdefault(article, set()).update(determiners)
    return {word: frozenset(english) for word, english in forms.items()}


ENGLISH_FORMS = _english_forms()  # target word -> the English words it translates


def english_forms(word: str) -> frozenset[str]:
    """The English words that target ``word`` translates; empty for ``<eos>`` and unknown words."""
    return ENGLISH_FORMS.get(word, frozenset())


def aligned_positions(target: Sequence[str], source: Sequence[str]) -> list[list[int]]:
    """For each word of ``target``, the positions of ``source`` that hold an English word it
    translates (none for ``<eos>``)."""
    return [[j for j, w in enumerate(source) if w in english_forms(word)] for word in target]
