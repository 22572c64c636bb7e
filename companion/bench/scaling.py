"""``python -m companion.bench scaling``: decoders of five widths, each trained with two budgets of
data over seeds, scored by their gap to the invented language's entropy floor
(companion.experiments.scaling, sec-language-models); prints the table and writes
companion/experiments/results/scaling.json, which the chapter plots."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from companion.bench import common
from companion.data.tasks.language import language_model_vocab
from companion.device import get_device
from companion.experiments.scaling import (
    BATCH_SIZE,
    RESULTS,
    STEPS,
    WIDTHS,
    gaps_by_width,
    non_embedding_parameters,
    width_config,
)
from companion.measure import use_threads


def main(argv: Sequence[str]) -> int:
    description = "Gap to the entropy floor by width and amount of data."
    args = common.results_parser("scaling", description, output=RESULTS).parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    vocab_size = len(language_model_vocab())
    gaps: dict[int, dict[int, list[float]]] = {steps: {w: [] for w in WIDTHS} for steps in STEPS}
    for seed in range(args.seeds):
        for steps in STEPS:
            common.log(f"[scaling] seed {seed}: {steps} steps")
            for width, gap in gaps_by_width(vocab_size, seed, steps, device).items():
                gaps[steps][width].append(round(gap, 5))
    results: dict[str, Any] = {
        **common.run_record("scaling", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {
            "widths": list(WIDTHS),
            "steps": list(STEPS),
            "batch_size": BATCH_SIZE,
            "seeds": args.seeds,
        },
        "parameters": {
            str(w): non_embedding_parameters(width_config(vocab_size, w)) for w in WIDTHS
        },
        "gaps": {str(steps): {str(w): g for w, g in row.items()} for steps, row in gaps.items()},
    }
    common.write_results(results, args.output, "scaling")
    lines = [
        "Scaling: gap to the entropy floor (nats/token) by width and training sentences",
        *common.run_lines(results, f"{args.seeds} seeds, batches of {BATCH_SIZE}"),
        "",
        f"{'width':>6}{'N (non-embedding)':>19}"
        + "".join(f"{f'{s * BATCH_SIZE:,} sentences':>22}" for s in STEPS),
    ]
    for w in WIDTHS:
        cells = "".join(
            f"{statistics.fmean(gaps[s][w]):>13.4f} ± {statistics.pstdev(gaps[s][w]):.4f}"
            for s in STEPS
        )
        lines.append(f"{w:>6}{results['parameters'][str(w)]:>19,}{cells}")
    print("\n".join(lines))
    return 0
