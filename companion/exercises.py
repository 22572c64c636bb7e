"""Checkers for the book's coding exercises.

A checker runs the student's function on fresh random inputs and compares it with the
reference. It prints ``pass``, or a hint naming the first thing that differs: a shape, a NaN,
a known mistake (wrong softmax axis, a missing scale), or the first differing position.
Each checker returns ``True`` on a pass, so an instructor can grade with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

Inputs = tuple
Mistake = tuple[Callable[..., torch.Tensor], str]  # (what the mistake computes, its hint)


def check(
    student_fn: Callable[..., torch.Tensor],
    reference_fn: Callable[..., torch.Tensor],
    make_inputs: Callable[[torch.Generator], Inputs],
    mistakes: Sequence[Mistake] = (),
    trials: int = 5,
    atol: float = 1e-5,
) -> bool:
    """Run ``student_fn`` and ``reference_fn`` on ``trials`` random inputs; print the verdict."""
    name = getattr(student_fn, "__name__", "your function")
    for trial in range(trials):
        inputs = make_inputs(torch.Generator().manual_seed(trial))
        expected = reference_fn(*inputs)
        try:
            got = student_fn(*inputs)
        except NotImplementedError:
            print(f"not implemented yet: {name} raises NotImplementedError")
            return False
        except Exception as error:  # the student's bug, reported instead of a traceback
            print(f"error: {name} raised {type(error).__name__}: {error}")
            return False
        hint = _first_difference(got, expected, inputs, mistakes, atol)
        if hint:
            print(f"hint: {hint}")
            return False
    print(f"pass: {name} matches the reference on {trials} random inputs")
    return True


def _first_difference(got, expected: torch.Tensor, inputs: Inputs, mistakes, atol: float):
    if not isinstance(got, torch.Tensor):
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        return f"shape: expected {tuple(expected.shape)}, got {tuple(got.shape)}"
    got = got.detach().to(expected.dtype)
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        position = tuple(torch.nonzero(torch.isnan(got))[0].tolist())
        return f"NaN at position {position}, where the reference has a number"
    if torch.allclose(got, expected, atol=atol):
        return None
    for mistake, hint in mistakes:
        wrong = mistake(*inputs)
        if wrong.shape == got.shape and torch.allclose(got, wrong, atol=atol):
            return hint
    position = tuple(torch.nonzero(~torch.isclose(got, expected, atol=atol))[0].tolist())
    return (
        f"values differ first at position {position}: expected "
        f"{expected[position].item():.4f}, got {got[position].item():.4f}"
    )


# Chapter 1: attention pooling ---------------------------------------------------------------


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
        _named(adapt(student_fn), student_fn),
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


def _named(fn: Callable, like: Callable) -> Callable:
    fn.__name__ = getattr(like, "__name__", "your function")
    return fn
