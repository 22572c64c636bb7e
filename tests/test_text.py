"""Vocabulary, the parallel-corpus loader and d2l's array format, checked against d2l."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from companion.data.text import (
    SPECIAL_TOKENS,
    ParallelCorpus,
    TranslationArrays,
    Vocab,
    batches,
    build_arrays,
    load_parallel_corpus,
    parse_parallel_text,
    preprocess_nmt,
    tokenize_nmt,
)

SAMPLE = Path(__file__).parent / "data" / "fra-sample.txt"
words = st.text(alphabet="abcde", min_size=1, max_size=3)
sentences = st.lists(st.lists(words, min_size=0, max_size=6), min_size=1, max_size=8)


def _d2l_arrays(d2l, raw_text: str, src_vocab: Vocab, tgt_vocab: Vocab, num_steps: int):
    """d2l's MTFraEng._build_arrays on raw text, without the download its __init__ does."""
    data = object.__new__(d2l.MTFraEng)
    data.num_steps, data.num_train, data.num_val = num_steps, 10**6, 0
    arrays, _, _ = data._build_arrays(raw_text, src_vocab, tgt_vocab)
    return arrays


def test_vocab_order_special_tokens_and_unknown():
    tokens = ["b", "a", "d", "a", "b", "a", "c"]  # c and d tie: alphabetical order decides
    vocab = Vocab(tokens, reserved_tokens=["<sep>", "<pad>"])
    counts = Counter(tokens)
    assert vocab.idx_to_token[:5] == [*SPECIAL_TOKENS, "<sep>"]
    assert (vocab["<pad>"], vocab["<bos>"], vocab["<eos>"], vocab["<unk>"]) == (0, 1, 2, 3)
    assert (vocab.pad, vocab.bos, vocab.eos, vocab.unk) == (0, 1, 2, 3)
    rest = vocab.idx_to_token[5:]
    assert rest == sorted(counts, key=lambda t: (-counts[t], t))  # frequency, then alphabet
    assert len(vocab) == 5 + len(counts)
    assert vocab["zzz"] == vocab.unk
    assert vocab[["a", "zzz"]] == [vocab.token_to_idx["a"], vocab.unk]
    assert vocab[("a",)] == [vocab.token_to_idx["a"]]


def test_vocab_min_freq_and_sentences():
    corpus = [["a", "b", "a"], ["c", "a", "b"]]
    vocab = Vocab(corpus, min_freq=2)
    assert set(vocab.idx_to_token[4:]) == {"a", "b"}
    assert vocab["c"] == vocab.unk
    assert Vocab(corpus).idx_to_token == Vocab([t for s in corpus for t in s]).idx_to_token


def test_vocab_to_tokens_accepts_ints_lists_and_tensors():
    vocab = Vocab(list("hello"))
    indices = vocab[list("hole")]
    assert vocab.to_tokens(indices) == list("hole")
    assert vocab.to_tokens(torch.tensor(indices)) == list("hole")
    assert vocab.to_tokens(indices[0]) == "h"
    assert vocab.to_tokens(torch.tensor(indices[0])) == "h"
    assert vocab.to_tokens([indices[0]]) == ["h"]
    with pytest.raises(ValueError, match="index 99 is outside the vocabulary of size 8"):
        vocab.to_tokens([1, 99])


def test_vocab_rejects_bad_input():
    with pytest.raises(ValueError, match="min_freq must be an integer >= 0; got -1"):
        Vocab(["a"], min_freq=-1)
    with pytest.raises(ValueError, match="tokens must be strings; got 3"):
        Vocab(["a", 3])


@given(sentences)
def test_vocab_agrees_with_d2l_on_the_tokens_it_keeps(d2l, corpus):
    ours, theirs = Vocab(corpus), d2l.Vocab(corpus, reserved_tokens=list(SPECIAL_TOKENS))
    assert sorted(ours.idx_to_token) == theirs.idx_to_token
    flat = [t for s in corpus for t in s] + ["never-seen", "<unk>"]
    assert ours.to_tokens(ours[flat]) == theirs.to_tokens(theirs[flat])


@given(sentences, st.integers(0, 3), st.lists(words, max_size=3, unique=True))
def test_vocab_save_load_round_trip(tmp_path_factory, corpus, min_freq, reserved):
    vocab = Vocab(corpus, min_freq=min_freq, reserved_tokens=reserved)
    path = tmp_path_factory.mktemp("vocab") / "vocab.json"
    vocab.save(path)
    loaded = Vocab.load(path)
    assert loaded.idx_to_token == vocab.idx_to_token
    assert loaded.token_to_idx == vocab.token_to_idx
    assert loaded.token_freqs == vocab.token_freqs


def test_vocab_load_rejects_other_json(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"idx_to_token": ["a", "b"]}')
    with pytest.raises(ValueError, match="other.json is not a saved Vocab"):
        Vocab.load(path)


@given(st.text(alphabet="aB,.!? \t\n\xa0\u202f", max_size=20))
def test_preprocess_matches_d2l_on_random_text(d2l, text):
    assert preprocess_nmt(text) == d2l.MTFraEng._preprocess(None, text)


def test_preprocess_matches_d2l(d2l):
    text = SAMPLE.read_text(encoding="utf-8") + "Hello,world!Yes ?\u202fNo\xa0!"
    assert preprocess_nmt(text) == d2l.MTFraEng._preprocess(None, text)
    assert tokenize_nmt(preprocess_nmt("Oui\u202f! Non.")) == ["oui", "!", "non", "."]


def test_load_parallel_corpus_reads_the_sample(d2l):
    corpus = load_parallel_corpus(SAMPLE)
    assert isinstance(corpus, ParallelCorpus)
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").split("\n") if line.strip()]
    assert len(corpus.source) == len(corpus.target) == len(lines)
    # d2l's tokenizer sees only two columns and appends <eos>; strip both to compare.
    two_columns = "\n".join("\t".join(line.split("\t")[:2]) for line in lines)
    d2l_source, d2l_target = d2l.MTFraEng._tokenize(
        None, d2l.MTFraEng._preprocess(None, two_columns)
    )
    assert corpus.source == [s[:-1] for s in d2l_source]
    assert corpus.target == [t[:-1] for t in d2l_target]
    no_break = next(i for i, line in enumerate(lines) if "\u202f" in line.split("\t")[1])
    assert corpus.target[no_break][-1] in ("!", "?")
    assert all(token == token.lower() for s in corpus.source for token in s)
    assert load_parallel_corpus(SAMPLE, max_examples=3) == ParallelCorpus(
        corpus.source[:3], corpus.target[:3]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Go.\tVa !\nno tab here\n", "line 2: expected source<TAB>target"),
        ("Go.\tVa !\n\nHi.\t \n", "line 3: empty source or target"),
        ("\t.\n", "line 1: empty source or target"),
        ("\n\n", "holds no sentence pairs"),
    ],
)
def test_malformed_corpus_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"bad.txt.*{message}"):
        load_parallel_corpus(path)


def test_max_examples_must_be_positive():
    with pytest.raises(ValueError, match="max_examples must be a positive integer; got 0"):
        parse_parallel_text("a\tb", max_examples=0)


@pytest.mark.parametrize("num_steps", [1, 3, 5, 12])
def test_build_arrays_matches_d2l(d2l, num_steps):
    corpus = load_parallel_corpus(SAMPLE)
    src_vocab, tgt_vocab = Vocab(corpus.source), Vocab(corpus.target)
    ours = build_arrays(*corpus, src_vocab, tgt_vocab, num_steps)
    raw = "\n".join(" ".join(s) + "\t" + " ".join(t) for s, t in zip(*corpus))
    theirs = _d2l_arrays(d2l, raw, src_vocab, tgt_vocab, num_steps)
    assert isinstance(ours, TranslationArrays)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b.to(a.dtype))
    assert ours.src.shape == ours.tgt_input.shape == ours.label.shape == (len(corpus[0]), num_steps)


@given(sentences, st.integers(1, 8))
def test_build_arrays_layout(corpus, num_steps):
    targets = [s[::-1] for s in corpus]
    src_vocab, tgt_vocab = Vocab(corpus), Vocab(targets)
    arrays = build_arrays(corpus, targets, src_vocab, tgt_vocab, num_steps)
    for i, (source, target) in enumerate(zip(corpus, targets)):
        src = src_vocab.to_tokens(arrays.src[i].tolist())
        label = tgt_vocab.to_tokens(arrays.label[i].tolist())
        tgt_input = tgt_vocab.to_tokens(arrays.tgt_input[i].tolist())
        kept = min(len(source) + 1, num_steps)
        assert src[:kept] == [*source, "<eos>"][:kept]
        assert src[kept:] == ["<pad>"] * (num_steps - kept)
        assert arrays.src_valid_len[i] == kept
        assert ("<eos>" in src) == (len(source) < num_steps)  # truncation drops <eos>
        assert tgt_input[0] == "<bos>" and tgt_input[1:] == label[:-1]  # teacher forcing
        kept = min(len(target) + 1, num_steps)
        assert label[:kept] == [*target, "<eos>"][:kept]


def test_build_arrays_rejects_bad_input():
    vocab = Vocab(["a"])
    with pytest.raises(ValueError, match="same length; got 2 and 1"):
        build_arrays([["a"], ["a"]], [["a"]], vocab, vocab, 4)
    with pytest.raises(ValueError, match="num_steps must be a positive integer; got 0"):
        build_arrays([["a"]], [["a"]], vocab, vocab, 0)
    with pytest.raises(ValueError, match="tgt_num_steps must be a positive integer; got -1"):
        build_arrays([["a"]], [["a"]], vocab, vocab, 4, tgt_num_steps=-1)
    with pytest.raises(ValueError, match="source_tokens is empty"):
        build_arrays([], [], vocab, vocab, 4)


def test_batches_cover_every_row_once_and_are_deterministic():
    arrays = (torch.arange(10), torch.arange(10) * 10)
    batch_list = list(batches(arrays, 4, generator=torch.Generator().manual_seed(1)))
    assert [len(b[0]) for b in batch_list] == [4, 4, 2]
    rows = torch.cat([b[0] for b in batch_list])
    assert sorted(rows.tolist()) == list(range(10))
    assert not torch.equal(rows, torch.arange(10))  # shuffled
    for x, y in batch_list:
        assert torch.equal(y, x * 10)  # rows stay aligned across arrays
    again = list(batches(arrays, 4, generator=torch.Generator().manual_seed(1)))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batch_list, again))
    in_order = torch.cat([b[0] for b in batches(arrays, 3, shuffle=False)])
    assert torch.equal(in_order, torch.arange(10))


def test_batches_keep_named_fields():
    corpus = load_parallel_corpus(SAMPLE)
    arrays = build_arrays(*corpus, Vocab(corpus.source), Vocab(corpus.target), 6)
    batch = next(batches(arrays, 5, shuffle=False))
    assert isinstance(batch, TranslationArrays)
    assert torch.equal(batch.label, arrays.label[:5])


def test_batches_rejects_bad_input():
    with pytest.raises(ValueError, match="batch_size must be a positive integer; got 0"):
        batches((torch.zeros(3),), 0)
    with pytest.raises(ValueError, match=r"same number of rows; got shapes \[\(3,\), \(2,\)\]"):
        batches((torch.zeros(3), torch.zeros(2)), 2)


def test_build_arrays_with_a_shorter_target():
    vocab = Vocab(["a", "b", "c"])
    arrays = build_arrays([["a", "b", "c", "a"]], [["b"]], vocab, vocab, 6, tgt_num_steps=3)
    assert arrays.src.shape == (1, 6) and arrays.src_valid_len.tolist() == [5]
    assert vocab.to_tokens(arrays.tgt_input[0].tolist()) == ["<bos>", "b", "<eos>"]
    assert vocab.to_tokens(arrays.label[0].tolist()) == ["b", "<eos>", "<pad>"]


def test_integers_of_any_integer_type_are_accepted():
    """numpy's and torch's integers count as the ints they hold; the answers do not change."""
    arrays = (torch.arange(6),)
    by_int = [b[0].tolist() for b in batches(arrays, 4, shuffle=False)]
    assert [b[0].tolist() for b in batches(arrays, np.int64(4), shuffle=False)] == by_int
    assert [b[0].tolist() for b in batches(arrays, torch.tensor(4), shuffle=False)] == by_int
    vocab = Vocab(list("hello"))
    ids = vocab[list("hole")]
    assert vocab.to_tokens(np.array(ids, dtype=np.int32)) == list("hole")
    assert vocab.to_tokens(np.int64(ids[0])) == "h"
    assert Vocab(list("hello"), min_freq=np.int64(2)).idx_to_token[4:] == ["l"]
