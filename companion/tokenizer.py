"""A byte-level byte pair encoding (BPE) tokenizer, trained from a text (sec-tokenization).

**Bytes first.** A text is encoded as UTF-8, so every string is a sequence of bytes
``0..255``, and those 256 bytes are the first 256 token ids. No text is ever out of
vocabulary: a character the merges never saw (an emoji, a rare Chinese character) is spelled
out as its 1 to 4 bytes.

**Training** (Sennrich et al., 2016, on bytes as in GPT-2). Start from the bytes. Then, for
``vocab_size - 256 - len(special_tokens)`` rounds:

1. count every pair of adjacent tokens ``(a, b)`` in the training text;
2. take the most frequent pair; **ties go to the smallest pair of ids** (smallest ``a``, then
   smallest ``b``), so training is deterministic and independent of dictionary order;
3. give it the next id ``256 + k`` (its *rank* ``k``) and replace each occurrence, left to
   right, by the new token.

Pairs never cross a pre-token boundary (below), so the text is stored as its distinct
pre-tokens ("words") with their counts, and a merge only updates the pair counts of the words
that contain the merged pair. That keeps training on a megabyte of text at a few seconds.
The merges of a tokenizer trained to ``V`` tokens are the first merges of one trained to more:
``merges[:k]`` is the tokenizer of size ``256 + k``.

**Encoding** a pre-token: start from its bytes; while some adjacent pair has a merge, apply
the merge of lowest rank to every occurrence, left to right. Decoding concatenates the tokens'
bytes and decodes UTF-8.

**Pre-tokenization.** Before BPE, a regular expression cuts the text into pre-tokens, and merges
never cross their boundaries, so a token never glues a word to the punctuation after it. This
module uses GPT-2's pattern (Radford et al., 2019)::

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

read left to right, first alternative that matches: an English contraction; a run of letters
(``\\p{L}``) with at most one space in front; a run of numbers (``\\p{N}``), likewise; a run of
other symbols (punctuation, emoji), likewise; whitespace that is not followed by a
non-space (so the last space of a run stays to lead the next word: ``"a   b"`` splits as
``"a", "  ", " b"``); and any remaining whitespace.

Python's ``re`` has no ``\\p{...}`` classes, and its ``\\s`` is not the same set as other
engines' ``\\s``. So :func:`spell_out` replaces ``\\p{L}``, ``\\p{N}``, ``\\s`` and ``\\S`` by
explicit character ranges built from :mod:`unicodedata` (letters: categories ``L*``; numbers:
``N*``; whitespace: ``str.isspace``). The spelled-out pattern means the same thing in Python's
``re`` and in tiktoken's Rust engine, whatever Unicode version each one ships, which is what lets
the tests build a ``tiktoken.Encoding`` from these merges and compare ids exactly.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
FORMAT = "companion-bpe 1"  # the first value of a saved file

Pair = tuple[int, int]


# ----------------------------------------------------------------------------- pre-tokenization


def _ranges(keep: Callable[[str], bool]) -> str:
    """The code points ``c`` with ``keep(chr(c))``, as the inside of a ``[...]`` class."""
    parts, start = [], None
    for code in range(sys.maxunicode + 2):
        inside = code <= sys.maxunicode and keep(chr(code))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            last = code - 1
            parts.append(f"\\U{start:08X}" + (f"-\\U{last:08X}" if last > start else ""))
            start = None
    return "".join(parts)


@functools.cache
def _classes() -> dict[str, str]:
    """The inside of ``[...]`` for letters, numbers and whitespace, from :mod:`unicodedata`."""
    return {
        r"\p{L}": _ranges(lambda c: unicodedata.category(c).startswith("L")),
        r"\p{N}": _ranges(lambda c: unicodedata.category(c).startswith("N")),
        r"\s": _ranges(str.isspace),
    }


@functools.cache
def spell_out(pattern: str) -> str:
    """``pattern`` with ``\\p{L}``, ``\\p{N}``, ``\\s`` and ``\\S`` as explicit character ranges.

    The result compiles with Python's ``re`` and with tiktoken's engine, and matches the same
    strings in both. Inside a class (``[^\\s\\p{L}\\p{N}]``) a name becomes its ranges; outside,
    a class of them.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if re.search(r"\\p(?!\{[LN]\})", pattern):
        raise ValueError(f"pattern: only \\p{{L}} and \\p{{N}} are supported: {pattern!r}")
    classes = _classes()
    out, inside_class, i = [], False, 0
    while i < len(pattern):
        name = next((n for n in (*classes, r"\S") if pattern.startswith(n, i)), None)
        if name == r"\S":
            if inside_class:
                raise ValueError(f"pattern: \\S inside [...] is not supported: {pattern!r}")
            out.append("[^" + classes[r"\s"] + "]")
        elif name is not None:
            out.append(classes[name] if inside_class else f"[{classes[name]}]")
        else:
            name = pattern[i : i + 2] if pattern[i] == "\\" else pattern[i]  # one escape or char
            inside_class = (inside_class or name == "[") and name != "]"
            out.append(name)
        i += len(name)
    return "".join(out)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(spell_out(pattern))


def pretokenize(text: str, pattern: str = GPT2_PATTERN) -> list[str]:
    """The pre-tokens of ``text``: the matches of ``pattern`` (GPT-2's by default), in order.

    With GPT-2's pattern the pieces always join back into ``text``.
    """
    _check_text(text)
    return _compiled(pattern).findall(text)


# ----------------------------------------------------------------------------- merges


def merge(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """``ids`` with every occurrence of ``pair``, left to right, replaced by ``new_id``.

    ``merge([1, 1, 1], (1, 1), 9) == [9, 1]``: occurrences do not overlap.
    """
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _pairs(ids: list[int]) -> Counter[Pair]:
    return Counter(zip(ids, ids[1:]))


def train_merges(
    text: str,
    num_merges: int,
    pattern: str = GPT2_PATTERN,
    special_tokens: Iterable[str] = (),
) -> list[Pair]:
    """The first ``num_merges`` BPE merges of ``text``, in rank order (module docstring).

    Merge ``k`` is the pair that becomes token ``256 + k``. Pair counts are kept for the
    distinct pre-tokens only (each weighted by how often it occurs) and updated after each merge
    for the words that contain the merged pair; a heap of ``(-count, a, b)`` finds the most
    frequent pair, smallest ids first on ties. Stops early when no pair is left. The
    ``special_tokens`` are cut out of ``text`` first: no merge reaches into or across them.
    """
    _check_text(text)
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
        raise ValueError(f"num_merges must be an int >= 0, got {num_merges!r}")
    specials = list(special_tokens)
    pieces = _split_specials(text, specials) if specials else [text]
    counted = Counter(
        w for piece in pieces if piece not in specials for w in pretokenize(piece, pattern)
    )
    words = [list(_utf8(text, word)) for word in counted]  # distinct pre-tokens, as ids
    freqs = list(counted.values())
    pair_counts: Counter[Pair] = Counter()
    where: defaultdict[Pair, set[int]] = defaultdict(set)  # pair -> words that may contain it
    for w, ids in enumerate(words):
        for pair, n in _pairs(ids).items():
            pair_counts[pair] += n * freqs[w]
            where[pair].add(w)
    heap = [(-n, *pair) for pair, n in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while len(merges) < num_merges and heap:
        minus_n, a, b = heapq.heappop(heap)
        if pair_counts.get((a, b)) != -minus_n:
            continue  # a stale heap entry: this pair's count changed since it was pushed
        pair, new_id = (a, b), 256 + len(merges)
        merges.append(pair)
        changed = set()
        for w in where.pop(pair):
            before = _pairs(words[w])
            if pair not in before:
                continue  # the word lost the pair to an earlier merge
            words[w] = merge(words[w], pair, new_id)
            after = _pairs(words[w])
            for p in before | after:
                delta = (after[p] - before[p]) * freqs[w]
                if delta:
                    pair_counts[p] += delta
                    changed.add(p)
                if after[p]:
                    where[p].add(w)
        for p in changed:
            if pair_counts[p] > 0:
                heapq.heappush(heap, (-pair_counts[p], *p))
            else:
                del pair_counts[p]
    return merges


# ----------------------------------------------------------------------------- the tokenizer


class Tokenizer:
    """Byte-level BPE: ids ``0..255`` are the bytes, ``256 + k`` is ``merges[k]``, and the
    special tokens come last, in the order given (sec-tokenization).

    ``Tokenizer.train(text, vocab_size)`` learns the merges; ``encode``/``decode`` convert
    between ``str`` and ids; ``save``/``load`` write and read a small JSON file.
    """

    def __init__(
        self,
        merges: Iterable[Pair] = (),
        special_tokens: Iterable[str] = (),
        pattern: str = GPT2_PATTERN,
    ) -> None:
        self.merges: list[Pair] = [(a, b) for a, b in merges]
        self.pattern = pattern
        self.ranks: dict[Pair, int] = {}
        self.vocab: list[bytes] = [bytes([b]) for b in range(256)]  # id -> its bytes
        for k, (a, b) in enumerate(self.merges):
            if not (0 <= a < len(self.vocab) and 0 <= b < len(self.vocab)):
                raise ValueError(f"merges[{k}] = {(a, b)} uses an id that is not defined yet")
            self.ranks[(a, b)] = k
            self.vocab.append(self.vocab[a] + self.vocab[b])
        specials = list(special_tokens)
        for name in specials:
            if not isinstance(name, str) or not name:
                raise ValueError(f"special_tokens must be non-empty strings, got {name!r}")
        if len(set(specials)) != len(specials):
            raise ValueError(f"special_tokens has duplicates: {specials}")
        self.special_tokens = {name: len(self.vocab) + i for i, name in enumerate(specials)}
        self._split = _compiled(pattern)
        self._cache: dict[str, list[int]] = {}  # pre-token -> its ids

    @classmethod
    def train(
        cls,
        text: str,
        vocab_size: int,
        special_tokens: Iterable[str] = (),
        pattern: str = GPT2_PATTERN,
    ) -> Tokenizer:
        """Learn ``vocab_size - 256 - len(special_tokens)`` merges from ``text``.

        ``vocab_size`` counts the 256 bytes, the merges and the special tokens. A text too
        small to supply that many merges gives fewer (``len(tokenizer)`` says how many).
        Special tokens never occur inside the training text's pre-tokens: each one is cut out
        of ``text`` first.
        """
        _check_text(text)
        specials = list(special_tokens)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
        if vocab_size < 256 + len(specials):
            raise ValueError(
                f"vocab_size must be at least 256 (the bytes) + {len(specials)} special tokens, "
                f"got {vocab_size}"
            )
        merges = train_merges(text, vocab_size - 256 - len(specials), pattern, specials)
        return cls(merges, specials, pattern)

    def __len__(self) -> int:
        return len(self.vocab) + len(self.special_tokens)

    # --------------------------------------------------------------------- encode, decode

    def encode_word(self, word: bytes) -> list[int]:
        """The ids of one pre-token: its bytes, then the lowest-ranked merge, until none applies."""
        ids = list(word)
        while len(ids) > 1:
            pair = min(zip(ids, ids[1:]), key=lambda p: self.ranks.get(p, len(self.ranks)))
            if pair not in self.ranks:
                break  # no adjacent pair has a merge
            ids = merge(ids, pair, 256 + self.ranks[pair])
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special-token strings in it encoded as ordinary text."""
        _check_text(text)
        ids: list[int] = []
        for word in self._split.findall(text):
            if word not in self._cache:
                self._cache[word] = self.encode_word(_utf8(text, word))
            ids.extend(self._cache[word])
        return ids

    def encode(self, text: str, allowed_special: Iterable[str] | str = ()) -> list[int]:
        """The ids of ``text``. A special token in ``allowed_special`` (or any, with ``"all"``)
        becomes its own id; other special-token strings are encoded as ordinary text."""
        _check_text(text)
        if allowed_special == "all":
            allowed = list(self.special_tokens)
        elif isinstance(allowed_special, str):
            raise TypeError(
                f"allowed_special must be 'all' or a collection of strings, got {allowed_special!r}"
            )
        else:
            allowed = list(allowed_special)
        unknown = [name for name in allowed if name not in self.special_tokens]
        if unknown:
            raise ValueError(
                f"allowed_special has unknown special tokens {unknown}; "
                f"this tokenizer has {list(self.special_tokens)}"
            )
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        for piece in _split_specials(text, allowed):
            ids.extend(
                [self.special_tokens[piece]] if piece in allowed else self.encode_ordinary(piece)
            )
        return ids

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined: a token can end in the middle of a character."""
        specials = {i: name.encode("utf-8") for name, i in self.special_tokens.items()}
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
                raise ValueError(
                    f"ids: {i!r} is not a token id of this tokenizer (0..{len(self) - 1})"
                )
            out.append(self.vocab[i] if i < len(self.vocab) else specials[i])
        return b"".join(out)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ``ids``. Bytes that are not valid UTF-8 (a cut character) decode as
        ``"\\ufffd"`` with ``errors="replace"``; ``errors="strict"`` raises instead."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # --------------------------------------------------------------------- save, load

    def save(self, path: str | Path) -> None:
        """Write the tokenizer as JSON: its format, pattern, merges and special tokens."""
        data = {
            "format": FORMAT,
            "pattern": self.pattern,
            "merges": [list(pair) for pair in self.merges],
            "special_tokens": list(self.special_tokens),
        }
        Path(path).write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """Read a file written by :meth:`save`."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"path: {path} is not a {FORMAT!r} file")
        return cls(data["merges"], data["special_tokens"], data["pattern"])


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def _utf8(text: str, word: str) -> bytes:
    """``word.encode("utf-8")``; a lone surrogate (no UTF-8 form) raises a ValueError."""
    try:
        return word.encode("utf-8")
    except UnicodeEncodeError:
        at = next(i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff")
        raise ValueError(
            f"text has a lone surrogate at index {at}, which UTF-8 cannot encode"
        ) from None


def _split_specials(text: str, specials: Iterable[str]) -> list[str]:
    """``text`` cut around each occurrence of the ``specials`` (longest first at one place)."""
    names = sorted(specials, key=len, reverse=True)
    return [piece for piece in re.split("(" + "|".join(map(re.escape, names)) + ")", text) if piece]
