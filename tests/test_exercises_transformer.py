"""Chapter 7's checkers pass correct answers and name the typical mistakes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from companion.attention import attention_mask
from companion.exercises.transformer import (
    check_causal_mask,
    check_layer_norm,
    check_shift_right,
)

# ----------------------------------------------------------------------------- causal mask


def tril_mask(num_steps):
    return torch.ones(num_steps, num_steps, dtype=torch.bool).tril()


def comparison_mask(num_steps):
    steps = torch.arange(num_steps)
    return steps[None, :] <= steps[:, None]  # key j <= query i


def companion_mask(num_steps):
    return attention_mask(None, (1, num_steps, num_steps), causal=True)


@pytest.mark.parametrize("answer", [tril_mask, comparison_mask, companion_mask])
def test_causal_mask_pass(answer, capsys):
    assert check_causal_mask(answer)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(), "upper instead of lower triangle"),
        (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), "diagonal masked"),
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1), "the mask is inverted"),
        (lambda n: torch.ones(n, n, dtype=torch.bool), "nothing is masked"),
        (lambda n: torch.ones(n, n, dtype=torch.bool).tril(1), "values differ first at"),
        (lambda n: torch.ones(n, n + 1, dtype=torch.bool).tril(), "shape: expected"),
        (lambda n: torch.ones(n, n).tril(), "expected a boolean mask"),
        (lambda n: [[True] * n] * n, "expected a torch.Tensor, got list"),
    ],
)
def test_causal_mask_hints(wrong, hint, capsys):
    assert not check_causal_mask(wrong)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- layer norm


def by_hand(X, dim=-1, eps=1e-5, unbiased=False, outside=False):
    mean = X.mean(dim=dim, keepdim=True)
    var = X.var(dim=dim, keepdim=True, unbiased=unbiased)
    return (X - mean) / (var.sqrt() + eps if outside else (var + eps).sqrt())


def with_torch(X):
    return F.layer_norm(X, X.shape[-1:])


@pytest.mark.parametrize("answer", [by_hand, with_torch])
def test_layer_norm_pass(answer, capsys):
    assert check_layer_norm(answer)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_layer_norm_module_passes(capsys):
    layer_norm = torch.nn.LayerNorm(8)  # gamma = 1, beta = 0 at initialisation
    assert check_layer_norm(lambda X: layer_norm(X))
    assert "pass:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda X: by_hand(X, dim=0), "normalised over the batch axis"),
        (lambda X: by_hand(X, dim=(0, 1)), "normalised over the batch and the positions"),
        (lambda X: by_hand(X, dim=1), "normalised over the positions (dim=1)"),
        (lambda X: by_hand(X, dim=(1, 2)), "normalised over the positions and the features"),
        (lambda X: by_hand(X, unbiased=True), "unbiased variance"),
        (lambda X: by_hand(X, eps=0.0), "missing epsilon"),
        (lambda X: by_hand(X, outside=True), "epsilon outside the square root"),
        (lambda X: X - X.mean(dim=-1, keepdim=True), "values differ first at"),
        (lambda X: by_hand(X)[:, :, :-1], "shape: expected (3, 5, 8), got (3, 5, 7)"),
    ],
)
def test_layer_norm_hints(wrong, hint, capsys):
    assert not check_layer_norm(wrong)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- shift right


def shift_with_cat(labels, bos_id):
    bos = torch.full((labels.shape[0], 1), bos_id, dtype=labels.dtype)
    return torch.cat((bos, labels[:, :-1]), dim=1)


def shift_with_roll(labels, bos_id):
    shifted = labels.roll(1, dims=1)
    shifted[:, 0] = bos_id
    return shifted


def shift_left(labels, bos_id):
    return torch.cat((labels[:, 1:], torch.full_like(labels[:, :1], bos_id)), dim=1)


@pytest.mark.parametrize("answer", [shift_with_cat, shift_with_roll])
def test_shift_right_pass(answer, capsys):
    assert check_shift_right(answer)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda labels, bos: labels, "these are the labels themselves"),
        (shift_left, "shifted the wrong way"),
        (lambda labels, bos: labels[:, :-1], "shape: expected (3, 7), got (3, 6)"),
        (lambda labels, bos: labels.roll(1, dims=1), "values differ first at position (0, 0)"),
    ],
)
def test_shift_right_hints(wrong, hint, capsys):
    assert not check_shift_right(wrong)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- stubs


@pytest.mark.parametrize(
    "checker, arity",
    [(check_causal_mask, 1), (check_layer_norm, 1), (check_shift_right, 2)],
)
def test_stub_reports_not_implemented(checker, arity, capsys):
    def stub(*args):
        assert len(args) == arity
        raise NotImplementedError

    assert not checker(stub)
    assert "not implemented yet: stub raises NotImplementedError" in capsys.readouterr().out
