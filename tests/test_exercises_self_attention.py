"""The self-attention checkers (sec-self-attention) pass correct answers, name typical mistakes, and
fail solutions hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import math

import torch

from companion import DotProductAttention
from companion.exercises.self_attention import (
    _self_attention,
    _self_attention_inputs,
    check_graph_attention_mask,
    check_self_attention,
)


def self_attention(X, W_q, W_k, W_v, mask, divisor=None, axis=-1, transposed=False, fill="-inf"):
    """Self-attention as a student writes it, with knobs for the usual mistakes."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = K @ Q.T if transposed else Q @ K.T
    scores = scores / (math.sqrt(Q.shape[-1]) if divisor is None else divisor)
    if fill == "-inf":
        scores = scores.masked_fill(~mask, float("-inf"))
    elif fill == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    elif fill == "transposed":
        scores = scores.masked_fill(~mask.T, -1e9)
    weights = torch.softmax(scores, dim=axis)
    if fill == "after":
        weights = weights * mask
    return weights @ V


def test_self_attention_pass(capsys):
    assert check_self_attention(self_attention, seed=0)
    assert capsys.readouterr().out.startswith("pass: self_attention matches the reference")


def test_the_reference_agrees_with_torch_and_companion():
    generator = torch.Generator().manual_seed(1)  # an odd seed: a random mask
    X, W_q, W_k, W_v, mask = _self_attention_inputs(generator)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    fused = torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    torch.testing.assert_close(_self_attention(X, W_q, W_k, W_v, mask), fused)
    layer = DotProductAttention(dropout=0.0, need_weights=True)
    ones = torch.ones_like(mask)
    torch.testing.assert_close(
        _self_attention(X, W_q, W_k, W_v, ones), layer(Q[None], K[None], V[None])[0]
    )


def test_an_answer_that_calls_an_attention_layer_fails(capsys):
    """Right numbers, but the exercise is to build the layer: each route around it is named."""

    def fused(X, W_q, W_k, W_v, mask):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)

    def with_companion(X, W_q, W_k, W_v, mask):
        Q, K, V = (X @ W_q)[None], (X @ W_k)[None], (X @ W_v)[None]
        return DotProductAttention(dropout=0.0)(Q, K, V, mask=mask[None])[0]

    def with_torch_layer(X, W_q, W_k, W_v, mask):  # the rule is checked before the values
        Q, K = X @ W_q, X @ W_k
        return torch.nn.MultiheadAttention(Q.shape[1], 1)(Q, K, K, attn_mask=~mask)[0]

    for answer, named in (
        (fused, "scaled_dot_product_attention"),
        (with_companion, "companion's attention"),
        (with_torch_layer, "nn.MultiheadAttention"),
    ):
        assert not check_self_attention(answer, seed=0)
        out = capsys.readouterr().out
        assert out.startswith("hint: the answer calls") and named in out, out


def test_self_attention_hints(capsys):
    cases = [
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m, divisor=1.0), "not scaled"),
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m, divisor=q.shape[1]), "not by d_k"),
        (
            lambda X, q, k, v, m: self_attention(X, q, k, v, m, divisor=math.sqrt(X.shape[1])),
            "the scale uses the width d of X",
        ),
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m, axis=0), "the wrong axis"),
        (
            lambda X, q, k, v, m: self_attention(X, q, k, v, m, transposed=True),
            "the scores are transposed (K Q^T)",
        ),
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m, fill=None), "the mask is ignored"),
        (
            lambda X, q, k, v, m: self_attention(X, q, k, v, m, fill="zero"),
            "masked scores were set to 0",
        ),
        (
            lambda X, q, k, v, m: self_attention(X, q, k, v, m, fill="transposed"),
            "the mask is transposed",
        ),
        (
            lambda X, q, k, v, m: self_attention(X, q, k, v, m, fill="after"),
            "the mask was applied after the softmax",
        ),
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m).T, "shape: expected"),
        (lambda X, q, k, v, m: self_attention(X, q, k, v, m) + 0.1, "values differ first"),
    ]
    for wrong, hint in cases:
        assert not check_self_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint.replace("first at", "first at position") in out, out


def graph_mask(adjacency, transposed=False, self_loops=True):
    mask = adjacency.bool() if transposed else adjacency.bool().T
    if self_loops:
        mask = mask | torch.eye(len(adjacency), dtype=torch.bool)
    return mask


def test_graph_attention_mask_pass(capsys):
    assert check_graph_attention_mask(graph_mask, seed=0)
    assert capsys.readouterr().out.startswith("pass: graph_mask matches the reference")


def test_graph_attention_mask_hints(capsys):
    cases = [
        (lambda a: graph_mask(a, self_loops=False), "self-loops are missing"),
        (lambda a: graph_mask(a, transposed=True), "the mask is transposed: an edge i -> j"),
        (
            lambda a: graph_mask(a, transposed=True, self_loops=False),
            "transposed (use adjacency.T) and the self-loops are missing",
        ),
        (lambda a: graph_mask(a)[:, :-1], "shape: expected"),
        (lambda a: graph_mask(a).float(), "expected a boolean mask"),
        (lambda a: graph_mask(a).tolist(), "expected a torch.Tensor, got list"),
        (lambda a: ~graph_mask(a), "values differ first at position (0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_graph_attention_mask(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_the_sizes_vary_all_differ_and_are_never_the_chapters(capsys):
    seen = set()

    def record(X, W_q, W_k, W_v, mask):
        seen.add((*X.shape, W_q.shape[1], W_v.shape[1]))
        return self_attention(X, W_q, W_k, W_v, mask)

    for seed in range(4):
        assert check_self_attention(record, seed=seed)
    assert len(seen) > 4
    for sizes in seen:
        assert len(set(sizes)) == 4 and not set(sizes) & {3, 4, 6, 8}, sizes


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The worked example's x (3, 4) and W_query, W_key, W_value (4, 3); the 6-node graph."""
    x = torch.tensor([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], dtype=torch.float32)
    W_query, W_key, W_value = (torch.randn(4, 3) for _ in range(3))
    adjacency = torch.zeros(6, 6, dtype=torch.bool)

    def self_attention_of_x(X, W_q, W_k, W_v, mask):
        return self_attention(x, W_query, W_key, W_value, torch.ones(3, 3, dtype=torch.bool))

    def self_attention_scaled_by_3(X, W_q, W_k, W_v, mask):
        return self_attention(X, W_q, W_k, W_v, mask, divisor=math.sqrt(3))  # the example's d_k

    def graph_attention_mask(adj):
        return graph_mask(adjacency)

    for seed in range(3):
        assert not check_self_attention(self_attention_of_x, seed=seed)
        assert "hint: shape: expected" in capsys.readouterr().out
        assert not check_self_attention(self_attention_scaled_by_3, seed=seed)
        assert "hint: values differ" in capsys.readouterr().out
        assert not check_graph_attention_mask(graph_attention_mask, seed=seed)
        assert "hint: shape: expected" in capsys.readouterr().out
