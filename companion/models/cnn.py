"""A small convolutional network, the baseline the Vision Transformer is measured against
(sec-vit).

Convolutions build in two assumptions about images that a Transformer must learn from data:
*locality* (a pixel's neighbours matter most: each output sees a ``k x k`` window) and
*translation equivariance* (the same weights slide over every position). With little data,
those assumptions, the convolution's inductive bias, are worth a lot.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from companion._validate import check_positive


class SmallCNN(nn.Module):
    """Blocks of ``3 x 3`` convolution, ReLU and ``2 x 2`` max pooling, then global average
    pooling and a linear classifier (sec-vit):

        H_0 = X,   H_l = MaxPool(ReLU(Conv3x3_l(H_{l-1}))),   l = 1..L
        logits = W mean_{pixels}(H_L) + b

    ``channels`` lists each block's output channels (one block each); ``X`` is
    ``(batch, in_channels, h, w)``, with ``h`` and ``w`` divisible by ``2^L``; the output is
    ``(batch, num_classes)``.
    """

    def __init__(
        self, channels: Sequence[int] = (16, 32), num_classes: int = 10, in_channels: int = 1
    ) -> None:
        super().__init__()
        check_positive(num_classes=num_classes, in_channels=in_channels, blocks=len(channels))
        self.in_channels, self.depth = in_channels, len(channels)
        layers: list[nn.Module] = []
        for c_in, c_out in zip((in_channels, *channels), channels):
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels[-1], num_classes)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if (
            X.dim() != 4
            or X.shape[1] != self.in_channels
            or any(s % 2**self.depth for s in X.shape[-2:])
        ):
            raise ValueError(
                f"X must be images of shape (batch, {self.in_channels}, h, w) with h and w "
                f"divisible by {2**self.depth}; got shape {tuple(X.shape)}"
            )
        H = self.features(X)  # (batch, channels[-1], h / 2^L, w / 2^L)
        return self.head(H.mean(dim=(-2, -1)))  # (batch, num_classes)
