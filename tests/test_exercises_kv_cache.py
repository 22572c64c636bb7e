"""The KV-cache chapter's checkers (sec-kv-cache) pass correct answers, name the typical
mistakes and refuse an answer that calls companion's own attention or cache. Every call is
seeded."""

from __future__ import annotations

import contextlib
import io
import math

import pytest
import torch
import torch.nn.functional as F

from companion.exercises.kv_cache import check_cached_attention, check_kv_cache_bytes

# ----------------------------------------------------------------------------- KV-cache step


def cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
    """The answer the chapter's solution gives: split, append, mask aligned with the last keys."""
    batch, new, width = X.shape
    head_dim = width // num_heads

    def split(M):
        return M.reshape(batch, new, num_heads, head_dim).transpose(1, 2)

    keys = torch.cat((cached_keys, split(X @ W_k)), dim=2)
    values = torch.cat((cached_values, split(X @ W_v)), dim=2)
    scores = split(X @ W_q) @ keys.transpose(-2, -1) / math.sqrt(head_dim)
    cached = cached_keys.shape[2]
    visible = torch.ones(new, cached + new, dtype=torch.bool).tril(diagonal=cached)
    weights = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
    output = (weights @ values).transpose(1, 2).reshape(batch, new, width) @ W_o
    return output, keys, values


def cached_attention_with_sdpa(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
    """Another right answer: PyTorch's fused attention with an explicit boolean mask."""
    batch, new, width = X.shape

    def split(M):
        return M.reshape(batch, new, num_heads, -1).transpose(1, 2)

    keys = torch.cat((cached_keys, split(X @ W_k)), dim=2)
    values = torch.cat((cached_values, split(X @ W_v)), dim=2)
    cached = cached_keys.shape[2]
    mask = torch.ones(new, cached + new, dtype=torch.bool).tril(diagonal=cached)
    heads = F.scaled_dot_product_attention(split(X @ W_q), keys, values, attn_mask=mask)
    return heads.transpose(1, 2).reshape(batch, new, width) @ W_o, keys, values


@pytest.mark.parametrize("answer", [cached_attention, cached_attention_with_sdpa])
@pytest.mark.parametrize("seed", range(5))
def test_cached_attention_pass(answer, seed, capsys):
    assert check_cached_attention(answer, seed=seed)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_cached_attention_draws_one_and_several_new_steps_never_the_chapter_sizes():
    seen_new, seen_heads, seen_head_dims = set(), set(), set()

    def spy(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
        seen_new.add(X.shape[1])
        seen_heads.add(num_heads)
        seen_head_dims.add(X.shape[2] // num_heads)
        return cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads)

    for seed in range(20):
        with contextlib.redirect_stdout(io.StringIO()):
            assert check_cached_attention(spy, seed=seed)
    assert 1 in seen_new and seen_new - {1}, "single steps and several"
    assert not seen_heads & {2, 4} and not seen_head_dims & {4, 16}


def with_mistake(**mistake):
    """A student's answer that makes one mistake, written out as a student would."""

    def answer(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
        batch, new, width = X.shape
        p = width // num_heads
        if mistake.get("weights") == "transposed":
            W_q, W_k, W_v, W_o = W_q.T, W_k.T, W_v.T, W_o.T

        def split(M):
            if mistake.get("heads") == "reshaped":
                return M.reshape(batch, num_heads, M.shape[1], p)
            return M.reshape(batch, M.shape[1], num_heads, p).transpose(1, 2)

        def merge(M):
            if mistake.get("heads") == "reshaped":
                return M.reshape(batch, M.shape[2], width)
            return M.transpose(1, 2).reshape(batch, M.shape[2], width)

        W_value = W_k if mistake.get("values") == "W_k" else W_v
        new_keys, new_values = split(X @ W_k), split(X @ W_value)
        if mistake.get("project") == "none":
            new_keys = new_values = split(X)
        if mistake.get("project") == "cache too":
            cached_keys = split(merge(cached_keys) @ W_k)
            cached_values = split(merge(cached_values) @ W_v)
        keys = torch.cat((cached_keys, new_keys), dim=2)
        values = torch.cat((cached_values, new_values), dim=2)
        if mistake.get("append") == "forgotten":
            keys, values = cached_keys, cached_values
        elif mistake.get("append") == "only new":
            keys, values = new_keys, new_values
        elif mistake.get("append") == "in front":
            keys = torch.cat((new_keys, cached_keys), dim=2)
            values = torch.cat((new_values, cached_values), dim=2)
        scores = split(X @ W_q) @ keys.transpose(-2, -1)
        scores = scores / {"none": 1.0, "d": math.sqrt(width)}.get(
            mistake.get("scale"), math.sqrt(p)
        )
        steps = keys.shape[2]
        if mistake.get("mask") != "none":
            shift = 0 if mistake.get("mask") == "tril" else steps - new
            visible = torch.ones(new, steps, dtype=torch.bool).tril(diagonal=shift)
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = scores.softmax(dim=-2 if mistake.get("softmax") == "queries" else -1)
        output = merge(weights @ values)
        if mistake.get("W_o") != "forgotten":
            output = output @ W_o
        return output, keys, values

    return answer


@pytest.mark.parametrize(
    "mistake, hint",
    [
        (dict(append="forgotten"), "the cache was not appended"),
        (dict(append="only new"), "only the new steps' keys and values"),
        (dict(append="in front"), "went in front of the cached ones"),
        (dict(project="none"), "appended without their projections"),
        (dict(project="cache too"), "the cached keys and values were projected again"),
        (dict(values="W_k"), "the values were projected with W_k"),
        (dict(weights="transposed"), "not X @ W_q.T"),
        (dict(scale="none"), "the scores are not scaled"),
        (dict(scale="d"), "scaled by sqrt(d), the full width"),
        (dict(mask="tril"), "the causal mask hides cached steps"),
        (dict(mask="none"), "each may see only the steps up to its own"),
        (dict(heads="reshaped"), "heads and positions are mixed up"),
        (dict(W_o="forgotten"), "not projected: multiply by W_o"),
        (dict(softmax="queries"), "the softmax runs over the wrong axis"),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_cached_attention_hints(mistake, hint, seed, capsys):
    assert not check_cached_attention(with_mistake(**mistake), seed=seed)
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize("seed", range(5))
def test_cached_attention_hard_wired_to_the_chapter_fails(seed, capsys):
    num_heads = 4  # the chapter's trained model

    def reads_the_notebook(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, heads):
        return cached_attention(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads)

    assert not check_cached_attention(reads_the_notebook, seed=seed)
    assert capsys.readouterr().out.startswith(("hint:", "error:"))


def test_cached_attention_refuses_companions_layer_and_cache(capsys):
    from companion import MultiHeadAttention
    from companion.layers.kv_cache import KVCache

    def calls_the_layer(X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads):
        d = X.shape[-1]
        layer = MultiHeadAttention(d, num_heads, 0.0, query_size=d, key_size=d, value_size=d)
        cache = KVCache()
        with torch.no_grad():
            for linear, W in zip(
                (layer.W_q, layer.W_k, layer.W_v, layer.W_o), (W_q, W_k, W_v, W_o)
            ):
                linear.weight.copy_(W.T)
            cache.update(cached_keys, cached_values)
            output = layer(X, X, X, causal=True, cache=cache)
        return output, cache.keys, cache.values

    assert not check_cached_attention(calls_the_layer, seed=0)
    assert "companion's" in capsys.readouterr().out


# ----------------------------------------------------------------------------- cache bytes


def kv_cache_bytes(num_layers, num_heads, num_kv_heads, head_dim, tokens, batch, bytes_per_number):
    return 2 * num_layers * num_kv_heads * head_dim * tokens * batch * bytes_per_number


@pytest.mark.parametrize("seed", range(3))
def test_kv_cache_bytes_pass(seed, capsys):
    assert check_kv_cache_bytes(kv_cache_bytes, seed=seed)
    assert capsys.readouterr().out.startswith("pass: kv_cache_bytes matches")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda L, h, g, p, n, b, B: L * g * p * n * b * B, "the keys *and* the values"),
        (lambda L, h, g, p, n, b, B: 2 * L * h * p * n * b * B, "the query heads were counted"),
        (lambda L, h, g, p, n, b, B: 2 * g * p * n * b * B, "one layer only"),
        (lambda L, h, g, p, n, b, B: 2 * L * g * p * n * B, "one sequence only"),
        (lambda L, h, g, p, n, b, B: 16 * L * g * p * n * b * B, "bits, not bytes"),
        (lambda L, h, g, p, n, b, B: None, "not implemented yet"),
        (lambda L, h, g, p, n, b, B: 2 * L * g * p * (n + 1) * b * B, "values differ"),
    ],
)
def test_kv_cache_bytes_hints(wrong, hint, capsys):
    assert not check_kv_cache_bytes(wrong, seed=0)
    assert hint in capsys.readouterr().out
