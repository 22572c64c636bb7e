"""Checkers for the exercises of sec-attention-pooling (attention pooling).

The numbers of queries and keys are drawn afresh on every call, always different from each
other (so that a softmax over the wrong axis shows in the shape) and never the chapter's own
(its 50 training and 50 test points, and the 2 queries and 4 keys its solution prints), so a
solution that reads ``x_test`` or ``x_train`` instead of its arguments fails. An answer must
compute the weights itself: one that calls the chapter's ``nadaraya_watson`` (or anything else
of ``companion.layers.pooling``) is told so, though its numbers are right.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, first_seed, named_like, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw

CHAPTER_SIZES = (2, 4, 50)  # points of the chapter's data, and of its printed example
OWN_CODE = {
    "companion.layers.pooling": (
        "the answer calls the chapter's own pooling (nadaraya_watson or NWKernelRegression): "
        "the exercise is to compute it yourself, with torch operations"
    )
}


def _pooling_inputs(generator: torch.Generator) -> Inputs:
    num_queries = draw(generator, 3, 12, avoid=CHAPTER_SIZES)
    num_keys = draw(generator, 5, 20, avoid=(*CHAPTER_SIZES, num_queries))
    queries = torch.rand(num_queries, generator=generator) * 5  # (num_queries,)
    keys = torch.rand(num_keys, generator=generator) * 5  # (num_keys,)
    values = torch.randn(num_keys, generator=generator)  # (num_keys,)
    bandwidth = 0.3 + torch.rand(1, generator=generator).item()
    return queries, keys, values, bandwidth


def _gaussian_weights(
    queries, keys, values, bandwidth, axis=-1, scale=True, half=True, squared_scale=True
):
    differences = queries[:, None] - keys[None, :]  # (num_queries, num_keys)
    if scale and squared_scale:
        differences = differences / bandwidth
    scores = -(differences**2) / (2 if half else 1)
    if scale and not squared_scale:  # the squared distance divided by sigma, not sigma^2
        scores = scores / bandwidth
    return torch.softmax(scores, dim=axis)


def _uses_own_code(student_fn: Callable, inputs: Inputs) -> bool:
    """Print the hint and return True when ``student_fn(*inputs)`` calls the chapter's
    pooling instead of computing it."""
    hint = forbidden_call(student_fn, inputs, OWN_CODE)
    if hint:
        print(f"hint: {hint}")
    return hint is not None


def check_gaussian_weights(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-attention-pooling: ``student_fn(queries, keys, bandwidth)`` returns the
    ``(queries, keys)`` weights ``softmax_j(-((q_i - k_j) / bandwidth)^2 / 2)``."""

    def adapt(weights_fn):  # the checker's inputs carry values, which this exercise ignores
        return lambda queries, keys, values, bandwidth: weights_fn(queries, keys, bandwidth)

    start = first_seed(seed)
    if _uses_own_code(adapt(student_fn), _pooling_inputs(seeded_generator(start))):
        return False
    return check(
        named_like(adapt(student_fn), student_fn),
        lambda q, k, v, b: _gaussian_weights(q, k, v, b),
        _pooling_inputs,
        mistakes=[
            (
                lambda q, k, v, b: _gaussian_weights(q, k, v, b, axis=0),
                "softmax over the wrong axis: each row (one query) must sum to 1 over the keys",
            ),
            (
                lambda q, k, v, b: _gaussian_weights(q, k, v, b, scale=False),
                "the bandwidth is missing: divide q - k by the bandwidth before squaring",
            ),
            (
                lambda q, k, v, b: _gaussian_weights(q, k, v, b, half=False),
                "the score is -(distance)^2 / 2: the factor 1/2 is missing",
            ),
            (
                lambda q, k, v, b: _gaussian_weights(q, k, v, b, squared_scale=False),
                "the squared distance is divided by the bandwidth, not by its square: divide "
                "q - k by the bandwidth, then square",
            ),
        ],
        seed=start,
    )


def _laplace_pooling(queries, keys, values, bandwidth, axis=-1, squared=False, scale=True):
    distances = (queries[:, None] - keys[None, :]).abs()  # (num_queries, num_keys)
    if scale:
        distances = distances / bandwidth
    scores = -(distances**2) / 2 if squared else -distances
    return torch.softmax(scores, dim=axis) @ values  # (num_queries,)


def check_laplace_pooling(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-attention-pooling: ``student_fn(queries, keys, values, bandwidth)`` returns the
    ``(queries,)`` predictions of attention pooling with the Laplace kernel, scores
    ``-|q - k| / bandwidth``."""
    start = first_seed(seed)
    if _uses_own_code(student_fn, _pooling_inputs(seeded_generator(start))):
        return False
    return check(
        student_fn,
        _laplace_pooling,
        _pooling_inputs,
        mistakes=[
            (
                lambda q, k, v, b: _laplace_pooling(q, k, v, b, axis=0),
                "softmax over the wrong axis: normalise each query's scores over the keys",
            ),
            (
                lambda q, k, v, b: _laplace_pooling(q, k, v, b, squared=True),
                "that is the Gaussian kernel; the Laplace score is -|q - k| / bandwidth, unsquared",
            ),
            (
                lambda q, k, v, b: _laplace_pooling(q, k, v, b, scale=False),
                "the bandwidth is missing: the score is -|q - k| / bandwidth",
            ),
        ],
        seed=start,
    )
