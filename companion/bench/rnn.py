"""``python -m companion.bench rnn``: the Transformer and the GRU encoder-decoder with Bahdanau
attention (bidirectional encoder, about the Transformer's parameters), trained with the same
data, schedule and number of updates over a small learning-rate sweep and seeds, and the
Transformer also with dropout and with label smoothing (companion.experiments.rnn_comparison,
sec-transformer); prints the table and writes companion/experiments/results/rnn_comparison.json,
which the chapter reads."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from companion.bench import common
from companion.device import get_device
from companion.experiments.rnn_comparison import (
    CHAPTER_LR,
    LEARNING_RATES,
    MODELS,
    REGULARISED,
    RESULTS,
    SETTINGS,
    chosen_lr,
    select_runs,
    train_and_score,
)
from companion.measure import use_threads

COLUMNS = ("loss", "val_exact_match", "exact_match", "bleu", "standard_bleu", "seconds")


def settings_to_run() -> list[dict[str, Any]]:
    """Every setting of the sweep: each model at each of its learning rates, then the
    Transformer at the chapter's rate with each regulariser alone."""
    plain = {"dropout": 0.0, "label_smoothing": 0.0}
    runs = [{"model": m, "lr": lr, **plain} for m in MODELS for lr in LEARNING_RATES[m]]
    runs += [{"model": "Transformer", "lr": CHAPTER_LR, **plain, **r} for r in REGULARISED]
    return runs


def main(argv: Sequence[str]) -> int:
    description = "The Transformer against the Bahdanau model on the reordering task."
    args = common.results_parser("rnn", description, output=RESULTS).parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    runs: list[dict[str, Any]] = []
    for setting in settings_to_run():
        options = {k: setting[k] for k in ("lr", "dropout", "label_smoothing")}
        for seed in range(args.seeds):
            common.log(f"[rnn] {setting}, seed {seed}")
            run = train_and_score(setting["model"], seed, device, **options)
            runs.append({**setting, "seed": seed, **run})
    results: dict[str, Any] = {
        **common.run_record("rnn", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": SETTINGS,
        "learning_rates": LEARNING_RATES,
        "runs": runs,
    }
    results["chosen_lr"] = {name: chosen_lr(results, name) for name in MODELS}
    common.write_results(results, args.output, "rnn")
    lines = [
        "The Transformer and the Bahdanau model, same data and updates: means over "
        f"{args.seeds} seeds (exact match on 500 validation and on the test sentences)",
        *common.run_lines(results, f"{args.seeds} seeds"),
        "",
        f"{'model':<12}{'lr':>8}{'dropout':>8}{'smooth':>8}" + "".join(f"{c:>16}" for c in COLUMNS),
    ]
    for setting in settings_to_run():
        rows = select_runs(
            results,
            setting["model"],
            setting["lr"],
            dropout=setting["dropout"],
            label_smoothing=setting["label_smoothing"],
        )
        means = [statistics.mean(row[c] for row in rows) for c in COLUMNS]
        lines.append(
            f"{setting['model']:<12}{setting['lr']:>8}{setting['dropout']:>8}"
            f"{setting['label_smoothing']:>8}" + "".join(f"{m:>16.4f}" for m in means)
        )
    lines.append(f"chosen on validation: {results['chosen_lr']}")
    print("\n".join(lines))
    return 0
