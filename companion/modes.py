"""A model's mode for the length of a block: ``with eval_mode(model): ...``.

Evaluation, decoding and sampling all run a model in evaluation mode (dropout off) and must leave
it in the mode it had. They share this one context manager, which imports nothing of companion
but its argument checks, so a decoding loop does not import the training loop to get it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from torch import nn

from companion._validate import check_type


def eval_mode(model: nn.Module) -> AbstractContextManager[nn.Module]:
    """``model`` (a ``torch.nn.Module``) in evaluation mode inside the block, then back in the
    mode it had, even when the block raises: ``with eval_mode(model): ...``."""
    check_type("model", model, nn.Module, "a torch.nn.Module")
    return _eval_mode(model)


@contextmanager
def _eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
