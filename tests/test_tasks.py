"""Generated seq2seq tasks: determinism, disjoint splits, and that targets follow the rules."""

from __future__ import annotations

import datetime
import random
import re

import pytest

from companion.data.tasks.dates import (
    NUM_DATE_STYLES,
    date_task,
    format_date,
)
from companion.data.tasks.language import (
    ADJECTIVES,
    ARTICLES,
    LEXICON,
    NEGATION,
    NOUNS,
    PLURAL_SUFFIX,
    PREPOSITIONS,
    VERBS,
    Clause,
    NounPhrase,
    _english_plural,
    _english_third_person,
    english,
    sample_clause,
    translate,
    translation_task,
)
from companion.data.tasks.splits import (
    Splits,
)
from companion.data.tasks.symbols import (
    copy_task,
    reverse_task,
)
from companion.data.text import Vocab, build_arrays
from tests.test_language import example_clause

TASKS = {
    "date": date_task,
    "translation": translation_task,
    "copy": copy_task,
    "reverse": reverse_task,
}


@pytest.fixture(scope="module")
def dates() -> Splits:
    return date_task(3000, seed=0)


@pytest.fixture(scope="module")
def sentences() -> Splits:
    return translation_task(3000, seed=0)


@pytest.mark.parametrize("name", TASKS)
def test_tasks_are_deterministic_and_depend_on_the_seed(name):
    task = TASKS[name]
    random.seed(1)
    first = task(200, seed=3)
    random.seed(2)  # the global generator must not matter
    assert task(200, seed=3) == first
    assert task(200, seed=4) != first


@pytest.mark.parametrize("name", TASKS)
def test_splits_are_disjoint_in_source_and_sized(name):
    splits = TASKS[name](500, seed=0, val_fraction=0.2, test_fraction=0.1)
    sizes = [len(split.source) for split in splits]
    assert sizes == [350, 100, 50]
    assert all(len(split.source) == len(split.target) for split in splits)
    train, val, test = ({tuple(s) for s in split.source} for split in splits)
    assert len(train) + len(val) + len(test) == 500  # no repeats inside a split either
    assert not train & test and not train & val and not val & test


@pytest.mark.parametrize("name", TASKS)
def test_tasks_reject_bad_sizes(name):
    with pytest.raises(ValueError, match="num_examples must be a positive integer; got 0"):
        TASKS[name](0, seed=0)
    with pytest.raises(ValueError, match="val_fraction must be a fraction in \\(0, 1\\); got 1.5"):
        TASKS[name](100, seed=0, val_fraction=1.5)
    with pytest.raises(ValueError, match="num_examples=5 leaves a split empty"):
        TASKS[name](5, seed=0)


def test_splits_feed_vocab_and_build_arrays(sentences):
    src_vocab, tgt_vocab = Vocab(sentences.train.source), Vocab(sentences.train.target)
    arrays = build_arrays(*sentences.test, src_vocab, tgt_vocab, num_steps=14)
    assert arrays.src.shape == (len(sentences.test.source), 14)
    assert (arrays.src_valid_len == arrays.src.ne(0).sum(dim=1)).all()


# ----------------------------------------------------------------------------- dates


def _parse_date(text: str) -> datetime.date:
    """An independent reader of the documented styles, built on strptime."""
    text = re.sub(r"\b(\d+)(st|nd|rd|th)\b", r"\1", text).replace(" of ", " ")
    two_digit = re.search(r"^\d{1,2}[.-]\w+[.-](\d\d)$", text)
    if two_digit:  # the module's rule, not strptime's (which pivots at 69)
        year = int(two_digit.group(1))
        text = text[: two_digit.start(1)] + str(1900 + year if year >= 50 else 2000 + year)
    # Several formats a line, like the style table they mirror (fmt: skip).
    formats = [
        "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%A, %B %d, %Y", "%a, %d %b %Y",
        "%A %d %B %Y", "%d-%b-%Y", "%d.%m.%Y", "%m/%d/%Y", "%Y-%m-%d",
    ]  # fmt: skip
    parsed = set()
    for fmt in formats:
        try:
            parsed.add(datetime.datetime.strptime(text, fmt).date())
        except ValueError:
            pass
    assert len(parsed) == 1, f"{text!r} parses as {parsed}"
    return parsed.pop()


def test_date_targets_are_the_written_dates(dates):
    for split in dates:
        for source, target in zip(split.source, split.target):
            text, iso = "".join(source), "".join(target)
            date = _parse_date(text)
            assert iso == date.isoformat()
            assert 1950 <= date.year <= 2049
            for name in ("%A", "%a"):  # strptime does not check weekdays; check them here
                weekday = date.strftime(name)
                others = {datetime.date(2024, 1, d).strftime(name) for d in range(1, 8)}
                written = {w for w in others if re.search(rf"\b{w}\b", text, re.IGNORECASE)}
                assert written <= {weekday}, f"{text!r} is a {date:%A}"


def test_date_sources_vary_and_stay_short(dates):
    sources = ["".join(s) for split in dates for s in split.source]
    assert max(len(s) for s in sources) <= 32
    shapes = {re.sub(r"[a-z]+", "a", re.sub(r"\d", "9", s.lower())) for s in sources}
    assert len(shapes) >= 20
    assert any(s.isupper() for s in sources) and any("of" in s for s in sources)
    assert any(s[:1].islower() and s[:1].isalpha() for s in sources)
    assert all(len(t) == 10 for split in dates for t in split.target)


def test_format_date_covers_every_style_and_checks_arguments():
    date = datetime.date(2026, 11, 21)
    written = [format_date(date, style) for style in range(NUM_DATE_STYLES)]
    assert len(set(written)) == NUM_DATE_STYLES - 2  # two styles only differ in zero padding
    assert all(_parse_date(text) == date for text in written)
    for other in (
        datetime.date(1951, 3, 2),
        datetime.date(2049, 12, 31),
        datetime.date(2000, 1, 9),
    ):
        assert all(
            _parse_date(format_date(other, s, "upper")) == other for s in range(NUM_DATE_STYLES)
        )
    with pytest.raises(
        ValueError, match=rf"style must be an integer in \[0, {NUM_DATE_STYLES - 1}\]; got 99"
    ):
        format_date(date, 99)
    with pytest.raises(ValueError, match="case must be 'title', 'lower' or 'upper'; got 'x'"):
        format_date(date, 0, case="x")


# ----------------------------------------------------------------------------- translation


def test_lexicon_is_large_unique_and_disjoint():
    assert len(NOUNS) >= 150 and len(ADJECTIVES) >= 60 and len(VERBS) >= 40
    function_english = ["the", "a", "an", "some", "do", "does", "not"]
    english_forms = [
        *NOUNS,
        *map(_english_plural, NOUNS),
        *ADJECTIVES,
        *VERBS,
        *map(_english_third_person, VERBS),
        *PREPOSITIONS,
        *function_english,
    ]
    assert len(set(english_forms)) == len(english_forms)  # each English word has one role
    target_words = [w for w, _ in LEXICON.nouns.values()] + [
        *LEXICON.adjectives.values(),
        *LEXICON.verbs.values(),
        *LEXICON.prepositions.values(),
    ]
    function_words = {*ARTICLES.values(), NEGATION}
    assert len(set(target_words)) == len(target_words)
    assert not function_words & set(target_words)
    plurals = {w + PLURAL_SUFFIX for w, _ in LEXICON.nouns.values()}
    assert not plurals & set(target_words)
    genders = [g for _, g in LEXICON.nouns.values()]
    assert 0.3 < genders.count("f") / len(genders) < 0.7
    for word, gender in LEXICON.nouns.values():
        assert word[-1] == ("o" if gender == "m" else "a")


def _noun_phrase_in_target(phrase: NounPhrase) -> list[str]:
    """The documented rule, written out once more: article, noun(-n), adjectives mirrored."""
    word, gender = LEXICON.nouns[phrase.noun]
    article = {(True, "m"): "ko", (True, "f"): "ka", (False, "m"): "mo", (False, "f"): "ma"}
    article = article[(phrase.definite, gender)] + ("s" if phrase.plural else "")
    adjectives = [LEXICON.adjectives[a] for a in phrase.adjectives[::-1]]
    return [article, word + ("n" if phrase.plural else ""), *adjectives]


def test_translation_follows_the_documented_grammar():
    rng = random.Random(0)
    for _ in range(300):
        clause = sample_clause(rng)
        expected = _noun_phrase_in_target(clause.subject)
        if clause.preposition is not None:
            expected += _noun_phrase_in_target(clause.prepositional_object)
            expected.append(LEXICON.prepositions[clause.preposition])
        expected += _noun_phrase_in_target(clause.object)
        expected += [LEXICON.verbs[clause.verb]] + ([NEGATION] if clause.negated else [])
        assert translate(clause) == expected
        assert 5 <= len(english(clause)) <= 12


def test_english_side_agrees():
    dog, boxes = NounPhrase("dog", ("old",), False, False), NounPhrase("box", (), True, False)
    see = Clause(dog, "watch", False, boxes, None, None)
    assert english(see) == ["an", "old", "dog", "watches", "some", "boxes"]
    negated = see._replace(subject=boxes, negated=True, object=dog)
    assert english(negated)[:5] == ["some", "boxes", "do", "not", "watch"]


def test_docstring_example_is_what_the_generator_writes():
    import companion.data.tasks.language as tasks

    clause = example_clause()
    assert f"    {' '.join(english(clause))}\n    {' '.join(translate(clause))}\n" in tasks.__doc__


def _alignment(source: list[str], target: list[str]) -> list[int] | None:
    """Target position of each English content word, or None if a word occurs twice."""
    to_target = {}
    for noun, (word, _) in LEXICON.nouns.items():
        to_target[noun], to_target[_english_plural(noun)] = word, word + PLURAL_SUFFIX
    for verb, word in LEXICON.verbs.items():
        to_target[verb] = to_target[_english_third_person(verb)] = word
    to_target.update(LEXICON.adjectives)
    to_target.update(LEXICON.prepositions)
    aligned = [to_target[w] for w in source if w in to_target]
    if len(set(aligned)) < len(aligned):
        return None
    return [target.index(word) for word in aligned]


def test_translation_reorders_words(sentences):
    """Alignment is not monotonic: the verb moves past the object, adjectives past nouns."""
    num_checked = 0
    for source, target in zip(*sentences.train):
        positions = _alignment(source, target)
        if positions is None:
            continue
        num_checked += 1
        inversions = sum(a > b for i, a in enumerate(positions) for b in positions[i + 1 :])
        assert inversions >= 1, (source, target)  # at least the verb and its object
        has_adjective = any(w in LEXICON.adjectives for w in source)
        assert inversions >= 2 or not has_adjective, (source, target)
    assert num_checked > 0.9 * len(sentences.train.source)


def test_translation_lengths_and_vocabulary(sentences):
    lengths = [len(s) for split in sentences for s in split.source]
    assert min(lengths) >= 5 and max(lengths) <= 12
    assert max(len(t) for split in sentences for t in split.target) <= 12
    used = {w for s in sentences.train.source for w in s}
    assert len(used) > 300  # far more words than a memorising model could cover by rote


# ----------------------------------------------------------------------------- symbols


def test_copy_and_reverse_targets():
    copy = copy_task(300, seed=0, vocab_size=5, min_len=2, max_len=6)
    reverse = reverse_task(300, seed=0, vocab_size=5, min_len=2, max_len=6)
    for split in copy:
        assert split.source == split.target
    for split in reverse:
        assert [s[::-1] for s in split.source] == split.target
    symbols = {t for split in copy for s in split.source for t in s}
    assert symbols == {str(i) for i in range(5)}
    assert {len(s) for split in copy for s in split.source} == set(range(2, 7))


def test_symbol_tasks_reject_impossible_requests():
    with pytest.raises(ValueError, match="vocab_size must be a positive integer; got 0"):
        copy_task(100, seed=0, vocab_size=0)
    with pytest.raises(ValueError, match="min_len=4, max=2"):
        reverse_task(100, seed=0, min_len=4, max_len=2)
    with pytest.raises(ValueError, match="num_examples=100 is more than half of the 14"):
        copy_task(100, seed=0, vocab_size=2, min_len=1, max_len=3)
