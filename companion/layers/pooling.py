"""Attention pooling by similarity: Nadaraya-Watson kernel regression (sec-attention-pooling).

Each query is compared with every key, the similarities are turned into weights with a
softmax, and the prediction is the weighted average of the values:

    f(q) = sum_i softmax_i(-((q - k_i) w)^2 / 2) v_i

where ``w = 1 / bandwidth``. The scores ``-((q - k_i) w)^2 / 2`` are the attention scores; after
the softmax they are the attention weights.
"""

from __future__ import annotations

import torch
from torch import nn

from companion._validate import check_number, check_same_device, describe


def _check_real_tensor(X: object, name: str) -> None:
    """``X`` must be a tensor of real numbers: integers or floats, not bools or complex."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of numbers; got {describe(X)}")
    if X.dtype == torch.bool or X.dtype.is_complex:
        raise ValueError(
            f"{name} must hold real numbers (integer or floating point); got {X.dtype}"
        )


def _check_pooling_inputs(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, w: torch.Tensor | float
) -> None:
    for name, X in (("queries", queries), ("keys", keys), ("values", values)):
        _check_real_tensor(X, name)
    if queries.dim() != 1:
        raise ValueError(f"queries must be 1-D (num_queries,); got shape {tuple(queries.shape)}")
    if keys.dim() not in (1, 2):
        raise ValueError(
            "keys must be 1-D (num_keys,) or 2-D (num_queries, num_keys); "
            f"got shape {tuple(keys.shape)}"
        )
    if keys.dim() == 2 and keys.shape[0] != queries.shape[0]:
        raise ValueError(
            f"keys of shape {tuple(keys.shape)} must have one row per query; "
            f"queries have shape {tuple(queries.shape)}"
        )
    if values.shape != keys.shape:
        raise ValueError(
            f"values must have the shape of keys {tuple(keys.shape)}; got {tuple(values.shape)}"
        )
    if keys.shape[-1] < 1:
        raise ValueError(
            "keys must hold at least one key: a prediction is an average of the values of the "
            f"keys; got shape {tuple(keys.shape)}"
        )
    if not queries.device == keys.device == values.device:
        raise ValueError(
            f"queries, keys and values must be on one device; got {queries.device}, "
            f"{keys.device} and {values.device}"
        )
    if isinstance(w, torch.Tensor):  # the learned parameter of NWKernelRegression
        check_same_device(queries, w, "queries")


def _gaussian_pool(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, w: torch.Tensor | float
) -> tuple[torch.Tensor, torch.Tensor]:
    _check_pooling_inputs(queries, keys, values, w)
    differences = queries.unsqueeze(-1) - keys  # (num_queries, num_keys)
    scores = -((differences * w) ** 2) / 2  # attention scores, (num_queries, num_keys)
    weights = torch.softmax(scores, dim=-1)  # attention weights: each row sums to 1
    predictions = (weights * values).sum(dim=-1)  # (num_queries,)
    return predictions, weights


def nadaraya_watson(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, bandwidth: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-parametric Nadaraya-Watson regression with a Gaussian kernel (sec-attention-pooling).

    ``queries`` has shape ``(num_queries,)``. ``keys`` and ``values`` have shape ``(num_keys,)``,
    shared by all queries, or ``(num_queries, num_keys)``, one row of pairs per query.
    Returns ``(predictions, attention_weights)`` of shapes ``(num_queries,)`` and
    ``(num_queries, num_keys)``. ``bandwidth`` is a positive number (``math.inf`` weighs every
    key alike).
    """
    if not check_number("bandwidth", bandwidth, finite=False) > 0:
        raise ValueError(f"bandwidth must be positive; got {bandwidth}")
    return _gaussian_pool(queries, keys, values, 1.0 / bandwidth)


class NWKernelRegression(nn.Module):
    """Nadaraya-Watson regression with a learnable inverse bandwidth ``w`` (sec-attention-pooling).

    ``f(q) = sum_i softmax_i(-((q - k_i) w)^2 / 2) v_i``. ``w`` (a finite number) starts at 1,
    the fixed-width model, and is trained by gradient descent. After a forward pass,
    ``attention_weights`` holds the ``(num_queries, num_keys)`` weights.
    """

    def __init__(self, w: float = 1.0) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([check_number("w", w)]))
        self.attention_weights: torch.Tensor | None = None

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        predictions, self.attention_weights = _gaussian_pool(queries, keys, values, self.w)
        return predictions


def leave_one_out(
    x_train: torch.Tensor, y_train: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values for training: each training point sees every point but itself.

    Returns two ``(n, n - 1)`` tensors. Without this, each training query would find an
    identical key, and the loss would be minimised by a bandwidth that shrinks to zero.
    """
    for name, X in (("x_train", x_train), ("y_train", y_train)):
        if not isinstance(X, torch.Tensor):
            raise TypeError(f"{name} must be a 1-D torch.Tensor; got {describe(X)}")
    if x_train.dim() != 1 or x_train.shape != y_train.shape:
        raise ValueError(
            "x_train and y_train must be 1-D of the same length; got shapes "
            f"{tuple(x_train.shape)} and {tuple(y_train.shape)}"
        )
    n = x_train.shape[0]
    if n < 2:
        raise ValueError(f"leave-one-out needs at least 2 training points; got {n}")
    others = ~torch.eye(n, dtype=torch.bool)  # (n, n), False on the diagonal
    keys = x_train.expand(n, n)[others].reshape(n, n - 1)
    values = y_train.expand(n, n)[others].reshape(n, n - 1)
    return keys, values
