"""The loss of every sequence model in the book: cross-entropy over the positions whose label is
not padding (sec-bahdanau; used by sec-transformer and sec-language-models).

The caller passes the padding index: the translation recipes pass their target vocabulary's, the
invented language's next-token loss passes its own. The loss lives with the layers, below the
models, because d2l's ``Seq2Seq`` computes it itself, and below the training loop, which only
minimises it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def sequence_loss(
    logits: torch.Tensor, labels: torch.Tensor, pad_index: int, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not padding.

    ``logits`` is ``(batch, steps, vocab)`` and ``labels`` is ``(batch, steps)``.
    """
    if logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits (batch, steps, vocab) and labels (batch, steps) disagree: got "
            f"{tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),  # (batch * steps, vocab)
        labels.reshape(-1),  # (batch * steps,)
        ignore_index=pad_index,
        label_smoothing=label_smoothing,
    )
