"""Checkers for sec-transformer, the Transformer.

``check_causal_mask`` checks the ``(n, n)`` boolean mask of decoder self-attention, True where
query ``i`` may attend to key ``j`` (``j <= i``). ``check_layer_norm`` checks layer
normalization without its learned scale and shift. ``check_shift_right`` checks the decoder
input made from the labels (teacher forcing). Each names the usual mistakes: the wrong
triangle, a masked diagonal, the wrong axis, a missing epsilon, the unshifted labels.

``check_decoder_block`` checks the build-it-yourself exercise: the 2017 decoder block from its
weights, against companion's ``TransformerDecoderBlock`` with the same weights. It names
pre-norm where the block is post-norm, a norm before the residual sum, missing residuals, a
missing causal mask, a causal mask on the cross-attention, the source padding not hidden or
hidden in the self-attention, the sublayers in the wrong order, the cross-attention's queries
or keys taken from the wrong tensor, the scale by sqrt(d) and a missing ReLU; and it refuses an
answer that calls companion's block, attention or feed-forward layer.

The sizes (and the ``<bos>`` id) are drawn afresh on every call (``seed=`` repeats a run, for tests)
and are never the chapter's own (its examples have batch 2, 3 to 6 steps, widths 4 and 8, and
``<bos>`` is 1 in its vocabularies), so a solution that reads the notebook's variables instead of
its arguments fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from companion.exercises.adapters import as_bool_mask
from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw

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


# ----------------------------------------------------------------------------- decoder block

# The chapter's blocks: width 8 with 2 heads in its examples, 64 with 4 heads in its model.
CHAPTER_HEADS, CHAPTER_HEAD_DIMS = (2, 4), (4, 16)
BUILD_IT = (
    "the exercise is to build the block yourself, from matrix products, a softmax and a layer norm"
)
OWN_BLOCK = {
    "companion.layers.blocks": f"the answer calls companion's decoder block or AddNorm: {BUILD_IT}",
    "companion.layers.attention": f"the answer calls companion's attention: {BUILD_IT}",
    "companion.layers.feedforward": f"the answer calls companion's PositionWiseFFN: {BUILD_IT}",
    "companion.models": f"the answer calls one of companion's models: {BUILD_IT}",
    "torch.nn.functional.multi_head_attention_forward": (
        f"the answer calls torch's nn.MultiheadAttention: {BUILD_IT}"
    ),
}
POST_NORM = (
    "pre-norm instead of post-norm: this block (the 2017 one) normalises after the residual sum, "
    "LayerNorm(X + sublayer(X)), not X + sublayer(LayerNorm(X))"
)
NORM_BEFORE_ADD = (
    "the sublayer's output was normalised before the residual sum: add first, then normalise "
    "the sum, LayerNorm(X + sublayer(X))"
)
NO_RESIDUAL = "the residual connections are missing: each sublayer's input is added to its output"
NO_CAUSAL = (
    "the self-attention sees the future: target position i may attend to positions 0 .. i only "
    "(a causal mask)"
)
CAUSAL_CROSS = (
    "the cross-attention is masked causally: every target position may read every real source "
    "word; only the source padding is hidden there"
)
NO_PADDING = (
    "the source padding is not hidden: in the cross-attention, key j of sentence b is visible only "
    "when j < enc_valid_lens[b]"
)
PADDING_ON_TARGET = (
    "enc_valid_lens masks the self-attention: those lengths count source words; the target's "
    "self-attention needs only the causal mask"
)
FFN_BEFORE_CROSS = (
    "the sublayers are in the wrong order: causal self-attention, then cross-attention, then the "
    "feed-forward network"
)
CROSS_FROM_INPUT = (
    "the cross-attention's queries are the block's input X: they are the output of the first "
    "sublayer (after its add & norm)"
)
KEYS_FROM_TARGET = (
    "the cross-attention's keys and values come from the target: they are the encoder outputs"
)
SCALE_D = (
    "the scores are scaled by sqrt(d): each head has d/heads features, divide by sqrt(d/heads)"
)
NO_RELU = "the feed-forward network has no ReLU between its two linear maps"


def _decoder_sizes(generator: torch.Generator) -> tuple[int, int, int, int, int, int]:
    """``(batch, target steps, source steps, heads, head_dim, ffn_hiddens)``, none of them the
    chapter's, with as many target as source steps never."""
    while True:
        batch = draw(generator, 1, 4, avoid=[CHAPTER_BATCH])
        m, n = draw(generator, 3, 7, avoid=CHAPTER_STEPS), draw(generator, 3, 8, avoid=[5])
        heads = draw(generator, 1, 5, avoid=CHAPTER_HEADS)
        head_dim = draw(generator, 2, 5, avoid=CHAPTER_HEAD_DIMS)
        if m != n:
            return batch, m, n, heads, head_dim, draw(generator, 4, 20)


def _decoder_inputs(generator: torch.Generator) -> Inputs:
    batch, m, n, heads, head_dim, ffn = _decoder_sizes(generator)
    d = heads * head_dim

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return scale * torch.randn(*shape, generator=generator)

    X, H = randn(batch, m, d), randn(batch, n, d)  # target inputs, encoder outputs
    lens = torch.randint(1, n + 1, (batch,), generator=generator)
    lens[0] = int(torch.randint(1, n, (1,), generator=generator))  # some padding, always
    params = {
        "self_attention": tuple(randn(d, d, scale=d**-0.5) for _ in range(4)),
        "cross_attention": tuple(randn(d, d, scale=d**-0.5) for _ in range(4)),
        "ffn": (
            randn(d, ffn, scale=d**-0.5),
            randn(ffn, scale=0.3),
            randn(ffn, d, scale=ffn**-0.5),
            randn(d, scale=0.3),
        ),
        **{f"norm{i}": (1 + randn(d, scale=0.5), randn(d, scale=0.5)) for i in (1, 2, 3)},
    }
    return X, H, lens, params, heads


def _reference_block(X, H, enc_valid_lens, params, num_heads) -> torch.Tensor:
    """companion's TransformerDecoderBlock with these weights (row form: ``X @ W``)."""
    from companion.layers.blocks import TransformerDecoderBlock

    d, ffn = X.shape[-1], params["ffn"][0].shape[1]
    block = TransformerDecoderBlock(d, ffn, num_heads, 0.0, i=0).eval()
    with torch.no_grad():
        pairs = ((block.attention1, "self_attention"), (block.attention2, "cross_attention"))
        for layer, name in pairs:
            for linear, W in zip((layer.W_q, layer.W_k, layer.W_v, layer.W_o), params[name]):
                linear.weight.copy_(W.T)
        W_1, b_1, W_2, b_2 = params["ffn"]
        block.ffn.dense1.weight.copy_(W_1.T), block.ffn.dense1.bias.copy_(b_1)
        block.ffn.dense2.weight.copy_(W_2.T), block.ffn.dense2.bias.copy_(b_2)
        for i, add_norm in enumerate((block.addnorm1, block.addnorm2, block.addnorm3), start=1):
            add_norm.ln.weight.copy_(params[f"norm{i}"][0])
            add_norm.ln.bias.copy_(params[f"norm{i}"][1])
        return block(X, H, enc_valid_lens)


def _attend(queries, keys_values, weights, num_heads, visible, scale="head"):
    """Multi-head attention from its four matrices; ``visible`` (batch or 1, q, k) is a mask."""
    W_q, W_k, W_v, W_o = weights
    batch, d = queries.shape[0], queries.shape[-1]
    p = d // num_heads

    def split(M: torch.Tensor) -> torch.Tensor:  # (batch, steps, d) -> (batch, heads, steps, p)
        return M.reshape(batch, M.shape[1], num_heads, p).transpose(1, 2)

    scores = split(queries @ W_q) @ split(keys_values @ W_k).transpose(-2, -1)
    scores = scores / math.sqrt(p if scale == "head" else d)  # (batch, heads, q, k)
    if visible is not None:
        scores = scores.masked_fill(~visible[:, None], float("-inf"))
    heads = scores.softmax(dim=-1) @ split(keys_values @ W_v)  # (batch, heads, q, p)
    return heads.transpose(1, 2).reshape(batch, queries.shape[1], d) @ W_o


def _decoder_block(X, H, enc_valid_lens, params, num_heads, *, how: str = "right"):
    """The 2017 decoder block written out; ``how`` names one mistake."""
    m, n = X.shape[1], H.shape[1]
    causal = torch.ones(m, m, dtype=torch.bool).tril()[None]  # (1, m, m)
    padding = (torch.arange(n)[None, :] < enc_valid_lens[:, None])[:, None]  # (batch, 1, n)
    self_mask = None if how == "no_causal" else causal
    if how == "padding_on_target":
        self_mask = causal & (torch.arange(m)[None, None] < enc_valid_lens[:, None, None])
    cross_mask = None if how == "no_padding" else padding
    if how == "causal_cross":
        cross_mask = padding & torch.ones(m, n, dtype=torch.bool).tril()[None]
    scale = "model" if how == "scale_d" else "head"

    def norm(Z: torch.Tensor, i: int) -> torch.Tensor:
        gamma, beta = params[f"norm{i}"]
        return torch.nn.functional.layer_norm(Z, Z.shape[-1:], gamma, beta)

    def add_norm(Z: torch.Tensor, sublayer: Callable, i: int) -> torch.Tensor:
        if how == "pre_norm":
            return Z + sublayer(norm(Z, i))
        if how == "norm_before_add":
            return Z + norm(sublayer(Z), i)
        if how == "no_residual":
            return norm(sublayer(Z), i)
        return norm(Z + sublayer(Z), i)

    def self_attention(Z):
        return _attend(Z, Z, params["self_attention"], num_heads, self_mask, scale)

    def cross_attention(Z):
        if how == "cross_from_input":
            Z = X
        source = Z if how == "keys_from_target" else H
        mask = None if how == "keys_from_target" else cross_mask
        return _attend(Z, source, params["cross_attention"], num_heads, mask, scale)

    def ffn(Z):
        W_1, b_1, W_2, b_2 = params["ffn"]
        hidden = Z @ W_1 + b_1
        return (hidden if how == "no_relu" else torch.relu(hidden)) @ W_2 + b_2

    order = [self_attention, cross_attention, ffn]
    if how == "ffn_first":
        order = [self_attention, ffn, cross_attention]
    Y = X
    for i, sublayer in enumerate(order, start=1):
        Y = add_norm(Y, sublayer, i)
    return Y


def check_decoder_block(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-transformer: ``student_fn(X, enc_outputs, enc_valid_lens, params, num_heads)`` is the
    forward pass of the 2017 decoder block for target features ``X`` ``(batch, m, d)`` and encoder
    outputs ``(batch, n, d)`` whose first ``enc_valid_lens[b]`` steps are real. ``params`` holds
    ``"self_attention"`` and ``"cross_attention"``, each ``(W_q, W_k, W_v, W_o)`` of shape
    ``(d, d)`` in row form (``X @ W_q``); ``"ffn"``, ``(W_1, b_1, W_2, b_2)``; and ``"norm1"``,
    ``"norm2"``, ``"norm3"``, each ``(gamma, beta)``. It must not call companion's layers."""

    def wrong(how: str) -> Callable[..., torch.Tensor]:
        return lambda *inputs: _decoder_block(*inputs, how=how)

    start = first_seed(seed)
    hint = forbidden_call(student_fn, _decoder_inputs(seeded_generator(start)), OWN_BLOCK)
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _reference_block,
        _decoder_inputs,
        mistakes=[
            (wrong("pre_norm"), POST_NORM),
            (wrong("norm_before_add"), NORM_BEFORE_ADD),
            (wrong("no_residual"), NO_RESIDUAL),
            (wrong("no_causal"), NO_CAUSAL),
            (wrong("causal_cross"), CAUSAL_CROSS),
            (wrong("no_padding"), NO_PADDING),
            (wrong("padding_on_target"), PADDING_ON_TARGET),
            (wrong("ffn_first"), FFN_BEFORE_CROSS),
            (wrong("cross_from_input"), CROSS_FROM_INPUT),
            (wrong("keys_from_target"), KEYS_FROM_TARGET),
            (wrong("scale_d"), SCALE_D),
            (wrong("no_relu"), NO_RELU),
        ],
        atol=1e-4,
        seed=start,
    )
