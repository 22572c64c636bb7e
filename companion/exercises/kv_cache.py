"""Checkers for sec-kv-cache, decoding with a key-value cache.

``check_cached_attention`` checks the build-it-yourself exercise: one step of multi-head
self-attention with a key-value cache, from tensor operations, against companion's
``MultiHeadAttention`` and ``KVCache``. It names a cache not appended (or appended in front),
new steps not projected, cached ones projected again, a missing or wrong scale, heads mixed up
with positions, and a causal mask that hides the cached steps; and it refuses an answer that
calls companion's attention or cache, which hold the very code the exercise asks for.

``check_kv_cache_bytes`` checks the size of a decoder's cache in bytes from the model's
shape, and names the usual slips: the values forgotten, the query heads counted instead of the
key-value heads, the layers or the batch forgotten, bits instead of bytes.

The sizes are drawn afresh on every call (``seed=`` repeats a run, for tests) and are never the
chapter's own (its trained model has 4 heads of 16 features, its examples 2 of 4), so a solution
that reads the notebook's variables instead of its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from companion.exercises.core import Inputs, check, first_seed, named_like, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw
from companion.layers.attention import MultiHeadAttention
from companion.layers.kv_cache import KVCache

CHAPTER_BATCH = 2  # the batch of the chapter's examples


# ----------------------------------------------------------------------------- KV-cache step

# The chapter's heads and head sizes: its trained model (4 heads of 16 features) and the small
# blocks of its examples (2 heads of 4).
CHAPTER_HEADS, CHAPTER_HEAD_DIMS = (2, 4), (4, 16)

NOT_APPENDED = (
    "the cache was not appended: the keys and values you attend to and return must be the "
    "cached ones followed by the new steps', (batch, heads, cached + new, d/heads)"
)
ONLY_NEW = (
    "you attend to (and return) only the new steps' keys and values: append them to the cached "
    "ones along the steps axis, torch.cat((cached_keys, new_keys), dim=2)"
)
PREPENDED = (
    "the new steps' keys and values went in front of the cached ones: append them at the end "
    "(dim=2), so that step t stays at position t of the cache"
)
NEW_NOT_PROJECTED = (
    "the new steps were appended without their projections: the cache holds keys X @ W_k and "
    "values X @ W_v, split into heads, not the inputs X"
)
CACHE_PROJECTED_AGAIN = (
    "the cached keys and values were projected again: they were stored after W_k and W_v, so "
    "only the new steps need projecting"
)
VALUES_WITH_W_K = "the values were projected with W_k: values are X @ W_v"
TRANSPOSED_WEIGHTS = (
    "the weights are in the row form of the notation page: X @ W_q, not X @ W_q.T (nn.Linear "
    "stores the transpose, but these are plain matrices)"
)
NO_SCALE = "the scores are not scaled: divide Q K^T by sqrt(d/heads), the width of one head"
WRONG_SCALE = (
    "the scores are scaled by sqrt(d), the full width: each head's queries and keys have "
    "d/heads features, so divide by sqrt(d/heads)"
)
MASK_HIDES_CACHE = (
    "the causal mask hides cached steps: a plain lower triangle over (new, cached + new) lets "
    "new step i see keys 0 .. i only. New step i sits at position cached + i and sees keys "
    "0 .. cached + i: torch.ones(new, cached + new).tril(diagonal=cached)"
)
NO_MASK = (
    "with several new steps, each may see only the steps up to its own: new step i sits at "
    "position cached + i and must not see the new steps after it (a causal mask aligned with "
    "the last keys, tril(diagonal=cached))"
)
TRANSPOSED_HEADS = (
    "heads and positions are mixed up: split with X.reshape(batch, new, heads, d/heads)"
    ".transpose(1, 2) and merge with .transpose(1, 2).reshape(batch, new, d); a direct reshape "
    "is right only for a single new step"
)
NO_OUTPUT_PROJECTION = "the heads were concatenated but not projected: multiply by W_o at the end"
WRONG_SOFTMAX_AXIS = "the softmax runs over the wrong axis: normalise over the keys, dim=-1"
BUILD_IT = "the exercise is to write the step yourself, from matrix products and a softmax"
OWN_LAYERS = {
    "companion.layers.kv_cache": f"the answer uses companion's KVCache: {BUILD_IT}",
    "companion.layers.attention": (
        f"the answer calls companion's attention (MultiHeadAttention or its parts): {BUILD_IT}"
    ),
    "torch.nn.functional.multi_head_attention_forward": (
        f"the answer calls torch's nn.MultiheadAttention: {BUILD_IT}"
    ),
}


def _kv_sizes(generator: torch.Generator, single_step: bool) -> tuple[int, ...]:
    """``(batch, new, cached, heads, head_dim)``: never the chapter's heads or head sizes, and
    batch, new steps, cached steps and heads all different, so that a swapped axis shows."""
    while True:
        batch = draw(generator, 1, 4, avoid=[CHAPTER_BATCH])
        new = 1 if single_step else draw(generator, 2, 4)
        cached = draw(generator, 1, 6)
        heads = draw(generator, 2, 5, avoid=CHAPTER_HEADS)
        head_dim = draw(generator, 2, 6, avoid=CHAPTER_HEAD_DIMS)
        if len({batch, new, cached, heads}) == 4 and head_dim != heads:
            return batch, new, cached, heads, head_dim


def _kv_inputs(generator: torch.Generator) -> Inputs:
    # Trials alternate (their seeds are consecutive): one new step (decoding token by token),
    # and several (a prompt).
    single_step = generator.initial_seed() % 2 == 0
    batch, new, cached, heads, head_dim = _kv_sizes(generator, single_step)
    d = heads * head_dim
    X = torch.randn(batch, new, d, generator=generator)  # the new steps' inputs
    cached_keys = torch.randn(batch, heads, cached, head_dim, generator=generator)
    cached_values = torch.randn(batch, heads, cached, head_dim, generator=generator)
    W_q, W_k, W_v, W_o = (torch.randn(d, d, generator=generator) / d**0.5 for _ in range(4))
    return X, cached_keys, cached_values, W_q, W_k, W_v, W_o, heads


def _cached_attention(
    X: torch.Tensor,
    cached_keys: torch.Tensor,
    cached_values: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    W_v: torch.Tensor,
    W_o: torch.Tensor,
    num_heads: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference: companion's MultiHeadAttention with these weights, its KVCache holding
    the cached keys and values."""
    d = X.shape[-1]
    layer = MultiHeadAttention(d, num_heads, 0.0, query_size=d, key_size=d, value_size=d)
    cache = KVCache()
    with torch.no_grad():
        for linear, W in zip((layer.W_q, layer.W_k, layer.W_v, layer.W_o), (W_q, W_k, W_v, W_o)):
            linear.weight.copy_(W.T)  # nn.Linear computes X @ weight.T
        cache.update(cached_keys, cached_values)
        output = layer(X, X, X, causal=True, cache=cache)
    return (output, *cache.stored())


def _mistaken_attention(
    *inputs: Any,
    append: str = "end",
    project_new: bool = True,
    reproject_cache: bool = False,
    values_with_W_k: bool = False,
    transposed_weights: bool = False,
    scale: str = "head",
    mask: str = "aligned",
    heads: str = "right",
    output_projection: bool = True,
    softmax_dim: int = -1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One cached self-attention step written out by hand, with one mistake switched on."""
    X, cached_keys, cached_values, W_q, W_k, W_v, W_o, num_heads = inputs
    batch, new, d = X.shape
    head_dim = d // num_heads
    if transposed_weights:
        W_q, W_k, W_v, W_o = W_q.T, W_k.T, W_v.T, W_o.T
    if values_with_W_k:
        W_v = W_k

    def split(M: torch.Tensor) -> torch.Tensor:  # (batch, steps, d) -> (batch, heads, steps, p)
        if heads == "transposed":
            return M.reshape(M.shape[0], num_heads, M.shape[1], head_dim)
        return M.reshape(M.shape[0], M.shape[1], num_heads, head_dim).transpose(1, 2)

    def merge(M: torch.Tensor) -> torch.Tensor:  # (batch, heads, steps, p) -> (batch, steps, d)
        if heads == "transposed":
            return M.reshape(M.shape[0], M.shape[2], d)
        return M.transpose(1, 2).reshape(M.shape[0], M.shape[2], d)

    new_keys, new_values = (split(X @ W_k), split(X @ W_v)) if project_new else (split(X),) * 2
    if reproject_cache:
        cached_keys = split(merge(cached_keys) @ W_k)
        cached_values = split(merge(cached_values) @ W_v)
    keys, values = {
        "end": (torch.cat((cached_keys, new_keys), 2), torch.cat((cached_values, new_values), 2)),
        "front": (torch.cat((new_keys, cached_keys), 2), torch.cat((new_values, cached_values), 2)),
        "none": (cached_keys, cached_values),
        "only new": (new_keys, new_values),
    }[append]
    scores = split(X @ W_q) @ keys.transpose(-2, -1)  # (batch, heads, new, keys)
    scores = scores / {"head": math.sqrt(head_dim), "model": math.sqrt(d), "none": 1.0}[scale]
    if mask != "none":
        diagonal = keys.shape[2] - new if mask == "aligned" else 0
        visible = torch.ones(new, keys.shape[2], dtype=torch.bool).tril(diagonal)
        scores = scores.masked_fill(~visible, float("-inf"))
    output = merge(scores.softmax(dim=softmax_dim) @ values)  # (batch, new, d)
    return (output @ W_o if output_projection else output), keys, values


def check_cached_attention(
    student_fn: Callable[..., tuple[torch.Tensor, ...]], *, seed: int | None = None
) -> bool:
    """sec-transformer: ``student_fn(X, cached_keys, cached_values, W_q, W_k, W_v,
    W_o, num_heads)`` attends the new steps ``X`` ``(batch, new, d)`` to the cached keys and
    values ``(batch, heads, cached, d / heads)`` and to themselves (causally), and returns
    ``(output, keys, values)``: the output ``(batch, new, d)`` and the grown cache. Trials
    alternate between one new step and several; ``seed`` repeats a run (for tests)."""

    def wrong(**mistake: Any) -> Callable[..., tuple[torch.Tensor, ...]]:
        return lambda *inputs: _mistaken_attention(*inputs, **mistake)

    start = first_seed(seed)
    hint = forbidden_call(student_fn, _kv_inputs(seeded_generator(start)), OWN_LAYERS)
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _cached_attention,
        _kv_inputs,
        mistakes=[
            (wrong(append="none"), NOT_APPENDED),
            (wrong(append="only new"), ONLY_NEW),
            (wrong(append="front"), PREPENDED),
            (wrong(project_new=False), NEW_NOT_PROJECTED),
            (wrong(reproject_cache=True), CACHE_PROJECTED_AGAIN),
            (wrong(values_with_W_k=True), VALUES_WITH_W_K),
            (wrong(transposed_weights=True), TRANSPOSED_WEIGHTS),
            (wrong(scale="none"), NO_SCALE),
            (wrong(scale="model"), WRONG_SCALE),
            (wrong(mask="top left"), MASK_HIDES_CACHE),
            (wrong(mask="none"), NO_MASK),
            (wrong(heads="transposed"), TRANSPOSED_HEADS),
            (wrong(output_projection=False), NO_OUTPUT_PROJECTION),
            (wrong(softmax_dim=-2), WRONG_SOFTMAX_AXIS),
        ],
        trials=6,
        output_names=("output", "keys", "values"),
        seed=start,
    )


# ----------------------------------------------------------------------------- cache bytes

KV_BYTES_ARGUMENTS = (
    "num_layers", "num_heads", "num_kv_heads", "head_dim", "tokens", "batch", "bytes_per_number"
)  # fmt: skip


def _kv_cache_bytes(
    num_layers: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    tokens: int,
    batch: int,
    bytes_per_number: int,
    *,
    keys_and_values: int = 2,
    heads: str = "kv",
    layers: bool = True,
    batched: bool = True,
    unit: int = 1,
) -> torch.Tensor:
    """The bytes of a decoder's self-attention caches; the keywords switch on one mistake."""
    count = keys_and_values * (num_kv_heads if heads == "kv" else num_heads) * head_dim * tokens
    count *= (num_layers if layers else 1) * (batch if batched else 1)
    return torch.tensor(float(count * bytes_per_number * unit), dtype=torch.float64)


def _bytes_inputs(generator: torch.Generator) -> Inputs:
    while True:
        num_kv_heads = draw(generator, 1, 4)
        num_heads = num_kv_heads * draw(generator, 2, 4)  # grouped-query attention
        sizes = (draw(generator, 2, 40), num_heads, num_kv_heads, 2 ** draw(generator, 3, 7))
        rest = (draw(generator, 100, 5000), draw(generator, 2, 16), 2 ** draw(generator, 0, 2))
        if len({sizes[0], rest[1]}) == 2:  # layers and batch differ: a swap would show
            return (*sizes, *rest)


def check_kv_cache_bytes(
    student_fn: Callable[..., int | float], *, seed: int | None = None
) -> bool:
    """sec-kv-cache: ``student_fn(num_layers, num_heads, num_kv_heads, head_dim, tokens, batch,
    bytes_per_number)`` returns the bytes that the self-attention caches of a decoder-only
    model hold after ``tokens`` steps of a batch of ``batch`` sequences: every layer keeps the
    keys and the values of its ``num_kv_heads`` key-value heads, ``head_dim`` numbers each."""

    def as_tensor(*inputs: Any) -> Any:
        result = student_fn(*inputs)
        if isinstance(result, bool) or not isinstance(result, int | float):
            return result  # reported by the checker
        return torch.tensor(float(result), dtype=torch.float64)

    def wrong(**mistake: Any) -> Callable[..., torch.Tensor]:
        return lambda *inputs: _kv_cache_bytes(*inputs, **mistake)

    return check(
        named_like(as_tensor, student_fn),
        _kv_cache_bytes,
        _bytes_inputs,
        mistakes=[
            (wrong(keys_and_values=1), "half the bytes: the cache keeps the keys *and* the values"),
            (
                wrong(heads="query"),
                "the query heads were counted: the cache holds one key and one value per "
                "key-value head, num_kv_heads of them (grouped-query attention shares them)",
            ),
            (wrong(layers=False), "one layer only: every layer keeps a cache of its own"),
            (wrong(batched=False), "one sequence only: each of the batch's sequences has its keys"),
            (wrong(unit=8), "bits, not bytes: bytes_per_number already counts bytes"),
        ],
        atol=0.5,
        seed=seed,
    )
