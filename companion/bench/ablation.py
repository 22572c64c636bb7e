"""``python -m companion.bench ablation``: trains the GPT-2 block, each modern change and all
four over seeds (companion.experiments.ablation, sec-modern-decoder), prints the table, and writes
the results to companion/experiments/results/ablation.json, which the chapter plots."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from companion.bench.common import (
    load_average,
    log,
    run_lines,
    run_record,
    seeded_parser,
    write_results,
)
from companion.data.tasks.language import language_model_vocab
from companion.device import get_device
from companion.experiments.ablation import (
    BASE,
    BATCH_SIZE,
    LR,
    RESULTS,
    STEPS,
    TEST_SENTENCES,
    VARIANTS,
    gap_to_floor,
    language_data,
    num_parameters,
    variant_configs,
)
from companion.measure import use_threads


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
    parser = seeded_parser(
        "ablation",
        "Gap to the entropy floor of the GPT-2 block, each modern change, and all.",
        steps=STEPS,
        batch_size=BATCH_SIZE,
        output=RESULTS,
    )
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
        **run_record("ablation", device, threads, load_before),
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
    write_results(results, args.output, "ablation")
    lines = [
        "Ablation: gap to the entropy floor (nats/token) after equal training steps",
        *run_lines(
            results,
            f"torch {torch.__version__}, {args.seeds} seeds, {args.steps} steps of "
            f"{args.batch_size} sentences",
        ),
        "",
        *_table(results),
    ]
    print("\n".join(lines))
    return 0
