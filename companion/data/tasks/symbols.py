"""Symbol sequences copied or reversed: the quickest checks of a sequence-to-sequence model."""

from __future__ import annotations

import random

from companion._validate import check_integer
from companion.data.tasks.splits import Pair, Splits, make_splits


def _symbol_task(
    num_examples: int,
    seed: int,
    vocab_size: int,
    min_len: int,
    max_len: int,
    reverse: bool,
    val_fraction: float,
    test_fraction: float,
) -> Splits:
    for name, size in (
        ("num_examples", num_examples),
        ("vocab_size", vocab_size),
        ("min_len", min_len),
        ("max_len", max_len),
    ):
        check_integer(name, size)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len; got min_len={min_len}, max={max_len}")
    num_distinct = sum(vocab_size**length for length in range(min_len, max_len + 1))
    if num_examples > num_distinct // 2:  # redrawing repeats would take too long
        raise ValueError(
            f"num_examples={num_examples} is more than half of the {num_distinct} distinct "
            f"sequences of vocab_size={vocab_size}, lengths {min_len}-{max_len}"
        )
    symbols = [str(i) for i in range(vocab_size)]

    def sample(rng: random.Random) -> Pair:
        source = rng.choices(symbols, k=rng.randint(min_len, max_len))
        return source, source[::-1] if reverse else list(source)

    return make_splits(sample, num_examples, seed, val_fraction, test_fraction)


def copy_task(
    num_examples: int,
    seed: int,
    vocab_size: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
) -> Splits:
    """Sequences of symbols ``'0'``, ``'1'``, ... to themselves: the simplest seq2seq check.
    Sizes and lengths are positive integers, ``min_len <= max_len``; ``seed`` an integer."""
    return _symbol_task(
        num_examples, seed, vocab_size, min_len, max_len, False, val_fraction, test_fraction
    )


def reverse_task(
    num_examples: int,
    seed: int,
    vocab_size: int = 10,
    min_len: int = 3,
    max_len: int = 10,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
) -> Splits:
    """Sequences of symbols to their reversal: every output attends to a moving input. The
    arguments are :func:`copy_task`'s."""
    return _symbol_task(
        num_examples, seed, vocab_size, min_len, max_len, True, val_fraction, test_fraction
    )
