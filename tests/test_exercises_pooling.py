"""The chapter 1 checkers pass correct answers, name typical mistakes, draw fresh sizes on
every call, and fail a solution hard-wired to the chapter's variables."""

from __future__ import annotations

import re

import torch

from companion.data import kernel_regression_data
from companion.exercises import check_gaussian_weights, check_laplace_pooling


def gaussian(queries, keys, bandwidth, axis=-1, scale=True, half=True):
    distances = queries[:, None] - keys[None, :]
    if scale:
        distances = distances / bandwidth
    return torch.softmax(-(distances**2) / (2 if half else 1), dim=axis)


def test_gaussian_weights_pass(capsys):
    assert check_gaussian_weights(gaussian)
    assert capsys.readouterr().out.startswith("pass: gaussian matches the reference")


def test_gaussian_weights_hints(capsys):
    cases = [
        (lambda q, k, b: gaussian(q, k, b, axis=0), "softmax over the wrong axis"),
        (lambda q, k, b: gaussian(q, k, b, scale=False), "the bandwidth is missing"),
        (lambda q, k, b: gaussian(q, k, b, half=False), "the factor 1/2 is missing"),
        (lambda q, k, b: gaussian(q, k, b) + 0.1, "values differ first at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b) * torch.nan, "NaN at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b).tolist(), "expected a torch.Tensor, got list"),
    ]
    for wrong, hint in cases:
        assert not check_gaussian_weights(wrong)
        assert hint in capsys.readouterr().out


def test_a_transposed_answer_gets_the_shape_it_should_have(capsys):
    assert not check_gaussian_weights(lambda q, k, b: gaussian(q, k, b).T)
    rows, columns, got_rows, got_columns = map(int, re.findall(r"\d+", capsys.readouterr().out))
    assert (got_rows, got_columns) == (columns, rows) and rows != columns


def test_unfinished_and_crashing_answers(capsys):
    def stub(queries, keys, values, bandwidth):
        raise NotImplementedError()

    assert not check_laplace_pooling(stub)
    assert capsys.readouterr().out.startswith("not implemented yet")
    assert not check_laplace_pooling(lambda q, k, v, b: None)
    assert capsys.readouterr().out.startswith("not implemented yet: <lambda> returns None")
    assert not check_laplace_pooling(lambda q, k, v, b: q @ k)
    assert "error: <lambda> raised RuntimeError" in capsys.readouterr().out


def laplace(queries, keys, values, bandwidth, squared=False, scale=True):
    distances = (queries[:, None] - keys[None, :]).abs() / (bandwidth if scale else 1.0)
    scores = -(distances**2) / 2 if squared else -distances
    return torch.softmax(scores, dim=-1) @ values


def test_laplace_pooling(capsys):
    assert check_laplace_pooling(laplace)
    assert capsys.readouterr().out.startswith("pass")
    cases = [
        (lambda q, k, v, b: laplace(q, k, v, b, squared=True), "that is the Gaussian kernel"),
        (lambda q, k, v, b: laplace(q, k, v, b, scale=False), "the bandwidth is missing"),
    ]
    for wrong, hint in cases:
        assert not check_laplace_pooling(wrong)
        assert hint in capsys.readouterr().out


def test_sizes_are_fresh_on_every_call(capsys):
    shapes = set()

    def record(queries, keys, bandwidth):
        shapes.add((len(queries), len(keys)))
        return gaussian(queries, keys, bandwidth)

    for _ in range(4):
        assert check_gaussian_weights(record)
    assert len(shapes) > 4  # 5 trials a call, with sizes drawn for each
    assert all(q != k and 50 not in (q, k) for q, k in shapes)


def test_a_seed_repeats_a_run(capsys):
    shapes = []

    def record(queries, keys, bandwidth):
        shapes.append((len(queries), len(keys), round(float(queries[0]), 6)))
        return gaussian(queries, keys, bandwidth)

    check_gaussian_weights(record, seed=7)
    check_gaussian_weights(record, seed=7)
    assert shapes[:5] == shapes[5:]


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The chapter's variables: 50 training and 50 test points, the Gaussian at σ = 0.25."""
    x_train, y_train, x_test, _ = kernel_regression_data(n_train=50, noise=0.5, seed=0)

    def gaussian_weights(queries, keys, bandwidth):
        return gaussian(x_test, x_train, bandwidth)  # ignores its queries and keys

    def laplace_pooling(queries, keys, values, bandwidth):
        return laplace(queries, keys, y_train, bandwidth)  # the chapter's values

    for _ in range(3):
        assert not check_gaussian_weights(gaussian_weights)
        assert "hint: shape: expected" in capsys.readouterr().out
        assert not check_laplace_pooling(laplace_pooling)
        assert "error: laplace_pooling raised RuntimeError" in capsys.readouterr().out


def test_mistakes_that_agree_on_one_input_are_told_apart_on_fresh_ones(capsys):
    """On all-positive inputs, clamping at 0 and taking the absolute value agree. The first
    trial draws such an input, the fresh ones do not: the hint names the mistake made."""
    from companion.exercises.core import check

    def make_inputs(generator):
        values = torch.rand(6, generator=generator) + 0.1
        if make_inputs.calls:
            values[::2] *= -1  # mixed signs from the second draw on
        make_inputs.calls += 1
        return (values,)

    make_inputs.calls = 0
    mistakes = [
        (lambda x: x.clamp(min=0), "clamped at 0"),
        (lambda x: x.abs(), "took the absolute value"),
    ]
    assert not check(torch.abs, lambda x: 2 * x, make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: took the absolute value\n"
    make_inputs.calls = 0
    assert not check(lambda x: x.clamp(min=0), lambda x: 2 * x, make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: clamped at 0\n"
