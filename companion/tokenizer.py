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
pre-tokens ("words"), each once with its count. Recounting every pair after each merge would
cost the whole text per merge; instead the counts are kept up to date. The words' symbols sit
in linked lists, each pair remembers where it occurs, and merging one occurrence changes only
the pairs it touches: its own, the one on its left and the one on its right. A heap of the
pairs, most frequent first, gives the next merge. So a merge costs about as much as the
occurrences it replaces, and training on a megabyte of text takes about a second, however long
its words. The merges of a tokenizer trained to ``V`` tokens are the first merges of
one trained to more: ``merges[:k]`` is the tokenizer of size ``256 + k``.

**Encoding** a pre-token: start from its bytes; while some adjacent pair has a merge, apply
the merge of lowest rank to every occurrence, left to right. A merge never creates a pair of
lower rank than its own (a pair that contains token ``256 + k`` was learned after merge
``k``), so this is the same as merging one pair at a time, always the lowest-ranked one and,
among those, the leftmost. :meth:`Tokenizer.encode_word` does exactly that with a heap of the
mergeable pairs, so a pre-token of ``n`` bytes costs about ``n log n`` steps, where applying
each merge to the whole pre-token costs ``n`` per merge. Decoding concatenates the tokens'
bytes and decodes UTF-8.

**Pre-tokenization.** Before BPE, a regular expression cuts the text into pre-tokens, and merges
never cross their boundaries, so a token never glues a word to the punctuation after it. The
default is GPT-2's pattern (Radford et al., 2019), in the equivalent form that tiktoken's
``r50k_base`` runs (:data:`GPT2_PATTERN`)::

    '(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s

read left to right, first alternative that matches: an English contraction (``'s``, ``'t``,
``'re``, ...); a run of letters (``\\p{L}``) with at most one space in front; a run of numbers
(``\\p{N}``), likewise; a run of other symbols (punctuation, emoji), likewise; whitespace at the
end of the text; whitespace that is not followed by a non-space (so the last space of a run
stays to lead the next word: ``"a   b"`` splits as ``"a", "  ", " b"``); and one whitespace
character. (``++`` is a possessive ``+``: it never gives characters back, which only makes the
match faster here.) GPT-4's ``cl100k_base`` pattern (:data:`CL100K_PATTERN`) also matches
contractions in any case, keeps one non-letter in front of a word (``"(word"``), cuts numbers
into runs of at most three digits, and ends a run of whitespace at a line break.
``Tokenizer(pattern=...)`` takes either, or any pattern whose matches cover every character of
a text.

The patterns are compiled with the ``regex`` package, not Python's ``re``: ``re`` has no
``\\p{L}``, its ``\\s`` also matches ``U+001C..U+001F`` (tiktoken's does not), and its Unicode
tables are the interpreter's (14.0 on Python 3.11, 15.0 on 3.12), so a saved tokenizer would give
other ids on another Python. ``regex`` carries its own Unicode tables, so the ids depend on its
version only (``requirements.lock`` pins it). Its ``\\s`` is Unicode's White_Space, as
tiktoken's, and the tests build a ``tiktoken.Encoding`` from these merges and either pattern and
compare ids on arbitrary text.

**The one difference from tiktoken.** tiktoken 0.14's engine has Unicode 16.0's tables; regex
2026.11.15 has newer ones (17.0 and after). The code points that Unicode assigned after 16.0
(17,144 letters, such as CJK Extension J at ``U+323B0``, and 336 numbers) are letters and
numbers here and unassigned symbols to tiktoken, so a text containing one of them is cut
differently: ``"a\\U000323B0"`` is one pre-token here and two in tiktoken. No other code point
differs (``tests/test_tokenizer.py`` computes the difference over all of Unicode and checks that
it is only this). Upgrading either package can move this line; the test says when.
"""

from __future__ import annotations

import codecs
import functools
import heapq
import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

import regex

# tiktoken's r50k_base (GPT-2) and cl100k_base (GPT-4) pre-tokenization patterns, verbatim.
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
FORMAT = "companion-bpe 1"  # the first value of a saved file

Pair = tuple[int, int]


# ----------------------------------------------------------------------------- pre-tokenization


def _check_pattern(pattern: object) -> regex.Pattern[str]:
    """``pattern`` compiled with the ``regex`` package; a clear error if it is not one."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a regular expression), got {pattern!r}")
    return _compiled(pattern)


@functools.cache
def _compiled(pattern: str) -> regex.Pattern[str]:
    try:
        return regex.compile(pattern)
    except regex.error as error:
        raise ValueError(f"pattern does not compile: {error} in {pattern!r}") from None


def _matches(split: regex.Pattern[str], text: str) -> list[str]:
    # The whole matches: findall would return a pattern's capturing groups instead.
    return [match.group() for match in split.finditer(text)]


def pretokenize(text: str, pattern: str = GPT2_PATTERN) -> list[str]:
    """The pre-tokens of ``text``: the matches of ``pattern`` (GPT-2's by default), in order.

    With GPT-2's and cl100k's patterns the pieces always join back into ``text``.
    """
    _check_text(text)
    return _matches(_check_pattern(pattern), text)


def _pretokens(split: regex.Pattern[str], text: str) -> list[str]:
    """The pre-tokens of ``text``, which must cover it: a character that no match covers would
    silently vanish from the ids."""
    words = _matches(split, text)
    if sum(map(len, words)) != len(text):
        end = 0
        for match in split.finditer(text):
            if match.start() != end:
                break
            end = match.end()
        raise ValueError(
            f"pattern {split.pattern!r} leaves text[{end}] = {text[end]!r} out of every "
            "pre-token; the matches must cover the whole text, or encoding would lose it"
        )
    return words


# ----------------------------------------------------------------------------- merges


def merge(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """``ids`` with every occurrence of ``pair``, left to right, replaced by ``new_id``.

    ``merge([1, 1, 1], (1, 1), 9) == [9, 1]``: occurrences do not overlap.
    """
    _check_merge_args(ids, pair, new_id)
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class _LinkedWords:
    """The distinct pre-tokens of a text, all in one list of symbols (token ids) linked to their
    neighbors within their word. Merging a pair keeps its left symbol's position, gives it the
    new id and unlinks the right one, so positions stay in text order."""

    def __init__(self, word_counts: dict[bytes, int]) -> None:
        self.ids: list[int] = []  # position -> token id; -1 once merged into its left neighbor
        self.next: list[int] = []  # position -> the next symbol's position in its word, or -1
        self.prev: list[int] = []  # position -> the previous symbol's position, or -1
        self.count: list[int] = []  # position -> how often its word occurs in the text
        for word, count in word_counts.items():
            if not word:
                continue  # an empty match of the pattern: no symbol, no pair
            start, end = len(self.ids), len(self.ids) + len(word)
            self.ids += word
            self.next += [*range(start + 1, end), -1]
            self.prev += [-1, *range(start, end - 1)]
            self.count += [count] * len(word)

    def pair_at(self, i: int) -> Pair | None:
        """The pair whose first symbol is at position ``i``, if there is one."""
        j = self.next[i]
        return (self.ids[i], self.ids[j]) if j >= 0 and self.ids[i] >= 0 else None

    def merge_at(self, i: int, new_id: int) -> list[tuple[Pair, int, int]]:
        """Merge the pair at ``i`` into ``new_id``; the pair counts that change, as
        ``(pair, change, position of its first symbol)``: ``(x, a), (a, b), (b, y)`` lose one
        occurrence of the word, ``(x, new_id)`` and ``(new_id, y)`` gain one."""
        j = self.next[i]
        before, after = self.prev[i], self.next[j]
        a, b, n = self.ids[i], self.ids[j], self.count[i]
        changes = [((a, b), -n, i)]
        if before >= 0:
            x = self.ids[before]
            changes += [((x, a), -n, before), ((x, new_id), n, before)]
        if after >= 0:
            y = self.ids[after]
            changes += [((b, y), -n, j), ((new_id, y), n, i)]
            self.prev[after] = i
        self.ids[i], self.ids[j], self.next[i] = new_id, -1, after
        return changes


def train_merges(
    text: str,
    num_merges: int,
    pattern: str = GPT2_PATTERN,
    special_tokens: Iterable[str] = (),
) -> list[Pair]:
    """The first ``num_merges`` BPE merges of ``text``, in rank order (module docstring).

    Merge ``k`` is the pair that becomes token ``256 + k``. Each distinct pre-token is stored
    once, with its count, as a linked list of symbols (:class:`_LinkedWords`). ``pair_counts``
    counts each pair over the whole text and ``where`` remembers the positions of its
    occurrences. A heap of ``(-count, a, b)`` gives the most frequent pair, smallest ids first
    on ties. Merging an occurrence changes only the counts of the pairs around it, and the pairs
    whose count changed are pushed again; an entry whose count is no longer the pair's is stale.
    Stops early when no pair is left. The ``special_tokens`` are cut out of ``text`` first: no
    merge reaches into or across them.
    """
    _check_text(text)
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
        raise ValueError(f"num_merges must be an int >= 0, got {num_merges!r}")
    specials = _check_special_tokens(special_tokens)
    split = _check_pattern(pattern)
    pieces = _split_specials(text, specials) if specials else [text]
    counted = Counter(
        word for piece in pieces if piece not in specials for word in _pretokens(split, piece)
    )
    symbols = _LinkedWords({_utf8(text, word): n for word, n in counted.items()})
    pair_counts: Counter[Pair] = Counter()
    where: defaultdict[Pair, set[int]] = defaultdict(set)  # pair -> positions of its first symbol
    for i in range(len(symbols.ids)):
        if (pair := symbols.pair_at(i)) is not None:
            pair_counts[pair] += symbols.count[i]
            where[pair].add(i)
    heap = [(-n, *pair) for pair, n in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while len(merges) < num_merges and heap:
        minus_n, a, b = heapq.heappop(heap)
        if pair_counts.get((a, b)) != -minus_n:
            continue  # a stale heap entry: this pair's count changed since it was pushed
        new_id = 256 + len(merges)
        merges.append((a, b))
        changed = set()
        for i in sorted(where.pop((a, b))):  # left to right, so "aaa" gives "aa" + "a"
            if symbols.pair_at(i) != (a, b):
                continue  # a merge before this one took one of its two symbols
            # Only the merged pair and the pairs it forms with its two neighbors change count.
            for pair, change, at in symbols.merge_at(i, new_id):
                pair_counts[pair] += change
                changed.add(pair)
                if change > 0:
                    where[pair].add(at)
        for pair in changed:
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], *pair))
            else:
                del pair_counts[pair]
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
        self.merges: list[Pair] = _check_merges(merges)
        self.ranks: dict[Pair, int] = {pair: k for k, pair in enumerate(self.merges)}
        self.vocab: list[bytes] = [bytes([b]) for b in range(256)]  # id -> its bytes
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])
        specials = _check_special_tokens(special_tokens)
        self.special_tokens = {name: len(self.vocab) + i for i, name in enumerate(specials)}
        self._split = _check_pattern(pattern)
        self.pattern = pattern
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
        specials = _check_special_tokens(special_tokens)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(
                f"vocab_size must be an int, got {vocab_size!r} ({type(vocab_size).__name__})"
            )
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
        """The ids of one pre-token: its bytes, then the lowest-ranked merge, until none applies.

        One pair is merged at a time, the lowest-ranked and, among those, the leftmost: the same
        ids as applying each merge everywhere (module docstring). The symbols form a linked
        list, and a heap holds every adjacent pair that has a merge, ordered by rank, then by
        position. Each step pops the first entry, merges its pair into one symbol and pushes
        the two pairs that symbol now makes with its neighbors: about ``log n`` work per merge,
        where applying each merge to the whole list costs ``n``. An entry whose pair changed
        since it was pushed is stale and skipped.
        """
        if not isinstance(word, (bytes, bytearray)):
            raise TypeError(f"word must be bytes (a pre-token's UTF-8), got {word!r}")
        ids = list(word)  # position -> token id; -1 once merged into its left neighbor
        n = len(ids)
        after = [*range(1, n), -1]  # position -> the next symbol's position, -1 at the end
        before = list(range(-1, n - 1))  # position -> the previous symbol's position
        # A heap entry is one int, rank * n + position: it sorts by rank, then position, and
        # ints compare much faster than tuples.
        heap = []
        for i, pair in enumerate(zip(ids, ids[1:])):
            if (r := self.ranks.get(pair)) is not None:
                heap.append(r * n + i)
        heapq.heapify(heap)
        while heap:
            rank, i = divmod(heapq.heappop(heap), n)
            j = after[i]
            if j < 0 or self.ranks.get((ids[i], ids[j])) != rank:
                continue  # stale: a merge since this entry was pushed changed its pair
            ids[i], ids[j] = 256 + rank, -1  # the pair becomes one symbol, at position i
            after[i] = after[j]
            if after[i] >= 0:
                before[after[i]] = i
            for left, right in [(before[i], i), (i, after[i])]:  # the new symbol's two pairs
                if left >= 0 and right >= 0:
                    if (r := self.ranks.get((ids[left], ids[right]))) is not None:
                        heapq.heappush(heap, r * n + left)
        return [i for i in ids if i >= 0]

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special-token strings in it encoded as ordinary text."""
        _check_text(text)
        ids: list[int] = []
        for word in _pretokens(self._split, text):
            if word not in self._cache:
                self._cache[word] = self.encode_word(_utf8(text, word))
            ids.extend(self._cache[word])
        return ids

    def encode(
        self,
        text: str,
        allowed_special: Iterable[str] | str = (),
        disallowed_special: Iterable[str] | str = "all",
    ) -> list[int]:
        """The ids of ``text``, with tiktoken's rules for special tokens.

        A special token in ``allowed_special`` (or any, with ``"all"``) becomes its own id. One
        in ``disallowed_special`` (by default every special token not allowed) raises a
        ValueError: a user's text that contains ``"<|endoftext|>"`` is a mistake to report, not
        to encode silently either way. With ``disallowed_special=()`` such strings are encoded
        as ordinary text, as :meth:`encode_ordinary` does.
        """
        _check_text(text)
        allowed = self._special_names("allowed_special", allowed_special, set())
        disallowed = self._special_names("disallowed_special", disallowed_special, allowed)
        if disallowed and (found := _specials_regex(disallowed).search(text)):
            name = found.group()
            raise ValueError(
                f"text contains the special token {name!r} at index {found.start()}, which "
                f"encode does not allow: pass allowed_special={{{name!r}}} to encode it as its "
                "id, or disallowed_special=() (or call encode_ordinary) to encode it as text"
            )
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        for piece in _split_specials(text, allowed):
            ids.extend(
                [self.special_tokens[piece]] if piece in allowed else self.encode_ordinary(piece)
            )
        return ids

    def _special_names(self, argument: str, names: object, allowed: set[str]) -> set[str]:
        """``names`` checked: ``"all"`` (every special token not in ``allowed``) or a collection
        of this tokenizer's special tokens."""
        if names == "all":
            return set(self.special_tokens) - allowed
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise TypeError(
                f"{argument} must be 'all' or a collection of special tokens, got {names!r}"
            )
        chosen = set(names)
        unknown = sorted(name for name in chosen if name not in self.special_tokens)
        if unknown:
            raise ValueError(
                f"{argument} has unknown special tokens {unknown}; "
                f"this tokenizer has {list(self.special_tokens)}"
            )
        return chosen

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined: a token can end in the middle of a character.

        ``ids`` may be a list of ints, a numpy array or a torch tensor of any integer dtype
        (1-d, or 0-d for one id), a single int, or ``bytes`` (the bytes are their own ids).
        """
        specials = {i: name.encode("utf-8") for name, i in self.special_tokens.items()}
        return b"".join(
            self.vocab[i] if i < len(self.vocab) else specials[i]
            for i in _check_ids(ids, len(self))
        )

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ``ids``. Bytes that are not valid UTF-8 (a cut character) decode as
        ``"\\ufffd"`` with ``errors="replace"``; ``errors="strict"`` raises instead."""
        _check_errors(errors)
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # --------------------------------------------------------------------- save, load

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the tokenizer as JSON: its format, pattern, merges and special tokens."""
        data = {
            "format": FORMAT,
            "pattern": self.pattern,
            "merges": [list(pair) for pair in self.merges],
            "special_tokens": list(self.special_tokens),
        }
        text = json.dumps(data, ensure_ascii=False) + "\n"
        _check_path(path).write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Read a file written by :meth:`save`."""
        try:
            data = json.loads(_check_path(path).read_text(encoding="utf-8"))
        except ValueError as error:  # not UTF-8, or not JSON
            raise ValueError(f"path: {path} is not a {FORMAT!r} file ({error})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"path: {path} is not a {FORMAT!r} file")
        missing = sorted({"pattern", "merges", "special_tokens"} - set(data))
        if missing:
            raise ValueError(f"path: {path} is a {FORMAT!r} file without {missing}")
        return cls(data["merges"], data["special_tokens"], data["pattern"])


# ----------------------------------------------------------------------------- checks, helpers


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def _check_path(path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a Path, got {path!r}")
    return Path(path)


def _check_errors(errors: object) -> None:
    if not isinstance(errors, str):
        raise TypeError(f"errors must be a str such as 'replace' or 'strict', got {errors!r}")
    try:
        codecs.lookup_error(errors)
    except LookupError:
        raise ValueError(
            f"errors must be a codec error handler such as 'replace' or 'strict', got {errors!r}"
        ) from None


def _integer(value: object) -> int | None:
    """``value`` as a Python int if it is an integer of any type (Python's, numpy's, a 0-d
    integer tensor), else None; booleans are not ids."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays, torch tensors
        value = value.tolist()
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_ids(ids: object, size: int) -> list[int]:
    """``ids`` as a list of Python ints in ``0..size - 1``: a clear error for anything else."""
    shape = getattr(ids, "shape", None)
    if shape is not None and len(shape) > 1:
        raise ValueError(f"ids must be 1-d (one sequence of ids), got shape {tuple(shape)}")
    if hasattr(ids, "tolist"):  # an array or tensor: its Python numbers, in one fast call
        ids = ids.tolist()
    if isinstance(ids, int) and not isinstance(ids, bool):  # one id
        ids = [ids]
    if isinstance(ids, (str, dict, set)) or not isinstance(ids, Iterable):
        raise TypeError(
            "ids must be a sequence of token ids (a list of ints, an integer array or tensor), "
            f"got {type(ids).__name__}: {ids!r:.60}"
        )
    checked = []
    for position, value in enumerate(ids):
        i = _integer(value)
        if i is None:
            raise TypeError(
                f"ids[{position}] is {value!r} ({type(value).__name__}), not an integer token id"
            )
        if not 0 <= i < size:
            raise ValueError(
                f"ids: {i} is not a token id of this tokenizer (0..{size - 1}), at ids[{position}]"
            )
        checked.append(i)
    return checked


def _check_merges(merges: object) -> list[Pair]:
    """``merges`` as a list of pairs of ints, each defined before its merge and none twice."""
    if hasattr(merges, "tolist"):  # a numpy array or tensor of shape (k, 2)
        merges = merges.tolist()
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable):
        raise TypeError(f"merges must be a list of pairs of token ids, got {merges!r:.60}")
    checked: list[Pair] = []
    seen: dict[Pair, int] = {}
    for k, pair in enumerate(merges):
        ids = [_integer(i) for i in pair] if isinstance(pair, (tuple, list)) else []
        if len(ids) != 2 or ids[0] is None or ids[1] is None:
            raise TypeError(f"merges[{k}] must be a pair of token ids, got {pair!r}")
        a, b = ids[0], ids[1]
        if not (0 <= a < 256 + k and 0 <= b < 256 + k):
            raise ValueError(f"merges[{k}] = {(a, b)} uses an id that is not defined yet")
        if (a, b) in seen:
            raise ValueError(f"merges[{k}] = {(a, b)} repeats merges[{seen[(a, b)]}]")
        seen[(a, b)] = k
        checked.append((a, b))
    return checked


def _check_special_tokens(special_tokens: object) -> list[str]:
    """``special_tokens`` as a list of distinct non-empty strings, in their given order."""
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Iterable):
        raise TypeError(
            "special_tokens must be a list of strings such as ['<|endoftext|>'], "
            f"got {special_tokens!r}"
        )
    if isinstance(special_tokens, (set, frozenset)):
        raise TypeError(
            "special_tokens must be ordered (a list or tuple): their order gives their ids, and "
            f"a set's order changes from run to run; got {special_tokens!r}"
        )
    names = list(special_tokens)
    for k, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"special_tokens[{k}] must be a str, got {name!r}")
        if not name:
            raise ValueError(f"special_tokens[{k}] is the empty string; a token needs a character")
    if len(set(names)) != len(names):
        raise ValueError(f"special_tokens has duplicates: {names}")
    return names


def _check_merge_args(ids: object, pair: object, new_id: object) -> None:
    if not isinstance(ids, (list, tuple)):
        raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeError(f"pair must be a tuple of two ids such as (101, 114), got {pair!r}")
    if isinstance(new_id, bool) or not isinstance(new_id, int):
        raise TypeError(f"new_id must be an int, got {new_id!r}")


def _utf8(text: str, word: str) -> bytes:
    """``word.encode("utf-8")``; a lone surrogate (no UTF-8 form) raises a ValueError."""
    try:
        return word.encode("utf-8")
    except UnicodeEncodeError:
        at = next(i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff")
        raise ValueError(
            f"text has a lone surrogate at index {at}, which UTF-8 cannot encode"
        ) from None


def _specials_regex(specials: Iterable[str]) -> regex.Pattern[str]:
    """A pattern of the ``specials``, the longest first where two start at one place."""
    names = sorted(specials, key=lambda name: (-len(name), name))
    return regex.compile("|".join(map(regex.escape, names)))


def _split_specials(text: str, specials: Iterable[str]) -> list[str]:
    """``text`` cut around each occurrence of the ``specials`` (longest first at one place)."""
    split = _specials_regex(specials)
    return [piece for piece in regex.split(f"({split.pattern})", text) if piece]
