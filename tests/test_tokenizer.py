"""companion.tokenizer: the same pre-tokens and ids as tiktoken built from its own merges and
tiktoken's own patterns, lossless round trips, deterministic training with its stated tie-break,
long words in n log n, and clear errors (sec-tokenization)."""

from __future__ import annotations

import fnmatch
import functools
import inspect
import json
import os
import random
import string
import subprocess
import sys
import tomllib
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import regex
import tiktoken
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

import companion
from companion import corpus
from companion.bench import main as bench_main
from companion.tokenizer import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    Tokenizer,
    merge,
    pretokenize,
    train_merges,
)

ENDOFTEXT = "<|endoftext|>"
TRAINING_TEXT = (
    (
        "The cat sat on the mat. The cats sat on the mats, and the dog didn't.\n"
        "Attention weights sum to 1; they're computed as softmax(QK^T / sqrt(d)).\n"
        "注意力机制是 Transformer 的核心。多头注意力把注意力分成多个头。词元化把文本切成词元。\n"
        "def attention(query, key, value):\n    return softmax(query @ key.T) @ value\n"
        "In 2024, 12345 + 67890 = 80235 and 3.14159 * 2 = 6.28318.   Spaces   and\ttabs.\n"
        "Emoji: 😀😀 🚀 👍🏽 café café naïve Ångström\n"
    )
    * 3
    + inspect.getsource(merge)
    + ENDOFTEXT
    + " the end"
)


PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN}


@functools.cache
def trained(pattern: str) -> Tokenizer:
    return Tokenizer.train(TRAINING_TEXT, 600, [ENDOFTEXT, "<|pad|>"], pattern)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return trained(GPT2_PATTERN)


def as_tiktoken(tok: Tokenizer) -> tiktoken.Encoding:
    """tiktoken's encoder with companion's merges and pattern: rank of a token's bytes = its id."""
    return tiktoken.Encoding(
        name="companion-bpe",
        pat_str=tok.pattern,
        mergeable_ranks={token: i for i, token in enumerate(tok.vocab)},
        special_tokens=tok.special_tokens,
    )


@pytest.fixture(scope="module")
def oracle(tokenizer) -> tiktoken.Encoding:
    return as_tiktoken(tokenizer)


@pytest.fixture(scope="module", params=list(PATTERNS))
def pair(request) -> tuple[Tokenizer, tiktoken.Encoding]:
    """A tokenizer trained with each of tiktoken's patterns, and tiktoken built from it."""
    tok = trained(PATTERNS[request.param])
    return tok, as_tiktoken(tok)


def same_ids(tok: Tokenizer, enc: tiktoken.Encoding, text: str) -> None:
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text), repr(text)
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())
    try:
        expected = enc.encode(text)  # tiktoken refuses a special token it was not allowed
    except ValueError:
        with pytest.raises(ValueError, match="text contains the special token"):
            tok.encode(text)
    else:
        assert tok.encode(text) == expected


# Strings that exercise the pre-tokenizer's classes and the merges: pieces of the training
# text, emoji (with skin-tone modifiers), Chinese, combining marks, whitespace runs, digits,
# special tokens, and any code point at all.
PIECES = st.sampled_from(
    [
        "the",
        " the",
        "The cat",
        "注意力",
        "词元",
        "多头",
        "😀",
        "👍🏽",
        "🚀",
        "e\u0301",
        "\u0301\u0302",
        "n\u0303",
        " ",
        "   ",
        "\t",
        "\n\n",
        " \n ",
        "\u3000",
        "\u00a0",
        "\x1c",
        "12345",
        "3.14",
        "٣٤",
        "²",
        "'s",
        "'ll",
        "didn't",
        "@",
        ENDOFTEXT,
        "<|pad|>",
        "softmax(",
    ]
)
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=12).map("".join)


# ----------------------------------------------------------------------------- tiktoken


def test_the_patterns_are_tiktokens_production_patterns():
    assert GPT2_PATTERN == openai_public.r50k_pat_str
    assert f'r"""{CL100K_PATTERN}"""' in inspect.getsource(openai_public.cl100k_base)


@functools.cache
def class_members() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """For ``\\p{L}``, ``\\p{N}`` and ``\\s``: the code points that regex matches, and those
    that tiktoken's engine matches, over all of Unicode. tiktoken keeps only what its pattern
    matches, so with the bytes as its only tokens it returns exactly the class's members."""
    everything = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    ranks = {bytes([b]): b for b in range(256)}
    members = {}
    for name in (r"\p{L}", r"\p{N}", r"\s"):
        enc = tiktoken.Encoding(
            name="class", pat_str=name + "+", mergeable_ranks=ranks, special_tokens={}
        )
        theirs = bytes(enc.encode_ordinary(everything)).decode("utf-8")
        ours = "".join(regex.findall(name + "+", everything))
        members[name] = (frozenset(ours), frozenset(theirs))
    return members


@functools.cache
def newer_than_tiktoken() -> frozenset[str]:
    """The code points where regex and tiktoken differ: letters and numbers that Unicode
    assigned after tiktoken's tables (the module docstring's one difference)."""
    return frozenset().union(*(ours ^ theirs for ours, theirs in class_members().values()))


@functools.cache
def newer_than_python() -> list[str]:
    """Letters and numbers of tiktoken's Unicode that this Python's tables do not know yet
    (Unicode 15.0 and 16.0 on Python 3.11): `re` would have read them as unassigned."""
    known = class_members()[r"\p{L}"][1] | class_members()[r"\p{N}"][1]
    return sorted(c for c in known if unicodedata.category(c) == "Cn")


def test_the_only_difference_from_tiktoken_is_unicode_after_16():
    """The module docstring's difference, and only it: regex's tables know 17,144 letters and
    336 numbers that Unicode assigned after tiktoken's tables (16.0), all of them unassigned in
    Python's own (14.0 or 15.0); tiktoken knows none that regex does not; whitespace is the
    same set, without U+001C..U+001F."""
    (letters, tiktoken_letters), (numbers, tiktoken_numbers), (spaces, tiktoken_spaces) = (
        class_members().values()
    )
    assert spaces == tiktoken_spaces and not spaces & set("\x1c\x1d\x1e\x1f")
    assert tiktoken_letters < letters and tiktoken_numbers < numbers
    newer = newer_than_tiktoken()
    assert (len(letters - tiktoken_letters), len(numbers - tiktoken_numbers)) == (17_144, 336)
    assert all(unicodedata.category(c) == "Cn" for c in newer)
    cjk_extension_j = "\U000323b0"  # Unicode 17.0
    assert cjk_extension_j in newer
    text = "a" + cjk_extension_j
    assert pretokenize(text) == [text]  # one run of letters here, two pre-tokens in tiktoken
    assert tiktoken_cuts(text, GPT2_PATTERN, ["a", cjk_extension_j])


def test_pre_tokens_do_not_depend_on_pythons_unicode_tables():
    """U+11F04 (a Kawi letter) came with Unicode 15.0: Python 3.11's ``re`` reads it as
    unassigned, 3.12's as a letter. regex and tiktoken read it as a letter on every Python;
    U+001C is no whitespace to either, although ``str.isspace`` says it is."""
    assert pretokenize("a\U00011f04b") == ["a\U00011f04b"]
    assert pretokenize("a\x1c\x1c b") == ["a", "\x1c\x1c", " b"]
    assert "\U00011f04" in class_members()[r"\p{L}"][1]


def tiktoken_cuts(text: str, pattern: str, pieces: list[str]) -> bool:
    """Whether tiktoken with ``pattern`` cuts ``text`` into the pre-tokens ``pieces``.

    tiktoken emits a pre-token that is in its vocabulary as one token, and no token crosses a
    pre-token boundary. So with the bytes and every run of consecutive ``pieces`` as its
    vocabulary, its tokens are the ``pieces`` exactly when its pre-tokens are: a pre-token of
    tiktoken's that joined several pieces would come out whole, as one token, and one that cut
    a piece would cut its token too.
    """
    pieces_bytes = [piece.encode("utf-8") for piece in pieces]
    ranks = {bytes([b]): b for b in range(256)}
    for i in range(len(pieces)):
        for j in range(i + 1, len(pieces) + 1):
            ranks.setdefault(b"".join(pieces_bytes[i:j]), len(ranks))
    enc = tiktoken.Encoding(name="cuts", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    return [enc.decode_single_token_bytes(i) for i in enc.encode_ordinary(text)] == pieces_bytes


def without_newer(text: str) -> str:
    return "".join(c for c in text if c not in newer_than_tiktoken())


# Arbitrary Unicode with what pre-tokenization finds hard: control characters and whitespace
# of all kinds, long whitespace runs, contractions in any case (U+017F folds to "s"), letters
# and numbers newer than Python's tables, unassigned code points (any st.text() may hold them).
CONTROLS = "".join(map(chr, range(0x20))) + "\x7f\x85\xa0\u1680\u200b\u2028\u2029\u3000\ufeff"
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2009\u3000"
CONTRACTIONS = st.sampled_from(
    "'s 'S 'ſ 't 'T 'd 'D 'm 'M 're 'Re 'rE 'RE 've 'VE 'vE 'll 'LL 'lL 'x".split()
)
UNICODE_TEXTS = (
    st.lists(
        st.one_of(
            st.text(max_size=20),
            st.text(alphabet=CONTROLS, max_size=8),
            st.text(alphabet=WHITESPACE, min_size=1, max_size=300),
            CONTRACTIONS,
            st.text(alphabet=st.characters(categories=["L", "N", "M", "Cn", "Co"]), max_size=6),
            st.deferred(lambda: st.sampled_from(newer_than_python() or ["\U00011f04"])),
            PIECES,
        ),
        max_size=10,
    )
    .map("".join)
    .map(without_newer)
)


@pytest.mark.parametrize("pattern", PATTERNS.values(), ids=PATTERNS.keys())
@settings(max_examples=200)
@given(UNICODE_TEXTS)
def test_same_pre_tokens_as_tiktoken_on_any_unicode(pattern, text):
    pieces = pretokenize(text, pattern)
    assert "".join(pieces) == text
    assert tiktoken_cuts(text, pattern, pieces), pieces


@pytest.mark.parametrize("pattern", PATTERNS.values(), ids=PATTERNS.keys())
def test_contractions_in_every_case_as_tiktoken(pattern):
    """Every character that case-folds to a letter of a contraction, in every pair."""
    folding = regex.findall(r"(?i)[sdmtlver]", "".join(map(chr, range(0x10000))))
    assert "ſ" in folding and "K" not in folding
    for first in folding:
        for second in ["", *folding]:
            text = f"x'{first}{second}y"
            assert tiktoken_cuts(text, pattern, pretokenize(text, pattern)), text


def test_the_comparison_of_pre_tokens_sees_a_joined_and_a_cut_pre_token():
    """``tiktoken_cuts`` is False when tiktoken's pre-tokens join or cut companion's."""
    text = "the cat's 12345 mats"
    joined = GPT2_PATTERN.replace(r" ?\p{L}++", r"[ \p{L}']+")  # "the cat's " is one pre-token
    assert pretokenize(text, joined)[0] == "the cat's "
    assert tiktoken_cuts(text, GPT2_PATTERN, pretokenize(text, GPT2_PATTERN))
    assert not tiktoken_cuts(text, joined, pretokenize(text, GPT2_PATTERN))  # tiktoken joins
    assert not tiktoken_cuts(text, GPT2_PATTERN, pretokenize(text, joined))  # tiktoken cuts


def test_vocabulary_bytes_are_distinct_and_bytes_come_first(tokenizer):
    assert tokenizer.vocab[:256] == [bytes([b]) for b in range(256)]
    assert len(set(tokenizer.vocab)) == len(tokenizer.vocab) == 600 - 2
    assert tokenizer.special_tokens == {ENDOFTEXT: 598, "<|pad|>": 599}


def test_same_ids_as_tiktoken_on_the_training_text(pair):
    tok, enc = pair
    same_ids(tok, enc, TRAINING_TEXT)
    ids = tok.encode(TRAINING_TEXT, disallowed_special=())
    assert len(ids) < len(TRAINING_TEXT.encode("utf-8")) / 2  # the merges compress it


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "a   b",
        "        return x",
        "zzzzzzz mmmmmmm 0000000",
        "  leading and trailing  ",
        "\n\n\n",
        "the cat's mats",
        "THE CAT'S MATS, WE'LL SEE",
        "注意力机制",
        "😀😀😀",
        "e\u0301e\u0301",
        "1234567890",
        f"a{ENDOFTEXT}b <|pad|>",
        "\U0010ffff\x00",
        "\x1c\x1d \x1e\x1f\u3000\x85",
        "a\r\n\r\n  (word) \n",
        "   \n",
    ],
)
def test_same_ids_as_tiktoken_on_chosen_strings(pair, text):
    same_ids(*pair, text)


@settings(max_examples=300)
@given(TEXTS)
def test_same_ids_as_tiktoken_on_generated_strings(pair, text):
    same_ids(*pair, text)


@settings(max_examples=200)
@given(UNICODE_TEXTS)
def test_same_ids_as_tiktoken_on_any_unicode(pair, text):
    same_ids(*pair, text)


def test_equivalence_fails_when_two_merges_are_applied_in_the_wrong_order(tokenizer, oracle):
    """The check above can fail: swap the ranks of two merges that compete for a byte
    (``(a, b)`` and ``(b, c)``) in companion's encoder only, and the ids differ from tiktoken's."""
    merges = tokenizer.merges
    first, second = next(
        (i, j)
        for i, (a, b) in enumerate(merges)
        for j, (b2, c) in enumerate(merges)
        if i < j and b == b2 and max(a, b, c) < 256
    )
    broken = Tokenizer(merges, tokenizer.special_tokens, tokenizer.pattern)
    broken.ranks[merges[first]], broken.ranks[merges[second]] = second, first
    a, b = merges[first]
    c = merges[second][1]
    word = bytes([a, b, c]).decode("utf-8", errors="ignore")
    assert broken.vocab == tokenizer.vocab  # same tokens, only their order of merging differs
    with pytest.raises(AssertionError):
        same_ids(broken, oracle, TRAINING_TEXT + word)


# ----------------------------------------------------------------------------- round trips


@given(st.text())
def test_decode_encode_is_the_identity(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text), errors="strict") == text
    ids = tokenizer.encode(text, allowed_special="all")
    assert tokenizer.decode(ids, errors="strict") == text


@given(TEXTS)
def test_decode_encode_is_the_identity_on_mixed_strings(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text, allowed_special="all")) == text


def test_a_cut_character_decodes_as_a_replacement(tokenizer):
    ids = tokenizer.encode("注")
    assert len(tokenizer.decode_bytes(ids)) == 3
    assert tokenizer.decode(ids[:1] if len(ids) > 1 else list(b"\xe6")) == "\ufffd"


def test_special_tokens_are_one_id_only_when_allowed(tokenizer):
    """As in tiktoken: allowed, a special token is its id; named in ``disallowed_special`` (by
    default, every one not allowed), it is an error; with ``disallowed_special=()``, text."""
    text = f"a{ENDOFTEXT}b"
    assert tokenizer.encode(text, allowed_special={ENDOFTEXT}) == [
        *tokenizer.encode("a"),
        tokenizer.special_tokens[ENDOFTEXT],
        *tokenizer.encode("b"),
    ]
    as_text = tokenizer.encode(text, disallowed_special=())
    assert tokenizer.special_tokens[ENDOFTEXT] not in as_text
    assert as_text == tokenizer.encode_ordinary(text)
    with pytest.raises(ValueError, match="text contains the special token '<\\|endoftext"):
        tokenizer.encode(text)
    with pytest.raises(ValueError, match="text contains the special token '<\\|endoftext"):
        tokenizer.encode(text, allowed_special={"<|pad|>"})
    assert tokenizer.encode(text, disallowed_special={"<|pad|>"}) == as_text
    assert tokenizer.encode("<|pad|>", "all", disallowed_special=()) == [599]


@pytest.mark.parametrize(
    "ids_of",
    [
        pytest.param(lambda ids: ids, id="list"),
        pytest.param(tuple, id="tuple"),
        pytest.param(iter, id="iterator"),
        pytest.param(np.array, id="numpy int64"),
        pytest.param(lambda ids: np.array(ids, dtype=np.uint16), id="numpy uint16"),
        pytest.param(lambda ids: [np.int32(i) for i in ids], id="numpy int32 scalars"),
        pytest.param(torch.tensor, id="torch int64"),
        pytest.param(lambda ids: torch.tensor(ids, dtype=torch.int32), id="torch int32"),
        pytest.param(lambda ids: [torch.tensor(i) for i in ids], id="0-d tensors"),
    ],
)
def test_decode_takes_integer_ids_of_any_type(tokenizer, ids_of):
    ids = tokenizer.encode("the cat's mat, 注意力")
    assert tokenizer.decode(ids_of(ids)) == "the cat's mat, 注意力"


def test_decode_takes_byte_ids_as_uint8_and_one_id_alone(tokenizer):
    data = "naïve 😀".encode()
    for ids in [np.frombuffer(data, dtype=np.uint8), torch.tensor(list(data), dtype=torch.uint8)]:
        assert tokenizer.decode(ids, errors="strict") == "naïve 😀"
    assert tokenizer.decode_bytes(data) == data  # the bytes are their own ids
    for one in [116, np.int64(116), np.array(116), torch.tensor(116)]:
        assert tokenizer.decode(one) == "t"


def test_a_pattern_with_capturing_groups_gives_whole_matches():
    """``findall`` would return the groups (the chapter's digit-grouping exercise invites one);
    the tokenizer takes each whole match, as tiktoken does."""
    grouped = GPT2_PATTERN.replace(r" ?\p{N}++", r"(\p{N}{1,3})")
    text = "the cat's mat cost 12345 in 2024"
    assert pretokenize(text, grouped) == [
        *["the", " cat", "'s", " mat", " cost", " ", "123", "45", " in", " ", "202", "4"]
    ]
    tok = Tokenizer.train(TRAINING_TEXT, 400, pattern=grouped)
    assert tok.decode(tok.encode(text)) == text
    same_ids(tok, as_tiktoken(tok), text + TRAINING_TEXT)
    simple = Tokenizer.train(TRAINING_TEXT, 300, pattern=r"(\d{1,3})| ?\p{L}+|[^\d\p{L}]")
    assert simple.decode(simple.encode("the cat's mat")) == "the cat's mat"


def test_a_pattern_with_empty_matches_trains_and_encodes_as_without_them():
    with_empty = Tokenizer.train(TRAINING_TEXT, 400, pattern=r"\p{L}*|[^\p{L}]")
    assert "" in pretokenize("a b", with_empty.pattern)
    assert with_empty.merges == train_merges(TRAINING_TEXT, 144, pattern=r"\p{L}+|[^\p{L}]")
    assert with_empty.decode(with_empty.encode("the cat's mat")) == "the cat's mat"


def test_save_and_load_give_the_same_tokenizer(tokenizer, tmp_path):
    path = tmp_path / "bpe.json"
    tokenizer.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.merges == tokenizer.merges
    assert loaded.special_tokens == tokenizer.special_tokens
    assert loaded.encode(TRAINING_TEXT, "all") == tokenizer.encode(TRAINING_TEXT, "all")
    assert json.loads(path.read_text(encoding="utf-8"))["pattern"] == GPT2_PATTERN


# ----------------------------------------------------------------------------- long words


def replayed(tok: Tokenizer, word: bytes) -> list[int]:
    """The textbook encoder: apply the lowest-ranked merge present to the whole word, again."""
    ids = list(word)
    while True:
        present = [pair for pair in zip(ids, ids[1:]) if pair in tok.ranks]
        if not present:
            return ids
        pair = min(present, key=tok.ranks.__getitem__)
        ids = merge(ids, pair, 256 + tok.ranks[pair])


@functools.cache
def long_word_tokenizer(pattern: str) -> Tokenizer:
    """Trained on the training text and long runs of letters: merges of "a" runs and of random
    letters apply, many times over, to a 40,000-letter word."""
    rng = random.Random(0)
    runs = " " + "a" * 3000 + " " + "".join(rng.choices(string.ascii_letters, k=20_000))
    return Tokenizer.train(TRAINING_TEXT + runs, 1200, [ENDOFTEXT], pattern)


LONG_WORDS = {
    "a * 40000": "a" * 40_000,
    "random letters": "".join(random.Random(1).choices(string.ascii_letters, k=40_000)),
    "ab * 20000": "ab" * 20_000,
    "digits": "".join(random.Random(2).choices(string.digits, k=40_000)),
    "spaces": " " * 40_000 + "x",
}


@pytest.mark.parametrize("pattern", PATTERNS.values(), ids=PATTERNS.keys())
@pytest.mark.parametrize("word", LONG_WORDS.values(), ids=LONG_WORDS.keys())
def test_long_words_give_tiktokens_ids(pattern, word):
    tok = long_word_tokenizer(pattern)
    ids = tok.encode(word)
    assert ids == as_tiktoken(tok).encode_ordinary(word)
    assert tok.decode(ids) == word


@given(st.text(alphabet="aAbcde", max_size=300) | st.text(max_size=30))
def test_the_heap_encoder_equals_replaying_the_merges(text):
    tok = long_word_tokenizer(GPT2_PATTERN)
    word = text.encode("utf-8")
    assert tok.encode_word(word) == replayed(tok, word)


def test_the_heap_encoder_equals_replaying_the_merges_on_a_long_word():
    tok = long_word_tokenizer(GPT2_PATTERN)
    word = LONG_WORDS["random letters"][:3000].encode()
    assert tok.encode_word(word) == replayed(tok, word)


def test_training_on_a_long_word_equals_the_naive_loop():
    rng = random.Random(3)
    text = " the cat " + "a" * 2001 + " " + "".join(rng.choices("abcAB", k=3000)) + " ab ab"
    assert train_merges(text, 60) == naive_merges(text, 60)


# ----------------------------------------------------------------------------- training


def naive_merges(text: str, num_merges: int) -> list[tuple[int, int]]:
    """The textbook loop: recount every pair of the whole text before each merge."""
    words = [list(w.encode("utf-8")) for w in pretokenize(text)]
    merges = []
    for k in range(num_merges):
        counts = Counter(p for ids in words for p in zip(ids, ids[1:]))
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))  # the stated tie-break
        merges.append(pair)
        words = [merge(ids, pair, 256 + k) for ids in words]
    return merges


@given(TEXTS, st.integers(0, 30))
def test_incremental_training_equals_the_naive_loop(text, num_merges):
    assert train_merges(text, num_merges) == naive_merges(text, num_merges)


def test_incremental_training_equals_the_naive_loop_on_the_training_text():
    text = TRAINING_TEXT.replace(ENDOFTEXT, "")
    assert train_merges(text, 300) == naive_merges(text, 300)


def test_ties_go_to_the_smallest_pair_of_ids():
    # "cdab" is one word with the pairs (c, d), (d, a), (a, b), once each: (a, b) wins,
    # although (c, d) comes first in the text.
    assert train_merges("cdab", 1) == [(ord("a"), ord("b"))]
    # (" ", "z") and ("z", "y") occur twice, (a, b) once: the count wins, then the smaller ids.
    assert train_merges("ab zy zy", 2) == [(ord(" "), ord("z")), (256, ord("y"))]


def test_a_smaller_vocabulary_is_a_prefix_of_a_larger_one(tokenizer):
    small = Tokenizer.train(TRAINING_TEXT, 300, special_tokens=[ENDOFTEXT, "<|pad|>"])
    assert small.merges == tokenizer.merges[: len(small.merges)]
    assert len(small) == 300


def test_training_stops_when_no_pair_is_left():
    tok = Tokenizer.train("aaaa", 1000)
    assert [tok.vocab[256 + k] for k in range(len(tok.merges))] == [b"aa", b"aaaa"]
    assert tok.encode("aaaaaaa") == tok.encode_word(b"aaaaaaa") == [257, 256, ord("a")]


def test_training_is_deterministic_across_processes(tokenizer):
    """Another process with another hash seed learns the same merges. It loads the module by its
    path, which needs only the standard library and regex (no torch import), to stay fast."""
    code = (
        "import importlib.util as u, sys; "
        f"spec = u.spec_from_file_location('bpe', {inspect.getfile(Tokenizer)!r}); "
        "bpe = u.module_from_spec(spec); spec.loader.exec_module(bpe); "
        "print(bpe.Tokenizer.train(sys.stdin.read(), 600, ['<|endoftext|>', '<|pad|>']).merges)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=TRAINING_TEXT,
        env=env,
        text=True,
        capture_output=True,
        check=True,
        encoding="utf-8",
    ).stdout
    assert out.strip() == str(tokenizer.merges)


# ----------------------------------------------------------------------------- errors


def test_bad_input_names_the_argument(tokenizer, tmp_path):
    with pytest.raises(ValueError, match="vocab_size must be at least 256"):
        Tokenizer.train("abc", 255)
    with pytest.raises(ValueError, match="vocab_size .* 1 special tokens, got 256"):
        Tokenizer.train("abc", 256, special_tokens=[ENDOFTEXT])
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        Tokenizer.train("abc", 300.0)
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        Tokenizer.train(b"abc", 300)
    with pytest.raises(TypeError, match="text must be a str, got list"):
        tokenizer.encode(["abc"])
    with pytest.raises(
        ValueError, match=r"allowed_special has unknown special tokens \['<\|eot\|>'\]"
    ):
        tokenizer.encode("abc", allowed_special={"<|eot|>"})
    with pytest.raises(TypeError, match="allowed_special must be 'all'"):
        tokenizer.encode("abc", allowed_special=ENDOFTEXT)
    with pytest.raises(ValueError, match="ids: 600 is not a token id"):
        tokenizer.decode([1, 600])
    with pytest.raises(ValueError, match="special_tokens has duplicates"):
        Tokenizer(special_tokens=["<a>", "<a>"])
    with pytest.raises(ValueError, match=r"merges\[1\] = \(300, 1\) uses an id"):
        Tokenizer([(1, 2), (300, 1)])
    with pytest.raises(ValueError, match="num_merges must be an int >= 0"):
        train_merges("abc", -1)
    with pytest.raises(ValueError, match=r"pattern does not compile: missing \)"):
        Tokenizer(pattern=r"( ?\p{L}+")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="path: .* is not a 'companion-bpe 1' file"):
        Tokenizer.load(tmp_path / "x.json")
    with pytest.raises(ValueError, match="text has a lone surrogate at index 1"):
        tokenizer.encode("a\ud800")  # it has no UTF-8 bytes


# ----------------------------------------------------------------------------- corpus, benchmark


def test_corpus_has_its_four_kinds_and_splits_them_by_lines():
    texts = {kind: corpus.load(kind) for kind in corpus.KINDS}
    assert sum("\u4e00" <= c <= "\u9fff" for c in texts["chinese"]) > 1500
    assert "def " in texts["code"] and "attention" in texts["english"]
    assert texts["numbers"] == corpus.numbers() != corpus.numbers(seed=1)
    train, held_out = corpus.split(texts["english"], held_out=0.25)
    assert train + held_out == texts["english"]
    assert 0.2 < held_out.count("\n") / texts["english"].count("\n") < 0.3
    with pytest.raises(ValueError, match="kind must be one of"):
        corpus.load("french")
    with pytest.raises(ValueError, match="held_out must be between 0 and 1"):
        corpus.split("a\nb\n", held_out=1)


def test_benchmark_prints_training_time_and_throughput_against_tiktoken(capsys):
    assert (
        bench_main(["tokenizer", "--megabytes", "0.02", "--vocab-size", "300", "--repeats", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert "Training to 300 tokens:" in out
    assert "Encoding the text (identical ids):" in out
    assert "| tiktoken " in out and "| companion " in out
    assert "Encoding words of 40,000 letters, each one pre-token (identical ids):" in out
    assert '| "a" * 40000 ' in out and "| 40000 random letters " in out
    assert "| the text and 40,000 random letters |" in out


def test_the_corpus_files_ship_with_the_package():
    """pyproject's package data names every corpus file, so a pip-installed companion (Colab)
    has the texts the chapter reads."""
    package = Path(companion.__file__).parent
    config = tomllib.loads((package.parent / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["companion"]
    files = sorted(corpus.FILES.iterdir())
    assert {path.name for path in files} >= {"english.txt", "chinese.txt", "code.txt"}
    for path in files:
        name = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
