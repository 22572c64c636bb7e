"""Checkers for chapter 7, the Transformer.

``check_causal_mask`` checks the ``(n, n)`` boolean mask of decoder self-attention, True where
query ``i`` may attend to key ``j`` (``j <= i``). ``check_layer_norm`` checks layer
normalization without its learned scale and shift. ``check_shift_right`` checks the decoder
input made from the labels (teacher forcing). Each names the usual mistakes: the wrong
triangle, a masked diagonal, the wrong axis, a missing epsilon, the unshifted labels.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.exercises.core import Inputs, check, named_like

EPS = 1e-5  # nn.LayerNorm's default
BATCH, STEPS, FEATURES = 3, 5, 8  # all different, so a wrong axis cannot hide


# ----------------------------------------------------------------------------- causal mask


def _causal_mask(num_steps: int, *, keep_diagonal: bool = True, lower: bool = True):
    """True where a query (row) may attend to a key (column): ``(num_steps, num_steps)``."""
    ones = torch.ones(num_steps, num_steps, dtype=torch.bool)
    diagonal = 0 if keep_diagonal else (-1 if lower else 1)
    mask = ones.tril(diagonal) if lower else ones.triu(diagonal)
    return mask.float()  # compared as 0/1 numbers: allclose does not take booleans


def _mask_inputs(generator: torch.Generator) -> Inputs:
    return (int(torch.randint(2, 10, (1,), generator=generator)),)


def _as_mask(mask_fn: Callable[[int], torch.Tensor]) -> Callable[[int], torch.Tensor]:
    """The student's mask as 0/1 floats, after checking that it is a boolean tensor."""

    def adapted(num_steps: int) -> torch.Tensor:
        mask = mask_fn(num_steps)
        if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
            raise TypeError(
                f"expected a boolean mask (True where a query may attend to a key); "
                f"got dtype {mask.dtype}"
            )
        return mask.float() if isinstance(mask, torch.Tensor) else mask

    return named_like(adapted, mask_fn)


def check_causal_mask(student_fn: Callable[[int], torch.Tensor]) -> bool:
    """Chapter 7: ``student_fn(num_steps)`` returns the ``(num_steps, num_steps)`` boolean
    mask of causal self-attention, True where query ``i`` may attend to key ``j <= i``."""
    return check(
        _as_mask(student_fn),
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
    X = torch.randn(BATCH, STEPS, FEATURES, generator=generator)
    # Rows of very different sizes; the small ones make a missing epsilon visible.
    scale = 10 ** torch.empty(BATCH, STEPS, 1).uniform_(-2.5, 0.5, generator=generator)
    shift = torch.randn(BATCH, STEPS, 1, generator=generator)
    return (X * scale + shift * scale,)


def check_layer_norm(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Chapter 7: ``student_fn(X)`` standardises each position's ``FEATURES`` features of
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
    labels = torch.randint(4, 20, (BATCH, STEPS + 2), generator=generator)
    return labels, 1


def check_shift_right(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> bool:
    """Chapter 7: ``student_fn(labels, bos_id)`` returns the decoder input of teacher forcing
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
    )
