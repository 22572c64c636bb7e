"""The Vision Transformer (sec-vit; Dosovitskiy et al., 2021): an image cut into patches, each
patch a token, a ``<cls>`` token in front, learned positions, and pre-norm encoder blocks.

Names, signatures, submodule and parameter names follow the Vision Transformer section of the
d2l book (d2l-en, ``chapter_attention-mechanisms-and-transformers/vision-transformer.md``; the
d2l 1.0.3 package does not ship these classes), so a state dict of d2l's code loads here with
``strict=True``. Where an input size is known it is an ``nn.Linear``/``nn.Conv2d`` rather than
d2l's lazy layer; the parameters are the same.

The ViT's block is :class:`companion.layers.blocks.PreNormBlock`, the pre-norm block that the
decoder-only language model (:class:`companion.models.decoder.GPT`) stacks too, with
``causal=True``; it and :class:`~companion.layers.feedforward.ViTMLP` are importable from here under
d2l's names ``ViTBlock`` and ``ViTMLP``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

from companion._validate import check_dropout, check_like_weights, check_positive
from companion.layers.blocks import PreNormBlock
from companion.layers.feedforward import ViTMLP

ViTBlock = PreNormBlock  # d2l's name: the ViT's block is the pre-norm block GPT stacks too
__all__ = [
    "PatchEmbedding",
    "ViT",
    "ViTBlock",
    "ViTMLP",
    "check_images",
    "mean_attention_distance",
]


def _pair(x: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    """``x`` as ``(height, width)``: an int means a square (d2l's ``_make_tuple``)."""
    return (x, x) if not isinstance(x, list | tuple) else (x[0], x[1])


class PatchEmbedding(nn.Module):
    """Cut an image into ``p x p`` patches and project each to ``num_hiddens`` (sec-vit):

        x_i = W vec(patch_i) + b,   i = 1..m,   m = (h / p) (w / p)

    with ``vec(patch_i)`` the ``c p^2`` pixel values of patch ``i``, read row by row across
    the image (the token order), and ``W`` of shape ``(num_hiddens, c p^2)``. One convolution
    with kernel and stride ``p`` computes exactly this, as d2l does. Images are ``(batch, c,
    h, w)`` with ``(h, w) = img_size``; the output is ``(batch, m, num_hiddens)``.
    ``in_channels`` fixes ``c``; without it the convolution is lazy, as in d2l.
    """

    def __init__(
        self,
        img_size: int | tuple[int, int] = 96,
        patch_size: int | tuple[int, int] = 16,
        num_hiddens: int = 512,
        *,
        in_channels: int | None = None,
    ) -> None:
        super().__init__()
        img_size, patch_size = _pair(img_size), _pair(patch_size)
        if any(p < 1 or s < 1 or s % p for s, p in zip(img_size, patch_size)):
            raise ValueError(
                f"img_size {img_size} must be divisible by patch_size {patch_size}, both "
                "positive: every pixel must fall in exactly one patch"
            )
        self.img_size, self.patch_size = img_size, patch_size
        self.grid_size = (img_size[0] // patch_size[0], img_size[1] // patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.conv = (
            nn.LazyConv2d(num_hiddens, kernel_size=patch_size, stride=patch_size)
            if in_channels is None
            else nn.Conv2d(in_channels, num_hiddens, kernel_size=patch_size, stride=patch_size)
        )

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_images(X, self.img_size, self.conv)
        X = self.conv(X)  # (batch, num_hiddens, h / p, w / p): one vector per patch
        return X.flatten(2).transpose(1, 2)  # (batch, num_patches, num_hiddens), row by row


def check_images(X: torch.Tensor, img_size: tuple[int, int], conv: nn.Conv2d) -> None:
    """``X`` must be ``(batch, channels, *img_size)``, with the channels, the dtype and the
    device ``conv`` takes."""
    lazy = isinstance(conv.weight, UninitializedParameter)
    channels = None if lazy else conv.weight.shape[1]
    wanted = f"(batch, {channels or 'channels'}, {img_size[0]}, {img_size[1]})"
    if X.dim() != 4 or tuple(X.shape[-2:]) != img_size or channels not in (None, X.shape[1]):
        raise ValueError(f"X must be images of shape {wanted}; got shape {tuple(X.shape)}")
    if not lazy:
        check_like_weights(X, conv.weight)


class ViT(nn.Module):
    """The Vision Transformer (sec-vit; Dosovitskiy et al., 2021): patches as tokens, a learned
    ``<cls>`` token in front, learned positions, ``num_blks`` pre-norm blocks, and a linear
    head on the ``<cls>`` token's output:

        H_0 = [x_cls; x_1; ...; x_m] + P,       P in R^{(m+1) x d}, learned
        H_l = ViTBlock_l(H_{l-1}),  l = 1..num_blks
        logits = W LayerNorm(H_L[0]) + b

    ``X`` is ``(batch, c, h, w)``; the output is ``(batch, num_classes)``. ``lr`` is kept for
    d2l's signature (its ``Classifier`` trains with it) and stored; companion's
    :func:`~companion.training.train.fit` takes its own. ``in_channels`` fixes ``c``, as in
    :class:`PatchEmbedding`. ``attention_weights`` lists each block's ``(batch, heads, m+1,
    m+1)`` weights after a pass inside ``record_attention``; row 0 is the ``<cls>`` query.

    Initialisation differs from d2l in one place: the positions start as N(0, 0.02^2), as in
    the ViT paper's code, rather than d2l's N(0, 1), which on small images drowns the patch
    embeddings. A d2l state dict loads as before.
    """

    def __init__(
        self,
        img_size: int | tuple[int, int],
        patch_size: int | tuple[int, int],
        num_hiddens: int,
        mlp_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        emb_dropout: float,
        blk_dropout: float,
        lr: float = 0.1,
        use_bias: bool = False,
        num_classes: int = 10,
        *,
        in_channels: int | None = None,
    ) -> None:
        super().__init__()
        check_positive(num_blks=num_blks, num_classes=num_classes)
        self.lr = lr
        self.patch_embedding = PatchEmbedding(
            img_size, patch_size, num_hiddens, in_channels=in_channels
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))
        num_steps = self.patch_embedding.num_patches + 1  # the patches and <cls>
        self.pos_embedding = nn.Parameter(torch.randn(1, num_steps, num_hiddens) * 0.02)
        self.dropout = nn.Dropout(check_dropout(emb_dropout))
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"{i}",
                ViTBlock(
                    num_hiddens, num_hiddens, mlp_num_hiddens, num_heads, blk_dropout, use_bias
                ),
            )
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    @property
    def attention_weights(self) -> list[torch.Tensor]:
        blocks = cast(Iterable[PreNormBlock], self.blks)  # nn.Sequential: untyped
        return [blk.attention.attention_weights for blk in blocks]

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = self.patch_embedding(X)  # (batch, m, num_hiddens)
        cls = self.cls_token.expand(X.shape[0], -1, -1)  # (batch, 1, num_hiddens)
        X = self.dropout(torch.cat((cls, X), dim=1) + self.pos_embedding)  # (batch, m+1, d)
        for blk in self.blks:
            X = blk(X)  # (batch, m+1, num_hiddens)
        return self.head(X[:, 0])  # (batch, num_classes): from the <cls> token only


def mean_attention_distance(
    weights: torch.Tensor, grid_size: tuple[int, int], patch_size: tuple[int, int] | int
) -> torch.Tensor:
    """How far, in pixels, each head looks (sec-vit; Dosovitskiy et al., 2021, Figure 7):

        distance = mean over images and query patches i of  sum_j a_ij ||c_i - c_j||

    where ``c_i`` is the centre of patch ``i`` in pixels and ``a_ij`` the weight of query patch
    ``i`` on key patch ``j``, renormalised over the patches (the ``<cls>`` token has no place
    in the image, so its row and column are left out). ``weights`` is one block's
    ``(batch, heads, 1 + m, 1 + m)``, ``<cls>`` first; the result is ``(heads,)``.
    """
    grid_h, grid_w = grid_size
    patch_h, patch_w = _pair(patch_size)
    m = grid_h * grid_w
    if weights.dim() != 4 or weights.shape[-2:] != (1 + m, 1 + m):
        raise ValueError(
            f"weights must be (batch, heads, 1 + m, 1 + m) with m = {m} patches of a "
            f"{grid_h}x{grid_w} grid; got shape {tuple(weights.shape)}"
        )
    rows, cols = torch.meshgrid(torch.arange(grid_h), torch.arange(grid_w), indexing="ij")
    centres = torch.stack((rows * patch_h, cols * patch_w), dim=-1).reshape(m, 2).float()
    distance = torch.cdist(centres, centres).to(weights)  # (m, m), pixels
    a = weights[:, :, 1:, 1:]  # (batch, heads, m, m): patch queries to patch keys
    a = a / a.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(a.dtype).tiny)
    return (a * distance).sum(dim=-1).mean(dim=(0, 2))  # (heads,)
