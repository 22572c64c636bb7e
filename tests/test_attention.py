"""Attention layers: agreement with d2l and torch, the two paths, masking, errors, gradients."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from companion import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    masked_softmax,
    record_attention,
)
from tests.masks import allowed, lengths, randn

EXACT = {"atol": 1e-6, "rtol": 1e-6}  # against d2l: the same arithmetic
CLOSE = {"atol": 1e-5, "rtol": 1e-5}  # explicit vs fused, companion vs torch: other kernels


def both_paths(layer: nn.Module, *args, **kwargs):
    """Outputs of ``layer`` on its explicit path, its fused path, and the explicit weights."""
    layer.need_weights = True
    explicit = layer(*args, **kwargs)
    weights = layer.attention_weights
    layer.need_weights = False
    fused = layer(*args, **kwargs)
    return explicit, fused, weights


# ---------------------------------------------------------------------------------------------
# 1. d2l agreement: a d2l state_dict loads with strict=True, and the numbers match.

VALID_KINDS = ["none", "1d", "2d"]


@pytest.mark.parametrize("kind", VALID_KINDS)
def test_masked_softmax_matches_d2l(d2l, kind):
    X = randn(3, 4, 6, seed=1)
    valid_lens = lengths(kind, 3, 4, 6)
    expected = d2l.masked_softmax(X.clone(), valid_lens)  # d2l writes into its input
    before = X.clone()
    torch.testing.assert_close(masked_softmax(X, valid_lens), expected, **EXACT)
    assert torch.equal(X, before), "companion leaves its input alone"


@pytest.mark.parametrize("kind", VALID_KINDS)
def test_dot_product_attention_matches_d2l(d2l, kind):
    theirs = d2l.DotProductAttention(dropout=0.5).eval()
    ours = DotProductAttention(dropout=0.5).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    queries, keys, values = randn(2, 3, 4, seed=1), randn(2, 5, 4, seed=2), randn(2, 5, 7, seed=3)
    valid_lens = lengths(kind, 2, 3, 5)
    expected = theirs(queries, keys, values, valid_lens)
    explicit, fused, weights = both_paths(ours, queries, keys, values, valid_lens)
    torch.testing.assert_close(explicit, expected, **EXACT)
    torch.testing.assert_close(fused, expected, **EXACT)
    torch.testing.assert_close(weights, theirs.attention_weights, **EXACT)


@pytest.mark.parametrize("kind", VALID_KINDS)
def test_additive_attention_matches_d2l(d2l, kind):
    queries, keys, values = randn(2, 3, 5, seed=1), randn(2, 4, 6, seed=2), randn(2, 4, 7, seed=3)
    torch.manual_seed(0)
    theirs = d2l.AdditiveAttention(num_hiddens=8, dropout=0.5).eval()
    theirs(queries, keys, values, None)  # materialise the lazy layers
    ours = AdditiveAttention(num_hiddens=8, dropout=0.5).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    queries, keys = randn(2, 3, 5, seed=4), randn(2, 4, 6, seed=5)  # fresh inputs
    valid_lens = lengths(kind, 2, 3, 4)
    expected = theirs(queries, keys, values, valid_lens)
    torch.testing.assert_close(ours(queries, keys, values, valid_lens), expected, **EXACT)
    torch.testing.assert_close(ours.attention_weights, theirs.attention_weights, **EXACT)


@pytest.mark.parametrize("kind", VALID_KINDS)
@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention_matches_d2l(d2l, bias, kind):
    batch, num_queries, num_keys, num_heads = 2, 3, 5, 2
    torch.manual_seed(0)
    theirs = d2l.MultiHeadAttention(num_hiddens=8, num_heads=num_heads, dropout=0.5, bias=bias)
    theirs.eval()
    # Queries, keys and values of three different sizes: each lazy layer gets its own.
    queries, keys, values = randn(2, 3, 5, seed=1), randn(2, 5, 6, seed=2), randn(2, 5, 7, seed=3)
    theirs(queries, keys, values, None)
    ours = MultiHeadAttention(num_hiddens=8, num_heads=num_heads, dropout=0.5, bias=bias).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    queries, keys, values = randn(2, 3, 5, seed=4), randn(2, 5, 6, seed=5), randn(2, 5, 7, seed=6)
    valid_lens = lengths(kind, batch, num_queries, num_keys)
    expected = theirs(queries, keys, values, valid_lens)
    explicit, fused, weights = both_paths(ours, queries, keys, values, valid_lens)
    torch.testing.assert_close(explicit, expected, **EXACT)
    torch.testing.assert_close(fused, expected, **EXACT)
    assert weights.shape == (batch, num_heads, num_queries, num_keys)
    torch.testing.assert_close(
        weights.reshape(-1, num_queries, num_keys), theirs.attention.attention_weights, **EXACT
    )


# ---------------------------------------------------------------------------------------------
# 2. Two paths, one result.

MASKS = [  # (valid_lens kind, causal)
    ("none", False),
    ("1d", False),
    ("2d", False),
    ("none", True),
    ("1d", True),
    ("2d", True),
]


@pytest.mark.parametrize(("kind", "causal"), MASKS)
@pytest.mark.parametrize("heads", [None, 3], ids=["3-D", "4-D"])
@pytest.mark.parametrize("num_queries", [4, 6])
def test_dot_product_paths_agree(kind, causal, heads, num_queries):
    layer = DotProductAttention(dropout=0.0).train()  # dropout 0 in train mode changes nothing
    lead = (2,) if heads is None else (2, heads)
    queries = randn(*lead, num_queries, 8, seed=1)
    keys, values = randn(*lead, 5, 8, seed=2), randn(*lead, 5, 3, seed=3)
    valid_lens = lengths(kind, 2, num_queries, 5)
    explicit, fused, weights = both_paths(layer, queries, keys, values, valid_lens, causal=causal)
    assert fused.shape == explicit.shape == (*lead, num_queries, 3)
    torch.testing.assert_close(fused, explicit, **CLOSE)
    expected = allowed(valid_lens, 2, num_queries, 5, causal)
    if heads is not None:
        expected = expected[:, None].expand(-1, heads, -1, -1)
    assert torch.equal(weights > 0, expected)


@pytest.mark.parametrize(("kind", "causal"), MASKS)
@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_paths_agree(kind, causal, bias):
    explicit_layer = MultiHeadAttention(12, 3, 0.0, bias=bias, need_weights=True).train()
    fused_layer = MultiHeadAttention(12, 3, 0.0, bias=bias).train()
    queries, keys, values = randn(2, 4, 12, seed=1), randn(2, 5, 6, seed=2), randn(2, 5, 7, seed=3)
    explicit = explicit_layer(queries, keys, values)
    fused_layer.load_state_dict(explicit_layer.state_dict(), strict=True)
    valid_lens = lengths(kind, 2, 4, 5)
    explicit = explicit_layer(queries, keys, values, valid_lens, causal=causal)
    fused = fused_layer(queries, keys, values, valid_lens, causal=causal)
    torch.testing.assert_close(fused, explicit, **CLOSE)
    # Toggling one layer gives the same again.
    explicit_again, fused_again, _ = both_paths(
        fused_layer, queries, keys, values, valid_lens, causal=causal
    )
    torch.testing.assert_close(explicit_again, explicit, **EXACT)
    torch.testing.assert_close(fused_again, fused, **EXACT)


# ---------------------------------------------------------------------------------------------
# 3. A query with no valid key: zeros, never NaN, also in the gradients.

NO_KEY = [
    pytest.param(torch.tensor([0, 3]), [(0, i) for i in range(4)], id="1d"),
    pytest.param(torch.tensor([[2, 0, 5, 0], [0, 1, 1, 4]]), [(0, 1), (0, 3), (1, 0)], id="2d"),
]


def assert_finite_grads(*tensors: torch.Tensor) -> None:
    for t in tensors:
        assert t.grad is not None and torch.isfinite(t.grad).all(), t.grad


@pytest.mark.parametrize(("valid_lens", "empty"), NO_KEY)
def test_masked_softmax_with_no_valid_key(valid_lens, empty):
    X = randn(2, 4, 5, seed=1).requires_grad_()
    for causal in (False, True):
        weights = masked_softmax(X, valid_lens, causal=causal)
        assert torch.isfinite(weights).all()
        for b, i in empty:
            assert torch.equal(weights[b, i], torch.zeros(5))
        weights.pow(2).sum().backward()
        assert_finite_grads(X)


@pytest.mark.parametrize(("valid_lens", "empty"), NO_KEY)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_dot_product_with_no_valid_key(valid_lens, empty, causal, need_weights):
    layer = DotProductAttention(0.0, need_weights=need_weights)
    queries = randn(2, 4, 8, seed=1).requires_grad_()
    keys, values = randn(2, 5, 8, seed=2).requires_grad_(), randn(2, 5, 3, seed=3).requires_grad_()
    output = layer(queries, keys, values, valid_lens, causal=causal)
    assert torch.isfinite(output).all()
    for b, i in empty:
        assert torch.equal(output[b, i], torch.zeros(3))
        if need_weights:
            assert torch.equal(layer.attention_weights[b, i], torch.zeros(5))
    output.pow(2).sum().backward()
    assert_finite_grads(queries, keys, values)
    for b, i in empty:
        assert torch.equal(queries.grad[b, i], torch.zeros(8))


@pytest.mark.parametrize(("valid_lens", "empty"), NO_KEY)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_with_no_valid_key(valid_lens, empty, bias, need_weights):
    layer = MultiHeadAttention(8, 2, 0.0, bias=bias, need_weights=need_weights)
    queries, keys = randn(2, 4, 8, seed=1).requires_grad_(), randn(2, 5, 8, seed=2)
    output = layer(queries, keys, keys, valid_lens)
    assert torch.isfinite(output).all()
    nothing = layer.W_o.bias.detach() if bias else torch.zeros(8)  # W_o of a zero output
    for b, i in empty:
        torch.testing.assert_close(output[b, i], nothing, atol=0, rtol=0)
        if need_weights:
            assert torch.equal(layer.attention_weights[b, :, i], torch.zeros(2, 5))
    output.pow(2).sum().backward()
    assert_finite_grads(queries, *layer.parameters())


@pytest.mark.parametrize(("valid_lens", "empty"), NO_KEY)
def test_additive_with_no_valid_key(valid_lens, empty):
    layer = AdditiveAttention(6, 0.0)
    queries, keys = randn(2, 4, 3, seed=1).requires_grad_(), randn(2, 5, 2, seed=2)
    output = layer(queries, keys, randn(2, 5, 3, seed=3), valid_lens)
    assert torch.isfinite(output).all()
    for b, i in empty:
        assert torch.equal(output[b, i], torch.zeros(3))
        assert torch.equal(layer.attention_weights[b, i], torch.zeros(5))
    output.pow(2).sum().backward()
    assert_finite_grads(queries, *layer.parameters())


# ---------------------------------------------------------------------------------------------
# 4. Clear errors.


def dot(need_weights):
    return lambda q, k, v, lens=None: DotProductAttention(0.0, need_weights=need_weights)(
        q, k, v, lens
    )


def multi_head(need_weights):
    return lambda q, k, v, lens=None: MultiHeadAttention(4, 2, 0.0, need_weights=need_weights)(
        q, k, v, lens
    )


def additive(q, k, v, lens=None):
    return AdditiveAttention(4, 0.0)(q, k, v, lens)


LAYERS = [
    pytest.param(dot(True), id="dot-explicit"),
    pytest.param(dot(False), id="dot-fused"),
    pytest.param(additive, id="additive"),
    pytest.param(multi_head(True), id="multi-head-explicit"),
    pytest.param(multi_head(False), id="multi-head-fused"),
]


@pytest.mark.parametrize("call", LAYERS)
def test_inputs_of_the_wrong_rank(call):
    with pytest.raises(
        ValueError, match=r"must all be 3-D.*got queries \(3, 4\), keys \(2, 5, 4\)"
    ):
        call(randn(3, 4), randn(2, 5, 4), randn(2, 5, 4))
    with pytest.raises(ValueError, match=r"keys \(2, 1, 5, 4\), values \(2, 5, 4\)"):
        call(randn(2, 1, 3, 4), randn(2, 1, 5, 4), randn(2, 5, 4))


def test_masked_softmax_needs_3_or_4_axes():
    for shape in ((4, 5), (1, 2, 3, 4, 5)):
        with pytest.raises(ValueError, match=re.escape("X must be 3-D (batch, queries, keys)")):
            masked_softmax(randn(*shape))
    with pytest.raises(ValueError, match=re.escape("got shape (4, 5)")):
        masked_softmax(randn(4, 5))


@pytest.mark.parametrize("call", LAYERS)
def test_mismatched_batch_sizes(call):
    with pytest.raises(ValueError, match=r"same batch size; got queries \(2, 3, 4\), keys \(3,"):
        call(randn(2, 3, 4), randn(3, 5, 4), randn(3, 5, 4))


@pytest.mark.parametrize("call", LAYERS)
def test_keys_and_values_with_different_steps(call):
    match = r"keys and values must have the same number of steps; got .*keys \(2, 5, 4\), values \(2, 6, 4\)"  # noqa: E501
    with pytest.raises(ValueError, match=match):
        call(randn(2, 3, 4), randn(2, 5, 4), randn(2, 6, 4))


@pytest.mark.parametrize("need_weights", [True, False])
def test_dot_product_needs_one_feature_size(need_weights):
    match = r"same feature size d_k .*got queries \(2, 3, 4\), keys \(2, 5, 6\)"
    with pytest.raises(ValueError, match=match):
        dot(need_weights)(randn(2, 3, 4), randn(2, 5, 6), randn(2, 5, 6))


@pytest.mark.parametrize("need_weights", [True, False])
def test_a_layer_keeps_the_feature_sizes_of_its_first_call(need_weights):
    layer = MultiHeadAttention(4, 2, 0.0, need_weights=need_weights)
    layer(randn(2, 3, 5), randn(2, 4, 6), randn(2, 4, 7))
    for args, name, size, shape in (
        ((randn(2, 3, 6), randn(2, 4, 6), randn(2, 4, 7)), "queries", 5, "(2, 3, 6)"),
        ((randn(2, 3, 5), randn(2, 4, 5), randn(2, 4, 7)), "keys", 6, "(2, 4, 5)"),
        ((randn(2, 3, 5), randn(2, 4, 6), randn(2, 4, 6)), "values", 7, "(2, 4, 6)"),
    ):
        match = re.escape(f"{name} must have {size} features, the input size of this layer; ")
        with pytest.raises(ValueError, match=match + re.escape(f"got shape {shape}")):
            layer(*args)
    # Also when the sizes came from a state dict rather than from a first call.
    loaded = MultiHeadAttention(4, 2, 0.0, need_weights=need_weights)
    loaded.load_state_dict(layer.state_dict(), strict=True)
    with pytest.raises(ValueError, match=re.escape("queries must have 5 features")):
        loaded(randn(2, 3, 6), randn(2, 4, 6), randn(2, 4, 7))

    additive_layer = AdditiveAttention(4, 0.0)
    additive_layer(randn(2, 3, 5), randn(2, 4, 6), randn(2, 4, 7))
    with pytest.raises(
        ValueError, match=re.escape("keys must have 6 features, the input size of this layer")
    ):
        additive_layer(randn(2, 3, 5), randn(2, 4, 3), randn(2, 4, 7))


def test_num_hiddens_must_divide_into_heads():
    match = re.escape("num_hiddens (10) must be divisible by num_heads (3)")
    with pytest.raises(ValueError, match=match):
        MultiHeadAttention(10, 3, 0.0)


@pytest.mark.parametrize("num_heads", [0, -2, 2.0, True])
def test_num_heads_must_be_a_positive_integer(num_heads):
    with pytest.raises(ValueError, match=rf"num_heads must be a positive integer; got {num_heads}"):
        MultiHeadAttention(8, num_heads, 0.0)


BAD_LENGTHS = [
    pytest.param(
        torch.tensor([1, 2, 3]),
        re.escape("valid_lens must have shape (batch,) = (2,) or (batch, queries) = (2, 3); ")
        + re.escape("got (3,)"),
        id="shape-1d",
    ),
    pytest.param(torch.ones(2, 4, dtype=torch.long), re.escape("got (2, 4)"), id="shape-2d"),
    pytest.param(torch.ones(2, 3, 1, dtype=torch.long), re.escape("got (2, 3, 1)"), id="shape-3d"),
    pytest.param(
        torch.tensor([1.0, 2.0]),
        re.escape("valid_lens must hold integers (torch.long); got torch.float32"),
        id="float",
    ),
    pytest.param(torch.tensor([True, False]), re.escape("got torch.bool"), id="bool"),
    pytest.param(
        torch.tensor([2, -1]), re.escape("valid_lens must be >= 0; got -1"), id="negative"
    ),
    pytest.param(
        torch.tensor([[1, 2, 3], [6, 0, 1]]),
        re.escape("valid_lens must be <= the number of keys (5); got 6"),
        id="too-long",
    ),
    pytest.param([1, 2], re.escape("valid_lens must be a tensor of integers; got list"), id="list"),
]


@pytest.mark.parametrize(("valid_lens", "match"), BAD_LENGTHS)
@pytest.mark.parametrize("call", LAYERS)
def test_bad_valid_lens(call, valid_lens, match):
    with pytest.raises(ValueError, match=match):
        call(randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4), valid_lens)


@pytest.mark.parametrize(("valid_lens", "match"), BAD_LENGTHS)
def test_bad_valid_lens_in_masked_softmax(valid_lens, match):
    with pytest.raises(ValueError, match=match):
        masked_softmax(randn(2, 3, 5), valid_lens)
    with pytest.raises(ValueError, match=match):
        masked_softmax(randn(2, 4, 3, 5), valid_lens)  # with a heads axis


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, float("nan")])
@pytest.mark.parametrize(
    "make",
    [
        lambda p: DotProductAttention(p),
        lambda p: DotProductAttention(p, need_weights=True),
        lambda p: AdditiveAttention(4, p),
        lambda p: MultiHeadAttention(4, 2, p),
        lambda p: MultiHeadAttention(4, 2, p, need_weights=True),
    ],
    ids=["dot", "dot-explicit", "additive", "multi-head", "multi-head-explicit"],
)
def test_dropout_must_be_a_probability_below_one(make, dropout):
    with pytest.raises(ValueError, match=re.escape(f"dropout must be in [0, 1); got {dropout}")):
        make(dropout)


def test_fused_path_keeps_no_weights():
    layer = MultiHeadAttention(4, 2, 0.0)
    X = randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="need_weights=True.*record_attention"):
        layer.attention_weights  # noqa: B018 - before any forward pass
    layer.need_weights = True
    layer(X, X, X)
    assert layer.attention_weights.shape == (2, 2, 3, 3)
    layer.need_weights = False
    layer(X, X, X)  # a fused pass must not leave the previous weights readable
    with pytest.raises(RuntimeError, match="the fused path ran.*need_weights=True"):
        layer.attention_weights  # noqa: B018


def test_record_attention_restores_each_setting():
    model = nn.Sequential()
    model.a = MultiHeadAttention(4, 2, 0.0)
    model.b = MultiHeadAttention(4, 2, 0.0, need_weights=True)
    model.c = DotProductAttention(0.0)
    X = randn(2, 3, 4)
    with record_attention(model) as recorded:
        assert recorded is model
        assert model.a.need_weights and model.b.need_weights and model.c.need_weights
        model.a(X, X, X)
        model.c(X, X, X)
    assert (model.a.need_weights, model.b.need_weights, model.c.need_weights) == (
        False,
        True,
        False,
    )
    assert model.a.attention_weights.shape == (2, 2, 3, 3)  # kept after the block
    assert model.c.attention_weights.shape == (2, 3, 3)
    with pytest.raises(KeyError), record_attention(model):
        raise KeyError("an error inside the block")
    assert (model.a.need_weights, model.b.need_weights, model.c.need_weights) == (
        False,
        True,
        False,
    )


# ---------------------------------------------------------------------------------------------
# 5. Properties over random shapes and lengths.


@st.composite
def masked_problems(draw):
    """(scores, valid_lens, causal) with random shapes and lengths in [0, keys]."""
    batch, num_queries, num_keys = draw(st.tuples(*[st.integers(1, 4)] * 2, st.integers(1, 6)))
    heads = draw(st.sampled_from([None, 1, 3]))
    length = st.integers(0, num_keys)
    kind = draw(st.sampled_from(["none", "1d", "2d"]))
    shape = {"none": None, "1d": (batch,), "2d": (batch, num_queries)}[kind]
    valid_lens = None
    if shape is not None:
        size = batch if kind == "1d" else batch * num_queries
        flat = draw(st.lists(length, min_size=size, max_size=size))
        valid_lens = torch.tensor(flat).reshape(shape)
    causal = draw(st.booleans())
    lead = (batch,) if heads is None else (batch, heads)
    scale = draw(st.sampled_from([0.1, 1.0, 30.0, 1e9]))  # 1e9: masking is not a big number
    scores = scale * randn(*lead, num_queries, num_keys, seed=draw(st.integers(0, 2**16)))
    return scores, valid_lens, causal


@given(masked_problems())
def test_softmax_rows_are_distributions_over_the_allowed_keys(problem):
    scores, valid_lens, causal = problem
    weights = masked_softmax(scores, valid_lens, causal=causal)
    batch, num_queries, num_keys = scores.shape[0], scores.shape[-2], scores.shape[-1]
    mask = allowed(valid_lens, batch, num_queries, num_keys, causal)
    if scores.dim() == 4:
        mask = mask[:, None].expand_as(weights)
    assert torch.isfinite(weights).all() and (weights >= 0).all()
    assert torch.equal(weights[~mask], torch.zeros_like(weights[~mask])), "exactly zero"
    sums, has_key = weights.sum(dim=-1), mask.any(dim=-1)
    torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]))
    assert torch.equal(sums[~has_key], torch.zeros_like(sums[~has_key]))


@pytest.mark.parametrize("causal", [False, True])
def test_masking_does_not_rely_on_a_large_negative_number(causal):
    """A valid score far below any fill value (d2l's -1e6) still takes all the weight."""
    X = torch.tensor([[[-1e9, 5.0, 3.0], [-1e9, -2e9, 7.0]]])
    weights = masked_softmax(X, torch.tensor([[1, 2]]), causal=causal)
    assert torch.equal(weights, torch.tensor([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]]))


def torch_copy(ours: MultiHeadAttention, num_hiddens, num_heads, bias) -> nn.MultiheadAttention:
    theirs = nn.MultiheadAttention(num_hiddens, num_heads, bias=bias, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        theirs.out_proj.weight.copy_(ours.W_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
            theirs.out_proj.bias.copy_(ours.W_o.bias)
    return theirs.eval()


@given(
    st.integers(1, 3),  # batch
    st.integers(1, 5),  # queries
    st.integers(1, 6),  # keys
    st.sampled_from([1, 2, 4]),  # heads
    st.sampled_from([1, 3]),  # features per head
    st.booleans(),  # bias
    st.data(),
)
def test_multi_head_equals_torch_multihead_attention(
    batch, num_queries, num_keys, num_heads, head_size, bias, data
):
    num_hiddens = num_heads * head_size
    seed = data.draw(st.integers(0, 2**16))
    ours = MultiHeadAttention(num_hiddens, num_heads, 0.0, bias=bias).eval()
    queries = randn(batch, num_queries, num_hiddens, seed=seed)
    keys, values = (
        randn(batch, num_keys, num_hiddens, seed=seed + 1),
        randn(batch, num_keys, num_hiddens, seed=seed + 2),
    )
    ours(queries, keys, values)
    theirs = torch_copy(ours, num_hiddens, num_heads, bias)
    lens = data.draw(st.lists(st.integers(1, num_keys), min_size=batch, max_size=batch))
    valid_lens = torch.tensor(lens)
    key_padding_mask = ~(torch.arange(num_keys) < valid_lens[:, None])
    expected, expected_weights = theirs(
        queries, keys, values, key_padding_mask=key_padding_mask, average_attn_weights=False
    )
    explicit, fused, weights = both_paths(ours, queries, keys, values, valid_lens)
    torch.testing.assert_close(explicit, expected, **CLOSE)
    torch.testing.assert_close(fused, expected, **CLOSE)
    torch.testing.assert_close(weights, expected_weights, **CLOSE)


@given(st.integers(1, 3), st.integers(1, 7), st.sampled_from([1, 2, 4]), st.data())
def test_self_attention_is_permutation_equivariant(batch, steps, num_heads, data):
    layer = MultiHeadAttention(4, num_heads, 0.0, bias=data.draw(st.booleans())).eval()
    X = randn(batch, steps, 4, seed=data.draw(st.integers(0, 2**16)))
    permutation = torch.tensor(data.draw(st.permutations(range(steps))))
    for need_weights in (True, False):
        layer.need_weights = need_weights
        torch.testing.assert_close(
            layer(X[:, permutation], X[:, permutation], X[:, permutation]),
            layer(X, X, X)[:, permutation],
            **CLOSE,
        )


# ---------------------------------------------------------------------------------------------
# 6. float64 gradient checks.


def test_masked_softmax_gradcheck():
    X = randn(2, 3, 4, seed=1, dtype=torch.float64).requires_grad_()
    for valid_lens, causal in (
        (torch.tensor([1, 3]), False),
        (torch.tensor([[0, 2, 4], [1, 1, 3]]), False),
        (torch.tensor([2, 4]), True),
    ):
        assert torch.autograd.gradcheck(
            lambda x, v=valid_lens, c=causal: masked_softmax(x, v, causal=c), X
        )


@pytest.mark.parametrize("need_weights", [True, False])
def test_dot_product_gradcheck(need_weights):
    layer = DotProductAttention(0.0, need_weights=need_weights)
    queries = randn(2, 3, 4, seed=1, dtype=torch.float64).requires_grad_()
    keys = randn(2, 4, 4, seed=2, dtype=torch.float64).requires_grad_()
    values = randn(2, 4, 2, seed=3, dtype=torch.float64).requires_grad_()
    for valid_lens, causal in (
        (None, False),
        (torch.tensor([[0, 2, 4], [1, 3, 3]]), False),
        (torch.tensor([3, 1]), True),
    ):
        assert torch.autograd.gradcheck(
            lambda q, k, v, lens=valid_lens, c=causal: layer(q, k, v, lens, causal=c),
            (queries, keys, values),
        )


@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_gradcheck(need_weights):
    layer = MultiHeadAttention(4, 2, 0.0, bias=True, need_weights=need_weights)
    layer(randn(2, 3, 4), randn(2, 4, 4), randn(2, 4, 4))
    layer.double()
    queries = randn(2, 3, 4, seed=1, dtype=torch.float64).requires_grad_()
    keys = randn(2, 4, 4, seed=2, dtype=torch.float64).requires_grad_()
    valid_lens = torch.tensor([0, 3])
    assert torch.autograd.gradcheck(
        lambda q, k, w: torch.func.functional_call(layer, {"W_q.weight": w}, (q, k, k, valid_lens)),
        (queries, keys, layer.W_q.weight.detach().clone().requires_grad_()),
    )
    assert torch.autograd.gradcheck(lambda x: layer(x, x, x, causal=True), (queries,))


# ---------------------------------------------------------------------------------------------
# The benchmark's command line (nothing is timed here).


def test_bench_names_its_benchmarks_on_an_unknown_one(capsys):
    from companion.bench import BENCHMARKS, main

    assert "attention" in BENCHMARKS
    assert main(["nope"]) == 2
    assert "unknown benchmark 'nope'; choose one of: attention" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["attention", "--lengths", "0"])
    assert "--lengths must be positive; got [0]" in capsys.readouterr().err
