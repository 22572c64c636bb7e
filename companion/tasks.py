"""Sequence-to-sequence tasks generated in code: deterministic given a seed, nothing downloaded.

Every task returns :class:`Splits`, three :class:`~companion.text.ParallelCorpus` (train, val,
test) whose source sequences are all different, so no test source is ever seen in training::

    splits = date_task(20_000, seed=0)
    src_vocab, tgt_vocab = Vocab(splits.train.source), Vocab(splits.train.target)
    arrays = build_arrays(*splits.train, src_vocab, tgt_vocab, num_steps=32)

* :func:`date_task`: dates written in many ways to ISO 8601, characters (Bahdanau chapter).
* :func:`translation_task`: English to an invented, reordering language (Transformer chapter).
* :func:`copy_task`, :func:`reverse_task`: symbol sequences, for quick checks.

The grammar of :func:`translation_task`
---------------------------------------
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
"""

from __future__ import annotations

import datetime
import hashlib
import random
from collections.abc import Callable
from typing import NamedTuple

from companion.text import ParallelCorpus


class Splits(NamedTuple):
    """Train, validation and test sets; no source sequence occurs in two of them."""

    train: ParallelCorpus
    val: ParallelCorpus
    test: ParallelCorpus


Pair = tuple[list[str], list[str]]  # (source tokens, target tokens)


def _split_sizes(
    num_examples: int, val_fraction: float, test_fraction: float
) -> tuple[int, int, int]:
    """(train, val, test) sizes; each split must get at least one example."""
    if num_examples <= 0:
        raise ValueError(f"num_examples must be positive; got {num_examples}")
    for name, fraction in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if not 0 < fraction < 1:
            raise ValueError(f"{name} must be in (0, 1); got {fraction}")
    num_val, num_test = int(num_examples * val_fraction), int(num_examples * test_fraction)
    num_train = num_examples - num_val - num_test
    if min(num_train, num_val, num_test) < 1:
        raise ValueError(
            f"num_examples={num_examples} leaves a split empty with val_fraction={val_fraction}"
            f" and test_fraction={test_fraction}"
        )
    return num_train, num_val, num_test


def _make_splits(
    sample: Callable[[random.Random], Pair],
    num_examples: int,
    seed: int,
    val_fraction: float,
    test_fraction: float,
) -> Splits:
    """Draw ``num_examples`` pairs with distinct sources and cut them into three splits."""
    _, num_val, num_test = _split_sizes(num_examples, val_fraction, test_fraction)
    rng = random.Random(seed)  # its own generator: independent of global random state
    pairs: dict[tuple[str, ...], Pair] = {}  # keyed by source: a repeated source is redrawn
    max_attempts = 20 * num_examples + 1000
    for _ in range(max_attempts):
        if len(pairs) == num_examples:
            break
        source, target = sample(rng)
        pairs.setdefault(tuple(source), (source, target))
    if len(pairs) < num_examples:
        raise ValueError(
            f"num_examples={num_examples} is more than this task's distinct sources: found "
            f"{len(pairs)} in {max_attempts} draws"
        )
    ordered = list(pairs.values())  # insertion order is draw order, so already random

    def corpus(part: list[Pair]) -> ParallelCorpus:
        return ParallelCorpus([source for source, _ in part], [target for _, target in part])

    test, val = ordered[:num_test], ordered[num_test : num_test + num_val]
    train = ordered[num_test + num_val :]
    return Splits(corpus(train), corpus(val), corpus(test))


# ----------------------------------------------------------------------------- dates

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_YEAR, LAST_YEAR = 1950, 2049  # two-digit years: 50-99 mean 1950-1999, 00-49 2000-2049


def _ordinal(day: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, 22nd, 23rd, ..., 31st."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# Fields: d/dd day (dd zero-padded), m/mm month, y year, yy its last two digits, month/mon
# month name/abbreviation, weekday/wkd weekday name/abbreviation, nth the day as an ordinal.
DATE_STYLES = (
    "{d} {month} {y}",  # 21 November 2026
    "{d} {mon} {y}",  # 21 Nov 2026
    "{month} {d}, {y}",  # November 21, 2026
    "{mon} {d}, {y}",  # Nov 21, 2026
    "{month} {nth}, {y}",  # November 21st, 2026
    "{nth} of {month} {y}",  # 21st of November 2026
    "{weekday}, {month} {d}, {y}",  # Saturday, November 21, 2026
    "{wkd}, {d} {mon} {y}",  # Sat, 21 Nov 2026
    "{weekday} {d} {month} {y}",  # Saturday 21 November 2026
    "{d}-{mon}-{yy}",  # 21-Nov-26
    "{dd}.{mm}.{yy}",  # 21.11.26
    "{dd}.{mm}.{y}",  # 21.11.2026
    "{d}.{m}.{y}",  # 21.11.2026, 5.3.2026
    "{mm}/{dd}/{y}",  # 11/21/2026
    "{m}/{d}/{y}",  # 11/21/2026, 3/5/2026
    "{y}-{mm}-{dd}",  # 2026-11-21
)
NUM_DATE_STYLES = len(DATE_STYLES)


def format_date(date: datetime.date, style: int, case: str = "title") -> str:
    """Write ``date`` in ``DATE_STYLES[style]``; ``case`` ('title', 'lower', 'upper') is for names.

    Numeric styles follow fixed conventions, so no source is ambiguous: slashes are US
    month/day/year, dots are day.month.year, dashes with a leading 4-digit year are ISO.
    A two-digit year ``yy`` means 19yy for yy >= 50 and 20yy for yy < 50.
    """
    if not 0 <= style < NUM_DATE_STYLES:
        raise ValueError(f"style must be in [0, {NUM_DATE_STYLES}); got {style}")
    if case not in ("title", "lower", "upper"):
        raise ValueError(f"case must be 'title', 'lower' or 'upper'; got {case!r}")
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    if case != "title":
        month, weekday = getattr(month, case)(), getattr(weekday, case)()
    return DATE_STYLES[style].format(
        d=date.day,
        dd=f"{date.day:02d}",
        m=date.month,
        mm=f"{date.month:02d}",
        y=date.year,
        yy=f"{date.year % 100:02d}",
        month=month,
        mon=month[:3],
        weekday=weekday,
        wkd=weekday[:3],
        nth=_ordinal(date.day),
    )


def date_task(
    num_examples: int, seed: int, val_fraction: float = 0.1, test_fraction: float = 0.1
) -> Splits:
    """Dates in 16 styles and 3 letter cases (at most 29 characters) to ``yyyy-mm-dd``.

    Tokens are characters, source and target. Dates are uniform over 1950-2049 and weekdays
    are those of the date. Splits differ in their source strings; the same date may appear in
    two splits written differently. The Bahdanau chapter trains a GRU with attention on it.
    """
    first_day = datetime.date(FIRST_YEAR, 1, 1).toordinal()
    last_day = datetime.date(LAST_YEAR, 12, 31).toordinal()

    def sample(rng: random.Random) -> Pair:
        date = datetime.date.fromordinal(rng.randint(first_day, last_day))
        style = rng.randrange(NUM_DATE_STYLES)
        case = rng.choice(("title", "lower", "upper"))
        return list(format_date(date, style, case)), list(date.isoformat())

    return _make_splits(sample, num_examples, seed, val_fraction, test_fraction)


# ----------------------------------------------------------------------------- translation

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
    """The English side: subject verb object [preposition noun-phrase]."""
    if clause.negated:
        verb = ["do" if clause.subject.plural else "does", "not", clause.verb]
    else:
        verb = [clause.verb if clause.subject.plural else _english_third_person(clause.verb)]
    words = _english_noun_phrase(clause.subject) + verb + _english_noun_phrase(clause.object)
    if clause.preposition is not None:
        words += [clause.preposition, *_english_noun_phrase(clause.prepositional_object)]
    return words


def translate(clause: Clause) -> list[str]:
    """The invented side: subject [noun-phrase postposition] object verb [ne]."""
    words = _target_noun_phrase(clause.subject)
    if clause.preposition is not None:
        words += _target_noun_phrase(clause.prepositional_object)
        words.append(LEXICON.prepositions[clause.preposition])
    words += _target_noun_phrase(clause.object)
    words.append(LEXICON.verbs[clause.verb])
    if clause.negated:
        words.append(NEGATION)
    return words


def _sample_noun_phrase(rng: random.Random) -> NounPhrase:
    num_adjectives = rng.choices((0, 1, 2), weights=(5, 4, 2))[0]
    return NounPhrase(
        noun=rng.choice(NOUNS),
        adjectives=tuple(rng.sample(ADJECTIVES, num_adjectives)),
        plural=rng.random() < 0.3,
        definite=rng.random() < 0.6,
    )


def sample_clause(rng: random.Random, max_words: int = 12) -> Clause:
    """A random sentence of the grammar with at most ``max_words`` English words."""
    while True:
        has_pp = rng.random() < 0.35
        clause = Clause(
            subject=_sample_noun_phrase(rng),
            verb=rng.choice(VERBS),
            negated=rng.random() < 0.2,
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

    return _make_splits(sample, num_examples, seed, val_fraction, test_fraction)


# ----------------------------------------------------------------------------- symbols


def _symbol_task(
    num_examples: int,
    seed: int,
    vocab_size: int,
    min_len: int,
    max_len: int,
    reverse: bool,
    val_fraction: float,
    test_fraction: float,
) -> Splits:
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive; got {vocab_size}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len; got min_len={min_len}, max={max_len}")
    num_distinct = sum(vocab_size**length for length in range(min_len, max_len + 1))
    if num_examples > num_distinct // 2:  # redrawing repeats would take too long
        raise ValueError(
            f"num_examples={num_examples} is more than half of the {num_distinct} distinct "
            f"sequences of vocab_size={vocab_size}, lengths {min_len}-{max_len}"
        )
    symbols = [str(i) for i in range(vocab_size)]

    def sample(rng: random.Random) -> Pair:
        source = rng.choices(symbols, k=rng.randint(min_len, max_len))
        return source, source[::-1] if reverse else list(source)

    return _make_splits(sample, num_examples, seed, val_fraction, test_fraction)


def copy_task(
    num_examples: int,
    seed: int,
    vocab_size: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
) -> Splits:
    """Sequences of symbols ``'0'``, ``'1'``, ... to themselves: the simplest seq2seq check."""
    return _symbol_task(
        num_examples, seed, vocab_size, min_len, max_len, False, val_fraction, test_fraction
    )


def reverse_task(
    num_examples: int,
    seed: int,
    vocab_size: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
) -> Splits:
    """Sequences of symbols to their reversal: every output attends to a moving input."""
    return _symbol_task(
        num_examples, seed, vocab_size, min_len, max_len, True, val_fraction, test_fraction
    )
