"""The attention-pooling checkers (sec-attention-pooling) pass correct answers, name typical
mistakes, and fail a solution hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import re

import torch

from companion import NWKernelRegression, nadaraya_watson
from companion.data.regression import kernel_regression_data
from companion.exercises import check_gaussian_weights, check_laplace_pooling


def gaussian(queries, keys, bandwidth, axis=-1, scale=True, half=True):
    distances = queries[:, None] - keys[None, :]
    if scale:
        distances = distances / bandwidth
    return torch.softmax(-(distances**2) / (2 if half else 1), dim=axis)


def divided_by_sigma(queries, keys, bandwidth):
    """The commonest slip with bandwidths: the squared distance over sigma, not sigma^2."""
    return torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth), dim=-1)


def test_gaussian_weights_pass(capsys):
    assert check_gaussian_weights(gaussian, seed=0)
    assert capsys.readouterr().out.startswith("pass: gaussian matches the reference")


def test_gaussian_weights_hints(capsys):
    cases = [
        (lambda q, k, b: gaussian(q, k, b, axis=0), "softmax over the wrong axis"),
        (lambda q, k, b: gaussian(q, k, b, scale=False), "the bandwidth is missing"),
        (lambda q, k, b: gaussian(q, k, b, half=False), "the factor 1/2 is missing"),
        (divided_by_sigma, "divided by the bandwidth, not by its square"),
        (lambda q, k, b: gaussian(q, k, b) + 0.1, "values differ first at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b) * torch.nan, "NaN at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b).tolist(), "expected a torch.Tensor, got list"),
    ]
    for wrong, hint in cases:
        assert not check_gaussian_weights(wrong, seed=0)
        assert hint in capsys.readouterr().out


def test_a_transposed_answer_gets_the_shape_it_should_have(capsys):
    assert not check_gaussian_weights(lambda q, k, b: gaussian(q, k, b).T, seed=0)
    rows, columns, got_rows, got_columns = map(int, re.findall(r"\d+", capsys.readouterr().out))
    assert (got_rows, got_columns) == (columns, rows) and rows != columns


def laplace(queries, keys, values, bandwidth, squared=False, scale=True):
    distances = (queries[:, None] - keys[None, :]).abs() / (bandwidth if scale else 1.0)
    scores = -(distances**2) / 2 if squared else -distances
    return torch.softmax(scores, dim=-1) @ values


def test_laplace_pooling(capsys):
    assert check_laplace_pooling(laplace, seed=0)
    assert capsys.readouterr().out.startswith("pass")
    cases = [
        (lambda q, k, v, b: laplace(q, k, v, b, squared=True), "that is the Gaussian kernel"),
        (lambda q, k, v, b: laplace(q, k, v, b, scale=False), "the bandwidth is missing"),
    ]
    for wrong, hint in cases:
        assert not check_laplace_pooling(wrong, seed=0)
        assert hint in capsys.readouterr().out


def test_sizes_vary_and_are_never_the_chapters(capsys):
    shapes = set()

    def record(queries, keys, bandwidth):
        shapes.add((len(queries), len(keys)))
        return gaussian(queries, keys, bandwidth)

    for seed in range(4):
        assert check_gaussian_weights(record, seed=seed)
    assert len(shapes) > 4  # 5 trials a call, with sizes drawn for each
    assert all(q != k and 50 not in (q, k) for q, k in shapes)


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The chapter's variables: 50 training and 50 test points, the Gaussian at σ = 0.25."""
    x_train, y_train, x_test, _ = kernel_regression_data(n_train=50, noise=0.5, seed=0)

    def gaussian_weights(queries, keys, bandwidth):
        return gaussian(x_test, x_train, bandwidth)  # ignores its queries and keys

    def laplace_pooling(queries, keys, values, bandwidth):
        return laplace(queries, keys, y_train, bandwidth)  # the chapter's values

    for seed in range(3):
        assert not check_gaussian_weights(gaussian_weights, seed=seed)
        assert "hint: shape: expected" in capsys.readouterr().out
        assert not check_laplace_pooling(laplace_pooling, seed=seed)
        assert "error: laplace_pooling raised RuntimeError" in capsys.readouterr().out


def test_an_answer_that_calls_the_chapters_pooling_fails(capsys):
    """Right numbers, but the exercise is to compute them: calling the chapter's pooling, by
    any name, breaks its rule."""

    def shortcut_weights(queries, keys, bandwidth):
        return nadaraya_watson(queries, keys, torch.zeros_like(keys), bandwidth)[1]

    def shortcut_pooling(queries, keys, values, bandwidth):
        return NWKernelRegression(w=1 / bandwidth)(queries, keys, values)  # a Gaussian anyway

    assert not check_gaussian_weights(shortcut_weights, seed=0)
    assert "calls the chapter's own pooling" in capsys.readouterr().out
    assert not check_laplace_pooling(shortcut_pooling, seed=0)
    assert "calls the chapter's own pooling" in capsys.readouterr().out
    assert check_gaussian_weights(gaussian, seed=0)  # torch.softmax itself is allowed
