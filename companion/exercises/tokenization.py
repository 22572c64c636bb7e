"""Checkers for the tokenization chapter (sec-tokenization).

``check_merge`` checks the merge step built from scratch: ``merge(ids, pair, new_id)`` returns
a new list with every occurrence of ``pair``, left to right, replaced by ``new_id``.
``check_encode`` checks the BPE encoder of one pre-token: ``encode(word, merges)`` takes the
word's bytes and the merges in rank order (merge ``k`` makes id ``256 + k``) and returns ids.
Each names the usual mistakes: overlapping or right-to-left replacement, only the first
occurrence, a lost last id, the input changed in place; the leftmost mergeable pair instead of
the lowest-ranked one, the merges in reverse order, one merge only, ids numbered from 0 or 255.

Inputs are drawn afresh on every call (``seed`` repeats a run, for tests): short id lists over
a few symbols, so that pairs repeat and overlap (``[7, 7, 7]``), and merges trained on random
words over a few letters, so that merges compete for the same bytes.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence

from companion.exercises.core import first_seed, run_student
from companion.tokenizer import Pair, merge, train_merges

Mistake = tuple[Callable[..., object], str]
EXTRA_TRIALS = 20  # more inputs to tell apart mistakes that agree on the first failing one


def _check(
    student_fn: Callable,
    reference_fn: Callable,
    make_inputs: Callable[[random.Random], tuple],
    mistakes: Sequence[Mistake],
    trials: int,
    seed: int | None,
) -> bool:
    """Run both functions on ``trials`` inputs; print ``pass`` or the first mistake's hint."""
    name = getattr(student_fn, "__name__", "your function")
    start = first_seed(seed)
    for trial in range(trials):
        inputs = make_inputs(random.Random(start + trial))
        expected = reference_fn(*inputs)
        untouched = copy.deepcopy(inputs)
        got, verdict = run_student(student_fn, *inputs)
        if verdict:
            print(verdict)
            return False
        if inputs != untouched:
            print(f"hint: {name} changed its input list in place; build and return a new list")
            return False
        if not isinstance(got, list) or not all(type(i) is int for i in got):
            print(f"hint: return a list of int ids, got {type(got).__name__}: {got!r:.80}")
            return False
        if got == expected:
            continue
        hint = _explain(student_fn, got, inputs, mistakes, make_inputs, start + trials)
        shown = ", ".join(map(repr, inputs))
        print(f"hint: {hint or 'the ids differ'}; on ({shown}) expected {expected}, got {got}")
        return False
    print(f"pass: {name} matches the reference on {trials} random inputs")
    return True


def _explain(student_fn, got, inputs, mistakes, make_inputs, seed: int) -> str | None:
    """The hint of the mistake that explains ``got``. When several agree on ``inputs``, the
    student's function runs on more inputs until only one of them still agrees."""
    suspects = [(mistake, hint) for mistake, hint in mistakes if mistake(*inputs) == got]
    for extra in range(EXTRA_TRIALS):
        if len(suspects) <= 1:
            break
        more = make_inputs(random.Random(seed + extra))
        got_more, verdict = run_student(student_fn, *copy.deepcopy(more))
        if verdict:
            break
        suspects = [(m, h) for m, h in suspects if m(*more) == got_more] or suspects
    return suspects[0][1] if suspects else None


# ----------------------------------------------------------------------------- merge


def _merge_inputs(rng: random.Random) -> tuple[list[int], Pair, int]:
    symbols = rng.sample(range(256), rng.randint(2, 4))
    ids = [rng.choice(symbols) for _ in range(rng.randint(3, 24))]
    ids[1:4] = [ids[0]] * 3  # a run of three equal ids: pairs that overlap
    start = rng.randrange(len(ids) - 1)
    return ids, (ids[start], ids[start + 1]), rng.randint(256, 5000)


def _overlapping(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """Mistake: a new id wherever the pair starts, overlaps included ([a, a, a] -> [n, n])."""
    out = []
    for i, x in enumerate(ids):
        if i + 1 < len(ids) and (x, ids[i + 1]) == pair:
            out.append(new_id)
        elif not (i > 0 and (ids[i - 1], x) == pair):
            out.append(x)
    return out


def _first_only(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == pair:
            return ids[:i] + [new_id] + ids[i + 2 :]
    return list(ids)


def _scan(ids: list[int], pair: Pair, new_id: int, stop: int, step: int) -> list[int]:
    """Mistakes of the loop: it stops ``stop`` ids early, or moves ``step`` ids after a match."""
    out, i = [], 0
    while i < len(ids) - stop:
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += step
        else:
            out.append(ids[i])
            i += 1
    return out


MERGE_MISTAKES = [
    (
        _overlapping,
        "occurrences overlap: with the pair (a, a), [a, a, a] must give [new, a]; after a "
        "match, skip both of its ids",
    ),
    (
        lambda ids, pair, new_id: merge(ids[::-1], pair[::-1], new_id)[::-1],
        "you merge from the right: [a, a, a] must give [new, a], not [a, new]; scan left to right",
    ),
    (_first_only, "only the first occurrence is replaced; replace every occurrence"),
    (
        lambda ids, pair, new_id: _scan(ids, pair, new_id, stop=1, step=2),
        "the last id is lost when it is not part of a match: the loop must run to the end",
    ),
    (
        lambda ids, pair, new_id: _scan(ids, pair, new_id, stop=0, step=1),
        "the second id of each match is kept: after a match, move on by two ids, not one",
    ),
    (
        lambda ids, pair, new_id: merge(ids, pair[::-1], new_id),
        "you merged the pair in reverse order (b, a); the pair is (first, second)",
    ),
]


def check_merge(merge_fn: Callable, trials: int = 20, *, seed: int | None = None) -> bool:
    """Check ``merge_fn(ids, pair, new_id)`` against :func:`companion.tokenizer.merge`."""
    return _check(merge_fn, merge, _merge_inputs, MERGE_MISTAKES, trials, seed)


# ----------------------------------------------------------------------------- encode


def _encode_reference(word: bytes, merges: list[Pair], order: str = "rank", first_id: int = 256):
    """Encode one pre-token; ``order`` and ``first_id`` reproduce the typical mistakes."""
    ranks = {pair: k for k, pair in enumerate(merges)}
    ids = list(word)
    while len(ids) > 1:
        present = [p for p in zip(ids, ids[1:]) if p in ranks]
        if not present:
            break
        if order == "leftmost":
            pair = present[0]
        elif order == "reverse":
            pair = max(present, key=ranks.__getitem__)
        else:
            pair = min(present, key=ranks.__getitem__)
        ids = merge(ids, pair, first_id + ranks[pair])
        if order == "once":
            break
    return ids


def _encode_inputs(rng: random.Random) -> tuple[bytes, list[Pair]]:
    letters = rng.sample("abcdeéxyz", 3)
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(40)]
    merges = train_merges(" ".join(words), rng.randint(4, 14))
    # The word that tells the most known mistakes apart from the right answer: on a random word
    # the merge order often does not matter, and a wrong order would pass.
    candidates = sorted({word.encode("utf-8") for word in words})
    rng.shuffle(candidates)
    return max(candidates, key=lambda word: _mistakes_shown(word, merges)), merges


def _mistakes_shown(word: bytes, merges: list[Pair]) -> int:
    expected = _encode_reference(word, merges)
    return sum(mistake(word, merges) != expected for mistake, _ in ENCODE_MISTAKES)


ENCODE_MISTAKES = [
    (
        lambda word, merges: _encode_reference(word, merges, "leftmost"),
        "you applied the leftmost pair that has a merge; apply the merge of lowest rank "
        "(learned first) wherever it is",
    ),
    (
        lambda word, merges: _encode_reference(word, merges, "reverse"),
        "you applied the merges from the last learned to the first; the lowest rank comes first",
    ),
    (
        lambda word, merges: _encode_reference(word, merges, "once"),
        "you stopped after one merge: repeat until no adjacent pair has a merge",
    ),
    (
        lambda word, merges: _encode_reference(word, merges, first_id=0),
        "merge k makes id 256 + k (ids 0 to 255 are the bytes), not k",
    ),
    (
        lambda word, merges: _encode_reference(word, merges, first_id=255),
        "merge k makes id 256 + k, not 255 + k",
    ),
    (
        lambda word, merges: list(word),
        "no merge was applied: the ids are the word's bytes",
    ),
]


def check_encode(encode_fn: Callable, trials: int = 20, *, seed: int | None = None) -> bool:
    """Check ``encode_fn(word, merges)`` against companion's encoder of one pre-token."""
    return _check(encode_fn, _encode_reference, _encode_inputs, ENCODE_MISTAKES, trials, seed)
