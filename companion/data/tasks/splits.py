"""Cutting generated examples into train, validation and test sets with no shared source."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from companion._validate import check_callable, check_integer, check_number, check_seed
from companion.data.text import ParallelCorpus


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
    check_integer("num_examples", num_examples)
    for name, fraction in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        check_number(name, fraction, above=0, below=1, what="a fraction")
    if val_fraction + test_fraction >= 1:
        raise ValueError(
            "val_fraction + test_fraction must be < 1, the rest being the training set; got "
            f"{val_fraction} + {test_fraction} = {val_fraction + test_fraction:g}"
        )
    num_val, num_test = int(num_examples * val_fraction), int(num_examples * test_fraction)
    num_train = num_examples - num_val - num_test
    if min(num_train, num_val, num_test) < 1:
        raise ValueError(
            f"num_examples={num_examples} leaves a split empty with val_fraction={val_fraction}"
            f" and test_fraction={test_fraction}"
        )
    return num_train, num_val, num_test


def make_splits(
    sample: Callable[[random.Random], Pair],
    num_examples: int,
    seed: int,
    val_fraction: float,
    test_fraction: float,
) -> Splits:
    """Draw ``num_examples`` pairs with distinct sources and cut them into three splits:
    ``sample(rng)`` draws a pair, ``seed`` is an integer, and the fractions, each in (0, 1),
    leave the training set the rest."""
    check_callable("sample", sample, "a function sample(rng) returning (source, target)")
    check_seed(seed)
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
