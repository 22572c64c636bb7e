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

from companion._validate import (
    check_float_tensor,
    check_integer,
    check_number,
    check_token_ids,
    describe,
    values_checked,
)


def sequence_loss(
    logits: torch.Tensor, labels: torch.Tensor, pad_index: int, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not padding.

    ``logits`` is ``(batch, steps, vocab)`` and ``labels`` is ``(batch, steps)``, integer ids in
    ``[0, vocab)``; ``pad_index`` is the padding's id, in that range too (an index outside it
    would match no label, and the mean would take in the padding). ``label_smoothing`` is a
    fraction in ``[0, 1)``. At least one label must be other than padding: a mean over no
    position is NaN (the values are read on the CPU only; see :mod:`companion._validate`).
    """
    labels, pad_index, label_smoothing = _check_loss_arguments(
        logits, labels, pad_index, label_smoothing
    )
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),  # (batch * steps, vocab)
        labels.reshape(-1),  # (batch * steps,)
        ignore_index=pad_index,
        label_smoothing=label_smoothing,
    )


def _check_loss_arguments(
    logits: torch.Tensor, labels: torch.Tensor, pad_index: int, label_smoothing: float
) -> tuple[torch.Tensor, int, float]:
    """The arguments of :func:`sequence_loss`, checked; returns ``labels`` as ``torch.long``,
    ``pad_index`` as an ``int`` and ``label_smoothing`` as a ``float``."""
    check_float_tensor(logits, "logits")
    if logits.dim() != 3 or logits.shape[-1] < 1:
        raise ValueError(
            f"logits must be 3-D (batch, steps, vocab) with vocab >= 1; got shape "
            f"{tuple(logits.shape)}"
        )
    vocab_size = logits.shape[-1]
    labels = check_token_ids(labels, vocab_size, "labels", what="labels", within="the vocabulary")
    if logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits (batch, steps, vocab) and labels (batch, steps) disagree: got "
            f"{tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    pad_index = check_integer("pad_index", pad_index, minimum=0, maximum=vocab_size - 1)
    smoothing = check_number(
        "label_smoothing", label_smoothing, at_least=0, below=1, what="a fraction"
    )
    if not labels.numel() or (values_checked(labels) and not (labels != pad_index).any()):
        raise ValueError(
            f"labels hold no position that is not padding (pad_index={pad_index}): the mean "
            f"over none is NaN; got {describe(labels)}"
        )
    return labels, pad_index, smoothing
