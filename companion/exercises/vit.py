"""Checkers for the Vision Transformer chapter (sec-vit).

``check_patchify`` checks cutting a batch of images into patch vectors by hand, ``(batch, c, h,
w)`` to ``(batch, m, c p^2)``, in the order of :class:`companion.models.vit.PatchEmbedding`'s
convolution: patches row by row across the image, and inside each vector the channels first,
then the patch's rows, then its columns (the layout of the convolution's weight ``(d, c, p,
p)``). It names the usual mistakes: a reshape without the permute, patches in column order,
channels last, a transposed patch.

``check_cls_attention_map`` checks reading the attention of the ``<cls>`` query to the patches
out of a ViT block's weights ``(batch, heads, 1 + m, 1 + m)`` as an image ``(batch, heads,
grid_h, grid_w)``. It names the column of ``<cls>`` taken instead of its row, ``<cls>`` kept as
a key, and the grid filled in column order.

The sizes are drawn afresh on every call (``seed=`` repeats a run, for tests) and are never the
chapter's own (8x8 images of one channel, 2x2 patches, a 4x4 grid, 4 heads), and grids are never
square, so a solution that reads the notebook's variables instead of its arguments fails.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, first_seed, seeded_generator
from companion.exercises.rules import forbidden_call
from companion.exercises.sizes import draw

CHAPTER_IMAGE, CHAPTER_PATCH, CHAPTER_CHANNELS, CHAPTER_GRID, CHAPTER_HEADS = 8, 2, 1, 4, 4

NO_PERMUTE = (
    "reshaped without permuting: a plain reshape of (batch, c, h, w) to (batch, m, c*p*p) cuts "
    "rows of pixels into pieces, not p x p patches. Split h into (h/p, p) and w into (w/p, p), "
    "permute to (batch, h/p, w/p, c, p, p), then flatten"
)
COLUMN_ORDER = (
    "the patches are in column order: number them row by row across the image (patch 1 is to "
    "the right of patch 0), as the convolution's output flattened does"
)
CHANNELS_LAST = (
    "channels last: inside a patch vector the convolution's weight (d, c, p, p) reads all of "
    "channel 0 first, then channel 1...; order the vector (c, p, p), not (p, p, c)"
)
TRANSPOSED_PATCH = (
    "each patch is transposed: inside a patch, read its pixels row by row (the patch's row "
    "index before its column index), as the convolution's weight (d, c, p, p) does"
)
UNFOLD = (
    "the answer cuts the patches with unfold, which the chapter uses: the exercise is to cut them "
    "with reshape and permute only"
)
CONVOLUTION = (
    "the answer runs a convolution (or companion's PatchEmbedding), which computes the tokens, "
    "not the patches: cut them with reshape and permute only"
)
RESHAPE_AND_PERMUTE_ONLY = {
    "torch.nn.functional.unfold": UNFOLD,
    "torch._C._nn.im2col": UNFOLD,
    "?.Tensor.unfold": UNFOLD,
    "torch.nn.modules.conv": CONVOLUTION,
    "torch._VariableFunctionsClass.conv2d": CONVOLUTION,
    "companion.models.vit": CONVOLUTION,
}
COLUMN_NOT_ROW = (
    "that is column 0, the attention the patches pay *to* <cls>; the map from <cls> to the "
    "patches is row 0 of the weights (the <cls> query), keys 1..m"
)
CLS_KEPT = "off by one: key 0 is <cls> itself, the patches are keys 1..m; take weights[..., 0, 1:]"
GRID_COLUMN_ORDER = (
    "the grid is filled in column order: patches are numbered row by row, so patch k sits in "
    "row k // grid_w and column k % grid_w"
)


# ----------------------------------------------------------------------------- patchify


def _patchify(X: torch.Tensor, patch_size: int, how: str = "right") -> torch.Tensor:
    """``(batch, c, h, w)`` to ``(batch, m, c p^2)``; ``how`` names a typical mistake."""
    batch, c, h, w = X.shape
    p = patch_size
    if how == "no_permute":
        return X.reshape(batch, (h // p) * (w // p), c * p * p)
    P = X.reshape(batch, c, h // p, p, w // p, p)  # (batch, c, gh, p, gw, p)
    grid = (2, 4) if how != "column_order" else (4, 2)
    inside = {"channels_last": (3, 5, 1), "transposed": (1, 5, 3)}.get(how, (1, 3, 5))
    return P.permute(0, *grid, *inside).reshape(batch, -1, c * p * p)


def _patchify_inputs(generator: torch.Generator) -> Inputs:
    p = draw(generator, 2, 4, avoid=[CHAPTER_PATCH])
    grid_h = draw(generator, 2, 4)
    grid_w = draw(generator, 2, 5, avoid=[grid_h])  # not square: column order shows
    c = draw(generator, 2, 3, avoid=[CHAPTER_CHANNELS])  # several channels: their place shows
    batch = draw(generator, 1, 3)
    return torch.randn(batch, c, grid_h * p, grid_w * p, generator=generator), p


def check_patchify(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-vit: ``student_fn(X, patch_size)`` cuts images ``X`` of shape ``(batch, c, h, w)`` into
    ``m = (h/p)(w/p)`` patches, ``(batch, m, c p^2)``, row by row, each vector ordered (channel,
    row, column): then ``patchify(X, p) @ W.reshape(d, -1).T + b`` is PatchEmbedding. Only
    ``reshape`` and ``permute`` may cut them (:data:`RESHAPE_AND_PERMUTE_ONLY`)."""
    start = first_seed(seed)
    hint = forbidden_call(
        student_fn, _patchify_inputs(seeded_generator(start)), RESHAPE_AND_PERMUTE_ONLY
    )
    if hint:
        print(f"hint: {hint}")
        return False
    return check(
        student_fn,
        _patchify,
        _patchify_inputs,
        mistakes=[
            (lambda X, p: _patchify(X, p, "no_permute"), NO_PERMUTE),
            (lambda X, p: _patchify(X, p, "column_order"), COLUMN_ORDER),
            (lambda X, p: _patchify(X, p, "channels_last"), CHANNELS_LAST),
            (lambda X, p: _patchify(X, p, "transposed"), TRANSPOSED_PATCH),
        ],
        seed=start,
    )


# ----------------------------------------------------------------------------- <cls> maps


def _cls_map(weights: torch.Tensor, grid_size: tuple[int, int], how: str = "right"):
    """Row 0 of ``weights`` over the patch keys, as ``(batch, heads, grid_h, grid_w)``."""
    grid_h, grid_w = grid_size
    if how == "column":
        row = weights[:, :, 1:, 0]
    elif how == "cls_kept":
        row = weights[:, :, 0, :-1]
    else:
        row = weights[:, :, 0, 1:]  # (batch, heads, m): the <cls> query, the patch keys
    if how == "column_order":
        return row.unflatten(-1, (grid_w, grid_h)).transpose(-1, -2)
    return row.unflatten(-1, (grid_h, grid_w))  # (batch, heads, grid_h, grid_w)


def _cls_map_inputs(generator: torch.Generator) -> Inputs:
    grid_h = draw(generator, 2, 5, avoid=[CHAPTER_GRID])
    grid_w = draw(generator, 2, 5, avoid=[grid_h, CHAPTER_GRID])
    heads = draw(generator, 1, 5, avoid=[CHAPTER_HEADS])
    batch = draw(generator, 1, 3)
    m = grid_h * grid_w
    scores = 2 * torch.randn(batch, heads, 1 + m, 1 + m, generator=generator)
    return scores.softmax(dim=-1), (grid_h, grid_w)


def check_cls_attention_map(
    student_fn: Callable[..., torch.Tensor], *, seed: int | None = None
) -> bool:
    """sec-vit: ``student_fn(weights, grid_size)`` turns one block's attention weights ``(batch,
    heads, 1 + m, 1 + m)`` (``<cls>`` first) into the ``<cls>`` query's weights on the ``m``
    patches, laid out as the image's grid: ``(batch, heads, grid_h, grid_w)``."""
    return check(
        student_fn,
        _cls_map,
        _cls_map_inputs,
        mistakes=[
            (lambda W, g: _cls_map(W, g, "column"), COLUMN_NOT_ROW),
            (lambda W, g: _cls_map(W, g, "cls_kept"), CLS_KEPT),
            (lambda W, g: _cls_map(W, g, "column_order"), GRID_COLUMN_ORDER),
        ],
        seed=seed,
    )
