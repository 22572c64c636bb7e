"""The BERT's time-to-quality recipe (sec-pretraining): pretrain the chapter's BERT by masked
language modelling, then fine-tune it on the agreement task until a stated validation accuracy,
with :func:`companion.training.pretrain.pretrain` and :func:`companion.training.pretrain.fine_tune`.
``python -m companion.bench train`` runs it.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from companion._validate import check_device, check_seed
from companion.data.tasks.pretraining import (
    agreement_task,
    bert_arrays,
    bert_vocab,
    pretraining_corpus,
)
from companion.device import get_device
from companion.experiments.recipes import TimeToQuality
from companion.training.pretrain import MAX_LEN, accuracy, bert_model, fine_tune, pretrain


def time_to_quality(seed: int = 0, device: torch.device | None = None) -> TimeToQuality:
    """Pretrain the chapter's BERT on 4,000 unlabelled sentences (10 epochs), then fine-tune it
    on 1,000 labelled agreement examples until the validation accuracy reaches 0.9 (at most
    20 epochs); the test accuracy is on 2,000 sentences seen by neither stage.

    ``seconds`` counts both stages, data generation excluded; ``epochs`` counts the
    fine-tuning epochs (pretraining always runs its 10). ``seed`` is an integer; ``device`` a
    ``torch.device``, its name, or ``None``.
    """
    check_seed(seed)
    device = check_device(device)
    device = device or get_device()
    vocab = bert_vocab()
    corpus = bert_arrays(pretraining_corpus(4000, seed=seed + 1), vocab, MAX_LEN)
    train = agreement_task(1000, seed=seed + 10)
    val, test = agreement_task(500, seed=seed + 11), agreement_task(2000, seed=seed + 12)
    train_arrays, val_arrays, test_arrays = (
        bert_arrays(split.sentences, vocab, MAX_LEN) for split in (train, val, test)
    )
    target = 0.9
    start = time.perf_counter()
    bert = bert_model(len(vocab), seed)
    pretrain(bert, corpus, vocab, num_epochs=10, seed=seed, device=device)

    def evaluate(model: nn.Module) -> dict[str, float]:
        return {"val_accuracy": accuracy(model, val_arrays, val.labels, device)}

    def reached(metrics: dict[str, float]) -> bool:
        return metrics["val_accuracy"] >= target

    classifier, history = fine_tune(
        bert,
        train_arrays,
        train.labels,
        num_steps=20 * 32,
        seed=seed,
        device=device,
        evaluate=evaluate,
        eval_every=1,
        stop_when=reached,
    )
    seconds = time.perf_counter() - start
    return TimeToQuality(
        task="agreement (grammatical or two articles swapped), 1,000 labelled sentences",
        model="BERT, 64 wide, 1 block, pretrained on 4,000 sentences (10 epochs, counted)",
        target=f"validation accuracy >= {target}",
        reached=reached({"val_accuracy": history["val_accuracy"][-1]}),
        seconds=seconds,
        epochs=history["epoch"][-1],
        score=accuracy(classifier, test_arrays, test.labels, device),
    )
