"""Checkers for sec-transformer, the Transformer.

``check_causal_mask`` checks the ``(n, n)`` boolean mask of decoder self-attention, True where
query ``i`` may attend to key ``j`` (``j <= i``). ``check_layer_norm`` checks layer
normalization without its learned scale and shift. ``check_shift_right`` checks the decoder
input made from the labels (teacher forcing). Each names the usual mistakes: the wrong
triangle, a masked diagonal, the wrong axis, a missing epsilon, the unshifted labels.

``check_cached_attention`` checks the build-it-yourself exercise: one step of multi-head
self-attention with a key-value cache, against companion's ``MultiHeadAttention`` and
``KVCache``. It names a cache not appended (or appended in front), new steps not projected,
cached ones projected again, a missing or wrong scale, heads mixed up with positions, and a
causal mask that hides the cached steps.

The sizes (and the ``<bos>`` id) are drawn afresh on every call (``seed=`` repeats a run, for tests)
and are never the chapter's own (its examples have batch 2, 3 to 6 steps, widths 4 and 8, and
``<bos>`` is 1 in its vocabularies), so a solution that reads the notebook's variables instead of
its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from companion.exercises.adapters import as_bool_mask
from companion.exercises.core import Inputs, check
from companion.exercises.sizes import draw
from companion.layers.attention import MultiHeadAttention
from companion.layers.kv_cache import KVCache

EPS = 1e-5  # nn.LayerNorm's default
# The chapter's own sizes: batch, steps and widths of its examples, and its <bos> id.
CHAPTER_BATCH, CHAPTER_STEPS, CHAPTER_WIDTHS, CHAPTER_BOS = 2, (3, 5, 6), (4, 8), 1


def _sizes(generator: torch.Generator) -> tuple[int, int, int]:
    """``(batch, steps, features)``, all different, so a wrong axis cannot hide, and a batch of
    at least 3, so that normalising over the batch differs from normalising over one example."""
    while True:
        batch = draw(generator, 3, 5)
        steps = draw(generator, 2, 9, avoid=CHAPTER_STEPS)
        features = draw(generator, 5, 12, avoid=CHAPTER_WIDTHS)
        if len({batch, steps, features}) == 3:
            return batch, steps, features


# ----------------------------------------------------------------------------- causal mask


def _causal_mask(num_steps: int, *, keep_diagonal: bool = True, lower: bool = True):
    """True where a query (row) may attend to a key (column): ``(num_steps, num_steps)``."""
    ones = torch.ones(num_steps, num_steps, dtype=torch.bool)
    diagonal = 0 if keep_diagonal else (-1 if lower else 1)
    mask = ones.tril(diagonal) if lower else ones.triu(diagonal)
    return mask.float()  # compared as 0/1 numbers: allclose does not take booleans


def _mask_inputs(generator: torch.Generator) -> Inputs:
    return (draw(generator, 3, 12, avoid=CHAPTER_STEPS),)  # from 3: tril(1) is not all True


def check_causal_mask(
    student_fn: Callable[[int], torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-transformer: ``student_fn(num_steps)`` returns the ``(num_steps, num_steps)`` boolean
    mask of causal self-attention, True where query ``i`` may attend to key ``j <= i``."""
    return check(
        as_bool_mask(student_fn, "a query may attend to a key"),
        _causal_mask,
        _mask_inputs,
        mistakes=[
            (
                lambda n: _causal_mask(n, lower=False),
                "upper instead of lower triangle: row i is query i, and it may see the keys "
                "j <= i, the ones on and below the diagonal (tril)",
            ),
            (
                lambda n: _causal_mask(n, keep_diagonal=False),
                "diagonal masked: a position may attend to itself, so keep j == i (tril with "
                "diagonal=0)",
            ),
            (
                lambda n: _causal_mask(n, keep_diagonal=False, lower=False),
                "the mask is inverted: True must mean 'may attend', and here True marks the "
                "future keys that must be hidden",
            ),
            (
                lambda n: torch.ones(n, n),
                "nothing is masked: query i must not see the keys j > i",
            ),
        ],
        seed=seed,
    )


# ----------------------------------------------------------------------------- layer norm


def _layer_norm(
    X: torch.Tensor,
    *,
    dims: tuple[int, ...] = (-1,),
    eps: float = EPS,
    unbiased: bool = False,
    eps_outside: bool = False,
) -> torch.Tensor:
    """Standardise ``X`` over ``dims``; the reference is ``dims=(-1,)``, biased variance."""
    mean = X.mean(dim=dims, keepdim=True)
    var = X.var(dim=dims, keepdim=True, unbiased=unbiased)
    if eps_outside:
        return (X - mean) / (var.sqrt() + eps)
    return (X - mean) / torch.sqrt(var + eps)


def _norm_inputs(generator: torch.Generator) -> Inputs:
    batch, steps, features = _sizes(generator)
    X = torch.randn(batch, steps, features, generator=generator)
    # Rows of very different sizes; the small ones make a missing epsilon visible.
    scale = 10 ** torch.empty(batch, steps, 1).uniform_(-2.5, 0.5, generator=generator)
    shift = torch.randn(batch, steps, 1, generator=generator)
    return (X * scale + shift * scale,)


def check_layer_norm(
    student_fn: Callable[[torch.Tensor], torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-transformer: ``student_fn(X)`` standardises each position's features of
    ``X`` ``(batch, steps, features)``: ``(x - mean) / sqrt(var + 1e-5)`` with the biased
    variance, as ``nn.LayerNorm`` does before its learned scale and shift."""
    return check(
        student_fn,
        _layer_norm,
        _norm_inputs,
        mistakes=[
            (
                lambda X: _layer_norm(X, dims=(0,)),
                "normalised over the batch axis (that is batch normalization): layer "
                "normalization standardises each position's features on their own, dim=-1",
            ),
            (
                lambda X: _layer_norm(X, dims=(0, 1)),
                "normalised over the batch and the positions (batch normalization's "
                "statistics): layer normalization uses the features of one position, dim=-1",
            ),
            (
                lambda X: _layer_norm(X, dims=(1,)),
                "normalised over the positions (dim=1): normalise over the features, dim=-1",
            ),
            (
                lambda X: _layer_norm(X, dims=(1, 2)),
                "normalised over the positions and the features together: each position is "
                "standardised on its own, over dim=-1 only",
            ),
            (
                lambda X: _layer_norm(X, unbiased=True),
                "unbiased variance (divides by d - 1): layer normalization uses the biased "
                "variance, X.var(dim=-1, unbiased=False)",
            ),
            (
                lambda X: _layer_norm(X, eps=0.0),
                "missing epsilon: divide by sqrt(var + 1e-5), which also keeps a constant "
                "row from dividing by zero",
            ),
            (
                lambda X: _layer_norm(X, eps_outside=True),
                "epsilon outside the square root: divide by sqrt(var + 1e-5), not sqrt(var) + 1e-5",
            ),
        ],
        atol=1e-4,
        seed=seed,
    )


# ----------------------------------------------------------------------------- shift right


def _shift_right(labels: torch.Tensor, bos_id: int, *, shift: int = 1) -> torch.Tensor:
    """``<bos>`` then the labels without their last step: ``(batch, steps)``."""
    bos = torch.full_like(labels[:, :1], bos_id)  # (batch, 1)
    if shift == 0:
        return labels.clone()
    if shift == -1:  # shifted the wrong way: the labels from step 1, then <bos>
        return torch.cat((labels[:, 1:], bos), dim=1)
    return torch.cat((bos, labels[:, :-1]), dim=1)


def _shift_inputs(generator: torch.Generator) -> Inputs:
    batch, steps, _ = _sizes(generator)
    labels = torch.randint(4, 20, (batch, steps), generator=generator)
    return labels, draw(generator, 0, 3, avoid=[CHAPTER_BOS])  # never a label


def check_shift_right(
    student_fn: Callable[[torch.Tensor, int], torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-transformer: ``student_fn(labels, bos_id)`` returns the decoder input of teacher forcing
    for labels ``(batch, steps)``: ``<bos>`` followed by all but the last label."""
    return check(
        student_fn,
        _shift_right,
        _shift_inputs,
        mistakes=[
            (
                lambda labels, bos: _shift_right(labels, bos, shift=0),
                "these are the labels themselves: step t would read the very token it must "
                "predict. Put <bos> first and drop the last label",
            ),
            (
                lambda labels, bos: _shift_right(labels, bos, shift=-1),
                "shifted the wrong way: the decoder input starts with <bos>, followed by "
                "labels[:, :-1]",
            ),
        ],
        seed=seed,
    )


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
        seed=seed,
    )
