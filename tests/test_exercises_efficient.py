"""The efficient-attention checkers (sec-efficient-attention) pass correct answers, name typical
mistakes, and fail answers that break the exercises' rules: the (n, n) matrix, the states of
every position, quadratic work, or companion's own layer. Every call is seeded."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from companion.exercises.efficient import check_chunked_linear_attention, check_linear_attention
from companion.layers.efficient import LinearAttention, feature_map


def phi(x):
    return F.elu(x) + 1


def linear_attention(queries, keys, values, phi_q=phi, phi_k=phi, normalise=True):
    S = phi_k(keys).transpose(1, 2) @ values  # (batch, d_k, d_v)
    z = phi_k(keys).sum(dim=1)  # (batch, d_k)
    numerator = phi_q(queries) @ S  # (batch, n_q, d_v)
    if not normalise:
        return numerator
    return numerator / (phi_q(queries) @ z[..., None])


def chunked(queries, keys, values, chunk, mistake=None):
    """Causal linear attention in chunks; ``mistake`` makes one of the typical ones."""
    phi_q, phi_k = phi(queries), phi(keys)
    batch, n, d_k = phi_q.shape
    S = queries.new_zeros(batch, d_k, values.shape[-1])  # the state of the earlier chunks
    z = queries.new_zeros(batch, d_k, 1)
    outputs = []
    for start in range(0, n, chunk):
        if mistake == "drop_last" and start + chunk > n:
            break
        q, k, v = (t[:, start : start + chunk] for t in (phi_q, phi_k, values))
        scores = q @ k.transpose(1, 2)  # (batch, chunk, chunk)
        scores = {"unmasked": scores, "strict": scores.tril(-1)}.get(mistake, scores.tril())
        if mistake == "early_update":
            S, z = S + k.transpose(1, 2) @ v, z + k.sum(dim=1)[..., None]
        if mistake == "block_diagonal":
            S, z = torch.zeros_like(S), torch.zeros_like(z)
        numerator = q @ S + scores @ v
        denominator = q @ z + scores.sum(dim=-1, keepdim=True)
        outputs.append(numerator if mistake == "no_normaliser" else numerator / denominator)
        if mistake != "early_update":
            S, z = S + k.transpose(1, 2) @ v, z + k.sum(dim=1)[..., None]
    return torch.cat(outputs, dim=1)


def recurrent(queries, keys, values, chunk):
    """The RNN form, one position at a time: chunks of 1, whatever ``chunk`` is."""
    phi_q, phi_k = phi(queries), phi(keys)
    S = queries.new_zeros(queries.shape[0], keys.shape[-1], values.shape[-1])
    z = queries.new_zeros(queries.shape[0], keys.shape[-1])
    outputs = []
    for t in range(queries.shape[1]):
        S = S + phi_k[:, t, :, None] * values[:, t, None, :]
        z = z + phi_k[:, t]
        numerator = (phi_q[:, t, None] @ S)[:, 0]
        outputs.append(numerator / (phi_q[:, t] * z).sum(dim=-1, keepdim=True))
    return torch.stack(outputs, dim=1)


def prefix_states(queries, keys, values, chunk):
    """Right values, but with the state of every position: what the exercise rules out."""
    S = (phi(keys)[..., :, None] * values[..., None, :]).cumsum(dim=1)  # (batch, n, d_k, d_v)
    z = phi(keys).cumsum(dim=1)
    return (phi(queries)[..., None, :] @ S).squeeze(2) / (phi(queries) * z).sum(-1, keepdim=True)


def masked_quadratic(queries, keys, values, chunk=None):
    similarity = (phi(queries) @ phi(keys).transpose(1, 2)).tril()  # (batch, n, n)
    return similarity / similarity.sum(dim=-1, keepdim=True) @ values


def test_linear_attention_passes(capsys):
    assert check_linear_attention(linear_attention, seed=0)
    assert capsys.readouterr().out.startswith("pass: linear_attention matches the reference")
    assert check_linear_attention(
        lambda q, k, v: linear_attention(q, k, v, feature_map, feature_map), seed=1
    )
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
        (lambda q, k, v: linear_attention(q, k, v)[:, :, :1], "shape: expected"),
        (lambda q, k, v: linear_attention(q, k, v) + 0.1, "values differ first at position"),
    ]
    for wrong, hint in cases:
        assert not check_linear_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert any(h in out for h in ((hint,) if isinstance(hint, str) else hint)), (hint, out)


def test_softmax_attention_is_named_not_mistaken_for_a_cost(capsys):
    """Softmax attention by the fused kernel has the wrong values: the value check names it."""
    assert not check_linear_attention(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    assert "that is softmax attention" in capsys.readouterr().out


def test_linear_attention_that_breaks_the_rules_fails(capsys):
    def quadratic(queries, keys, values):  # the (n_q, n_k) matrix by a matrix product
        similarity = phi(queries) @ phi(keys).transpose(1, 2)
        return similarity / similarity.sum(dim=-1, keepdim=True) @ values

    def broadcast(queries, keys, values):  # the same matrix, by broadcasting and a sum
        similarity = (phi(queries)[:, :, None] * phi(keys)[:, None]).sum(-1)
        return similarity / similarity.sum(dim=-1, keepdim=True) @ values

    def row_by_row(queries, keys, values):  # no (n, n) tensor, but n^2 work
        rows = []
        for i in range(queries.shape[1]):
            s = (phi(queries)[:, i, None] * phi(keys)).sum(-1)  # (batch, n_k)
            rows.append((s[..., None] * values).sum(1) / s.sum(-1, keepdim=True))
        return torch.stack(rows, dim=1)

    cases = [
        (quadratic, "the (n, n) matrix or larger"),
        (broadcast, "the (n, n) matrix or larger"),
        (row_by_row, "O(n^2) work"),
        (lambda q, k, v: LinearAttention()(q, k, v), "calls companion's LinearAttention"),
    ]
    for wrong, hint in cases:
        assert not check_linear_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and hint in out, (hint, out)


def test_linear_attention_may_broadcast_the_state(capsys):
    """Summing phi(k_j) v_j^T by broadcasting makes an (n, d_k, d_v) tensor: O(n), within the
    non-causal exercise's rules (the chunked one rules out a state per position)."""

    def broadcast_state(queries, keys, values):
        S = (phi(keys).unsqueeze(-1) * values.unsqueeze(-2)).sum(1)  # (batch, d_k, d_v)
        z = phi(keys).sum(dim=1)  # (batch, d_k)
        return (phi(queries) @ S) / (phi(queries) @ z[..., None])

    assert check_linear_attention(broadcast_state, seed=0)
    assert capsys.readouterr().out.startswith("pass: broadcast_state matches")


def test_answers_that_call_the_checkers_references_fail(capsys):
    from companion.exercises import efficient as module

    cases = [
        (check_linear_attention, lambda q, k, v: module._linear_attention(q, k, v)),
        (check_linear_attention, module._linear_attention),
        (check_chunked_linear_attention, lambda q, k, v, c: module._chunked(q, k, v, c)),
    ]
    for checker, answer in cases:
        assert not checker(answer, seed=0)
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and "calls the checker's own code" in out, out


def test_chunked_linear_attention_passes(capsys):
    for answer in (chunked, recurrent):
        assert check_chunked_linear_attention(answer, seed=0)
        assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


def test_chunked_linear_attention_hints(capsys):
    cases = [
        ("block_diagonal", "each chunk attends only to itself"),
        ("unmasked", "query i sees the chunk's later keys"),
        ("strict", "the current key is left out"),
        ("early_update", "the chunk is counted twice"),
        ("no_normaliser", "the normaliser is missing"),
        ("drop_last", "the last, shorter chunk is missing"),
    ]
    for mistake, hint in cases:
        assert not check_chunked_linear_attention(
            lambda q, k, v, c, mistake=mistake: chunked(q, k, v, c, mistake), seed=0
        )
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and hint in out, (mistake, out)
    not_causal = lambda q, k, v, c: linear_attention(q, k, v)  # noqa: E731
    assert not check_chunked_linear_attention(not_causal, seed=0)
    assert "not causal: output i uses future keys" in capsys.readouterr().out

    def normaliser_over_all(queries, keys, values, chunk):
        numerator = chunked(queries, keys, values, chunk, "no_normaliser")
        return numerator / (phi(queries) @ phi(keys).sum(dim=1)[..., None])

    assert not check_chunked_linear_attention(normaliser_over_all, seed=0)
    assert "the normaliser is not causal" in capsys.readouterr().out


def test_chunked_linear_attention_that_breaks_the_rules_fails(capsys):
    cases = [
        (prefix_states, "the states S_1..S_n of every position"),
        (masked_quadratic, "the (n, n) matrix or larger"),
        (lambda q, k, v, c: LinearAttention()(q, k, v, causal=True), "LinearAttention;"),
        (lambda q, k, v, c: LinearAttention().recurrent(q, k, v), "LinearAttention;"),
    ]
    for wrong, hint in cases:
        assert not check_chunked_linear_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and hint in out, (hint, out)


# The chapter's variables: a solution that reads them instead of its arguments must fail.
X = torch.randn(2, 9, 4)  # the self-attention inputs the chapter runs after each checker
Q, K, V = (torch.randn(1, 5, 4) for _ in range(3))  # the chapter's last Q, K, V


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    hard_wired = [
        (check_linear_attention, lambda q, k, v: linear_attention(X, X, X)),
        (check_linear_attention, lambda q, k, v: linear_attention(Q, K, V)),
        (check_chunked_linear_attention, lambda q, k, v, c: chunked(X, X, X, c)),
        (check_chunked_linear_attention, lambda q, k, v, c: chunked(Q, K, V, c)),
    ]
    for checker, wrong in hard_wired:
        for seed in range(3):
            assert not checker(wrong, seed=seed)
            assert "shape: expected" in capsys.readouterr().out


def test_shapes_and_chunks_vary_and_are_never_the_chapters():
    calls = []

    def spy(queries, keys, values, chunk):
        if queries.shape[1] < 1000:  # not the long sequence that measures the cost
            calls[-1].append((*queries.shape, keys.shape[1], values.shape[-1], chunk))
        return chunked(queries, keys, values, chunk)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        calls.append([])
        assert check_chunked_linear_attention(spy, seed=seed)
    assert len({tuple(shapes) for shapes in calls}) == len(calls)
    for batch, n, d_k, _, d_v, chunk in sum(calls, []):
        assert len({batch, n, d_k, d_v}) == 4 and n not in (6, 8, 9) and 4 not in (d_k, d_v)
        assert 2 <= chunk < n and n % chunk, (n, chunk)  # a shorter last chunk, every time
