"""The modern decoder's ablation: what each change buys, measured as the gap to the invented
language's entropy floor (sec-modern-decoder). ``python -m companion.bench ablation`` runs it.

The GPT-2 block, each single change (RMSNorm, RoPE, SwiGLU, grouped-query attention with 2
key-value heads for 4 query heads), all four together, and all four but one (leave one out) are
trained on the same sentences of the invented language of sec-language-models, with the same
number of steps, batch size and learning-rate schedule, at (nearly) the same parameter count:
each variant's feed-forward width is chosen to bring its parameter count closest to the GPT-2
block's, and the counts are reported.

What it measures is early training at one learning rate: 300 steps of one pass over the data,
with AdamW and a one-cycle schedule peaking at :data:`LR`, far from convergence. So
:func:`gap_with_curve` also records each model's gap after every sixth of its steps (its
learning curve), and the benchmark repeats a few variants at two other peak learning rates
(:data:`LR_SWEEP`, :data:`SWEPT`), which says how much of a difference is the learning rate's.

The score of a model is its cross-entropy on held-out sentences minus those sentences' own
surprisal under the true distribution (nats per token): the paired estimate of the gap to the
floor that :func:`companion.experiments.recipes.gpt.time_to_quality` uses. Each seed draws new
training and test sentences and new initial weights; the variants of one seed share the sentences.

The benchmark writes its results to a small JSON file with the machine, the versions and the
load average that made them; the committed one, :data:`RESULTS`, ships with companion (package
data), so the chapter plots it in Colab too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

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
from companion.models.decoder import DecoderConfig, DecoderLM, gpt2_config
from companion.training.train import fit

RESULTS = Path(__file__).resolve().parent / "results" / "ablation.json"
BASE = dict(num_hiddens=64, num_heads=4, num_blks=2, ffn_num_hiddens=128, max_len=NUM_STEPS)
VARIANTS: dict[str, dict[str, object]] = {  # name -> its changes to the GPT-2 block
    "GPT-2 block": {},
    "+ RMSNorm": dict(norm="rms"),
    "+ RoPE": dict(positions="rope"),
    "+ SwiGLU": dict(ffn="swiglu"),
    "+ GQA": dict(num_kv_heads=2),
    "all four": dict(norm="rms", positions="rope", ffn="swiglu", num_kv_heads=2),
    # leave one out: all four changes but the one named
    "all but RMSNorm": dict(positions="rope", ffn="swiglu", num_kv_heads=2),
    "all but RoPE": dict(norm="rms", ffn="swiglu", num_kv_heads=2),
    "all but SwiGLU": dict(norm="rms", positions="rope", num_kv_heads=2),
    "all but GQA": dict(norm="rms", positions="rope", ffn="swiglu"),
}
STEPS, BATCH_SIZE, LR, TEST_SENTENCES = 300, 64, 3e-3, 2000
LR_SWEEP = (1e-3, 1e-2)  # the other peak learning rates of the benchmark's sweep
SWEPT = ("GPT-2 block", "all four")  # the variants it trains at each of them
CURVE_POINTS = 6  # a learning curve's points: the gap after every sixth of the steps


def num_parameters(config: DecoderConfig) -> int:
    return sum(p.numel() for p in DecoderLM(config).parameters())


def matched_config(config: DecoderConfig, target: int) -> DecoderConfig:
    """``config`` with the feed-forward width whose parameter count is closest to ``target``
    (the count is linear in the width)."""
    low, high = (num_parameters(config.replace(ffn_num_hiddens=w)) for w in (64, 128))
    per_unit = (high - low) / 64
    width = max(1, round(64 + (target - low) / per_unit))
    candidates = [config.replace(ffn_num_hiddens=w) for w in (width - 1, width, width + 1)]
    return min(candidates, key=lambda c: abs(num_parameters(c) - target))


def variant_configs(vocab_size: int) -> dict[str, DecoderConfig]:
    base = gpt2_config(vocab_size, **BASE)
    target = num_parameters(base)
    return {
        name: matched_config(base.replace(**changes), target) for name, changes in VARIANTS.items()
    }


def language_data(seed: int, num_train: int) -> dict:
    """Training and test arrays of one seed, and the test sentences' surprisal per token."""
    vocab = language_model_vocab()
    train, test = (
        invented_sentences(num_train, seed=3 * seed),
        invented_sentences(TEST_SENTENCES, seed=3 * seed + 2),
    )
    floor = sum(-sentence_log_prob(s) for s in test) / sum(len(s) + 1 for s in test)
    return {"train": lm_arrays(train, vocab), "test": lm_arrays(test, vocab), "floor": floor}


def gap_to_floor(
    config: DecoderConfig,
    data: dict,
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    lr: float = LR,
) -> float:
    """Train ``DecoderLM(config)`` for ``steps`` steps (one pass over ``data["train"]``, which
    holds ``steps * batch_size`` sentences) and return its test gap to the floor, nats/token."""
    model = train_decoder(config, data["train"], seed, steps, batch_size, device, lr=lr)
    return cross_entropy_per_token(model, data["test"]) - data["floor"]


def gap_with_curve(
    config: DecoderConfig,
    data: dict,
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    lr: float = LR,
    points: int = CURVE_POINTS,
) -> tuple[float, list[tuple[int, float]]]:
    """:func:`gap_to_floor`, the same model trained on the same batches in the same order, and
    its learning curve: ``(gap, [(step, gap after that step), ...])`` at every ``steps /
    points`` steps, the last point being the gap itself. ``steps`` must be a multiple of
    ``points``."""
    if steps % points:
        raise ValueError(f"steps ({steps}) must be a multiple of points ({points})")
    curve: list[tuple[int, float]] = []

    def evaluate(model: nn.Module) -> dict[str, float]:
        gap = cross_entropy_per_token(model, data["test"]) - data["floor"]
        curve.append(((len(curve) + 1) * steps // points, gap))
        return {"gap": gap}

    train_decoder(
        config,
        data["train"],
        seed,
        steps,
        batch_size,
        device,
        lr=lr,
        evaluate=evaluate,
        points=points,
    )
    return curve[-1][1], curve


def train_decoder(
    config: DecoderConfig,
    train: tuple[torch.Tensor, torch.Tensor],
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    prepare: Callable[[DecoderLM], None] | None = None,
    *,
    lr: float = LR,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    points: int = 1,
) -> DecoderLM:
    """``DecoderLM(config)``, initialised from ``seed`` (then changed by ``prepare(model)``,
    if given), after one pass of ``steps`` batches over the first ``steps * batch_size`` rows
    of the ``(inputs, labels)`` arrays ``train``, with a one-cycle schedule peaking at ``lr``.
    With ``evaluate``, the pass is cut into ``points`` equal parts (``fit``'s epochs: the same
    batches in the same order, the same schedule) and ``evaluate(model)`` runs after each."""
    if len(train[0]) < steps * batch_size:
        raise ValueError(
            f"train holds {len(train[0])} rows; {steps} steps of {batch_size} need "
            f"{steps * batch_size}"
        )
    device = device or get_device()
    torch.manual_seed(seed)
    model = DecoderLM(config)
    if prepare is not None:
        prepare(model)
    generator = torch.Generator().manual_seed(seed)
    rows = tuple(a[: steps * batch_size] for a in train)
    order = list(batches(rows, batch_size, generator=generator))  # the one pass, in order
    parts = iter([order[i * steps // points : (i + 1) * steps // points] for i in range(points)])
    fit(
        model,
        lambda: next(parts),
        next_token_loss,
        num_epochs=points,
        lr=lr,
        evaluate=evaluate,
        device=device,
    )
    return model


def load_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench ablation`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(
            f"no ablation results at {path}: run `python -m companion.bench ablation`"
        )
    return json.loads(path.read_text(encoding="utf-8"))
