"""The GPT's time-to-quality recipe on the invented language (sec-language-models): a
:class:`companion.models.decoder.GPT` of :data:`RECIPE_MODEL` trained from scratch on
:data:`RECIPE_SENTENCES` sentences until its validation cross-entropy is within
:data:`TARGET_GAP` nats per token of the language's entropy floor.
``python -m companion.bench train`` runs it, and :mod:`companion.experiments.recipes.llama` runs it
with another model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from companion._validate import check_callable, check_device, check_seed
from companion.data.tasks.language import (
    NUM_STEPS,
    cross_entropy_per_token,
    invented_sentences,
    language_model_vocab,
    lm_arrays,
    next_token_loss,
    sentence_log_prob,
)
from companion.data.text import batches
from companion.device import get_device
from companion.experiments.recipes import TimeToQuality
from companion.models.decoder import GPT
from companion.training.train import fit

RECIPE_SENTENCES = 20_000
RECIPE_BATCH_SIZE = 128
RECIPE_EPOCHS = 3
RECIPE_LR = 3e-3
RECIPE_MODEL: dict[str, Any] = dict(
    num_hiddens=64, mlp_num_hiddens=128, num_heads=4, num_blks=2, max_len=NUM_STEPS
)


TARGET_GAP = 0.03  # nats per token above the entropy floor


def recipe_gpt(vocab_size: int) -> tuple[nn.Module, str]:
    """The recipe's model, a :class:`GPT` of :data:`RECIPE_MODEL`, and its name."""
    return GPT(vocab_size, **RECIPE_MODEL), "GPT, {num_hiddens} wide, {num_blks} blocks".format(
        **RECIPE_MODEL
    )


def time_to_quality(
    seed: int = 0,
    device: torch.device | None = None,
    build: Callable[[int], tuple[nn.Module, str]] = recipe_gpt,
) -> TimeToQuality:
    """Train a language model from scratch on the invented language until its validation
    cross-entropy is within :data:`TARGET_GAP` nats per token of the entropy floor.

    ``build(vocab_size)`` returns the model (on the CPU) and its name: by default
    :func:`recipe_gpt`; :func:`companion.experiments.recipes.llama.time_to_quality` passes a
    Llama-style model of the same size, so the two recipes differ only in the model.

    The gap of a corpus is measured against that corpus's own surprisal under the true
    distribution, ``-sum log P(S) / number of tokens``, whose expectation is the floor
    (``language_entropy().per_token``): the paired difference estimates the same gap without
    the sampling noise of the corpus's entropy (a standard deviation of about 0.005 nats per
    token for 2,000 sentences).

    ``reached`` says whether the validation gap met the target, ``seconds`` counts training
    and evaluation, and ``score`` is the gap on a test corpus drawn with another seed.
    ``seed`` is an integer; ``device`` a ``torch.device``, its name, or ``None``.
    """
    check_seed(seed)
    device = check_device(device)
    check_callable("build", build, "a function build(vocab_size) returning (model, name)")
    device = device or get_device()
    torch.manual_seed(seed)
    vocab = language_model_vocab()
    sentences = [  # train, val, test
        invented_sentences(n, seed=3 * seed + i)
        for i, n in enumerate((RECIPE_SENTENCES, 2000, 2000))
    ]
    val_floor, test_floor = (
        sum(-sentence_log_prob(s) for s in split) / sum(len(s) + 1 for s in split)
        for split in sentences[1:]
    )
    train, val, test = (lm_arrays(split, vocab) for split in sentences)
    model, name = build(len(vocab))
    model = model.to(device)
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    history = fit(
        model,
        lambda: batches(train, RECIPE_BATCH_SIZE, generator=generator),
        next_token_loss,
        num_epochs=RECIPE_EPOCHS,
        lr=RECIPE_LR,
        evaluate=lambda m: {"gap": cross_entropy_per_token(m, val) - val_floor},
        stop_when=lambda metrics: metrics["gap"] <= TARGET_GAP,
        device=device,
    )
    seconds = time.perf_counter() - start
    return TimeToQuality(
        task=f"invented language, {RECIPE_SENTENCES // 1000}k sentences",
        model=name,
        target=f"cross-entropy <= floor + {TARGET_GAP} nats/token",
        reached=history["gap"][-1] <= TARGET_GAP,
        seconds=seconds,
        epochs=len(history["epoch"]),
        score=cross_entropy_per_token(model, test) - test_floor,
    )
