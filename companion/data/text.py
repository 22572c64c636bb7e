"""Text for sequence-to-sequence chapters: vocabulary, a real parallel corpus, arrays, batches.

The names follow d2l's machine-translation section (``d2l.Vocab``, ``MTFraEng._preprocess``,
``MTFraEng._build_arrays``), so chapter code moves between the two. The tensors that come out
are d2l's format: ``(src, tgt_input, src_valid_len, label)``.

Differences from d2l, all on purpose:

* :class:`Vocab` always holds ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>`` at indices 0, 1, 2, 3
  (d2l sorts every token, special ones included, alphabetically), so padding is index 0 in
  every vocabulary. The other tokens follow by falling frequency, ties alphabetically.
* :func:`load_parallel_corpus` rejects malformed lines with the file name and line number
  instead of skipping them silently, and keeps exactly ``max_examples`` pairs.
* The token lists carry no ``<eos>``: :func:`build_arrays` appends it, in one place.
"""

from __future__ import annotations

import json
import numbers
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, cast, overload

import torch

from companion._validate import (
    check_integer,
    check_sentences,
    check_sequence,
    check_type,
    describe,
)

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # indices 0, 1, 2, 3 in every Vocab


class Vocab:
    """Map tokens to indices and back; used by every chapter that feeds text to a model.

    ``Vocab(tokens, min_freq, reserved_tokens)`` takes a flat list of str tokens or a list of
    token lists (sentences), never a str (``list(text)`` for characters, ``text.split()`` for
    words); ``min_freq``, an integer >= 0; and ``reserved_tokens``, a list of distinct str
    tokens (the four special ones may be among them, as d2l passes them). Index order: the
    four special tokens ``<pad>``=0, ``<bos>``=1, ``<eos>``=2, ``<unk>``=3; then the
    ``reserved_tokens`` not among them, in the order given; then every token seen at least
    ``min_freq`` times, most frequent first, ties alphabetically. An unknown token maps to
    ``<unk>``.
    """

    def __init__(
        self,
        tokens: Iterable[str] | Iterable[Sequence[str]] = (),
        min_freq: int = 0,
        reserved_tokens: Sequence[str] = (),
    ) -> None:
        counter = Counter(_flat_tokens(tokens, min_freq, reserved_tokens))  # checked strings
        # Sorting on (-count, token) makes the order independent of the input order.
        self.token_freqs = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        specials = list(dict.fromkeys([*SPECIAL_TOKENS, *reserved_tokens]))  # dedupe, keep order
        frequent = [t for t, freq in self.token_freqs if freq >= min_freq and t not in specials]
        self.idx_to_token = specials + frequent
        self.token_to_idx = {token: index for index, token in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    @overload
    def __getitem__(self, tokens: str) -> int: ...
    @overload
    def __getitem__(self, tokens: list | tuple) -> list: ...
    def __getitem__(self, tokens: str | list | tuple) -> int | list:
        """The index of a token (a str), or the list of indices of a list (or nested lists) of
        tokens."""
        if isinstance(tokens, (list, tuple)):
            return [self[token] for token in tokens]
        if not isinstance(tokens, str):  # an id would silently map to <unk>
            raise TypeError(
                f"tokens must be a token (a str) or a list of them; got {describe(tokens)}: "
                "the token at an index is vocab.to_tokens(index)"
            )
        return self.token_to_idx.get(tokens, self.unk)

    @overload
    def to_tokens(self, indices: int) -> str: ...
    @overload
    def to_tokens(self, indices: Sequence[int]) -> list[str]: ...
    @overload
    def to_tokens(self, indices: torch.Tensor) -> str | list[str]: ...
    def to_tokens(self, indices: int | Sequence[int] | torch.Tensor) -> str | list[str]:
        """The token of one index, or the list of tokens of a list or 1-D tensor (or array) of
        indices: integers of any integer type, never floats or bools.

        Unlike d2l, a one-element list gives a one-element list back.
        """
        checked = _indices(indices)
        if isinstance(checked, int):
            if not 0 <= checked < len(self):
                raise ValueError(f"index {checked} is outside the vocabulary of size {len(self)}")
            return self.idx_to_token[checked]
        return [self.to_tokens(index) for index in checked]

    @property
    def pad(self) -> int:  # index 0
        return self.token_to_idx[PAD]

    @property
    def bos(self) -> int:
        return self.token_to_idx[BOS]

    @property
    def eos(self) -> int:
        return self.token_to_idx[EOS]

    @property
    def unk(self) -> int:  # index for the unknown token, as in d2l
        return self.token_to_idx[UNK]

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, first={self.idx_to_token[:8]})"

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON to ``path`` (a str or a Path), so a trained model can be
        reloaded with it."""
        check_type("path", path, (str, os.PathLike), "a file's path, a str or a Path")
        content = {"idx_to_token": self.idx_to_token, "token_freqs": self.token_freqs}
        Path(path).write_text(json.dumps(content, ensure_ascii=False, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        """Read a vocabulary written by :meth:`save` to ``path`` (a str or a Path); indices are
        exactly those saved."""
        check_type("path", path, (str, os.PathLike), "a file's path, a str or a Path")
        content = json.loads(Path(path).read_text(encoding="utf-8"))
        idx_to_token = content.get("idx_to_token") if isinstance(content, dict) else None
        if not isinstance(idx_to_token, list) or idx_to_token[:4] != list(SPECIAL_TOKENS):
            raise ValueError(f"{path} is not a saved Vocab: no idx_to_token list starting {PAD}")
        vocab = cls()
        vocab.idx_to_token = idx_to_token
        vocab.token_to_idx = {token: index for index, token in enumerate(idx_to_token)}
        vocab.token_freqs = [(token, freq) for token, freq in content.get("token_freqs", [])]
        return vocab


def _flat_tokens(tokens: object, min_freq: object, reserved_tokens: object) -> list[str]:
    """:class:`Vocab`'s arguments, checked; its tokens as one flat list of strings."""
    check_integer("min_freq", min_freq, minimum=0)
    check_sequence("reserved_tokens", reserved_tokens, "a list of str tokens such as ['<cls>']")
    reserved = list(cast("Sequence[object]", reserved_tokens))
    repeated = sorted({str(t) for t in reserved if reserved.count(t) > 1})
    if repeated:
        raise ValueError(f"reserved_tokens holds {repeated} more than once; got {reserved}")
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise TypeError(
            "tokens must be a list of str tokens or of sentences (lists of tokens), not "
            f"{describe(tokens)}: list(text) gives characters, text.split() words"
        )
    flat = list(tokens)
    if flat and isinstance(flat[0], (list, tuple)):  # a list of sentences
        for i, sentence in enumerate(flat):
            if not isinstance(sentence, (list, tuple)):
                raise TypeError(
                    f"tokens[{i}] is {describe(sentence)}, but tokens[0] is a sentence: tokens "
                    "must be all tokens or all sentences (lists of tokens)"
                )
        flat = [token for sentence in flat for token in sentence]
    for token in [*flat, *reserved]:
        if not isinstance(token, str):
            raise ValueError(f"tokens must be strings; got {token!r} of type {type(token)}")
    return cast("list[str]", flat)


def _indices(indices: object) -> int | list[int]:
    """:meth:`Vocab.to_tokens`'s argument as one int or a list of ints: integers of any integer
    type, alone or in a list, a tuple or a 1-D tensor or array."""
    if isinstance(indices, numbers.Number) or getattr(indices, "ndim", None) == 0:
        return check_integer("indices", indices, minimum=None)
    one_axis = getattr(indices, "ndim", 1) == 1
    if isinstance(indices, (str, bytes)) or not one_axis or not isinstance(indices, Iterable):
        raise TypeError(
            f"indices must be an index or a 1-D sequence of indices; got {describe(indices)}"
        )
    return [check_integer(f"indices[{i}]", index, minimum=None) for i, index in enumerate(indices)]


def preprocess_nmt(text: str) -> str:
    """d2l's clean-up of English-French text (``MTFraEng._preprocess``); Bahdanau chapter.

    Non-breaking spaces become spaces, everything is lower-cased, and a space goes before each
    of ``,.!?`` not already preceded by one, so punctuation becomes a token of its own.
    ``text`` is a str.
    """
    check_type("text", text, str, "a str")
    text = text.replace("\u202f", " ").replace("\xa0", " ")
    out = [
        " " + char if i > 0 and char in ",.!?" and text[i - 1] != " " else char
        for i, char in enumerate(text.lower())
    ]
    return "".join(out)


def tokenize_nmt(sentence: str) -> list[str]:
    """Split one preprocessed sentence (a str) into word tokens on spaces, dropping empty
    strings."""
    check_type("sentence", sentence, str, "a str, one sentence")
    return [token for token in sentence.split(" ") if token]


class ParallelCorpus(NamedTuple):
    """Sentence pairs as two aligned lists: ``source[i]`` translates to ``target[i]``.

    Unpacks as ``source, target = corpus``; ``Vocab(corpus.source)`` builds a vocabulary and
    ``build_arrays(*corpus, src_vocab, tgt_vocab, num_steps)`` the model's arrays.
    """

    source: list[list[str]]  # token lists, no <eos>
    target: list[list[str]]


def parse_parallel_text(
    text: str, max_examples: int | None = None, name: str = "<text>"
) -> ParallelCorpus:
    """Tokenize tab-separated ``source<TAB>target[<TAB>...]`` lines, as in the Tatoeba files.

    Columns after the second (the attribution in manythings.org files) are ignored, blank lines
    skipped. ``max_examples``: a positive integer, or ``None`` for every pair. ``name`` is the
    file name the error messages report.
    """
    check_type("text", text, str, "a str, the corpus's text")
    _check_max_examples(max_examples)
    source: list[list[str]] = []
    target: list[list[str]] = []
    for line_number, line in enumerate(text.split("\n"), start=1):
        if max_examples is not None and len(source) == max_examples:
            break
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{name}, line {line_number}: expected source<TAB>target: {line!r}")
        source_tokens = tokenize_nmt(preprocess_nmt(fields[0]))
        target_tokens = tokenize_nmt(preprocess_nmt(fields[1]))
        if not source_tokens or not target_tokens:
            raise ValueError(f"{name}, line {line_number}: empty source or target: {line!r}")
        source.append(source_tokens)
        target.append(target_tokens)
    if not source:
        raise ValueError(f"{name} holds no sentence pairs")
    return ParallelCorpus(source, target)


def load_parallel_corpus(path: str | Path, max_examples: int | None = None) -> ParallelCorpus:
    """Read a tab-separated parallel corpus such as d2l's ``fra.txt``; for the Bahdanau chapter.

    The book ships no corpus: a reader with internet can download ``fra-eng.zip`` (d2l's
    ``DATA_URL``) or a manythings.org file and point this function at the text file (``path``,
    a str or a Path). ``max_examples`` is a positive integer, or ``None`` for every pair.
    """
    check_type("path", path, (str, os.PathLike), "a file's path, a str or a Path")
    _check_max_examples(max_examples)
    text = Path(path).read_text(encoding="utf-8")
    return parse_parallel_text(text, max_examples, name=str(path))


def _check_max_examples(max_examples: object) -> None:
    if max_examples is not None:
        check_integer("max_examples", max_examples)


class TranslationArrays(NamedTuple):
    """d2l's four arrays for an encoder-decoder; a tuple, so it unpacks like d2l's."""

    src: torch.Tensor  # (num_sentences, num_steps): source + <eos>, padded with <pad>
    tgt_input: torch.Tensor  # (num_sentences, num_steps): <bos> + target, the decoder input
    src_valid_len: torch.Tensor  # (num_sentences,): number of non-<pad> tokens in src
    label: torch.Tensor  # (num_sentences, num_steps): target + <eos>, what the decoder predicts


def _pad_or_truncate(tokens: list[str], num_steps: int) -> list[str]:
    return tokens[:num_steps] + [PAD] * (num_steps - len(tokens))


def build_arrays(
    source_tokens: Sequence[Sequence[str]],
    target_tokens: Sequence[Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    num_steps: int,
    tgt_num_steps: int | None = None,
) -> TranslationArrays:
    """Turn sentence pairs into fixed-length index tensors, as d2l's ``_build_arrays`` does.

    ``tgt_num_steps`` (default ``num_steps``) sets the target length on its own, for tasks
    whose targets are much shorter than their sources: an RNN decoder then runs fewer steps.

    ``src`` is the source plus ``<eos>``, cut or padded with ``<pad>`` to ``num_steps``. The
    target plus ``<eos>`` is cut or padded the same way and gets ``<bos>`` in front; the decoder
    reads ``tgt_input = target[:, :-1]`` and learns to predict ``label = target[:, 1:]``.

    Truncation: a source of ``num_steps`` tokens or more, or a target that long, is cut to
    ``num_steps`` and then has no ``<eos>``; the model never sees where such a sentence ends.
    Choose ``num_steps`` larger than the longest sentence plus one to avoid it.

    Takes two lists of one length of sentences, each a list of str tokens (as a
    :class:`ParallelCorpus` holds them: ``build_arrays(*corpus, ...)``), two :class:`Vocab`, and
    positive integers ``num_steps`` and ``tgt_num_steps``.
    """
    tgt_num_steps = num_steps if tgt_num_steps is None else tgt_num_steps
    _check_build_arguments(source_tokens, target_tokens, src_vocab, tgt_vocab)
    num_steps = check_integer("num_steps", num_steps)
    tgt_num_steps = check_integer("tgt_num_steps", tgt_num_steps)
    src = torch.tensor(
        [src_vocab[_pad_or_truncate([*tokens, EOS], num_steps)] for tokens in source_tokens]
    )  # (num_sentences, num_steps)
    target = torch.tensor(
        [
            tgt_vocab[[BOS, *_pad_or_truncate([*tokens, EOS], tgt_num_steps)]]
            for tokens in target_tokens
        ]
    )  # (num_sentences, tgt_num_steps + 1)
    src_valid_len = (src != src_vocab[PAD]).sum(dim=1)  # (num_sentences,)
    return TranslationArrays(src, target[:, :-1], src_valid_len, target[:, 1:])


def _check_build_arguments(
    source_tokens: Sequence[Sequence[str]],
    target_tokens: Sequence[Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
) -> None:
    if isinstance(source_tokens, ParallelCorpus):
        raise TypeError(
            "source_tokens is a whole ParallelCorpus: unpack it, "
            "build_arrays(*corpus, src_vocab, tgt_vocab, num_steps)"
        )
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        check_type(name, vocab, Vocab, "a Vocab")
    check_sentences("source_tokens", source_tokens)
    check_sentences("target_tokens", target_tokens)
    if len(source_tokens) != len(target_tokens):
        raise ValueError(
            f"source_tokens and target_tokens must have the same length; got "
            f"{len(source_tokens)} and {len(target_tokens)}"
        )
    if not source_tokens:
        raise ValueError("source_tokens is empty; there is nothing to build arrays from")


def batches(
    arrays: Sequence[torch.Tensor],
    batch_size: int,
    shuffle: bool = True,
    generator: torch.Generator | None = None,
) -> Iterator[tuple[torch.Tensor, ...]]:
    """Yield minibatches: the same rows of every array, ``batch_size`` rows at a time.

    ``arrays`` is a tuple of tensors with one row per example, such as ``(X, y)`` (one tensor
    alone goes in a tuple: ``(X,)``), and ``batch_size`` a positive integer. The last batch may
    be smaller. With ``shuffle`` (True or False) the row order comes from ``generator`` (a
    ``torch.Generator``, or torch's global generator if None), so a seeded generator gives the
    same batches each run. A :class:`TranslationArrays` yields :class:`TranslationArrays`
    batches.
    """
    batch_size = check_integer("batch_size", batch_size)
    _check_batches_arguments(arrays, shuffle, generator)
    num_rows = len(arrays[0])
    for array in arrays:
        if len(array) != num_rows:
            shapes = [tuple(a.shape) for a in arrays]
            raise ValueError(f"arrays must have the same number of rows; got shapes {shapes}")
    # Checks above run at the call; the generator below only runs when iterated.
    return _generate_batches(arrays, batch_size, shuffle, generator)


def _check_batches_arguments(arrays: object, shuffle: object, generator: object) -> None:
    lone = ": for one tensor, pass (X,)" if isinstance(arrays, torch.Tensor) else ""
    if isinstance(arrays, torch.Tensor) or not isinstance(arrays, (tuple, list)):
        raise TypeError(
            "arrays must be a tuple of tensors with one row per example, such as (X, y); "
            f"got {describe(arrays)}{lone}"
        )
    if not arrays:
        raise ValueError("arrays is empty; expected a tuple of tensors")
    for i, array in enumerate(arrays):
        if not isinstance(array, torch.Tensor) or array.dim() == 0:
            raise TypeError(
                f"arrays[{i}] must be a tensor with one row per example; got {describe(array)}"
            )
    check_type("shuffle", shuffle, bool, "True or False (a generator goes in generator=)")
    if generator is not None:
        check_type(
            "generator",
            generator,
            torch.Generator,
            "a torch.Generator such as torch.Generator().manual_seed(0), or None",
        )


def _generate_batches(
    arrays: Sequence[torch.Tensor],
    batch_size: int,
    shuffle: bool,
    generator: torch.Generator | None,
) -> Iterator[tuple[torch.Tensor, ...]]:
    num_rows = len(arrays[0])
    if shuffle:
        order = torch.randperm(num_rows, generator=generator)
    else:
        order = torch.arange(num_rows)
    make = getattr(type(arrays), "_make", tuple)  # a NamedTuple's own maker keeps its fields
    for start in range(0, num_rows, batch_size):
        rows = order[start : start + batch_size]  # (batch_size,) row indices
        yield make(array[rows] for array in arrays)
