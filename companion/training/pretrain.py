"""Pretraining a BERT by masked language modelling, then fine-tuning it (sec-pretraining).

Both use the book's one training loop, :func:`companion.training.train.fit`.

- :func:`pretrain`: each epoch shuffles the sentences, groups sentences of similar length into
  batches (so that little of each batch is padding) and masks every batch afresh with
  :func:`companion.models.bert.mask_tokens`: each epoch masks other words (RoBERTa's *dynamic*
  masking; BERT masked its data once, in preprocessing, as ten copies masked differently).
  The loss is :func:`companion.models.bert.mlm_loss`.
- :func:`fine_tune`: a :class:`companion.models.bert.BERTClassifier` on a copy of the pretrained
  model (the pretrained one is left as it was), trained with cross-entropy for a fixed number
  of steps. The same function trains the from-scratch baseline: pass a freshly initialised
  :class:`companion.models.bert.BERTModel`.

The whole recipe, timed for ``python -m companion.bench train``, is
:func:`companion.experiments.recipes.bert.time_to_quality`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import check_integer, check_seed, check_type, describe
from companion.data.tasks.pretraining import (
    BERTArrays,
)
from companion.data.text import Vocab, batches
from companion.models.bert import (
    CLS,
    MASK,
    SEP,
    BERTClassifier,
    BERTModel,
    check_masking,
    mask_tokens,
    mlm_loss,
)
from companion.modes import eval_mode
from companion.training.train import Batch, fit

MAX_LEN = 14  # the longest input: a sentence of 12 words, <cls> and <sep>


def bert_model(vocab_size: int, seed: int, **sizes: Any) -> BERTModel:
    """The chapter's BERT, initialised on the CPU from ``seed`` (an integer): width 64, 4 heads,
    one block, FFN 128, no dropout (the sizes may be overridden by keyword)."""
    check_seed(seed)
    options: dict[str, Any] = dict(
        num_hiddens=64,
        ffn_num_hiddens=128,
        num_heads=4,
        num_blks=1,
        dropout=0.0,
        max_len=MAX_LEN,
    )
    options.update(sizes)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return BERTModel(vocab_size, **options)


def _trim(
    tokens: torch.Tensor, segments: torch.Tensor, valid_lens: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch cut after its longest sentence: the padding after it only costs time."""
    steps = int(valid_lens.max())
    return tokens[:, :steps], segments[:, :steps], valid_lens


def mlm_batches(
    arrays: BERTArrays,
    vocab: Vocab,
    batch_size: int,
    generator: torch.Generator,
    *,
    mask_prob: float = 0.15,
    rule: Sequence[float] = (0.8, 0.1, 0.1),
) -> Iterator[Batch]:
    """One epoch of masked-LM batches ``(tokens, segments, valid_lens, pred_positions, labels,
    weights)``: sentences of similar length together, the batches in random order, each batch
    masked with a fresh draw from ``generator`` (a ``torch.Generator``). ``arrays`` are
    :class:`BERTArrays`, ``vocab`` their :class:`Vocab`, ``batch_size`` a positive integer;
    ``mask_prob`` and ``rule`` are :func:`companion.models.bert.mask_tokens`'s, checked here,
    before the first batch."""
    batch_size = _check_mlm_arguments(arrays, vocab, batch_size, generator, mask_prob, rule)
    return _mlm_batches(arrays, vocab, batch_size, generator, mask_prob, rule)


def _check_mlm_arguments(
    arrays: BERTArrays,
    vocab: Vocab,
    batch_size: int,
    generator: torch.Generator,
    mask_prob: float,
    rule: Sequence[float],
) -> int:
    """The arguments of :func:`mlm_batches`, which :func:`pretrain` passes on; returns
    ``batch_size`` as an ``int``."""
    check_type("arrays", arrays, BERTArrays, "BERTArrays, as bert_arrays makes them")
    check_type("vocab", vocab, Vocab, "a Vocab, such as bert_vocab()")
    batch_size = check_integer("batch_size", batch_size)
    check_type("generator", generator, torch.Generator, "a torch.Generator().manual_seed(seed)")
    check_masking(mask_prob, rule)
    return batch_size


def _mlm_batches(
    arrays: BERTArrays,
    vocab: Vocab,
    batch_size: int,
    generator: torch.Generator,
    mask_prob: float,
    rule: Sequence[float],
) -> Iterator[Batch]:
    order = torch.randperm(len(arrays.tokens), generator=generator)
    order = order[arrays.valid_lens[order].argsort(stable=True)]  # by length, ties shuffled
    chunks = order.split(batch_size)
    for k in torch.randperm(len(chunks), generator=generator).tolist():
        rows = chunks[k]
        tokens, segments, valid_lens = _trim(*(array[rows] for array in arrays))
        masked = mask_tokens(
            tokens,
            valid_lens,
            vocab_size=len(vocab),
            mask_id=vocab[MASK],
            special_ids=[vocab[CLS], vocab[SEP]],
            generator=generator,
            mask_prob=mask_prob,
            rule=rule,
        )
        yield masked.tokens, segments, valid_lens, *masked[1:]


def _check_batch_size(batch: Batch, parts: str) -> None:
    """A loss's ``batch`` must hold the tensors ``parts`` names, as many as it names."""
    if len(batch) != parts.count(",") + 1:
        raise ValueError(f"batch must be {parts}; got a batch of {len(batch)} tensors")


def mlm_step_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """:func:`fit`'s loss for a masked-LM batch of :func:`mlm_batches`."""
    _check_batch_size(batch, "(tokens, segments, valid_lens, pred_positions, labels, weights)")
    tokens, segments, valid_lens, pred_positions, labels, weights = batch
    _, mlm_Y_hat, _ = model(tokens, segments, valid_lens, pred_positions)
    return mlm_loss(mlm_Y_hat, labels, weights)


def pretrain(
    model: BERTModel,
    arrays: BERTArrays,
    vocab: Vocab,
    *,
    num_epochs: int,
    batch_size: int = 128,
    lr: float = 1e-2,
    mask_prob: float = 0.3,
    rule: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    device: torch.device | None = None,
    **options: Any,
) -> dict[str, list[Any]]:
    """Train ``model`` by masked language modelling on ``arrays`` (as :func:`mlm_batches` takes
    them, masked with a generator seeded with ``seed``, an integer); returns :func:`fit`'s
    history. ``options`` go to :func:`fit` (``evaluate``, ``stop_when`` ...)."""
    check_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    _check_mlm_arguments(arrays, vocab, batch_size, generator, mask_prob, rule)  # not at epoch 1

    def epoch() -> Iterator[Batch]:
        return mlm_batches(arrays, vocab, batch_size, generator, mask_prob=mask_prob, rule=rule)

    return fit(model, epoch, mlm_step_loss, num_epochs=num_epochs, lr=lr, device=device, **options)


def classification_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """:func:`fit`'s loss for a ``(tokens, segments, valid_lens, labels)`` batch."""
    _check_batch_size(batch, "(tokens, segments, valid_lens, labels)")
    tokens, segments, valid_lens, labels = batch
    return F.cross_entropy(model(tokens, segments, valid_lens), labels)


def fine_tune(
    bert: BERTModel,
    arrays: BERTArrays,
    labels: torch.Tensor,
    *,
    num_steps: int = 120,
    batch_size: int = 32,
    lr: float = 2e-3,
    pooling: str = "cls",
    seed: int = 0,
    device: torch.device | None = None,
    **options: Any,
) -> tuple[BERTClassifier, dict[str, list[Any]]]:
    """A :class:`BERTClassifier` on a *copy* of ``bert``, trained on ``arrays`` and ``labels``
    for at least ``num_steps`` steps (whole epochs of ``batch_size`` examples, in an order drawn
    from ``seed``, an integer, as is the new output layer). ``arrays`` are non-empty
    :class:`BERTArrays` and ``labels`` their integer classes ``(num_examples,)``; ``num_steps``
    and ``batch_size`` are positive integers. Returns the classifier and :func:`fit`'s history;
    ``options`` go to :func:`fit`."""
    check_type("bert", bert, BERTModel, "a BERTModel, such as bert_model(len(vocab), seed)")
    check_type("arrays", arrays, BERTArrays, "BERTArrays, as bert_arrays makes them")
    _check_labels(arrays, labels, to_train=True)
    check_integer("num_steps", num_steps)
    check_integer("batch_size", batch_size)
    check_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        classifier = BERTClassifier(copy.deepcopy(bert).cpu(), pooling=pooling)
    generator = torch.Generator().manual_seed(seed)
    data = (*arrays, labels)
    num_epochs = math.ceil(num_steps / math.ceil(len(labels) / batch_size))

    def epoch() -> Iterator[Batch]:
        for *inputs, batch_labels in batches(data, batch_size, generator=generator):
            yield *_trim(*inputs), batch_labels

    history = fit(
        classifier,
        epoch,
        classification_loss,
        num_epochs=num_epochs,
        lr=lr,
        device=device,
        **options,
    )
    return classifier, history


def _check_labels(arrays: Sequence[torch.Tensor], labels: object, *, to_train: bool) -> None:
    """``labels``: a 1-D tensor with a class for each row of ``arrays``, at least one; integers
    ``to_train`` on (cross-entropy reads float targets as probabilities)."""
    dtype = labels.dtype if isinstance(labels, torch.Tensor) else None
    not_integers = dtype is not None and (
        dtype.is_floating_point or dtype.is_complex or dtype == torch.bool
    )
    if not isinstance(labels, torch.Tensor) or labels.dim() != 1 or (to_train and not_integers):
        kind = "integer classes" if to_train else "classes"
        raise TypeError(f"labels must be a 1-D tensor of {kind}; got {describe(labels)}")
    if len(labels) != len(arrays[0]):
        raise ValueError(
            f"labels and arrays must have the same number of rows; got {len(labels)} and "
            f"{len(arrays[0])}"
        )
    if len(labels) == 0:
        raise ValueError("labels and arrays hold no example")


@torch.no_grad()
def accuracy(
    classifier: nn.Module,
    arrays: BERTArrays,
    labels: torch.Tensor,
    device: torch.device | None = None,
) -> float:
    """The fraction of ``labels`` (a 1-D integer tensor, one class per row of ``arrays``) the
    classifier predicts, in evaluation mode (then back in the mode it had)."""
    check_type("classifier", classifier, nn.Module, "a torch.nn.Module")
    check_type("arrays", arrays, tuple, "BERTArrays, as bert_arrays makes them")
    _check_labels(arrays, labels, to_train=False)
    device = device or next(classifier.parameters()).device
    with eval_mode(classifier):
        logits = classifier(*(t.to(device) for t in arrays))  # (num_examples, num_classes)
    return (logits.argmax(dim=-1).cpu() == labels).float().mean().item()
