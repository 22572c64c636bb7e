"""What a student does wrong with companion's losses, decoding, sampling, masking, layers and
measurements, and the error each gets: the rows that ``tests/test_misuse.py`` appends to its
``MISUSES`` table.

Each row is ``(what a student does, a zero-argument call, the exception, a regex its message
must match)``. Every message names the argument and what it got. A number of the wrong type or
out of range is a ``ValueError``; an object of the wrong kind a ``TypeError``. Each call raises
where the argument is received, before anything is computed with it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from companion.layers.losses import sequence_loss
from companion.modes import eval_mode

LOGITS = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))  # (batch, steps, vocab)
LABELS = torch.tensor([[1, 2, 0], [3, 0, 0]])  # 0 is padding


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # the loss of every sequence model
    (
        "sequence_loss(..., pad_index=-1): no label would be ignored, padding averaged in",
        lambda: sequence_loss(LOGITS, LABELS, -1),
        ValueError,
        r"pad_index must be an integer in \[0, 4\]; got -1",
    ),
    (
        "sequence_loss with a pad_index outside the vocabulary",
        lambda: sequence_loss(LOGITS, LABELS, 5),
        ValueError,
        r"pad_index must be an integer in \[0, 4\]; got 5",
    ),
    (
        "sequence_loss with float labels",
        lambda: sequence_loss(LOGITS, LABELS.float(), 0),
        ValueError,
        r"labels must hold integer labels \(torch.long\); got torch.float32",
    ),
    (
        "sequence_loss with labels outside the vocabulary of the logits",
        lambda: sequence_loss(LOGITS, LABELS + 4, 4),
        ValueError,
        r"labels holds labels from 4 to 7, outside the vocabulary \[0, 5\)",
    ),
    (
        "sequence_loss(..., label_smoothing=1.5)",
        lambda: sequence_loss(LOGITS, LABELS, 0, 1.5),
        ValueError,
        r"label_smoothing must be a fraction in \[0, 1\); got 1.5",
    ),
    (
        "sequence_loss of labels that are all padding: the mean over none is NaN",
        lambda: sequence_loss(LOGITS, torch.zeros_like(LABELS), 0),
        ValueError,
        r"labels hold no position that is not padding \(pad_index=0\): the mean over none is "
        r"NaN",
    ),
    (
        "sequence_loss of 2-D logits",
        lambda: sequence_loss(LOGITS[0], LABELS[0], 0),
        ValueError,
        r"logits must be 3-D \(batch, steps, vocab\) with vocab >= 1; got shape \(3, 5\)",
    ),
    (
        "sequence_loss of logits as a list",
        lambda: sequence_loss(LOGITS.tolist(), LABELS, 0),
        TypeError,
        r"logits must be a floating-point torch.Tensor; got list",
    ),
    # a model's mode
    (
        "eval_mode(5): something not a model",
        lambda: eval_mode(5),
        TypeError,
        r"model must be a torch.nn.Module; got 5 \(int\)",
    ),
]
