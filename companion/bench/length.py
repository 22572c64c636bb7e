"""``python -m companion.bench length``: trains the GPT-2 block with learned, sinusoidal, RoPE
and ALiBi positions and with none (NoPE) at one context length, over seeds, and scores each at
one, two and four times that length, by stretch of positions, with a sliding window, and (RoPE)
with rescaled rotations (companion.experiments.extrapolation, sec-modern-decoder); prints the
tables and writes companion/experiments/results/length.json, which the chapter plots."""

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
    length_data,
    length_scores,
    scheme_configs,
)
from companion.measure import use_threads


def summary(gaps: list[float]) -> dict[str, Any]:
    return {
        "gaps": [round(g, 5) for g in gaps],
        "mean": round(statistics.fmean(gaps), 5),
        "std": round(statistics.stdev(gaps), 5) if len(gaps) > 1 else None,
    }


def _table(results: dict, key: str = "lengths", suffix: str = "") -> list[str]:
    lengths = results["settings"]["lengths"]
    lines = [f"{'positions':<19}" + "".join(f"{'at ' + str(n):>17}" for n in lengths)]
    for scheme, row in results["schemes"].items():
        if key not in row:
            continue
        cells = [row[key][str(n)] for n in lengths]
        means = "".join(f"{c['mean']:>9.4f} ± {c['std'] or 0:.4f}" for c in cells)
        lines.append(f"{scheme + suffix:<19}{means}")
    return lines


def _position_table(results: dict) -> list[str]:
    n = max(results["settings"]["lengths"])
    T = results["settings"]["train_length"]
    lines = [
        f"{'positions':<19}" + "".join(f"{f'{i * T}-{(i + 1) * T - 1}':>17}" for i in range(n // T))
    ]
    for scheme, row in results["schemes"].items():
        cells = row["by_position"][str(n)]
        lines.append(
            f"{scheme:<19}" + "".join(f"{c['mean']:>9.4f} ± {c['std'] or 0:.4f}" for c in cells)
        )
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
    runs: dict[str, list[dict]] = {s: [] for s in SCHEMES}  # scheme -> per seed: its scores
    for seed in range(args.seeds):
        data = length_data(seed, args.steps * args.batch_size, args.train_length, FACTORS)
        for scheme, config in configs.items():
            common.log(f"[length] seed {seed}: {scheme}")
            runs[scheme].append(
                length_scores(config, data, seed, args.steps, args.batch_size, device, scheme)
            )

    def by_length(scheme: str, key: str) -> dict[str, Any]:
        return {str(n): summary([run[key][n] for run in runs[scheme]]) for n in lengths}

    def by_position(scheme: str) -> dict[str, Any]:
        return {
            str(n): [
                summary([run["by_position"][n][i] for run in runs[scheme]])
                for i in range(n // args.train_length)
            ]
            for n in lengths
        }

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
                "lengths": by_length(scheme, "gaps"),
                "by_position": by_position(scheme),
                **{
                    key: by_length(scheme, key)
                    for key in ("window", "interpolated", "ntk")
                    if key in runs[scheme][0]
                },
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
        "",
        f"At {max(lengths)} tokens, by where a sentence ends (positions)",
        *_position_table(results),
        "",
        f"With a sliding window of {args.train_length} at evaluation",
        *_table(results, "window"),
        "",
        "RoPE rescaled for the longer rows: position interpolation, NTK-aware",
        *_table(results, "interpolated", ", interpolated"),
        *_table(results, "ntk", ", NTK-aware")[1:],
    ]
    print("\n".join(lines))
    return 0
