"""``python -m companion.bench ablation``: what each change of the modern decoder buys, measured
as the gap to the invented language's entropy floor (sec-modern-decoder).

The GPT-2 block, each single change (RMSNorm, RoPE, SwiGLU, grouped-query attention with 2
key-value heads for 4 query heads) and all four together are trained on the same sentences of
the invented language of sec-language-models, with the same number of steps, batch size and
learning-rate schedule, at (nearly) the same parameter count: each variant's feed-forward width
is chosen to bring its parameter count closest to the GPT-2 block's, and the counts are reported.

The score of a model is its cross-entropy on held-out sentences minus those sentences' own
surprisal under the true distribution (nats per token): the paired estimate of the gap to the
floor that :func:`companion.lm.time_to_quality` uses. Each seed draws new training and test
sentences and new initial weights; the variants of one seed share the sentences.

The results go to a small JSON file (``book/data/ablation.json`` by default) with the machine,
the versions and the load average that made them, and a table is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

import companion
from companion.bench.common import device_name, load_average, log
from companion.decoder import DecoderConfig, DecoderLM, gpt2_config
from companion.device import get_device
from companion.lm import (
    NUM_STEPS,
    cross_entropy_per_token,
    language_model_vocab,
    lm_arrays,
    next_token_loss,
)
from companion.measure import use_threads
from companion.tasks.language import invented_sentences, sentence_log_prob
from companion.text import batches
from companion.train import fit

OUTPUT = Path(__file__).resolve().parents[2] / "book" / "data" / "ablation.json"
BASE = dict(num_hiddens=64, num_heads=4, num_blks=2, ffn_num_hiddens=128, max_len=NUM_STEPS)
VARIANTS: dict[str, dict[str, object]] = {  # name -> its changes to the GPT-2 block
    "GPT-2 block": {},
    "+ RMSNorm": dict(norm="rms"),
    "+ RoPE": dict(positions="rope"),
    "+ SwiGLU": dict(ffn="swiglu"),
    "+ GQA": dict(num_kv_heads=2),
    "all four": dict(norm="rms", positions="rope", ffn="swiglu", num_kv_heads=2),
}
STEPS, BATCH_SIZE, LR, TEST_SENTENCES = 300, 64, 3e-3, 2000


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
) -> float:
    """Train ``DecoderLM(config)`` for ``steps`` steps (one pass over ``data["train"]``, which
    holds ``steps * batch_size`` sentences) and return its test gap to the floor, nats/token."""
    device = device or get_device()
    torch.manual_seed(seed)
    model = DecoderLM(config)
    generator = torch.Generator().manual_seed(seed)
    train = tuple(a[: steps * batch_size] for a in data["train"])
    fit(
        model,
        lambda: batches(train, batch_size, generator=generator),
        next_token_loss,
        num_epochs=1,
        lr=LR,
        device=device,
    )
    return cross_entropy_per_token(model, data["test"]) - data["floor"]


def load_results(path: Path = OUTPUT) -> dict[str, Any]:
    """The committed results of this benchmark (``book/data/ablation.json`` in a checkout)."""
    if not path.exists():
        raise FileNotFoundError(
            f"no ablation results at {path}: run `python -m companion.bench ablation` in a "
            "checkout of the book's repository"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _table(results: dict) -> list[str]:
    baseline = results["variants"]["GPT-2 block"]["gaps"]
    lines = [
        f"{'variant':<12} {'params':>7} {'ffn':>4}  {'gap to floor':>15}  "
        f"{'minus GPT-2 (paired)':>20}  per seed"
    ]
    for name, row in results["variants"].items():
        gaps, std = row["gaps"], math.nan if row["std"] is None else row["std"]
        diffs = [g - b for g, b in zip(gaps, baseline)]
        spread = statistics.stdev(diffs) if len(diffs) > 1 else math.nan
        lines.append(
            f"{name:<12} {row['parameters']:>7} {row['ffn_num_hiddens']:>4}  "
            f"{row['mean']:>7.4f} ± {std:.4f}  "
            f"{statistics.fmean(diffs):>+11.4f} ± {spread:.4f}  "
            + " ".join(f"{g:.4f}" for g in gaps)
        )
    return lines


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench ablation",
        description="Gap to the entropy floor of the GPT-2 block, each modern change, and all.",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--output", type=Path, default=OUTPUT, help="'-' writes no file")
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = load_average(), time.perf_counter()
    configs = variant_configs(len(language_model_vocab()))
    gaps: dict[str, list[float]] = {name: [] for name in configs}
    for seed in range(args.seeds):
        data = language_data(seed, args.steps * args.batch_size)
        for name, config in configs.items():
            log(f"[ablation] seed {seed}: {name}")
            gaps[name].append(gap_to_floor(config, data, seed, args.steps, args.batch_size, device))
    results: dict[str, Any] = {
        "benchmark": "python -m companion.bench ablation",
        "machine": device_name(device),
        "device": device.type,
        "threads": threads,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "companion": companion.__version__,
        },
        "load_average": {"before": load_before, "after": load_average()},
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {
            "base": BASE,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "lr": LR,
            "test_sentences": TEST_SENTENCES,
            "seeds": args.seeds,
        },
        "variants": {
            name: {
                "changes": VARIANTS[name],
                "parameters": num_parameters(configs[name]),
                "ffn_num_hiddens": configs[name].ffn_num_hiddens,
                "gaps": [round(g, 5) for g in gaps[name]],
                "mean": round(statistics.fmean(gaps[name]), 5),
                "std": round(statistics.stdev(gaps[name]), 5) if args.seeds > 1 else None,
            }
            for name in configs
        },
    }
    if str(args.output) != "-":
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        log(f"[ablation] wrote {args.output}")
    lines = [
        "Ablation: gap to the entropy floor (nats/token) after equal training steps",
        f"device: {device.type} ({results['machine']})"
        + (f", {threads} threads" if threads else "")
        + f", torch {torch.__version__}, {args.seeds} seeds, {args.steps} steps of "
        f"{args.batch_size} sentences, {results['seconds']} s",
        f"1-minute load average {load_before} before, {results['load_average']['after']} after",
        "",
        *_table(results),
    ]
    print("\n".join(lines))
    return 0
