"""The Transformer's checkers (sec-transformer) pass correct answers and name the typical mistakes.
Every call is seeded."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from companion.exercises.transformer import (
    _decoder_block,
    check_causal_mask,
    check_decoder_block,
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


# ----------------------------------------------------------------------------- decoder block


def attend(queries, keys_values, weights, num_heads, visible):
    W_q, W_k, W_v, W_o = weights
    batch, d = queries.shape[0], queries.shape[-1]
    p = d // num_heads

    def split(M):
        return M.reshape(batch, M.shape[1], num_heads, p).transpose(1, 2)

    scores = split(queries @ W_q) @ split(keys_values @ W_k).transpose(-2, -1) / math.sqrt(p)
    scores = scores.masked_fill(~visible[:, None], float("-inf"))
    heads = scores.softmax(dim=-1) @ split(keys_values @ W_v)
    return heads.transpose(1, 2).reshape(batch, queries.shape[1], d) @ W_o


def add_norm(X, Y, gamma, beta):
    return F.layer_norm(X + Y, X.shape[-1:], gamma, beta)


def decoder_block(X, H, enc_valid_lens, params, num_heads):
    """The chapter's solution: three sublayers, each in add & norm."""
    m, n = X.shape[1], H.shape[1]
    causal = torch.ones(m, m, dtype=torch.bool).tril()[None]
    padding = (torch.arange(n) < enc_valid_lens[:, None])[:, None]
    Y = add_norm(X, attend(X, X, params["self_attention"], num_heads, causal), *params["norm1"])
    Y2 = attend(Y, H, params["cross_attention"], num_heads, padding)
    Z = add_norm(Y, Y2, *params["norm2"])
    W_1, b_1, W_2, b_2 = params["ffn"]
    return add_norm(Z, torch.relu(Z @ W_1 + b_1) @ W_2 + b_2, *params["norm3"])


@pytest.mark.parametrize("seed", range(4))
def test_decoder_block_pass(seed, capsys):
    assert check_decoder_block(decoder_block, seed=seed)
    assert capsys.readouterr().out.startswith("pass: decoder_block matches the reference")


@pytest.mark.parametrize(
    "how, hint",
    [
        ("pre_norm", "pre-norm instead of post-norm"),
        ("norm_before_add", "normalised before the residual sum"),
        ("no_residual", "the residual connections are missing"),
        ("no_causal", "the self-attention sees the future"),
        ("causal_cross", "the cross-attention is masked causally"),
        ("no_padding", "the source padding is not hidden"),
        ("padding_on_target", "enc_valid_lens masks the self-attention"),
        ("ffn_first", "the sublayers are in the wrong order"),
        ("cross_from_input", "queries are the block's input X"),
        ("keys_from_target", "keys and values come from the target"),
        ("scale_d", "scaled by sqrt(d)"),
        ("no_relu", "has no ReLU"),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_decoder_block_hints(how, hint, seed, capsys):
    def answer(*inputs):
        return _decoder_block(*inputs, how=how)

    assert not check_decoder_block(answer, seed=seed)
    assert hint in capsys.readouterr().out


def test_decoder_block_refuses_companions_own_layers(capsys):
    from companion import AddNorm, TransformerDecoderBlock

    def calls_the_block(X, H, enc_valid_lens, params, num_heads):
        d, ffn = X.shape[-1], params["ffn"][0].shape[1]
        block = TransformerDecoderBlock(d, ffn, num_heads, 0.0, i=0)
        return block(X, H, enc_valid_lens)

    def calls_add_norm(X, H, enc_valid_lens, params, num_heads):
        AddNorm(X.shape[-1], 0.0)(X, X)
        return decoder_block(X, H, enc_valid_lens, params, num_heads)

    for answer, hint in ((calls_the_block, "decoder block"), (calls_add_norm, "AddNorm")):
        assert not check_decoder_block(answer, seed=0)
        assert hint in capsys.readouterr().out


@pytest.mark.parametrize("seed", range(3))
def test_decoder_block_hard_wired_to_the_chapter_fails(seed, capsys):
    def reads_the_notebook(X, H, enc_valid_lens, params, heads):
        return decoder_block(X, H, enc_valid_lens, params, 4)  # the chapter's model: 4 heads

    assert not check_decoder_block(reads_the_notebook, seed=seed)
    assert capsys.readouterr().out.startswith(("hint:", "error:"))
