"""``python -m companion.bench length``: trains the GPT-2 block with learned, sinusoidal, RoPE
and ALiBi positions at one context length, over seeds, and scores each at one, two and four
times that length (companion.experiments.extrapolation, sec-modern-decoder); prints the table and
writes companion/experiments/results/length.json, which the chapter plots."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from companion.bench import common
from companion.data.tasks.language import language_model_vocab
from companion.device import get_device
from companion.experiments.ablation import BASE, LR
from companion.experiments.extrapolation import (
    BATCH_SIZE,
    FACTORS,
    RESULTS,
    SCHEMES,
    SINUSOID_SCALE,
    STEPS,
    TRAIN_LENGTH,
    gaps_by_length,
    length_data,
    scheme_configs,
)
from companion.measure import use_threads


def summary(gaps: list[float]) -> dict[str, Any]:
    return {
        "gaps": [round(g, 5) for g in gaps],
        "mean": round(statistics.fmean(gaps), 5),
        "std": round(statistics.stdev(gaps), 5) if len(gaps) > 1 else None,
    }


def _table(results: dict) -> list[str]:
    lengths = results["settings"]["lengths"]
    lines = [f"{'positions':<19}" + "".join(f"{'at ' + str(n):>17}" for n in lengths)]
    for scheme, row in results["schemes"].items():
        cells = [row["lengths"][str(n)] for n in lengths]
        means = "".join(f"{c['mean']:>9.4f} ± {c['std'] or 0:.4f}" for c in cells)
        lines.append(f"{scheme:<19}{means}")
    return lines


def main(argv: Sequence[str]) -> int:
    description = "Gap to the entropy floor at 1, 2 and 4 times the training length."
    parser = common.seeded_parser(
        "length", description, steps=STEPS, batch_size=BATCH_SIZE, output=RESULTS
    )
    parser.add_argument("--train-length", type=int, default=TRAIN_LENGTH)
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    lengths = [factor * args.train_length for factor in FACTORS]
    configs = scheme_configs(len(language_model_vocab()), max(lengths))
    gaps: dict[str, dict[int, list[float]]] = {s: {n: [] for n in lengths} for s in SCHEMES}
    for seed in range(args.seeds):
        data = length_data(seed, args.steps * args.batch_size, args.train_length, FACTORS)
        for scheme, config in configs.items():
            common.log(f"[length] seed {seed}: {scheme}")
            by_length = gaps_by_length(
                config, data, seed, args.steps, args.batch_size, device, scheme
            )
            for n, gap in by_length.items():
                gaps[scheme][n].append(gap)
    results: dict[str, Any] = {
        **common.run_record("length", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {
            "base": {**BASE, "max_len": max(lengths)},
            "train_length": args.train_length,
            "lengths": lengths,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "lr": LR,
            "seeds": args.seeds,
        },
        "schemes": {
            scheme: {
                "positions": SCHEMES[scheme],
                "scale": SINUSOID_SCALE if scheme == "sinusoidal, scaled" else 1.0,
                "lengths": {str(n): summary(gaps[scheme][n]) for n in lengths},
            }
            for scheme in SCHEMES
        },
    }
    common.write_results(results, args.output, "length")
    lines = [
        f"Length: gap to the entropy floor (nats/token), trained on rows of "
        f"{args.train_length} tokens, scored on rows of {', '.join(map(str, lengths))}",
        *common.run_lines(
            results, f"{args.seeds} seeds, {args.steps} steps of {args.batch_size} rows"
        ),
        "",
        *_table(results),
    ]
    print("\n".join(lines))
    return 0
