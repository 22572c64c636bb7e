"""``python -m companion.bench rnn``: the Transformer and the GRU encoder-decoder with Bahdanau
attention, trained with the same data, schedule and number of updates over seeds
(companion.experiments.rnn_comparison, sec-transformer); prints the table and writes
companion/experiments/results/rnn_comparison.json, which the chapter reads."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from companion.bench import common
from companion.device import get_device
from companion.experiments.rnn_comparison import MODELS, RESULTS, SETTINGS, train_and_score
from companion.measure import use_threads

COLUMNS = ("loss", "bleu", "standard_bleu", "exact_match", "seconds")


def main(argv: Sequence[str]) -> int:
    description = "The Transformer against the Bahdanau model on the reordering task."
    args = common.results_parser("rnn", description, output=RESULTS).parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in MODELS}
    for seed in range(args.seeds):
        for name in MODELS:
            common.log(f"[rnn] seed {seed}: {name}")
            runs[name].append({"seed": seed, **train_and_score(name, seed, device)})
    results: dict[str, Any] = {
        **common.run_record("rnn", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": SETTINGS,
        "runs": runs,
    }
    common.write_results(results, args.output, "rnn")
    lines = [
        "The Transformer and the Bahdanau model, same data and updates (test split)",
        *common.run_lines(results, f"{args.seeds} seeds"),
        "",
        f"{'model':<12}{'seed':>5}" + "".join(f"{column:>15}" for column in COLUMNS),
    ]
    for name, rows in runs.items():
        for row in rows:
            lines.append(f"{name:<12}{row['seed']:>5}" + "".join(f"{row[c]:>15}" for c in COLUMNS))
    print("\n".join(lines))
    return 0
