"""Checkers for chapter 1, attention pooling."""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, named_like


def _pooling_inputs(generator: torch.Generator) -> Inputs:
    queries = torch.rand(7, generator=generator) * 5  # (num_queries,)
    keys = torch.rand(11, generator=generator) * 5  # (num_keys,)
    values = torch.randn(11, generator=generator)  # (num_keys,)
    bandwidth = 0.3 + torch.rand(1, generator=generator).item()
    return queries, keys, values, bandwidth


def _gaussian_weights(queries, keys, values, bandwidth, axis=-1, scale=True, half=True):
    differences = queries[:, None] - keys[None, :]  # (num_queries, num_keys)
    if scale:
        differences = differences / bandwidth
    scores = -(differences**2) / (2 if half else 1)
    return torch.softmax(scores, dim=axis)


def check_gaussian_weights(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 1: ``student_fn(queries, keys, bandwidth)`` returns the ``(queries, keys)`` weights
    ``softmax_j(-((q_i - k_j) / bandwidth)^2 / 2)``."""

    def adapt(weights_fn):  # the checker's inputs carry values, which this exercise ignores
        return lambda queries, keys, values, bandwidth: weights_fn(queries, keys, bandwidth)

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
        ],
    )


def _laplace_pooling(queries, keys, values, bandwidth, axis=-1, squared=False):
    distances = (queries[:, None] - keys[None, :]).abs() / bandwidth  # (num_queries, num_keys)
    scores = -(distances**2) / 2 if squared else -distances
    return torch.softmax(scores, dim=axis) @ values  # (num_queries,)


def check_laplace_pooling(student_fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 1: ``student_fn(queries, keys, values, bandwidth)`` returns the ``(queries,)``
    predictions of attention pooling with the Laplace kernel, scores ``-|q - k| / bandwidth``."""
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
        ],
    )
