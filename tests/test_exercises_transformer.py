"""The Transformer's checkers (sec-transformer) pass correct answers and name the typical mistakes.
Every call is seeded."""

from __future__ import annotations

import contextlib
import io
import math

import pytest
import torch
import torch.nn.functional as F

from companion.exercises.transformer import (
    check_cached_attention,
    check_causal_mask,
    check_layer_norm,
    check_shift_right,
)
from companion.layers.attention import lined_up_mask

# ----------------------------------------------------------------------------- causal mask


def tril_mask(num_steps):
    return torch.ones(num_steps, num_steps, dtype=torch.bool).tril()


def comparison_mask(num_steps):
    steps = torch.arange(num_steps)
    return steps[None, :] <= steps[:, None]  # key j <= query i


def companion_mask(num_steps):
    return lined_up_mask(None, (1, num_steps, num_steps), causal=True)[0]


@pytest.mark.parametrize("answer", [tril_mask, comparison_mask, companion_mask])
def test_causal_mask_pass(answer, capsys):
    assert check_causal_mask(answer, seed=0)
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
    assert not check_causal_mask(wrong, seed=0)
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
    assert check_layer_norm(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_layer_norm_module_passes(capsys):
    def layer_norm(X):  # gamma = 1, beta = 0 at initialisation
        return torch.nn.LayerNorm(X.shape[-1])(X)

    assert check_layer_norm(layer_norm, seed=0)
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
        (lambda X: by_hand(X)[:, :, :-1], "shape: expected"),
    ],
)
def test_layer_norm_hints(wrong, hint, capsys):
    assert not check_layer_norm(wrong, seed=0)
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
    assert check_shift_right(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda labels, bos: labels, "these are the labels themselves"),
        (shift_left, "shifted the wrong way"),
        (lambda labels, bos: labels[:, :-1], "shape: expected"),
        (lambda labels, bos: labels.roll(1, dims=1), "values differ first at position (0, 0)"),
    ],
)
def test_shift_right_hints(wrong, hint, capsys):
    assert not check_shift_right(wrong, seed=0)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- the chapter's
# variables: a solution that reads them instead of its arguments must fail.


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    num_steps, d, bos = 5, 8, 1  # the chapter's decoder steps, width and <bos> id
    layer_norm = torch.nn.LayerNorm(d)
    hard_wired = [
        (check_causal_mask, lambda n: tril_mask(num_steps)),
        (check_layer_norm, lambda X: F.layer_norm(X, (d,))),
        (check_layer_norm, lambda X: layer_norm(X)),
        (check_shift_right, lambda labels, bos_id: shift_with_cat(labels, bos)),
    ]
    for checker, wrong in hard_wired:
        for seed in range(3):
            assert not checker(wrong, seed=seed)
            assert "pass" not in capsys.readouterr().out


def test_sizes_vary_and_are_never_the_chapters():
    calls = []

    def spy(X):
        calls[-1].append(tuple(X.shape))
        return by_hand(X)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        calls.append([])
        assert check_layer_norm(spy, seed=seed)
    assert len({tuple(shapes) for shapes in calls}) == len(calls)
    for batch, steps, features in sum(calls, []):
        assert batch != 2 and steps not in (3, 5, 6) and features not in (4, 8)
        assert len({batch, steps, features}) == 3


# ----------------------------------------------------------------------------- KV-cache step


def cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
    """The answer the chapter's solution gives: split, append, mask aligned with the last keys."""
    batch, new, width = X.shape
    head_dim = width // num_heads

    def split(M):
        return M.reshape(batch, new, num_heads, head_dim).transpose(1, 2)

    keys = torch.cat((cached_keys, split(X @ W_k)), dim=2)
    values = torch.cat((cached_values, split(X @ W_v)), dim=2)
    scores = split(X @ W_q) @ keys.transpose(-2, -1) / math.sqrt(head_dim)
    cached = cached_keys.shape[2]
    visible = torch.ones(new, cached + new, dtype=torch.bool).tril(diagonal=cached)
    weights = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
    output = (weights @ values).transpose(1, 2).reshape(batch, new, width) @ W_o
    return output, keys, values


def cached_attention_with_sdpa(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
    """Another right answer: PyTorch's fused attention with an explicit boolean mask."""
    batch, new, width = X.shape

    def split(M):
        return M.reshape(batch, new, num_heads, -1).transpose(1, 2)

    keys = torch.cat((cached_keys, split(X @ W_k)), dim=2)
    values = torch.cat((cached_values, split(X @ W_v)), dim=2)
    cached = cached_keys.shape[2]
    mask = torch.ones(new, cached + new, dtype=torch.bool).tril(diagonal=cached)
    heads = F.scaled_dot_product_attention(split(X @ W_q), keys, values, attn_mask=mask)
    return heads.transpose(1, 2).reshape(batch, new, width) @ W_o, keys, values


@pytest.mark.parametrize("answer", [cached_attention, cached_attention_with_sdpa])
@pytest.mark.parametrize("seed", range(5))
def test_cached_attention_pass(answer, seed, capsys):
    assert check_cached_attention(answer, seed=seed)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_cached_attention_draws_one_and_several_new_steps_never_the_chapter_sizes():
    seen_new, seen_heads, seen_head_dims = set(), set(), set()

    def spy(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
        seen_new.add(X.shape[1])
        seen_heads.add(num_heads)
        seen_head_dims.add(X.shape[2] // num_heads)
        return cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads)

    for seed in range(20):
        with contextlib.redirect_stdout(io.StringIO()):
            assert check_cached_attention(spy, seed=seed)
    assert 1 in seen_new and seen_new - {1}, "single steps and several"
    assert not seen_heads & {2, 4} and not seen_head_dims & {4, 16}


def with_mistake(**mistake):
    """A student's answer that makes one mistake, written out as a student would."""

    def answer(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
        batch, new, width = X.shape
        p = width // num_heads
        if mistake.get("weights") == "transposed":
            W_q, W_k, W_v, W_o = W_q.T, W_k.T, W_v.T, W_o.T

        def split(M):
            if mistake.get("heads") == "reshaped":
                return M.reshape(batch, num_heads, M.shape[1], p)
            return M.reshape(batch, M.shape[1], num_heads, p).transpose(1, 2)

        def merge(M):
            if mistake.get("heads") == "reshaped":
                return M.reshape(batch, M.shape[2], width)
            return M.transpose(1, 2).reshape(batch, M.shape[2], width)

        W_value = W_k if mistake.get("values") == "W_k" else W_v
        new_keys, new_values = split(X @ W_k), split(X @ W_value)
        if mistake.get("project") == "none":
            new_keys = new_values = split(X)
        if mistake.get("project") == "cache too":
            cached_keys = split(merge(cached_keys) @ W_k)
            cached_values = split(merge(cached_values) @ W_v)
        keys = torch.cat((cached_keys, new_keys), dim=2)
        values = torch.cat((cached_values, new_values), dim=2)
        if mistake.get("append") == "forgotten":
            keys, values = cached_keys, cached_values
        elif mistake.get("append") == "only new":
            keys, values = new_keys, new_values
        elif mistake.get("append") == "in front":
            keys = torch.cat((new_keys, cached_keys), dim=2)
            values = torch.cat((new_values, cached_values), dim=2)
        scores = split(X @ W_q) @ keys.transpose(-2, -1)
        scores = scores / {"none": 1.0, "d": math.sqrt(width)}.get(
            mistake.get("scale"), math.sqrt(p)
        )
        steps = keys.shape[2]
        if mistake.get("mask") != "none":
            shift = 0 if mistake.get("mask") == "tril" else steps - new
            visible = torch.ones(new, steps, dtype=torch.bool).tril(diagonal=shift)
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = scores.softmax(dim=-2 if mistake.get("softmax") == "queries" else -1)
        output = merge(weights @ values)
        if mistake.get("W_o") != "forgotten":
            output = output @ W_o
        return output, keys, values

    return answer


@pytest.mark.parametrize(
    "mistake, hint",
    [
        (dict(append="forgotten"), "the cache was not appended"),
        (dict(append="only new"), "only the new steps' keys and values"),
        (dict(append="in front"), "went in front of the cached ones"),
        (dict(project="none"), "appended without their projections"),
        (dict(project="cache too"), "the cached keys and values were projected again"),
        (dict(values="W_k"), "the values were projected with W_k"),
        (dict(weights="transposed"), "not X @ W_q.T"),
        (dict(scale="none"), "the scores are not scaled"),
        (dict(scale="d"), "scaled by sqrt(d), the full width"),
        (dict(mask="tril"), "the causal mask hides cached steps"),
        (dict(mask="none"), "each may see only the steps up to its own"),
        (dict(heads="reshaped"), "heads and positions are mixed up"),
        (dict(W_o="forgotten"), "not projected: multiply by W_o"),
        (dict(softmax="queries"), "the softmax runs over the wrong axis"),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_cached_attention_hints(mistake, hint, seed, capsys):
    assert not check_cached_attention(with_mistake(**mistake), seed=seed)
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize("seed", range(5))
def test_cached_attention_hard_wired_to_the_chapter_fails(seed, capsys):
    num_heads = 4  # the chapter's trained model

    def reads_the_notebook(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, heads):
        return cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads)

    assert not check_cached_attention(reads_the_notebook, seed=seed)
    assert capsys.readouterr().out.startswith(("hint:", "error:"))
