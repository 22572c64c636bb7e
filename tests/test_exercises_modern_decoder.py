"""The modern decoder's checkers (sec-modern-decoder) pass correct answers and name typical
mistakes. Every call is seeded."""

from __future__ import annotations

import torch

from companion.exercises.modern_decoder import check_repeat_kv, check_rope
from companion.layers.rotary import RotaryEmbedding


def rope(X, offset, base):
    d = X.shape[-1]
    theta = base ** (-torch.arange(0, d, 2).float() / d)
    angles = torch.arange(offset, offset + X.shape[-2]).float()[:, None] * theta
    cos, sin = angles.cos(), angles.sin()
    x_a, x_b = X[..., : d // 2], X[..., d // 2 :]
    return torch.cat((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)


def test_rope_passes_and_is_companions_layer(capsys):
    assert check_rope(rope, seed=0)
    assert capsys.readouterr().out.startswith("pass: rope matches the reference")
    X = torch.randn(2, 3, 5, 8)
    torch.testing.assert_close(rope(X, 4, 10000.0), RotaryEmbedding(8)(X, offset=4))


def test_rope_by_companion_passes(capsys):
    def by_companion(X, offset, base):
        return RotaryEmbedding(X.shape[-1], base)(X, offset=offset)

    assert check_rope(by_companion, seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_rope_hints(capsys):
    def interleaved(X, offset, base):
        return RotaryEmbedding(X.shape[-1], base, "interleaved")(X, offset=offset)

    cases = [
        (interleaved, "the paper's interleaved pairing"),
        (lambda X, o, b: _rotate(X, o, b, sign=-1), "the wrong way"),
        (lambda X, o, b: rope(X, o, b**0.5), "the frequencies are base^(-i/d)"),
        (lambda X, o, b: rope(X, 0, b), "the positions start at 0"),
        (lambda X, o, b: _rotate(X, o, b, swap=True), "cos and sin are swapped"),
        (lambda X, o, b: rope(X, o, b)[..., 1:], "shape: expected"),
        (lambda X, o, b: X, "values differ first"),
    ]
    for wrong, hint in cases:
        assert not check_rope(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def _rotate(X, offset, base, sign=1, swap=False):
    d = X.shape[-1]
    angles = torch.arange(offset, offset + X.shape[-2]).float()[:, None] * (
        base ** (-torch.arange(0, d, 2).float() / d)
    )
    cos, sin = angles.cos(), sign * angles.sin()
    if swap:
        cos, sin = sin, cos
    x_a, x_b = X[..., : d // 2], X[..., d // 2 :]
    return torch.cat((x_a * cos - x_b * sin, x_a * sin + x_b * cos), dim=-1)


def test_repeat_kv_passes_in_every_spelling(capsys):
    def by_interleave(keys, num_heads):
        return keys.repeat_interleave(num_heads // keys.shape[1], dim=1)

    def by_expand(keys, num_heads):
        b, g, n, d = keys.shape
        return keys[:, :, None].expand(b, g, num_heads // g, n, d).reshape(b, num_heads, n, d)

    for fn in (by_interleave, by_expand):
        assert check_repeat_kv(fn, seed=0)
        assert capsys.readouterr().out.startswith("pass")


def test_repeat_kv_hints(capsys):
    cases = [
        (lambda K, h: K.repeat(1, h // K.shape[1], 1, 1), "you used repeat"),
        (lambda K, h: K, "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_repeat_kv(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out
