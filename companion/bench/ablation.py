"""``python -m companion.bench ablation``: trains the GPT-2 block, each modern change, all four
and all four but one over seeds, recording each model's learning curve, then a few of them at
two other peak learning rates (companion.experiments.ablation, sec-modern-decoder); prints the
tables, and writes the results to companion/experiments/results/ablation.json, which the chapter
plots."""

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
    CURVE_POINTS,
    LR,
    LR_SWEEP,
    RESULTS,
    STEPS,
    SWEPT,
    TEST_SENTENCES,
    VARIANTS,
    gap_to_floor,
    gap_with_curve,
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


def _sweep_table(results: dict) -> list[str]:
    sweep = results["lr_sweep"]
    lrs = sorted({float(lr) for row in sweep.values() for lr in row})
    lines = [f"{'variant':<12} " + "".join(f"{'lr ' + format(lr, 'g'):>17}" for lr in lrs)]
    for name, row in sweep.items():
        cells = [row[format(lr, "g")] for lr in lrs]
        lines.append(
            f"{name:<12} " + "".join(f"{c['mean']:>9.4f} ± {c['std'] or 0:.4f}" for c in cells)
        )
    return lines


def _summary(gaps: list[float]) -> dict[str, Any]:
    return {
        "gaps": [round(g, 5) for g in gaps],
        "mean": round(statistics.fmean(gaps), 5),
        "std": round(statistics.stdev(gaps), 5) if len(gaps) > 1 else None,
    }


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
    curves: dict[str, list[list[float]]] = {name: [] for name in configs}
    swept: dict[str, dict[float, list[float]]] = {n: {lr: [] for lr in LR_SWEEP} for n in SWEPT}
    for seed in range(args.seeds):
        data = language_data(seed, args.steps * args.batch_size)
        for name, config in configs.items():
            log(f"[ablation] seed {seed}: {name}")
            gap, curve = gap_with_curve(config, data, seed, args.steps, args.batch_size, device)
            gaps[name].append(gap)
            curves[name].append([round(g, 5) for _, g in curve])
        for name in SWEPT:
            for lr in LR_SWEEP:
                log(f"[ablation] seed {seed}: {name}, lr {lr:g}")
                swept[name][lr].append(
                    gap_to_floor(configs[name], data, seed, args.steps, args.batch_size, device, lr)
                )
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
            "curve_steps": [(i + 1) * args.steps // CURVE_POINTS for i in range(CURVE_POINTS)],
            "lr_sweep": [*LR_SWEEP, LR],
        },
        "variants": {
            name: {
                "changes": VARIANTS[name],
                "parameters": num_parameters(configs[name]),
                "ffn_num_hiddens": configs[name].ffn_num_hiddens,
                **_summary(gaps[name]),
                "curves": curves[name],
            }
            for name in configs
        },
        "lr_sweep": {
            name: {
                format(lr, "g"): _summary(gaps[name] if lr == LR else swept[name][lr])
                for lr in sorted([*LR_SWEEP, LR])
            }
            for name in SWEPT
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
        "",
        "Peak learning rate (gap to the floor, mean ± std over seeds)",
        *_sweep_table(results),
    ]
    print("\n".join(lines))
    return 0
