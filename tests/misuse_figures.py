"""What a student does wrong with the attention explorer (``companion.show_attention``), and the
error each gets: the rows that ``tests/test_misuse.py`` appends to its ``MISUSES`` table.

Each row is ``(what a student does, a zero-argument call, the exception, a regex its message
must match)``. Every message names the argument and what it got.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from companion.figures.explorer import show_attention

TOKENS = ["the", "cat", "sat"]
W = torch.softmax(torch.arange(9.0).reshape(3, 3), dim=-1)  # (queries, keys), rows sum to 1
HEADS = torch.stack([W, W.flip(-1)])  # (heads, queries, keys)


def with_value(value: float, at: tuple[int, int] = (1, 2)) -> torch.Tensor:
    weights = W.clone()
    weights[at] = value
    return weights


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # weights
    (
        "show_attention(weights of 2 queries, 3 query tokens)",
        lambda: show_attention(W[:2], TOKENS),
        ValueError,
        r"weights' last two axes must be \(queries, keys\) = \(3, 3\), one row per query "
        r"token .*; got shape \(2, 3\)",
    ),
    (
        "show_attention(weights, queries, keys) with one key too many",
        lambda: show_attention(W, TOKENS, [*TOKENS, "mat"]),
        ValueError,
        r"weights' last two axes must be \(queries, keys\) = \(3, 4\).*got shape \(3, 3\)",
    ),
    (
        "show_attention(a batch of weights, (batch, layers, heads, queries, keys))",
        lambda: show_attention(HEADS[None, None].expand(2, 1, 2, 3, 3), TOKENS),
        ValueError,
        r"weights must have shape \(queries, keys\), \(heads, queries, keys\) or \(layers, "
        r"heads, queries, keys\); got shape \(2, 1, 2, 3, 3\) \(of a batch, pass one example: "
        r"weights\[0\]\)",
    ),
    (
        "show_attention(a list of lists of weights)",
        lambda: show_attention(W.tolist(), TOKENS),
        TypeError,
        r"weights must be a tensor or an array of shape .*; got \[\[",
    ),
    (
        "show_attention(a boolean mask in place of the weights)",
        lambda: show_attention(W > 0.1, TOKENS),
        TypeError,
        r"weights must be real numbers; got a torch.bool tensor of shape \(3, 3\)",
    ),
    (
        "show_attention(weights with a NaN: a query whose every score was -inf)",
        lambda: show_attention(with_value(float("nan")), TOKENS),
        ValueError,
        r"weights must be finite; weights\[1, 2\] holds nan",
    ),
    (
        "show_attention(scores, not weights: a negative number)",
        lambda: show_attention(with_value(-0.5), TOKENS),
        ValueError,
        r"weights must be >= 0, softmax weights rather than scores; weights\[1, 2\] holds -0.5",
    ),
    (
        "show_attention(weights recorded in training mode, scaled by dropout)",
        lambda: show_attention(HEADS / 0.9, TOKENS),
        ValueError,
        r"each row of weights must sum to 1 .*; weights\[0, 0\] sums to 1.111 \(weights "
        r"recorded in training mode",
    ),
    (
        "show_attention(weights with a masked query's row of zeros, without allow_masked)",
        lambda: show_attention(np.array([[0.5, 0.5], [0.0, 0.0]]), ["a", "b"]),
        ValueError,
        r"weights\[1\] sums to 0 \(a query masked out entirely\? pass allow_masked=True\)",
    ),
    (
        "show_attention(more weights than a page should carry)",
        lambda: show_attention(torch.full((9, 8, 32, 32), 1 / 32), [str(i) for i in range(32)]),
        ValueError,
        r"weights hold 73728 numbers, more than the 65536 an explorer embeds in a page",
    ),
    # tokens and labels
    (
        "show_attention(weights, 'the cat sat'): a str where a list of tokens is meant",
        lambda: show_attention(W, "the cat sat"),
        TypeError,
        r"queries must be a list of str tokens, one per query .*; got the str 'the cat sat'",
    ),
    (
        "show_attention(weights, token ids in place of tokens)",
        lambda: show_attention(W, [4, 7, 9]),
        TypeError,
        r"queries\[0\] is 4 \(int\): queries must be a list of str tokens",
    ),
    (
        "show_attention(weights, queries, keys=a tensor of ids)",
        lambda: show_attention(W, TOKENS, torch.tensor([4, 7, 9])),
        TypeError,
        r"keys must be a list of str tokens, one per key .*; got a torch.int64 tensor",
    ),
    (
        "show_attention(two heads' weights, heads=['one head'])",
        lambda: show_attention(HEADS, TOKENS, heads=["one head"]),
        ValueError,
        r"heads has 1 label for weights of 2 heads \(a torch.float32 tensor of shape "
        r"\(2, 3, 3\)\): one label per head",
    ),
    (
        "show_attention(one layer's weights, layers=['layer 1', 'layer 2'])",
        lambda: show_attention(HEADS, TOKENS, layers=["layer 1", "layer 2"]),
        ValueError,
        r"layers has 2 labels for weights of 1 layer \(.*\): one label per layer",
    ),
    (
        "show_attention(two heads' weights, heads='ab')",
        lambda: show_attention(HEADS, TOKENS, heads="ab"),
        TypeError,
        r"heads must be a list of str labels, one per head; got the str 'ab'",
    ),
    # the other arguments
    (
        "show_attention(weights, tokens, query=3) for 3 queries",
        lambda: show_attention(W, TOKENS, query=3),
        ValueError,
        r"query must be an integer in \[0, 2\]; got 3",
    ),
    (
        "show_attention(weights, tokens, decimals=0)",
        lambda: show_attention(W, TOKENS, decimals=0),
        ValueError,
        r"decimals must be an integer in \[1, 6\]; got 0",
    ),
    (
        "show_attention(weights, tokens, title=3)",
        lambda: show_attention(W, TOKENS, title=3),
        TypeError,
        r"title must be a str or None; got 3 \(int\)",
    ),
    (
        "show_attention(weights, tokens, allow_masked='yes')",
        lambda: show_attention(W, TOKENS, allow_masked="yes"),
        TypeError,
        r"allow_masked must be True or False; got the str 'yes'",
    ),
]
