"""The efficient-attention checkers (sec-efficient-attention) pass correct answers and name typical
mistakes. Every call is seeded."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from companion.exercises.efficient import check_causal_linear_attention, check_linear_attention
from companion.layers.efficient import LinearAttention


def phi(x):
    return F.elu(x) + 1


def linear_attention(queries, keys, values, phi_q=phi, phi_k=phi, normalise=True):
    S = phi_k(keys).transpose(1, 2) @ values  # (batch, d_k, d_v)
    z = phi_k(keys).sum(dim=1)  # (batch, d_k)
    numerator = phi_q(queries) @ S  # (batch, n_q, d_v)
    if not normalise:
        return numerator
    return numerator / (phi_q(queries) @ z[..., None])


def causal_linear_attention(queries, keys, values, past="inclusive", normaliser="causal"):
    S = (phi(keys)[..., None] * values[..., None, :]).cumsum(dim=1)  # (batch, n, d_k, d_v)
    z = phi(keys).cumsum(dim=1)  # (batch, n, d_k)
    if past == "all":
        S, z = S[:, -1:].expand_as(S), z[:, -1:].expand_as(z)
    if normaliser == "all":
        z = z[:, -1:].expand_as(z)
    numerator = (phi(queries)[:, :, None, :] @ S).squeeze(2)  # (batch, n, d_v)
    if normaliser == "none":
        return numerator
    return numerator / (phi(queries) * z).sum(dim=-1, keepdim=True)


def test_linear_attention_passes(capsys):
    assert check_linear_attention(linear_attention, seed=0)
    assert capsys.readouterr().out.startswith("pass: linear_attention matches the reference")
    assert check_linear_attention(lambda q, k, v: LinearAttention()(q, k, v), seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_linear_attention_hints(capsys):
    cases = [
        (lambda q, k, v: linear_attention(q, k, v, normalise=False), "normaliser is missing"),
        (lambda q, k, v: linear_attention(q, k, v, phi_k=lambda x: x), "not applied to the keys"),
        (lambda q, k, v: linear_attention(q, k, v, phi_q=lambda x: x), "not applied to the quer"),
        (
            lambda q, k, v: linear_attention(q, k, v, phi_q=F.elu, phi_k=F.elu),
            "elu alone goes negative",
        ),
        # relu features can all be 0: a query then divides 0 by 0, or the values differ
        (
            lambda q, k, v: linear_attention(q, k, v, phi_q=F.relu, phi_k=F.relu),
            ("NaN at position", "values differ first at position"),
        ),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), "that is softmax attention"),
        (lambda q, k, v: linear_attention(q, k, v)[:, :, :1], "shape: expected"),
        (lambda q, k, v: linear_attention(q, k, v) + 0.1, "values differ first at position"),
    ]
    for wrong, hint in cases:
        assert not check_linear_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert any(h in out for h in ((hint,) if isinstance(hint, str) else hint)), (hint, out)


def test_linear_attention_in_the_quadratic_order_is_caught(capsys):
    def quadratic(queries, keys, values):
        similarity = phi(queries) @ phi(keys).transpose(1, 2)  # (batch, n_q, n_k)
        return similarity / similarity.sum(dim=-1, keepdim=True) @ values

    assert not check_linear_attention(quadratic, seed=0)
    assert "the values are right, but in the quadratic order" in capsys.readouterr().out


def test_causal_linear_attention_passes(capsys):
    assert check_causal_linear_attention(causal_linear_attention, seed=0)
    assert capsys.readouterr().out.startswith("pass: causal_linear_attention matches")

    def recurrent(queries, keys, values):  # the RNN form, with companion's step
        return LinearAttention().recurrent(queries, keys, values)

    assert check_causal_linear_attention(recurrent, seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_causal_linear_attention_hints(capsys):
    def masked(queries, keys, values, diagonal, upper=False):
        similarity = phi(queries) @ phi(keys).transpose(1, 2)
        keep = torch.ones(similarity.shape[1:], dtype=torch.bool)
        keep = keep.triu(diagonal) if upper else keep.tril(diagonal)
        similarity = similarity * keep
        totals = similarity.sum(dim=-1, keepdim=True)
        return similarity / totals.masked_fill(totals == 0, 1.0) @ values

    cases = [
        (lambda q, k, v: causal_linear_attention(q, k, v, past="all"), "not causal"),
        (lambda q, k, v: linear_attention(q, k, v), "not causal: output i uses future keys"),
        (
            lambda q, k, v: causal_linear_attention(q, k, v, normaliser="all"),
            "the normaliser is not causal",
        ),
        (lambda q, k, v: causal_linear_attention(q, k, v, normaliser="none"), "is missing"),
        (lambda q, k, v: masked(q, k, v, 0, upper=True), "an upper triangle"),
        (lambda q, k, v: masked(q, k, v, -1), "the current key is left out"),
        (lambda q, k, v: causal_linear_attention(q, k, v)[:, 1:], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_causal_linear_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, (hint, out)


# The chapter's variables: a solution that reads them instead of its arguments must fail.
X = torch.randn(2, 9, 4)  # the self-attention inputs the chapter runs after each checker
Q, K, V = (torch.randn(1, 5, 4) for _ in range(3))  # the chapter's last Q, K, V
linear = LinearAttention()


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    hard_wired = [
        (check_linear_attention, lambda q, k, v: linear(X, X, X)),
        (check_linear_attention, lambda q, k, v: linear_attention(Q, K, V)),
        (check_causal_linear_attention, lambda q, k, v: linear.recurrent(X, X, X)),
        (check_causal_linear_attention, lambda q, k, v: linear(Q, K, V, causal=True)),
    ]
    for checker, wrong in hard_wired:
        for seed in range(3):
            assert not checker(wrong, seed=seed)
            assert "shape: expected" in capsys.readouterr().out


def test_shapes_vary_all_differ_and_are_never_the_chapters():
    calls = []

    def spy(queries, keys, values):
        calls[-1].append((*queries.shape, keys.shape[1], values.shape[-1]))
        return causal_linear_attention(queries, keys, values)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        calls.append([])
        assert check_causal_linear_attention(spy, seed=seed)
    assert len({tuple(shapes) for shapes in calls}) == len(calls)
    for batch, n, d_k, _, d_v in sum(calls, []):
        assert len({batch, n, d_k, d_v}) == 4 and n not in (6, 8, 9) and 4 not in (d_k, d_v)
