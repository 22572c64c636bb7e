"""The self-attention checkers (sec-self-attention) pass correct answers, name typical mistakes, and
fail solutions hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import math

import pytest
import torch

from companion import DotProductAttention
from companion.exercises.self_attention import (
    _reference,
    _self_attention,
    _self_attention_inputs,
    check_graph_attention_mask,
    check_self_attention,
)


def self_attention(
    X,
    W_q,
    W_k,
    W_v,
    valid_lens,
    causal=False,
    divisor=None,
    axis=-1,
    transposed=False,
    padding="keys",
    causal_diagonal=0,
    fill="-inf",
    empty="zero",
):
    """Self-attention over a padded batch as a student writes it, with knobs for the usual
    mistakes. ``empty="zero"`` sets the NaN rows of a query with no key to 0."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = K @ Q.transpose(-2, -1) if transposed else Q @ K.transpose(-2, -1)
    scores = scores / (math.sqrt(Q.shape[-1]) if divisor is None else divisor)
    positions = torch.arange(X.shape[1])
    keep = torch.ones(scores.shape, dtype=torch.bool)
    if padding == "keys":
        keep = keep & (positions[None, None, :] < valid_lens[:, None, None])
    elif padding == "queries":
        keep = keep & (positions[None, :, None] < valid_lens[:, None, None])
    if causal and causal_diagonal is not None:
        keep = keep & torch.ones(X.shape[1], X.shape[1], dtype=torch.bool).tril(causal_diagonal)
    if fill == "-inf":
        scores = scores.masked_fill(~keep, float("-inf"))
    elif fill == "zero":
        scores = scores.masked_fill(~keep, 0.0)
    elif fill == "-1e9":
        scores = scores.masked_fill(~keep, -1e9)
    weights = torch.softmax(scores, dim=axis)
    if fill == "after":
        weights = weights * keep
    if empty == "zero":
        weights = torch.nan_to_num(weights) * keep.any(dim=-1, keepdim=True)
    return weights @ V


def finite_fill(X, W_q, W_k, W_v, valid_lens, causal):
    """d2l's way: a large finite fill, then the rows of a query with no key set to 0."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    keep = torch.arange(X.shape[1]) < valid_lens[:, None, None]
    if causal:
        keep = keep & torch.ones(X.shape[1], X.shape[1], dtype=torch.bool).tril()
    weights = torch.softmax(scores.masked_fill(~keep, -1e9), dim=-1)
    return weights * keep.any(dim=-1, keepdim=True) @ V


@pytest.mark.parametrize("answer", [self_attention, finite_fill])
def test_self_attention_pass(answer, capsys):
    assert check_self_attention(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_the_reference_agrees_with_companion_and_torch():
    """companion's DotProductAttention (with its causal flag and valid lengths) and torch's
    fused kernel on the sequences that keep a key compute the reference."""
    for seed in (0, 1):  # an even seed: causal=False; an odd one: causal=True
        X, W_q, W_k, W_v, valid_lens, causal = _self_attention_inputs(
            torch.Generator().manual_seed(seed)
        )
        assert causal == bool(seed % 2) and (valid_lens == 0).sum() == 1
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        expected = _reference(X, W_q, W_k, W_v, valid_lens, causal)
        layer = DotProductAttention(dropout=0.0)
        torch.testing.assert_close(layer(Q, K, V, valid_lens, causal=causal), expected)
        torch.testing.assert_close(_self_attention(X, W_q, W_k, W_v, valid_lens, causal), expected)
        assert (expected[valid_lens == 0] == 0).all()  # a sequence of length 0: outputs 0
        rows = valid_lens > 0
        keep = torch.arange(X.shape[1]) < valid_lens[rows, None, None]
        if causal:
            keep = keep & torch.ones(X.shape[1], X.shape[1], dtype=torch.bool).tril()
        fused = torch.nn.functional.scaled_dot_product_attention(
            Q[rows], K[rows], V[rows], attn_mask=keep
        )
        torch.testing.assert_close(expected[rows], fused)


def test_an_answer_that_calls_an_attention_layer_fails(capsys):
    """Right numbers, but the exercise is to build the layer: each route around it is named,
    torch's fused kernel under each of its names."""

    def keep_of(X, valid_lens, causal):
        keep = torch.arange(X.shape[1]) < valid_lens[:, None, None]
        if causal:
            keep = keep & torch.ones(X.shape[1], X.shape[1], dtype=torch.bool).tril()
        return keep

    def fused(X, W_q, W_k, W_v, valid_lens, causal):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        out = torch.nn.functional.scaled_dot_product_attention(
            Q, K, V, attn_mask=keep_of(X, valid_lens, causal)
        )
        return torch.nan_to_num(out)

    def fused_through_the_dispatcher(X, W_q, W_k, W_v, valid_lens, causal):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        out = torch.ops.aten.scaled_dot_product_attention(
            Q, K, V, attn_mask=keep_of(X, valid_lens, causal)
        )
        return torch.nan_to_num(out)

    def with_companion(X, W_q, W_k, W_v, valid_lens, causal):
        layer = DotProductAttention(dropout=0.0)
        return layer(X @ W_q, X @ W_k, X @ W_v, valid_lens, causal=causal)

    def with_torch_layer(X, W_q, W_k, W_v, valid_lens, causal):  # the rule comes first
        Q, K = X @ W_q, X @ W_k
        return torch.nn.MultiheadAttention(Q.shape[-1], 1, batch_first=True)(Q, K, K)[0]

    for answer, named in (
        (fused, "scaled_dot_product_attention"),
        (fused_through_the_dispatcher, "scaled_dot_product_attention"),
        (with_companion, "companion's attention"),
        (with_torch_layer, "nn.MultiheadAttention"),
    ):
        inputs = _self_attention_inputs(torch.Generator().manual_seed(1))
        if answer is not with_torch_layer:  # the others give the right numbers
            torch.testing.assert_close(answer(*inputs), _reference(*inputs))
        assert not check_self_attention(answer, seed=0)
        out = capsys.readouterr().out
        assert out.startswith("hint: the answer calls") and named in out, out


@pytest.mark.parametrize(
    "flags, hint",
    [
        ({"divisor": 1.0}, "not scaled"),
        ({"divisor": "d_k"}, "not by d_k"),
        ({"divisor": "d"}, "the scale uses the width d of X"),
        ({"axis": 1}, "the wrong axis"),
        ({"transposed": True}, "the scores are transposed (K Q^T)"),
        ({"padding": None}, "padding ignored"),
        ({"padding": "queries"}, "hides queries instead of keys"),
        ({"padding": "queries", "empty": None}, "hides queries instead of keys"),
        ({"fill": "zero"}, "masked scores were set to 0"),
        ({"fill": "after"}, "the mask was applied after the softmax"),
        ({"causal_diagonal": None}, "causal=True ignored"),
        ({"causal_diagonal": None, "empty": None}, "causal=True ignored"),
        ({"causal_diagonal": -1}, "causal mask off by one"),
        ({"causal_diagonal": "transposed"}, "causal mask transposed"),
        ({"empty": None}, "NaN for the queries of a sequence of length 0"),
        ({"empty": None, "fill": "-1e9"}, "yours average the padding"),
    ],
)
def test_self_attention_hints(flags, hint, capsys):
    def wrong(X, W_q, W_k, W_v, valid_lens, causal):
        knobs = dict(flags)
        if knobs.get("divisor") == "d_k":
            knobs["divisor"] = W_q.shape[1]
        elif knobs.get("divisor") == "d":
            knobs["divisor"] = math.sqrt(X.shape[-1])
        if knobs.get("causal_diagonal") == "transposed":
            knobs["causal_diagonal"] = 0
            X_out = self_attention(
                X.flip(1), W_q, W_k, W_v, valid_lens, causal, padding=None, **knobs
            )  # not this: built below instead
            del X_out
            return transposed_causal(X, W_q, W_k, W_v, valid_lens, causal)
        return self_attention(X, W_q, W_k, W_v, valid_lens, causal, **knobs)

    assert not check_self_attention(wrong, seed=0)
    out = capsys.readouterr().out
    assert hint in out, out


def transposed_causal(X, W_q, W_k, W_v, valid_lens, causal):
    """The causal triangle the wrong way round: query i keeps the keys j >= i."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    keep = torch.arange(X.shape[1]) < valid_lens[:, None, None]
    if causal:
        keep = keep & torch.ones(X.shape[1], X.shape[1], dtype=torch.bool).triu()
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return torch.nan_to_num(weights) @ V


def test_a_wrong_shape_or_value_is_named(capsys):
    cases = [
        (lambda *inputs: self_attention(*inputs).transpose(1, 2), "shape: expected"),
        (lambda *inputs: self_attention(*inputs) + 0.1, "values differ first at position"),
        (lambda *inputs: self_attention(*inputs)[0], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_self_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


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
    seen, flags = set(), set()

    def record(X, W_q, W_k, W_v, valid_lens, causal):
        seen.add((*X.shape, W_q.shape[1], W_v.shape[1]))
        flags.add(causal)
        return self_attention(X, W_q, W_k, W_v, valid_lens, causal)

    for seed in range(4):
        assert check_self_attention(record, seed=seed)
    assert len(seen) > 4 and flags == {False, True}
    for sizes in seen:
        assert len(set(sizes)) == 5 and not set(sizes) & {3, 4, 6, 8}, sizes


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The worked example's x (3, 4) and W_query, W_key, W_value (4, 3); the 6-node graph."""
    x = torch.tensor([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], dtype=torch.float32)
    W_query, W_key, W_value = (torch.randn(4, 3) for _ in range(3))
    adjacency = torch.zeros(6, 6, dtype=torch.bool)

    def self_attention_of_x(X, W_q, W_k, W_v, valid_lens, causal):
        return self_attention(x[None], W_query, W_key, W_value, torch.tensor([3]), causal)

    def self_attention_scaled_by_3(X, W_q, W_k, W_v, valid_lens, causal):
        # the example's d_k
        return self_attention(X, W_q, W_k, W_v, valid_lens, causal, divisor=math.sqrt(3))

    def graph_attention_mask(adj):
        return graph_mask(adjacency)

    for seed in range(3):
        assert not check_self_attention(self_attention_of_x, seed=seed)
        assert "hint: shape: expected" in capsys.readouterr().out
        assert not check_self_attention(self_attention_scaled_by_3, seed=seed)
        assert "hint: values differ" in capsys.readouterr().out
        assert not check_graph_attention_mask(graph_attention_mask, seed=seed)
        assert "hint: shape: expected" in capsys.readouterr().out
