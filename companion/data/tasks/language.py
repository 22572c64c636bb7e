"""The invented language: English sentences and their translation into a made-up,
verb-final language (sec-transformer), generated in code from a fixed lexicon.

English sentences are ``subject verb object [preposition noun-phrase]``. A noun phrase is
``determiner adjective* noun`` with 0-2 adjectives; the determiner is *the*, *a*/*an*
(singular) or *some* (plural); the verb agrees with the subject (*sees*/*see*) and may be
negated (*does not see*). The invented target language differs in four ways:

1. Verb-final (SOV): ``subject [noun-phrase postposition] object verb [ne]``; the prepositional
   phrase moves in front of the object, the preposition after its noun phrase, and the
   negation particle ``ne`` after the verb.
2. Adjectives follow the noun, in mirror order: *the big red dog* is *article dog red big*.
3. Articles agree with the noun's gender (every noun is masculine or feminine; masculine
   target nouns end in -o, feminine in -a) and number: definite ``ko ka kos kas``,
   indefinite ``mo ma mos mas`` (masculine singular, feminine singular, masculine plural,
   feminine plural).
4. Plural nouns take the suffix -n. Verbs have one form; adjectives do not agree.

The lexicon (:data:`LEXICON`: 193 nouns, 71 adjectives, 49 verbs, 8 prepositions) is fixed,
not drawn from the seed: each target word is made up from a hash of the English word, its last
vowel marking the word class (nouns -o/-a, adjectives -i, verbs -u, postpositions -e). A worked
example, built by :func:`english` and :func:`translate` from one :class:`Clause`::

    the big dog does not see some red apples near a house
    ka miva riti mo falo tege mos gepon vani mivu ne

    subject  the big dog        -> ka  miva  riti      dog is feminine: ka; adjective after
    pp       near a house       -> mo  falo  tege      house is masculine: mo; moved before
                                                       the object, postposition tege = near
    object   some red apples    -> mos gepon vani      plural: mos, suffix -n
    verb     does not see       -> mivu ne             last, then the negation

The invented side on its own is the language-model chapter's corpus (sec-language-models):
:func:`invented_sentences` draws it, :func:`is_sentence` recognises it, and, because the
generator is code, :func:`sentence_log_prob` and :func:`language_entropy` give each sentence's
exact probability and the entropy per token, the floor of any model's cross-entropy.
The module ends with the arrays a language model trains on: :func:`language_model_vocab`,
:func:`lm_arrays` and, for generated tokens, :func:`to_sentences`; and with the loss the training
loop minimises on them, :func:`next_token_loss`, and its held-out value in nats per token,
:func:`cross_entropy_per_token`. The loop knows no task: the task brings its padding index.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import random
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import (
    check_integer,
    check_seed,
    check_sentences,
    check_token_ids,
    check_tokens,
    check_type,
    describe,
)
from companion.data.tasks.splits import Pair, Splits, make_splits
from companion.data.text import Vocab, batches
from companion.layers.losses import sequence_loss
from companion.modes import eval_mode

NOUNS = """
cat dog bird horse cow pig goat duck frog snake lion tiger bear fox rabbit rat owl eagle hawk
crow bee ant spider whale shark seal camel zebra monkey donkey turtle parrot pigeon chicken
farmer teacher doctor student girl boy king queen prince princess soldier sailor pilot driver
baker painter singer dancer writer poet judge nurse cook guard hunter miner builder priest
merchant clown giant witch wizard ghost robot neighbor friend stranger tourist pirate knight
monk artist lawyer pupil scientist engineer guest uncle aunt cousin sister brother mother
father baby house car tree boat ship train bus bike book letter box bag cup plate spoon fork
table chair bed door window wall roof garden field river lake mountain hill road bridge tower
castle church school shop market village city forest island beach stone rock flower apple
banana lemon cake bread egg hat coat shoe ring key clock lamp candle mirror picture song ball
kite drum guitar piano rope ladder basket bottle bucket hammer sword shield crown coin map
ticket phone computer camera radio blanket pillow pencil brush wheel engine plane rocket star
cloud flag tent cart barrel cage nest shell feather bone carrot
""".split()

ADJECTIVES = """
big small old young red blue green yellow black white brown gray pink purple tall short long
heavy fast slow happy sad angry calm quiet loud brave shy clever lazy busy rich poor strong
weak kind cruel proud hungry tired wet hot cold warm dirty new strange famous friendly gentle
wild tiny huge round flat sharp soft hard bright dark pretty ugly noisy lucky sleepy funny
silly golden wooden empty fresh
""".split()

VERBS = """
see like love hate follow watch carry find help push pull kick catch chase draw paint visit
greet call meet hold lift throw break build wash open buy sell bring take hide touch hit
feed teach hear want need remember forget fix climb cross fear admire trust ignore answer
""".split()

PREPOSITIONS = "near behind under beside above below with without".split()

ARTICLES = {  # (definite, gender, plural) -> article
    (True, "m", False): "ko",
    (True, "f", False): "ka",
    (True, "m", True): "kos",
    (True, "f", True): "kas",
    (False, "m", False): "mo",
    (False, "f", False): "ma",
    (False, "m", True): "mos",
    (False, "f", True): "mas",
}
NEGATION = "ne"
PLURAL_SUFFIX = "n"


def _english_plural(word: str) -> str:
    """boxes, cities, keys, dogs; the word lists hold no irregular plurals."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _english_third_person(verb: str) -> str:
    """sees, watches, carries: the verb after a singular subject."""
    return verb + "es" if verb.endswith("o") else _english_plural(verb)


class Lexicon(NamedTuple):
    """English word -> invented word; a noun's entry also gives its gender, 'm' or 'f'."""

    nouns: dict[str, tuple[str, str]]
    adjectives: dict[str, str]
    verbs: dict[str, str]
    prepositions: dict[str, str]


def _invent_words(english: list[str], final_vowel: str, taken: set[str]) -> list[str]:
    """One made-up word per English word: consonant-vowel syllables from a hash of the word.

    The last vowel is ``final_vowel`` (it marks the word class). A word already ``taken`` is
    redrawn with a counter in the hash, so every target word is unique.
    """
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    words = []
    for word in english:
        for attempt in range(100):
            digest = hashlib.sha256(f"{word}/{attempt}".encode()).digest()
            num_syllables = 2 + attempt // 20  # longer words if short ones keep colliding
            letters = []
            for i in range(num_syllables):
                letters += [consonants[digest[2 * i] % 14], vowels[digest[2 * i + 1] % 5]]
            invented = "".join(letters[:-1]) + final_vowel
            if invented not in taken:
                break
        taken.add(invented)
        words.append(invented)
    return words


def _build_lexicon() -> Lexicon:
    taken = set(ARTICLES.values()) | {NEGATION}
    genders = ["f" if hashlib.sha256(noun.encode()).digest()[0] % 2 else "m" for noun in NOUNS]
    # The final vowel shows the word class: nouns -o (masculine) or -a (feminine), adjectives
    # -i, verbs -u, postpositions -e.
    noun_words = [
        _invent_words([n], "o" if g == "m" else "a", taken)[0] for n, g in zip(NOUNS, genders)
    ]
    adjective_words = _invent_words(ADJECTIVES, "i", taken)
    verb_words = _invent_words(VERBS, "u", taken)
    preposition_words = _invent_words(PREPOSITIONS, "e", taken)
    return Lexicon(
        nouns={n: (w, g) for n, w, g in zip(NOUNS, noun_words, genders)},
        adjectives=dict(zip(ADJECTIVES, adjective_words)),
        verbs=dict(zip(VERBS, verb_words)),
        prepositions=dict(zip(PREPOSITIONS, preposition_words)),
    )


LEXICON = _build_lexicon()


class NounPhrase(NamedTuple):
    noun: str  # English singular
    adjectives: tuple[str, ...]  # English order
    plural: bool
    definite: bool


class Clause(NamedTuple):
    """One sentence of the translation task, before it is written in either language."""

    subject: NounPhrase
    verb: str  # English base form
    negated: bool
    object: NounPhrase
    preposition: str | None  # None: no prepositional phrase
    prepositional_object: NounPhrase | None


def _english_noun_phrase(phrase: NounPhrase) -> list[str]:
    noun = _english_plural(phrase.noun) if phrase.plural else phrase.noun
    if phrase.definite:
        determiner = "the"
    elif phrase.plural:
        determiner = "some"
    else:
        next_word = (phrase.adjectives or (noun,))[0]
        determiner = "an" if next_word[0] in "aeiou" else "a"
    return [determiner, *phrase.adjectives, noun]


def _target_noun_phrase(phrase: NounPhrase) -> list[str]:
    noun, gender = LEXICON.nouns[phrase.noun]
    article = ARTICLES[(phrase.definite, gender, phrase.plural)]
    if phrase.plural:
        noun += PLURAL_SUFFIX
    adjectives = [LEXICON.adjectives[a] for a in reversed(phrase.adjectives)]  # mirror order
    return [article, noun, *adjectives]


def english(clause: Clause) -> list[str]:
    """The English side of a :class:`Clause`: subject verb object [preposition noun-phrase]."""
    check_type("clause", clause, Clause, "a Clause, such as sample_clause(rng) returns")
    if clause.negated:
        verb = ["do" if clause.subject.plural else "does", "not", clause.verb]
    else:
        verb = [clause.verb if clause.subject.plural else _english_third_person(clause.verb)]
    words = _english_noun_phrase(clause.subject) + verb + _english_noun_phrase(clause.object)
    if clause.preposition is not None and clause.prepositional_object is not None:
        words += [clause.preposition, *_english_noun_phrase(clause.prepositional_object)]
    return words


def translate(clause: Clause) -> list[str]:
    """The invented side of a :class:`Clause`: subject [noun-phrase postposition] object verb
    [ne]."""
    check_type("clause", clause, Clause, "a Clause, such as sample_clause(rng) returns")
    words = _target_noun_phrase(clause.subject)
    if clause.preposition is not None and clause.prepositional_object is not None:
        words += _target_noun_phrase(clause.prepositional_object)
        words.append(LEXICON.prepositions[clause.preposition])
    words += _target_noun_phrase(clause.object)
    words.append(LEXICON.verbs[clause.verb])
    if clause.negated:
        words.append(NEGATION)
    return words


# The generator's choices and their probabilities (sample_clause draws them in this order;
# clause_log_prob and language_entropy read the same numbers).
P_PREPOSITIONAL_PHRASE = 0.35  # the clause has a prepositional phrase
ADJECTIVE_COUNT_WEIGHTS = (5, 4, 2)  # 0, 1 or 2 adjectives per noun phrase: 5/11, 4/11, 2/11
P_PLURAL = 0.3
P_DEFINITE = 0.6
P_NEGATED = 0.2
MIN_WORDS = 5  # the shortest English sentence: "the dog sees the cat"


def _check_max_words(max_words: object) -> None:
    """``max_words`` must be an integer that admits a sentence: a smaller one would make
    :func:`sample_clause` draw forever."""
    if check_integer("max_words", max_words) < MIN_WORDS:
        raise ValueError(
            f"max_words={max_words} admits no sentence (the shortest has {MIN_WORDS} words)"
        )


def _sample_noun_phrase(rng: random.Random) -> NounPhrase:
    counts = range(len(ADJECTIVE_COUNT_WEIGHTS))
    num_adjectives = rng.choices(counts, weights=ADJECTIVE_COUNT_WEIGHTS)[0]
    return NounPhrase(
        noun=rng.choice(NOUNS),
        adjectives=tuple(rng.sample(ADJECTIVES, num_adjectives)),
        plural=rng.random() < P_PLURAL,
        definite=rng.random() < P_DEFINITE,
    )


def sample_clause(rng: random.Random, max_words: int = 12) -> Clause:
    """A random sentence of the grammar with at most ``max_words`` English words (an integer
    >= 5): the clause is drawn choice by choice with ``rng`` (a ``random.Random``) and drawn
    again while its English side is longer."""
    check_type("rng", rng, random.Random, "a random.Random such as random.Random(0)")
    _check_max_words(max_words)
    while True:
        has_pp = rng.random() < P_PREPOSITIONAL_PHRASE
        clause = Clause(
            subject=_sample_noun_phrase(rng),
            verb=rng.choice(VERBS),
            negated=rng.random() < P_NEGATED,
            object=_sample_noun_phrase(rng),
            preposition=rng.choice(PREPOSITIONS) if has_pp else None,
            prepositional_object=_sample_noun_phrase(rng) if has_pp else None,
        )
        if len(english(clause)) <= max_words:
            return clause


def translation_task(
    num_examples: int, seed: int, val_fraction: float = 0.1, test_fraction: float = 0.1
) -> Splits:
    """English sentences of 5-12 words to the invented verb-final language; word tokens.

    The grammar is in the module docstring. With 193 nouns, 71 adjectives and 49 verbs the
    sentences are practically all distinct, so a model must learn the rules, not memorise.
    The Transformer chapter trains a Transformer on it and looks at its attention.
    """

    def sample(rng: random.Random) -> Pair:
        clause = sample_clause(rng)
        return english(clause), translate(clause)

    return make_splits(sample, num_examples, seed, val_fraction, test_fraction)


# ---------------------------------------------------------------------------------------------
# The invented language on its own (sec-language-models): a corpus for a language model, the
# exact probability of each sentence, the entropy per token, and a recognizer.


def invented_sentences(num_sentences: int, seed: int, max_words: int = 12) -> list[list[str]]:
    """``num_sentences`` (an integer >= 0) sentences of the invented language, drawn
    independently from ``seed`` (an integer; repeats are possible but rare: see
    :func:`language_entropy`), each of at most ``max_words`` English words. Word tokens, no
    ``<eos>``."""
    check_integer("num_sentences", num_sentences, minimum=0)
    check_seed(seed)
    _check_max_words(max_words)
    rng = random.Random(seed)
    return [translate(sample_clause(rng, max_words)) for _ in range(num_sentences)]


def invented_words() -> list[str]:
    """Every word the invented language can write, in a fixed order: the articles, ``ne``, each
    noun in the singular and the plural, then adjectives, verbs and postpositions."""
    nouns = [word for word, _ in LEXICON.nouns.values()]
    return [
        *ARTICLES.values(),
        NEGATION,
        *nouns,
        *(noun + PLURAL_SUFFIX for noun in nouns),
        *LEXICON.adjectives.values(),
        *LEXICON.verbs.values(),
        *LEXICON.prepositions.values(),
    ]


_ARTICLE_FEATURES = {article: key for key, article in ARTICLES.items()}  # (definite, gender, pl)
_NOUN_BY_WORD = {word: (noun, gender) for noun, (word, gender) in LEXICON.nouns.items()}
_ADJECTIVE_BY_WORD = {word: english for english, word in LEXICON.adjectives.items()}
_VERB_BY_WORD = {word: english for english, word in LEXICON.verbs.items()}
_PREPOSITION_BY_WORD = {word: english for english, word in LEXICON.prepositions.items()}


def _parse_noun_phrase(tokens: list[str], i: int) -> tuple[NounPhrase, int] | None:
    """``article noun[-n] adjective*`` from ``tokens[i]``: the phrase and the next index."""
    if i + 1 >= len(tokens) or tokens[i] not in _ARTICLE_FEATURES:
        return None
    definite, gender, plural = _ARTICLE_FEATURES[tokens[i]]
    word = tokens[i + 1]
    if plural:  # the article says plural: the noun must carry the suffix
        if not word.endswith(PLURAL_SUFFIX):
            return None
        word = word[: -len(PLURAL_SUFFIX)]
    if _NOUN_BY_WORD.get(word, (None, None))[1] != gender:  # unknown noun, or wrong gender
        return None
    i += 2
    adjectives = []
    while i < len(tokens) and tokens[i] in _ADJECTIVE_BY_WORD:
        adjectives.append(_ADJECTIVE_BY_WORD[tokens[i]])
        i += 1
    noun = _NOUN_BY_WORD[word][0]
    return NounPhrase(noun, tuple(reversed(adjectives)), plural, definite), i  # English order


def parse_sentence(tokens: list[str]) -> Clause | None:
    """The clause that :func:`translate` writes as ``tokens``, or ``None`` if the tokens do not
    follow the grammar ``NP [NP postposition] NP verb [ne]``.

    The grammar is read left to right, deterministically and without backtracking (whether the
    second noun phrase belongs to a postposition is read from the token after it), so a token
    sequence has at most one parse. ``parse_sentence(translate(c)) == c`` for every clause (the
    tests check it), which makes :func:`translate` one-to-one: two different clauses never give
    the same sentence. Adjective counts and the length limit are not checked here;
    :func:`is_sentence` checks them. ``tokens`` is a list of words, never a str (its items would
    be characters: ``sentence.split()``).
    """
    check_tokens("tokens", tokens)
    first = _parse_noun_phrase(tokens, 0)
    second = first and _parse_noun_phrase(tokens, first[1])
    if first is None or second is None:
        return None
    (subject, _), (phrase, i) = first, second
    preposition, prepositional_object = None, None
    if i < len(tokens) and tokens[i] in _PREPOSITION_BY_WORD:  # that was the postposition's NP
        preposition, prepositional_object = _PREPOSITION_BY_WORD[tokens[i]], phrase
        third = _parse_noun_phrase(tokens, i + 1)
        if third is None:
            return None
        phrase, i = third
    if i >= len(tokens) or tokens[i] not in _VERB_BY_WORD:
        return None
    verb, i = _VERB_BY_WORD[tokens[i]], i + 1
    negated = i < len(tokens) and tokens[i] == NEGATION
    if i + negated != len(tokens):  # anything after the verb [ne]
        return None
    return Clause(subject, verb, negated, phrase, preposition, prepositional_object)


class _Shape(NamedTuple):
    """What the length limit sees of a clause: the choices that set its English length."""

    has_pp: bool
    negated: bool
    adjective_counts: tuple[int, ...]  # subject, object[, prepositional object]


def _english_length(shape: _Shape) -> int:
    phrases = sum(2 + k for k in shape.adjective_counts)  # determiner adjective* noun
    return phrases + (3 if shape.negated else 1) + shape.has_pp  # verb or do(es) not verb; prep


def _bernoulli_log_prob(p: float, outcome: bool) -> float:
    return math.log(p if outcome else 1 - p)


def _shape_log_prob(shape: _Shape) -> float:
    """log P(shape), before the length limit."""
    total = sum(ADJECTIVE_COUNT_WEIGHTS)
    return (
        _bernoulli_log_prob(P_PREPOSITIONAL_PHRASE, shape.has_pp)
        + _bernoulli_log_prob(P_NEGATED, shape.negated)
        + sum(math.log(ADJECTIVE_COUNT_WEIGHTS[k] / total) for k in shape.adjective_counts)
    )


def _ordered_choices_log(n: int, k: int) -> float:
    """log(n (n-1) ... (n-k+1)): the ordered draws of k distinct items out of n."""
    return sum(math.log(n - j) for j in range(k))


def _binary_entropy(p: float) -> float:
    return -p * math.log(p) - (1 - p) * math.log(1 - p)


def _words_entropy(shape: _Shape) -> float:
    """H(words | shape): the uniform noun, adjective, verb and preposition choices and the
    number and definiteness of each phrase, all independent given the shape."""
    phrases = sum(
        math.log(len(NOUNS)) + _ordered_choices_log(len(ADJECTIVES), k)
        for k in shape.adjective_counts
    ) + len(shape.adjective_counts) * (_binary_entropy(P_PLURAL) + _binary_entropy(P_DEFINITE))
    return phrases + math.log(len(VERBS)) + shape.has_pp * math.log(len(PREPOSITIONS))


def _accepted_shapes(max_words: int) -> list[tuple[_Shape, float]]:
    """Every shape within the length limit, with log P(shape) (unconditioned)."""
    counts = range(len(ADJECTIVE_COUNT_WEIGHTS))
    shapes = []
    for has_pp in (False, True):
        for negated in (False, True):
            for adjective_counts in itertools.product(counts, repeat=3 if has_pp else 2):
                shape = _Shape(has_pp, negated, adjective_counts)
                if _english_length(shape) <= max_words:
                    shapes.append((shape, _shape_log_prob(shape)))
    if not shapes:
        raise ValueError(f"max_words={max_words} admits no sentence (the shortest has 5 words)")
    return shapes


@functools.cache
def _log_acceptance(max_words: int) -> float:
    """log P(a drawn clause has at most max_words English words)."""
    return math.log(sum(math.exp(log_p) for _, log_p in _accepted_shapes(max_words)))


def clause_log_prob(clause: Clause, max_words: int = 12) -> float:
    """log P(clause): the natural-log probability that ``sample_clause(rng, max_words)``
    returns ``clause``; ``-inf`` if it never can.

    The product of the probabilities of the generator's choices (each uniform word choice is
    ``1/len(list)``; ``k`` adjectives in order are ``1/(71 * 70 ...)``), divided by the
    probability of acceptance, because the sampler draws again while a clause is too long:
    ``P(c | accepted) = P(c) / P(accepted)`` for an accepted ``c``. ``max_words`` is an integer
    >= 5.
    """
    check_type("clause", clause, Clause, "a Clause, such as sample_clause(rng) returns")
    _check_max_words(max_words)
    phrases = [clause.subject, clause.object]
    if (clause.preposition is None) != (clause.prepositional_object is None):
        return -math.inf
    if clause.preposition is not None and clause.prepositional_object is not None:
        if clause.preposition not in PREPOSITIONS:
            return -math.inf
        phrases.append(clause.prepositional_object)
    if clause.verb not in VERBS or any(
        p.noun not in NOUNS
        or len(p.adjectives) >= len(ADJECTIVE_COUNT_WEIGHTS)
        or len(set(p.adjectives)) < len(p.adjectives)
        or not set(p.adjectives) <= set(ADJECTIVES)
        for p in phrases
    ):
        return -math.inf
    shape = _Shape(
        clause.preposition is not None, clause.negated, tuple(len(p.adjectives) for p in phrases)
    )
    if _english_length(shape) > max_words:
        return -math.inf
    # The shape's choices, then the words given the shape: uniform choices and two coin flips.
    log_p = _shape_log_prob(shape) - math.log(len(VERBS))
    log_p -= shape.has_pp * math.log(len(PREPOSITIONS))
    for p in phrases:
        log_p -= math.log(len(NOUNS)) + _ordered_choices_log(len(ADJECTIVES), len(p.adjectives))
        log_p += _bernoulli_log_prob(P_PLURAL, p.plural)
        log_p += _bernoulli_log_prob(P_DEFINITE, p.definite)
    return log_p - _log_acceptance(max_words)


def sentence_log_prob(tokens: list[str], max_words: int = 12) -> float:
    """log P(sentence) under the generator of :func:`invented_sentences`; ``-inf`` outside the
    language. Since :func:`translate` is one-to-one, a sentence has exactly the probability of
    its one clause: nothing needs summing over ambiguous parses. ``tokens`` is a list of words
    and ``max_words`` an integer >= 5."""
    _check_max_words(max_words)
    clause = parse_sentence(tokens)
    return -math.inf if clause is None else clause_log_prob(clause, max_words)


def is_sentence(tokens: list[str], max_words: int = 12) -> bool:
    """The recognizer: whether the generator can write ``tokens`` (its probability is > 0).

    It accepts exactly the sentences of the grammar with 0-2 distinct adjectives per noun
    phrase whose English side has at most ``max_words`` words: the article agrees with its
    noun's gender and number, a plural noun carries ``-n``, adjectives follow the noun, the
    postposition follows its noun phrase, the verb comes last, then ``ne`` or nothing.
    ``tokens`` is a list of words (``sentence.split()``), never the str itself.
    """
    return sentence_log_prob(tokens, max_words) > -math.inf


class LanguageEntropy(NamedTuple):
    """The entropy of the invented language, in nats (sec-language-models)."""

    per_sentence: float  # H(S) = -E[log P(S)]
    tokens_per_sentence: float  # E[len(S) + 1]: the words and the <eos> a model must predict
    per_token: float  # per_sentence / tokens_per_sentence: the floor of a per-token loss


def language_entropy(max_words: int = 12) -> LanguageEntropy:
    """The exact entropy of the sentences :func:`invented_sentences` draws, per sentence and per
    token (``<eos>`` included), computed from the generator's choice probabilities.

    Write ``z`` for a clause's shape (whether it has a prepositional phrase, whether it is
    negated, and the number of adjectives of each noun phrase): the length limit depends on
    ``z`` only. Given ``z`` the word choices are independent, so with ``A`` the event that a
    clause is accepted,

        H(S) = H(C | A) = H(Z | A) + sum_z P(z | A) H(words | z),

    where ``H(words | z)`` adds ``log 193`` per noun, ``log(71 * 70 ...)`` per adjective list,
    ``log 49`` for the verb, ``log 8`` for a preposition, and the binary entropies of number
    and definiteness. ``H(S) = H(C | A)`` because sentences and clauses correspond one to one
    (:func:`parse_sentence`). The sum runs over the shapes (72 before the limit, 51 within 12
    words): exact, no sampling. ``max_words`` is an integer >= 5.

    A model's mean cross-entropy per token over many sentences, ``sum of -log q / number of
    tokens``, tends to ``E[-log q(S)] / E[len(S) + 1] >= H(S) / E[len(S) + 1]``: that ratio,
    ``per_token``, is the floor no model can beat on average.
    """
    _check_max_words(max_words)
    shapes = _accepted_shapes(max_words)
    log_accept = _log_acceptance(max_words)
    entropy, tokens = 0.0, 0.0
    for shape, log_p in shapes:
        p = math.exp(log_p - log_accept)  # P(z | A)
        entropy += p * (-(log_p - log_accept) + _words_entropy(shape))
        target_length = sum(2 + k for k in shape.adjective_counts) + 1 + shape.negated
        tokens += p * (target_length + shape.has_pp + 1)  # + postposition, + <eos>
    return LanguageEntropy(entropy, tokens, entropy / tokens)


# ---------------------------------------------------------------------------------------------
# Arrays for a language model (sec-language-models).

PAD_INDEX = 0  # <pad> in every Vocab: its labels carry no loss
NUM_STEPS = 13  # <bos> and at most 12 words in; at most 12 words and <eos> out


def language_model_vocab() -> Vocab:
    """``<pad> <bos> <eos> <unk>``, then every word of the invented language (523 in all), so
    no sentence ever meets ``<unk>``, whichever sentences the training set happens to hold."""
    return Vocab(reserved_tokens=invented_words())


def lm_arrays(
    sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int = NUM_STEPS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels for next-token prediction, each ``(num_sentences, num_steps)``:

        inputs  <bos> w_1 ... w_n  <pad> ...
        labels  w_1  ...  w_n <eos> <pad> ...

    Label ``t`` is the token after inputs ``0..t``. A sentence longer than ``num_steps - 1``
    words is a ``ValueError``, never cut silently. ``sentences`` is a non-empty list of
    sentences, each a list of words; ``vocab`` a :class:`Vocab`; ``num_steps`` a positive
    integer.
    """
    _check_lm_arguments(sentences, vocab, num_steps)
    rows = []
    for sentence in sentences:
        if len(sentence) + 1 > num_steps:
            raise ValueError(
                f"a sentence of {len(sentence)} words needs num_steps >= "
                f"{len(sentence) + 1}; got num_steps={num_steps}"
            )
        ids = [vocab.bos, *vocab[list(sentence)], vocab.eos]
        rows.append(ids + [vocab.pad] * (num_steps + 1 - len(ids)))
    sequences = torch.tensor(rows, dtype=torch.long)  # (num_sentences, num_steps + 1)
    inputs = sequences[:, :-1].masked_fill(sequences[:, :-1] == vocab.eos, vocab.pad)
    return inputs, sequences[:, 1:]  # <eos> is only ever a label


def _check_lm_arguments(sentences: object, vocab: object, num_steps: object) -> None:
    check_sentences("sentences", sentences)
    if not sentences:
        raise ValueError("sentences is empty; there is nothing to build arrays from")
    check_type("vocab", vocab, Vocab, "a Vocab, such as language_model_vocab()")
    check_integer("num_steps", num_steps)


def to_sentences(tokens: torch.Tensor, vocab: Vocab) -> list[list[str]]:
    """The words of each generated row of ``tokens``, an integer tensor ``(batch, steps)`` of
    ids of ``vocab``: a leading ``<bos>`` dropped, cut before the first ``<eos>``. A row that
    never emitted ``<eos>`` keeps all its tokens (with ``NUM_STEPS`` new tokens that is 13
    words, longer than any sentence of the language)."""
    check_type("vocab", vocab, Vocab, "a Vocab, such as language_model_vocab()")
    check_token_ids(tokens, len(vocab), "tokens")
    sentences = []
    for row in tokens.tolist():
        row = row[1:] if row and row[0] == vocab.bos else row
        sentences.append(vocab.to_tokens(row[: row.index(vocab.eos)] if vocab.eos in row else row))
    return sentences


# ---------------------------------------------------------------------------------------------
# The language model's loss (sec-language-models): the task's own, with its own padding index.


def next_token_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Mean cross-entropy of each label given the inputs before it, padding excluded: the loss
    :func:`companion.training.train.fit` minimises for a language model (sec-language-models).
    ``batch`` is ``(inputs, labels)``, as :func:`lm_arrays` makes them."""
    if len(batch) != 2:
        raise ValueError(
            "next_token_loss's batch must be (inputs, labels), as lm_arrays makes them; got a "
            f"batch of {len(batch)} tensors"
        )
    inputs, labels = batch
    return sequence_loss(model(inputs), labels, PAD_INDEX)  # logits (batch, steps, vocab)


@torch.no_grad()
def cross_entropy_per_token(
    model: nn.Module, arrays: tuple[torch.Tensor, torch.Tensor], batch_size: int = 1000
) -> float:
    """Summed cross-entropy over every label that is not padding, divided by their number:
    nats per token, directly comparable with the ``per_token`` of
    :func:`language_entropy`. ``arrays`` is ``(inputs, labels)``, as :func:`lm_arrays` makes
    them, with at least one label that is not padding; ``batch_size`` a positive integer."""
    check_type("model", model, nn.Module, "a torch.nn.Module")
    if not isinstance(arrays, (tuple, list)) or len(arrays) != 2:
        raise TypeError(
            f"arrays must be (inputs, labels), as lm_arrays makes them; got {describe(arrays)}"
        )
    device = next(model.parameters()).device
    total, count = torch.zeros((), device=device), 0
    with eval_mode(model):
        for inputs, labels in batches(arrays, batch_size, shuffle=False):
            logits = model(inputs.to(device))  # (batch, steps, vocab)
            labels = labels.to(device)
            total += F.cross_entropy(
                logits.transpose(1, 2), labels, ignore_index=PAD_INDEX, reduction="sum"
            )
            count += int((labels != PAD_INDEX).sum())
    if count == 0:
        raise ValueError(
            f"arrays hold no label that is not padding ({PAD_INDEX}): no token to score"
        )
    return total.item() / count
