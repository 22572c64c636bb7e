"""Checkers for the tokenization chapter (sec-tokenization).

``check_train`` checks the BPE training loop built from scratch: ``train(text, num_merges)``
returns the merges, in the order learned, that :func:`companion.tokenizer.train_merges` learns:
the pairs of ids of the most frequent adjacent pair, ties to the smallest pair of ids, counted
within the pre-tokens that GPT-2's pattern cuts, each pre-token weighted by how often it occurs.
``check_encode`` checks the BPE encoder of one pre-token: ``encode(word, merges)`` takes the
word's bytes and the merges in rank order (merge ``k`` makes id ``256 + k``) and returns ids.
Each names the usual mistakes: another tie-break, merges across pre-tokens or a split on spaces,
distinct words counted once, one occurrence per word replaced, ids numbered from 0 or 255, no
stop when the pairs run out; the leftmost mergeable pair instead of the lowest-ranked one, the
merges in reverse order, one merge only. An answer that calls what it is to build
(``train_merges``, ``Tokenizer``), or the checker's own reference, fails
(:func:`companion.exercises.rules.forbidden_call`), on a tiny input and on the first random one.

Inputs are drawn afresh on every call (``seed`` repeats a run, for tests): texts of short words
over a few letters, with punctuation, digits and line breaks, so that pairs repeat, compete and
tie; and merges trained on such words, so that merges compete for the same bytes.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable, Sequence

from companion.exercises.core import first_seed, run_student
from companion.exercises.rules import CHECKER_CODE, forbidden_call
from companion.tokenizer import Pair, merge, pretokenize, train_merges

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


# ----------------------------------------------------------------------------- train

FORBIDDEN = {
    name: (
        f"your function calls companion's {name.removeprefix('companion.tokenizer.')}; the "
        "exercise is to build the training loop: count the pairs, pick one, merge it"
    )
    for name in ("companion.tokenizer.train_merges", "companion.tokenizer.Tokenizer.train")
} | CHECKER_CODE
EXHAUSTED = ("ab ab", 10)  # two merges, then no pair is left: train_merges returns two


def _first_only(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """Mistake: only the first occurrence of the pair is replaced."""
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == pair:
            return ids[:i] + [new_id] + ids[i + 2 :]
    return list(ids)


def _naive_train(
    text: str,
    num_merges: int,
    tie: str = "smallest",
    split: str = "pattern",
    weighted: bool = True,
    first_id: int = 256,
    replace: Callable[[list[int], Pair, int], list[int]] = merge,
) -> list[Pair]:
    """The plain training loop; each argument but the first two reproduces a typical mistake.

    ``tie``: "smallest" (the rule), "largest" (the largest pair of ids) or "first" (the pair
    counted first). ``split``: "pattern" (GPT-2's pre-tokens), "none" (the whole text, merges
    across words) or "spaces" (``text.split()``, the spaces dropped). ``weighted``: each distinct
    word counts as often as it occurs, or once. ``first_id``: the id of merge 0. ``replace``:
    the merge of one word."""
    pieces = {"pattern": pretokenize(text), "none": [text], "spaces": text.split()}[split]
    words = Counter(pieces)
    ids = {word: list(word.encode("utf-8")) for word in words}
    merges: list[Pair] = []
    for k in range(num_merges):
        counts: Counter[Pair] = Counter()
        for word, n in words.items():
            for pair in zip(ids[word], ids[word][1:]):
                counts[pair] += n if weighted else 1
        if not counts:
            break
        sign = {"smallest": -1, "largest": 1, "first": 0}[tie]  # 0: the first of equals
        order = {pair: (n, sign * pair[0], sign * pair[1]) for pair, n in counts.items()}
        best = max(order, key=order.__getitem__)
        merges.append(best)
        ids = {word: replace(ids[word], best, first_id + k) for word in words}
    return merges


def _train_inputs(rng: random.Random) -> tuple[str, int]:
    letters = rng.sample("abcdeéo", 3)
    gaps = [" ", " ", " ", ", ", ". ", "\n", " 1", " 22"]
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 5))) for _ in range(18)]
    text = "".join(word + rng.choice(gaps) for word in words).strip()
    return text, rng.randint(4, 12)


TRAIN_MISTAKES: list[Mistake] = [
    (
        lambda text, n: _naive_train(text, n, tie="largest"),
        "on a tie you took the largest pair of ids; the rule is the smallest pair: smallest "
        "first id, then smallest second id",
    ),
    (
        lambda text, n: _naive_train(text, n, tie="first"),
        "on a tie you took the pair counted first (max() keeps the first of equals); the rule "
        "is the smallest pair of ids: max(counts, key=lambda p: (counts[p], -p[0], -p[1]))",
    ),
    (
        lambda text, n: _naive_train(text, n, split="none"),
        "your merges cross pre-token boundaries: cut the text with pretokenize first, and "
        "count pairs inside each pre-token only",
    ),
    (
        lambda text, n: _naive_train(text, n, split="spaces"),
        "you split on spaces (text.split()), which drops the spaces and keeps punctuation on "
        "the words; cut the text with pretokenize, GPT-2's pattern",
    ),
    (
        lambda text, n: _naive_train(text, n, weighted=False),
        "each distinct pre-token counted once: weight its pairs by how often it occurs",
    ),
    (
        lambda text, n: _naive_train(text, n, replace=_first_only),
        "only the first occurrence of the pair in a word was merged; merge every occurrence",
    ),
    (
        lambda text, n: _naive_train(text, n, first_id=0),
        "merge k makes id 256 + k (ids 0 to 255 are the bytes), not k",
    ),
    (
        lambda text, n: _naive_train(text, n, first_id=255),
        "merge k makes id 256 + k, not 255 + k",
    ),
]


def _as_pairs(merges: object) -> list[Pair] | None:
    """``merges`` as a list of pairs of ints, or None if it is not one."""
    if not isinstance(merges, (list, tuple)):
        return None
    pairs = []
    for pair in merges:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            return None
        if not all(type(i) is int for i in pair):
            return None
        pairs.append((pair[0], pair[1]))
    return pairs


def check_train(train_fn: Callable, trials: int = 10, *, seed: int | None = None) -> bool:
    """Check ``train_fn(text, num_merges)`` against :func:`companion.tokenizer.train_merges`."""
    name = getattr(train_fn, "__name__", "your function")
    start = first_seed(seed)
    if _broken_rule(train_fn, [EXHAUSTED, _train_inputs(random.Random(start))], FORBIDDEN):
        return False

    def as_pairs(text: str, num_merges: int) -> list[Pair] | None:
        return _as_pairs(train_fn(text, num_merges))

    as_pairs.__name__ = name
    for trial in range(trials):
        text, num_merges = _train_inputs(random.Random(start + trial))
        expected = train_merges(text, num_merges)
        got, verdict = run_student(train_fn, text, num_merges)
        if verdict:
            print(verdict)
            return False
        pairs = _as_pairs(got)
        if pairs is None:
            print(f"hint: return a list of pairs of int ids, such as [(101, 115)], got {got!r:.80}")
            return False
        if pairs == expected:
            continue
        hint = _explain(
            as_pairs, pairs, (text, num_merges), TRAIN_MISTAKES, _train_inputs, start + trials
        )
        k = next(
            (k for k, (a, b) in enumerate(zip(pairs, expected)) if a != b),
            min(len(pairs), len(expected)),
        )
        where = (
            f"merge {k}: expected {expected[k]}, got {pairs[k]}"
            if k < min(len(pairs), len(expected))
            else f"expected {len(expected)} merges, got {len(pairs)}"
        )
        print(f"hint: {hint or 'the merges differ'}; on ({text!r}, {num_merges}), {where}")
        return False
    got, verdict = run_student(train_fn, *EXHAUSTED)
    if verdict or _as_pairs(got) != train_merges(*EXHAUSTED):
        print(
            f"hint: {EXHAUSTED[0]!r} has pairs for {len(train_merges(*EXHAUSTED))} merges only; "
            f"asked for {EXHAUSTED[1]}, stop when no pair is left and return the merges made "
            f"({verdict or f'got {got!r:.60}'})"
        )
        return False
    print(f"pass: {name} matches train_merges on {trials} random texts")
    return True


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
    word = max(candidates, key=lambda word: _mistakes_shown(word, merges))
    if rng.random() < 0.2:  # a pre-token of one byte, as every text has: "," or "("
        word = rng.choice([b",", b"(", b".", b"\n", b"a", bytes([merges[0][0]])])
    return word, merges


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


ENCODE_FORBIDDEN = {
    "companion.tokenizer.Tokenizer": (
        "your function calls companion's Tokenizer; the exercise is to build the encoder: "
        "find the adjacent pair of lowest rank, merge it, repeat"
    ),
} | CHECKER_CODE
ENCODE_TINY = (b" lowest", [(111, 119), (32, 108)])  # the rules are watched on it first


def _broken_rule(fn: Callable, inputs: Sequence[tuple], forbidden: dict[str, str]) -> bool:
    """Print the hint and return True when ``fn``, run on any of ``inputs``, calls what
    ``forbidden`` names."""
    for args in inputs:
        hint = forbidden_call(fn, args, forbidden)
        if hint:
            print(f"hint: {hint}")
            return True
    return False


def check_encode(encode_fn: Callable, trials: int = 20, *, seed: int | None = None) -> bool:
    """Check ``encode_fn(word, merges)`` against companion's encoder of one pre-token."""
    start = first_seed(seed)
    first = _encode_inputs(random.Random(start))
    if _broken_rule(encode_fn, [ENCODE_TINY, first], ENCODE_FORBIDDEN):
        return False
    return _check(encode_fn, _encode_reference, _encode_inputs, ENCODE_MISTAKES, trials, start)
