"""Linear attention (chapter 8): the O(n) form against the quadratic form, causal parallel
against recurrent, masking, errors, gradients; and the peak-memory measurement."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import companion
from companion.experiments.complexity import IMPLEMENTATIONS, attention_layer, peak_memory
from companion.layers.attention import DotProductAttention
from companion.layers.efficient import LinearAttention, RecurrentState, feature_map
from companion.measure import run_in_fresh_process
from tests.masks import allowed, randn
from tests.masks import lengths as _lengths


def lengths(kind, batch, queries, keys, seed=0):
    """valid_lens that may be 0: a query with no key is one of the cases here."""
    return _lengths(kind, batch, queries, keys, seed, minimum=0)


CLOSE = {"atol": 1e-5, "rtol": 1e-5}
MASKS = [("none", False), ("none", True), ("1d", False), ("2d", False), ("1d", True), ("2d", True)]


def quadratic(queries, keys, values, mask=None):
    """The reference: phi(Q) phi(K)^T, masked, each row divided by its sum, times V."""
    similarity = (F.elu(queries) + 1) @ (F.elu(keys) + 1).transpose(-2, -1)  # (..., n_q, n_k)
    if mask is not None:
        similarity = similarity.masked_fill(~mask, 0.0)
    totals = similarity.sum(dim=-1, keepdim=True)
    weights = torch.where(totals > 0, similarity / totals.clamp_min(1e-30), 0.0)
    return weights @ values


def test_feature_map_is_elu_plus_one_and_positive():
    x = torch.linspace(-15, 5, 101)
    torch.testing.assert_close(feature_map(x), F.elu(x) + 1, atol=1e-6, rtol=1e-6)
    very_negative = torch.linspace(-80, -15, 101)  # elu(x) + 1 rounds to 0 there in float32
    assert (feature_map(very_negative) > 0).all()
    torch.testing.assert_close(feature_map(very_negative), torch.exp(very_negative))
    x = torch.tensor([-100.0, -1.0, 0.0, 1.0, 100.0], dtype=torch.float64, requires_grad=True)
    feature_map(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.exp(x.detach().clamp(max=0)))


@pytest.mark.parametrize(("kind", "causal"), MASKS)
@pytest.mark.parametrize("heads", [None, 3], ids=["3-D", "4-D"])
@pytest.mark.parametrize("num_queries", [5, 7, 9])
def test_linear_form_equals_quadratic_form(kind, causal, heads, num_queries):
    batch, num_keys = 2, 7
    lead = (batch,) if heads is None else (batch, heads)
    queries, keys = randn(*lead, num_queries, 4, seed=1), randn(*lead, num_keys, 4, seed=2)
    values = randn(*lead, num_keys, 3, seed=3)
    valid_lens = lengths(kind, batch, num_queries, num_keys)
    mask = allowed(valid_lens, batch, num_queries, num_keys, causal)
    if heads is not None:
        mask = mask.unsqueeze(1)
    expected = quadratic(queries, keys, values, mask)
    linear = LinearAttention()
    torch.testing.assert_close(linear(queries, keys, values, valid_lens, causal=causal), expected)
    explicit = LinearAttention(need_weights=True)
    got = explicit(queries, keys, values, valid_lens, causal=causal)
    torch.testing.assert_close(got, expected, **CLOSE)
    weights = explicit.attention_weights  # (..., n_q, n_k)
    assert weights.shape == (*lead, num_queries, num_keys)
    assert (weights[~mask.expand_as(weights)] == 0).all()
    sums = weights.sum(dim=-1)
    torch.testing.assert_close(sums, mask.any(dim=-1).expand_as(sums).to(sums.dtype))


@pytest.mark.parametrize(("kind", "causal"), MASKS)
@pytest.mark.parametrize("kv_heads", [1, 2])
@pytest.mark.parametrize("need_weights", [False, True])
def test_shared_key_value_heads_are_read_by_their_query_heads(kind, causal, kv_heads, need_weights):
    """Grouped- and multi-query inputs, as the dot-product layers take them: query head i reads
    key-value head i // (heads / kv_heads), on every path and in the recurrent form."""
    batch, heads, n = 2, 4, 5
    queries = randn(batch, heads, n, 4, seed=1)
    keys, values = randn(batch, kv_heads, n, 4, seed=2), randn(batch, kv_heads, n, 3, seed=3)
    valid_lens = lengths(kind, batch, n, n)
    group = heads // kv_heads
    repeated = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
    layer = LinearAttention(need_weights=need_weights)
    expected = layer(queries, *repeated, valid_lens, causal=causal)
    got = layer(queries, keys, values, valid_lens, causal=causal)
    torch.testing.assert_close(got, expected)
    if causal and valid_lens is None:
        torch.testing.assert_close(layer.recurrent(queries, keys, values), expected, **CLOSE)


def test_without_a_mask_the_linear_path_is_the_reordered_product():
    queries, keys, values = randn(2, 6, 4, seed=1), randn(2, 8, 4, seed=2), randn(2, 8, 5, seed=3)
    phi_q, phi_k = F.elu(queries) + 1, F.elu(keys) + 1
    numerator = phi_q @ (phi_k.transpose(1, 2) @ values)  # (2, 6, 5): no (6, 8) matrix
    denominator = phi_q @ phi_k.sum(dim=1)[..., None]  # (2, 6, 1)
    torch.testing.assert_close(LinearAttention()(queries, keys, values), numerator / denominator)


def test_the_linear_path_keeps_no_weights():
    layer = LinearAttention()
    layer(randn(1, 3, 2), randn(1, 3, 2), randn(1, 3, 2))
    with pytest.raises(RuntimeError, match="need_weights=True"):
        _ = layer.attention_weights


@pytest.mark.parametrize("heads", [None, 2], ids=["3-D", "4-D"])
def test_causal_parallel_form_equals_recurrent_form_step_by_step(heads):
    batch, n = 3, 6
    lead = (batch,) if heads is None else (batch, heads)
    queries, keys, values = (
        randn(*lead, n, 4, seed=4),
        randn(*lead, n, 4, seed=5),
        randn(*lead, n, 3, seed=6),
    )
    layer = LinearAttention()
    parallel = layer(queries, keys, values, causal=True)  # (..., n, 3)
    state = None
    for t in range(n):
        output, state = layer.step(queries[..., t, :], keys[..., t, :], values[..., t, :], state)
        torch.testing.assert_close(output, parallel[..., t, :], **CLOSE)
        # The state is the running sum of phi(k_j) v_j^T and of phi(k_j) over j <= t.
        phi_k = feature_map(keys[..., : t + 1, :])
        torch.testing.assert_close(state.S, phi_k.transpose(-2, -1) @ values[..., : t + 1, :])
        torch.testing.assert_close(state.z, phi_k.sum(dim=-2))
    assert isinstance(state, RecurrentState)
    assert state.S.shape == (*lead, 4, 3) and state.z.shape == (*lead, 4)
    torch.testing.assert_close(layer.recurrent(queries, keys, values), parallel, **CLOSE)


def test_causal_outputs_do_not_see_the_future():
    queries, keys, values = randn(1, 6, 4, seed=1), randn(1, 6, 4, seed=2), randn(1, 6, 3, seed=3)
    layer = LinearAttention()
    before = layer(queries, keys, values, causal=True)
    keys2, values2 = keys.clone(), values.clone()
    keys2[:, 4:], values2[:, 4:] = 10.0, -10.0  # change only the last two steps
    after = layer(queries, keys2, values2, causal=True)
    torch.testing.assert_close(after[:, :4], before[:, :4])
    assert not torch.allclose(after[:, 4:], before[:, 4:])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kind", ["1d", "2d"])
def test_masked_keys_have_no_influence(kind, causal):
    batch, n = 2, 6
    valid_lens = torch.tensor([2, 4]) if kind == "1d" else torch.tensor([[1] * n, [3] * n])
    queries = randn(batch, n, 4, seed=1)
    keys = randn(batch, n, 4, seed=2, dtype=torch.float64).float().requires_grad_()
    values = randn(batch, n, 3, seed=3).requires_grad_()
    layer = LinearAttention()
    output = layer(queries, keys, values, valid_lens, causal=causal)
    output.sum().backward()
    keys2, values2 = keys.detach().clone(), values.detach().clone()
    for b, length in enumerate([2, 4] if kind == "1d" else [1, 3]):
        keys2[b, length:], values2[b, length:] = 100.0, 100.0  # only masked keys change
        assert (keys.grad[b, length:] == 0).all() and (values.grad[b, length:] == 0).all()
    torch.testing.assert_close(layer(queries, keys2, values2, valid_lens, causal=causal), output)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("valid_lens", [torch.tensor([0, 3]), torch.tensor([[0, 2], [3, 0]])])
def test_a_query_with_no_key_gets_zero_output(valid_lens, causal, need_weights):
    queries, keys, values = randn(2, 2, 4, seed=1), randn(2, 3, 4, seed=2), randn(2, 3, 3, seed=3)
    layer = LinearAttention(need_weights=need_weights)
    output = layer(queries, keys, values, valid_lens, causal=causal)
    assert torch.isfinite(output).all()
    empty = allowed(valid_lens, 2, 2, 3, causal).any(dim=-1) == 0  # (batch, queries)
    assert empty.any()
    assert (output[empty] == 0).all()


def test_gradients_match_finite_differences_in_float64():
    kwargs = {"dtype": torch.float64}
    queries = randn(2, 4, 3, seed=1, **kwargs).requires_grad_()
    keys = randn(2, 5, 3, seed=2, **kwargs).requires_grad_()
    values = randn(2, 5, 2, seed=3, **kwargs).requires_grad_()
    inputs = (queries, keys, values)
    layer = LinearAttention()
    assert torch.autograd.gradcheck(lambda q, k, v: layer(q, k, v), inputs)
    lens = torch.tensor([2, 5])
    assert torch.autograd.gradcheck(lambda q, k, v: layer(q, k, v, lens), inputs)
    per_query = torch.tensor([[1, 2, 3, 4], [5, 0, 3, 2]])
    assert torch.autograd.gradcheck(lambda q, k, v: layer(q, k, v, per_query, causal=True), inputs)
    square = (randn(2, 5, 3, seed=4, **kwargs).requires_grad_(), keys, values)
    assert torch.autograd.gradcheck(lambda q, k, v: layer(q, k, v, causal=True), square)
    assert torch.autograd.gradcheck(lambda q, k, v: layer.recurrent(q, k, v), square)
    state = RecurrentState(randn(2, 3, 2, seed=5, **kwargs), randn(2, 3, seed=6, **kwargs).abs())
    step_inputs = (queries[:, 0], keys[:, 0], values[:, 0])
    assert torch.autograd.gradcheck(lambda q, k, v: layer.step(q, k, v, state)[0], step_inputs)


BAD_INPUTS = [
    ((2, 3, 4), (2, 3, 4), (3, 4), "must all be 3-D or 4-D"),
    ((2, 3, 4), (2, 1, 3, 4), (2, 1, 3, 4), "must all be 3-D or 4-D"),
    ((2, 3, 4), (3, 3, 4), (3, 3, 4), "same batch size"),
    ((2, 3, 4), (2, 5, 4), (2, 4, 4), "same number of steps"),
    ((2, 3, 4), (2, 5, 6), (2, 5, 4), "same feature size d_k"),
]


@pytest.mark.parametrize(("q", "k", "v", "message"), BAD_INPUTS)
@pytest.mark.parametrize("need_weights", [False, True])
def test_bad_shapes_raise_value_errors(q, k, v, message, need_weights):
    with pytest.raises(ValueError, match=message):
        LinearAttention(need_weights=need_weights)(torch.ones(q), torch.ones(k), torch.ones(v))


@pytest.mark.parametrize(
    ("valid_lens", "message"),
    [
        ([1, 2], "must be a tensor of integers"),
        (torch.tensor([1.0, 2.0]), "must hold integers"),
        (torch.tensor([1, 2, 3]), "must have shape"),
        (torch.tensor([-1, 2]), ">= 0"),
        (torch.tensor([1, 6]), "<= the number of keys"),
    ],
)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_bad_valid_lens_raise_value_errors(valid_lens, message, causal, need_weights):
    x = torch.ones(2, 5, 4)
    with pytest.raises(ValueError, match=message):
        LinearAttention(need_weights=need_weights)(x, x, x, valid_lens, causal=causal)


def test_bad_steps_raise_value_errors():
    layer = LinearAttention()
    x = torch.ones(2, 4)
    with pytest.raises(ValueError, match="same leading axes"):
        layer.step(x, x, torch.ones(3, 4))
    with pytest.raises(ValueError, match=r"\(batch, features\)"):
        layer.step(torch.ones(4), torch.ones(4), torch.ones(4))
    with pytest.raises(ValueError, match="same feature size d_k"):
        layer.step(x, torch.ones(2, 5), x)
    with pytest.raises(ValueError, match="state must hold S of shape"):
        layer.step(x, x, x, RecurrentState(torch.zeros(2, 4, 3), torch.zeros(2, 4)))
    with pytest.raises(ValueError, match="one query per key"):
        layer.recurrent(torch.ones(1, 3, 4), torch.ones(1, 5, 4), torch.ones(1, 5, 2))


def test_attention_layers_by_name():
    assert isinstance(attention_layer("linear"), LinearAttention)
    explicit, fused = attention_layer("explicit"), attention_layer("fused")
    assert isinstance(fused, DotProductAttention) and not fused.need_weights
    assert isinstance(explicit, DotProductAttention) and explicit.need_weights
    with pytest.raises(ValueError, match="implementation must be one of"):
        attention_layer("sparse")
    with pytest.raises(ValueError, match="implementation must be one of"):
        peak_memory(["sparse"])


def test_peak_memory_sees_the_explicit_weights():
    """One fresh process; the explicit path holds at least the (1, 8, 1024, 1024) weights."""
    measured = peak_memory(IMPLEMENTATIONS, lengths=(1024,))
    assert set(measured) == set(IMPLEMENTATIONS)
    if measured["explicit"][1024] is None:
        pytest.skip("peak memory cannot be measured on this platform")
    weights_mib = 8 * 1024 * 1024 * 4 / 2**20
    assert measured["explicit"][1024] >= weights_mib
    assert measured["fused"][1024] < weights_mib / 4
    assert measured["linear"][1024] < weights_mib / 2


def test_a_fresh_process_imports_this_companion():
    """The child finds the package this process imported first on its path (the directory above
    ``companion/``, not ``companion/`` itself), whatever its working directory."""
    path = run_in_fresh_process("os", "getenv", "PYTHONPATH")
    assert path.split(os.pathsep)[0] == str(Path(companion.__file__).resolve().parent.parent)
    assert run_in_fresh_process("os", "getenv", "MALLOC_MMAP_THRESHOLD_") == "65536"
    variable = "MALLOC_MMAP_THRESHOLD_"
    kept = run_in_fresh_process("os", "getenv", variable, release_freed_memory=False)
    assert kept == os.environ.get(variable)
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_in_fresh_process("sys", "exit", 3)
    assert failed.value.returncode == 3
