"""The exercise checkers pass correct answers and name typical mistakes."""

from __future__ import annotations

import torch

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
        (lambda q, k, b: gaussian(q, k, b).T, "shape: expected (7, 11), got (11, 7)"),
        (lambda q, k, b: gaussian(q, k, b) + 0.1, "values differ first at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b) * torch.nan, "NaN at position (0, 0)"),
        (lambda q, k, b: gaussian(q, k, b).tolist(), "expected a torch.Tensor, got list"),
    ]
    for wrong, hint in cases:
        assert not check_gaussian_weights(wrong)
        assert hint in capsys.readouterr().out


def test_unfinished_and_crashing_answers(capsys):
    def stub(queries, keys, values, bandwidth):
        raise NotImplementedError()

    assert not check_laplace_pooling(stub)
    assert capsys.readouterr().out.startswith("not implemented yet")
    assert not check_laplace_pooling(lambda q, k, v, b: q @ k)
    assert "error: <lambda> raised RuntimeError" in capsys.readouterr().out


def test_laplace_pooling(capsys):
    def laplace(queries, keys, values, bandwidth, squared=False):
        distances = (queries[:, None] - keys[None, :]).abs() / bandwidth
        scores = -(distances**2) / 2 if squared else -distances
        return torch.softmax(scores, dim=-1) @ values

    assert check_laplace_pooling(laplace)
    assert not check_laplace_pooling(lambda q, k, v, b: laplace(q, k, v, b, squared=True))
    assert "that is the Gaussian kernel" in capsys.readouterr().out
