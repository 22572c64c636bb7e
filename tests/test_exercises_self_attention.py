"""The chapter 4 checkers pass correct answers and name typical mistakes."""

from __future__ import annotations

import math

import torch

from companion.exercises.self_attention import check_graph_attention_mask, check_self_attention


def self_attention(X, W_q, W_k, W_v, divisor=None, axis=-1, transposed=False):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = K @ Q.T if transposed else Q @ K.T
    divisor = math.sqrt(Q.shape[-1]) if divisor is None else divisor
    return torch.softmax(scores / divisor, dim=axis) @ V


def test_self_attention_pass(capsys):
    assert check_self_attention(self_attention)
    assert capsys.readouterr().out.startswith("pass: self_attention matches the reference")


def test_self_attention_agrees_with_torch(capsys):
    def fused(X, W_q, W_k, W_v):
        return torch.nn.functional.scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v)

    assert check_self_attention(fused)
    assert capsys.readouterr().out.startswith("pass")


def test_self_attention_hints(capsys):
    cases = [
        (lambda X, q, k, v: self_attention(X, q, k, v, divisor=1.0), "not scaled"),
        (lambda X, q, k, v: self_attention(X, q, k, v, divisor=q.shape[1]), "not by d_k"),
        (
            lambda X, q, k, v: self_attention(X, q, k, v, divisor=math.sqrt(X.shape[1])),
            "the scale uses the width d of X",
        ),
        (lambda X, q, k, v: self_attention(X, q, k, v, axis=0), "softmax over the wrong axis"),
        (
            lambda X, q, k, v: self_attention(X, q, k, v, transposed=True),
            "the scores are transposed (K Q^T)",
        ),
        (lambda X, q, k, v: self_attention(X, q, k, v).T, "shape: expected (5, 3), got (3, 5)"),
        (lambda X, q, k, v: self_attention(X, q, k, v) + 0.1, "values differ first at (0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_self_attention(wrong)
        out = capsys.readouterr().out
        assert hint.replace("first at", "first at position") in out, out


def test_self_attention_stub_and_crash(capsys):
    def stub(X, W_q, W_k, W_v):
        raise NotImplementedError()

    assert not check_self_attention(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")
    assert not check_self_attention(lambda X, q, k, v: X @ q @ k)
    assert "error: <lambda> raised RuntimeError" in capsys.readouterr().out


def graph_mask(adjacency, transposed=False, self_loops=True):
    mask = adjacency.bool() if transposed else adjacency.bool().T
    if self_loops:
        mask = mask | torch.eye(len(adjacency), dtype=torch.bool)
    return mask


def test_graph_attention_mask_pass(capsys):
    assert check_graph_attention_mask(graph_mask)
    assert capsys.readouterr().out.startswith("pass: graph_mask matches the reference")


def test_graph_attention_mask_hints(capsys):
    cases = [
        (lambda a: graph_mask(a, self_loops=False), "self-loops are missing"),
        (lambda a: graph_mask(a, transposed=True), "the mask is transposed: an edge i -> j"),
        (
            lambda a: graph_mask(a, transposed=True, self_loops=False),
            "transposed (use adjacency.T) and the self-loops are missing",
        ),
        (lambda a: graph_mask(a)[:, :-1], "shape: expected (7, 7), got (7, 6)"),
        (lambda a: graph_mask(a).float(), "the mask must be a bool tensor"),
        (lambda a: graph_mask(a).tolist(), "expected a torch.Tensor, got list"),
        (lambda a: ~graph_mask(a), "values differ first at position (0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_graph_attention_mask(wrong)
        out = capsys.readouterr().out
        assert hint in out, out


def test_graph_attention_mask_stub(capsys):
    def stub(adjacency):
        raise NotImplementedError()

    assert not check_graph_attention_mask(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")
