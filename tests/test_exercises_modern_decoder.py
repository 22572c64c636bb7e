"""The modern decoder's checkers (sec-modern-decoder) pass correct answers, name typical
mistakes and refuse an answer that calls companion's own layer. Every call is seeded."""

from __future__ import annotations

import pytest
import torch

from companion.exercises import modern_decoder
from companion.exercises.modern_decoder import check_llama_block, check_repeat_kv, check_rope
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


def test_rope_by_companion_is_refused_though_its_numbers_are_right(capsys):
    def by_companion(X, offset, base):
        return RotaryEmbedding(X.shape[-1], base)(X, offset=offset)

    X = torch.randn(1, 2, 3, 6)
    torch.testing.assert_close(by_companion(X, 2, 50.0), rope(X, 2, 50.0))
    assert not check_rope(by_companion, seed=0)
    assert "calls companion's RotaryEmbedding" in capsys.readouterr().out


def test_rope_hints(capsys):
    def interleaved(X, offset, base):
        d = X.shape[-1]
        angles = torch.arange(offset, offset + X.shape[-2]).float()[:, None] * (
            base ** (-torch.arange(0, d, 2).float() / d)
        )
        x_a, x_b = X[..., 0::2], X[..., 1::2]
        turned = (x_a * angles.cos() - x_b * angles.sin(), x_a * angles.sin() + x_b * angles.cos())
        return torch.stack(turned, dim=-1).flatten(-2)

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


def llama_block(X, w, num_heads, num_kv_heads):
    """A Llama-style block with tensor operations: RMSNorm, causal GQA with RoPE, SwiGLU."""
    b, n, d = X.shape
    dh = d // num_heads

    def rms(Y, g):
        return Y * torch.rsqrt(Y.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    def turn(Z):
        theta = 10000.0 ** (-torch.arange(0, dh, 2).float() / dh)
        angles = torch.arange(n).float()[:, None] * theta
        a, c = Z[..., : dh // 2], Z[..., dh // 2 :]
        return torch.cat(
            (a * angles.cos() - c * angles.sin(), a * angles.sin() + c * angles.cos()), -1
        )

    def heads(Y, W, h):
        return (Y @ W.T).reshape(b, n, h, dh).transpose(1, 2)

    Y = rms(X, w["norm1"])
    q, k = turn(heads(Y, w["W_q"], num_heads)), turn(heads(Y, w["W_k"], num_kv_heads))
    v = heads(Y, w["W_v"], num_kv_heads)
    group = num_heads // num_kv_heads
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-2, -1) / dh**0.5).masked_fill(
        torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf")
    )
    X = X + (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d) @ w["W_o"].T
    Y = rms(X, w["norm2"])
    gated = torch.nn.functional.silu(Y @ w["W_gate"].T) * (Y @ w["W_up"].T)
    return X + gated @ w["W_down"].T


def test_llama_block_passes_and_is_companions_block(capsys):
    assert check_llama_block(llama_block, seed=0)
    assert capsys.readouterr().out.startswith("pass: llama_block matches the reference")
    X, weights, heads, kv_heads = modern_decoder._block_inputs(torch.Generator().manual_seed(7))
    torch.testing.assert_close(
        modern_decoder._llama_block(X, weights, heads, kv_heads),
        weights.block(X, causal=True).detach(),
    )


def test_llama_block_refuses_companions_layers_and_fused_attention(capsys):
    def by_block(X, w, h, g):
        return w.block(X, causal=True)

    def by_sdpa(X, w, h, g):
        b, n, d = X.shape
        Y = X * torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + 1e-6) * w["norm1"]
        q = (Y @ w["W_q"].T).reshape(b, n, h, -1).transpose(1, 2)
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return llama_block(X, w, h, g)

    for fn, words in ((by_block, "companion's own layers"), (by_sdpa, "scaled_dot_product")):
        assert not check_llama_block(fn, seed=1)
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and words in out, out


@pytest.mark.parametrize("how", list(modern_decoder.BLOCK_HINTS))
def test_llama_block_names_each_mistake(how, capsys, monkeypatch):
    # The mistakes are computed by companion's own helper: let the rule pass them.
    monkeypatch.setattr(modern_decoder, "forbidden_call", lambda *args: None)

    def wrong(X, w, h, g):
        return modern_decoder._llama_block(X, w, h, g, how)

    assert not check_llama_block(wrong, seed=2)
    assert modern_decoder.BLOCK_HINTS[how] in capsys.readouterr().out
