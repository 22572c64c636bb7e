"""companion.tokenizer: the same ids as tiktoken built from its own merges, lossless round trips,
deterministic training with its stated tie-break, and clear errors (sec-tokenization)."""

from __future__ import annotations

import fnmatch
import inspect
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import corpus
from companion.bench import main as bench_main
from companion.tokenizer import (
    GPT2_PATTERN,
    Tokenizer,
    merge,
    pretokenize,
    spell_out,
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


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TRAINING_TEXT, 600, special_tokens=[ENDOFTEXT, "<|pad|>"])


def as_tiktoken(tok: Tokenizer) -> tiktoken.Encoding:
    """tiktoken's encoder with companion's merges: rank of a token's bytes = its id."""
    return tiktoken.Encoding(
        name="companion-bpe",
        pat_str=spell_out(tok.pattern),
        mergeable_ranks={token: i for i, token in enumerate(tok.vocab)},
        special_tokens=tok.special_tokens,
    )


@pytest.fixture(scope="module")
def oracle(tokenizer) -> tiktoken.Encoding:
    return as_tiktoken(tokenizer)


def same_ids(tok: Tokenizer, enc: tiktoken.Encoding, text: str) -> None:
    assert tok.encode(text) == enc.encode_ordinary(text), repr(text)
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")


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


def test_vocabulary_bytes_are_distinct_and_bytes_come_first(tokenizer):
    assert tokenizer.vocab[:256] == [bytes([b]) for b in range(256)]
    assert len(set(tokenizer.vocab)) == len(tokenizer.vocab) == 600 - 2
    assert tokenizer.special_tokens == {ENDOFTEXT: 598, "<|pad|>": 599}


def test_same_ids_as_tiktoken_on_the_training_text(tokenizer, oracle):
    same_ids(tokenizer, oracle, TRAINING_TEXT)
    ids = tokenizer.encode(TRAINING_TEXT)
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
        "注意力机制",
        "😀😀😀",
        "e\u0301e\u0301",
        "1234567890",
        f"a{ENDOFTEXT}b <|pad|>",
        "\U0010ffff\x00",
    ],
)
def test_same_ids_as_tiktoken_on_chosen_strings(tokenizer, oracle, text):
    same_ids(tokenizer, oracle, text)


@settings(max_examples=300)
@given(TEXTS)
def test_same_ids_as_tiktoken_on_generated_strings(tokenizer, oracle, text):
    same_ids(tokenizer, oracle, text)


@given(st.text(max_size=40))
def test_pretokenize_agrees_with_tiktoken_with_bytes_only(text):
    """Both engines cut the text into the same pre-tokens. tiktoken emits a pre-token that is
    itself in its vocabulary as one token, so with a vocabulary of this text's own pre-tokens
    (and the bytes) its tokens are its pre-tokens."""
    pieces = pretokenize(text)
    assert "".join(pieces) == text
    words = sorted({p.encode("utf-8") for p in pieces if len(p.encode("utf-8")) > 1})
    ranks = {bytes([b]): b for b in range(256)} | {w: 256 + i for i, w in enumerate(words)}
    enc = tiktoken.Encoding(
        name="split", pat_str=spell_out(GPT2_PATTERN), mergeable_ranks=ranks, special_tokens={}
    )
    got = [enc.decode_single_token_bytes(i) for i in enc.encode_ordinary(text)]
    assert got == [p.encode("utf-8") for p in pieces]


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
    text = f"a{ENDOFTEXT}b"
    assert tokenizer.encode(text, allowed_special={ENDOFTEXT}) == [
        *tokenizer.encode("a"),
        tokenizer.special_tokens[ENDOFTEXT],
        *tokenizer.encode("b"),
    ]
    assert tokenizer.special_tokens[ENDOFTEXT] not in tokenizer.encode(text)
    assert tokenizer.encode(text) == tokenizer.encode_ordinary(text)


def test_save_and_load_give_the_same_tokenizer(tokenizer, tmp_path):
    path = tmp_path / "bpe.json"
    tokenizer.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.merges == tokenizer.merges
    assert loaded.special_tokens == tokenizer.special_tokens
    assert loaded.encode(TRAINING_TEXT, "all") == tokenizer.encode(TRAINING_TEXT, "all")
    assert json.loads(path.read_text(encoding="utf-8"))["pattern"] == GPT2_PATTERN


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
    path, which needs only the standard library (no torch import), to stay fast."""
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
    with pytest.raises(ValueError, match="only .* are supported"):
        spell_out(r"\p{Han}+")
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
    assert "training to 300 tokens" in out
    assert "encoding (identical ids)" in out
    assert "| tiktoken |" in out and "| companion |" in out


def test_the_corpus_files_ship_with_the_package():
    """pyproject's package data names every corpus file, so a pip-installed companion (Colab)
    has the texts the chapter reads."""
    config = tomllib.loads((Path(corpus.__file__).parents[1] / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["companion"]
    files = sorted(corpus.FILES.iterdir())
    assert {path.name for path in files} >= {"english.txt", "chinese.txt", "code.txt"}
    for path in files:
        name = path.relative_to(corpus.FILES.parent).as_posix()
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
