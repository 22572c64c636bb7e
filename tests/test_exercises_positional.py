"""The positional-encoding checkers (sec-positional-encoding) pass correct answers and name typical
mistakes. Every call is seeded."""

from __future__ import annotations

import math

import pytest
import torch

from companion.exercises.positional import (
    _alibi,
    check_alibi,
    check_rotation_matrix,
    check_sinusoidal_encoding,
)
from companion.layers.attention import attention_mask
from companion.layers.positional import PositionalEncoding, alibi_bias, alibi_slopes


def encoding(max_len, num_hiddens, base=10000.0, exponent="2j/d", sin_first=True, start=0):
    """A float64 table, written as a student would, with switches for the usual mistakes."""
    P = torch.zeros(max_len, num_hiddens, dtype=torch.float64)
    positions = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    for k in range(num_hiddens):
        j = k // 2
        power = {"2j/d": 2 * j / num_hiddens, "j/d": j / num_hiddens, "k/d": k / num_hiddens}
        angle = positions[:, 0] / base ** power[exponent]
        use_sin = (k % 2 == 0) == sin_first
        P[:, k] = torch.sin(angle) if use_sin else torch.cos(angle)
    return P


def encoding_float32(max_len, num_hiddens):
    """The same table computed in float32 with exp and log, as many code bases do."""
    frequencies = torch.exp(
        torch.arange(0, num_hiddens, 2, dtype=torch.float32) * (-math.log(10000.0) / num_hiddens)
    )
    angles = torch.arange(max_len, dtype=torch.float32)[:, None] * frequencies  # (n, d/2)
    P = torch.zeros(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


@pytest.mark.parametrize("answer", [encoding, encoding_float32])
def test_sinusoidal_encoding_pass(capsys, answer):
    assert check_sinusoidal_encoding(answer, seed=0)
    assert capsys.readouterr().out.startswith("pass")


@pytest.mark.parametrize(
    "answer",
    [
        lambda n, d: PositionalEncoding(d, 0.0, n).P[0],
        lambda n, d: PositionalEncoding(d, 0.0, n)(torch.zeros(1, n, d))[0],
    ],
)
def test_an_encoding_read_from_companion_fails(capsys, answer):
    """Right numbers, but the exercise is to compute the table."""
    assert not check_sinusoidal_encoding(answer, seed=0)
    assert "the answer reads companion's PositionalEncoding" in capsys.readouterr().out


def split(max_len, num_hiddens):
    P = encoding(max_len, num_hiddens)
    return torch.cat([P[:, 0::2], P[:, 1::2]], dim=1)


def test_sinusoidal_encoding_hints(capsys):
    cases = [
        (lambda n, d: encoding(n, d, sin_first=False), "sine and cosine are swapped"),
        (lambda n, d: encoding(n, d, exponent="j/d"), "the exponent is 2j/d"),
        (lambda n, d: encoding(n, d, exponent="k/d"), "the same for both columns of a pair"),
        (lambda n, d: encoding(n, d, base=1 / 10000.0), "you multiplied"),
        (lambda n, d: encoding(n, d, base=1000.0), "the base of the power is 10000"),
        (lambda n, d: encoding(n, d, base=100.0), "the same as i / 100^(2j/d)"),
        (split, "that is the split layout"),
        (lambda n, d: encoding(n, d, start=1), "positions start at 0"),
        (lambda n, d: encoding(n, d).T, "shape: expected"),
        (lambda n, d: encoding(n, d)[None], "shape: expected"),
        (lambda n, d: encoding(n, d).tolist(), "expected a torch.Tensor, got list"),
        (lambda n, d: encoding(n, d) * 2, "values differ first at position (0, 1)"),
    ]
    for wrong, hint in cases:
        assert not check_sinusoidal_encoding(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def rotation(
    delta, num_hiddens, transposed=False, sin_sign=1.0, with_delta=True, half=False, swap=False
):
    """Built block by block with torch.block_diag, as a student would."""
    blocks = []
    for j in range(num_hiddens // 2):
        omega = 1 / 10000 ** ((j if half else 2 * j) / num_hiddens)
        angle = (delta if with_delta else 1) * omega
        c, s = math.cos(angle), math.sin(angle)
        if swap:  # sines on the diagonal
            c, s = s, c
        blocks.append(torch.tensor([[c, sin_sign * s], [-s, c]]))
    M = torch.block_diag(*blocks)
    return M.T if transposed else M


def test_rotation_matrix_pass(capsys):
    assert check_rotation_matrix(rotation, seed=0)
    assert capsys.readouterr().out.startswith("pass: rotation matches the reference")


def test_rotation_matrix_moves_the_companion_table():
    """The reference is the right matrix: it shifts companion's table by delta."""
    from companion.exercises.positional import _rotation

    P = PositionalEncoding(16, 0.0, max_len=80).P[0].double()
    for delta in (-7, 1, 13):
        M = _rotation(delta, 16)
        i = torch.arange(10, 60)
        torch.testing.assert_close(P[i + delta], P[i] @ M.T, atol=1e-5, rtol=0)


def split_rotation(delta, num_hiddens):
    """The interleaved blocks placed on columns (j, j + d/2)."""
    d, M = num_hiddens, rotation(delta, num_hiddens)
    order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # split -> interleaved
    return M[order][:, order]  # split column k is interleaved column order[k]


def test_rotation_matrix_hints(capsys):
    cases = [
        (lambda delta, d: rotation(delta, d, transposed=True), "moves delta steps backwards"),
        (lambda delta, d: rotation(delta, d, sin_sign=-1.0), "need opposite signs"),
        (lambda delta, d: rotation(delta, d, with_delta=False), "you left out delta"),
        (lambda delta, d: rotation(delta, d, half=True), "the frequency of pair j"),
        (split_rotation, "the split layout"),
        (lambda delta, d: rotation(delta, d, swap=True), "cos(delta w_j) goes on the diagonal"),
        (lambda delta, d: torch.eye(d), "values differ first at position"),
        (lambda delta, d: rotation(delta, d)[:-1], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_rotation_matrix(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


# The chapter's variables: a solution that reads them instead of its arguments must fail.
d, n = 32, 60
chapter_table = PositionalEncoding(d, 0.0).P[0]  # the chapter's `encoding.P[0]`, (1000, 32)


def test_an_encoding_hard_wired_to_the_chapter_fails(capsys):
    def sinusoidal_encoding(max_len, num_hiddens):
        return chapter_table[:max_len]  # the chapter's width, whatever num_hiddens says

    def fixed_width(max_len, num_hiddens):
        return encoding(max_len, d)

    for wrong in (sinusoidal_encoding, fixed_width):
        for seed in range(3):
            assert not check_sinusoidal_encoding(wrong, seed=seed)
            assert "shape: expected" in capsys.readouterr().out


def test_a_rotation_hard_wired_to_the_chapter_fails(capsys):
    def rotation_matrix(delta, num_hiddens):
        return rotation(delta, d)

    for seed in range(3):
        assert not check_rotation_matrix(rotation_matrix, seed=seed)
        assert "shape: expected" in capsys.readouterr().out


def test_sizes_vary_and_are_never_the_chapters():
    calls = []

    def spy(max_len, num_hiddens):
        calls[-1].append((max_len, num_hiddens))
        return encoding(max_len, num_hiddens)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        calls.append([])
        assert check_sinusoidal_encoding(spy, seed=seed)
    assert len({tuple(sizes) for sizes in calls}) == len(calls)
    assert all(max_len != n and width != d for max_len, width in sum(calls, []))


def alibi(num_heads, num_steps, first=1, sign=-1.0, causal="below", fill=float("-inf")):
    """ALiBi's causal bias as a student writes it, with switches for the usual mistakes."""
    slopes = torch.tensor([2 ** (-8 * h / num_heads) for h in range(first, first + num_heads)])
    i = torch.arange(num_steps)
    distance = (i[:, None] - i[None, :]).float()  # query i minus key t
    bias = sign * slopes[:, None, None] * distance  # (heads, queries, keys)
    hidden = {
        "below": distance < 0,
        "above": distance > 0,
        "and diagonal": distance <= 0,
        "none": distance != distance,
    }
    return bias.masked_fill(hidden[causal], fill)


def test_alibi_pass(capsys):
    assert check_alibi(alibi, seed=0)
    assert capsys.readouterr().out.startswith("pass: alibi matches the reference")


def test_the_alibi_reference_is_companions():
    for heads, steps in ((4, 6), (6, 9)):
        positions = torch.arange(steps)
        causal = attention_mask(positions, positions, causal=True)  # True where a key is seen
        companion = alibi_bias(alibi_slopes(heads), positions, positions)
        expected = companion.masked_fill(~causal, float("-inf"))
        torch.testing.assert_close(_alibi(heads, steps), expected)


def test_alibi_hints(capsys):
    cases = [
        (lambda H, n: alibi(H, n, first=0), "counting r from 0"),
        (lambda H, n: alibi(H, n).flip(0), "the wrong order"),
        (lambda H, n: alibi(H, n, sign=1.0), "yours rewards distance"),
        (lambda H, n: alibi(H, n, causal="none"), "keys after the query must be hidden"),
        (lambda H, n: alibi(H, n, fill=0.0), "must be -inf"),
        (lambda H, n: alibi(H, n, causal="above"), "the mask is transposed"),
        (lambda H, n: alibi(H, n).transpose(1, 2), "the result is transposed"),
        (lambda H, n: alibi(H, n, causal="and diagonal"), "each query also sees itself"),
        (lambda H, n: alibi(H, n)[0], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_alibi(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_alibi_slopes_that_ignore_the_heads_are_named(capsys):
    def slopes_of_eight(num_heads, num_steps):
        bias = alibi(num_heads, num_steps)
        finite = bias.isfinite()
        per_head = torch.tensor([2.0 ** (-(h + 1)) for h in range(num_heads)])  # 2^-h
        redone = -per_head[:, None, None] * (bias / bias[:, 1:2, 0:1]).nan_to_num()
        return torch.where(finite, redone, bias)

    assert not check_alibi(slopes_of_eight, seed=0)
    assert "2^(-r) is right only for h = 8" in capsys.readouterr().out


def test_an_alibi_from_companion_fails(capsys):
    def from_companion(num_heads, num_steps):
        positions = torch.arange(num_steps)
        bias = alibi_bias(alibi_slopes(num_heads), positions, positions)
        return bias.masked_fill(positions[None, :] > positions[:, None], float("-inf"))

    assert not check_alibi(from_companion, seed=0)
    assert "the answer calls companion's alibi_slopes or alibi_bias" in capsys.readouterr().out
