"""``python -m companion.bench.length_window``: the RoPE model of ``python -m companion.bench
length`` trained with a sliding window of 8 positions instead, on each seed's data and
initialisation of that benchmark, and scored at one, two and four times the training length
(:func:`companion.experiments.extrapolation.gaps_by_length`). Writes
companion/exercises/results/length-window.json, which only the solution of the exercise
ex-modern-length (sec-modern-decoder) reads, beside the benchmark's RoPE runs: no chapter's
claim depends on it, so it sits with the exercises, outside the fingerprint of ``make claims``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch

from companion.bench import common
from companion.data.tasks.language import language_model_vocab
from companion.device import get_device
from companion.experiments.ablation import TEST_SENTENCES
from companion.experiments.extrapolation import (
    BATCH_SIZE,
    FACTORS,
    STEPS,
    TRAIN_LENGTH,
    gaps_by_length,
    length_data,
    scheme_configs,
)
from companion.measure import use_threads

WINDOW_RESULTS = (
    Path(__file__).resolve().parents[1] / "exercises" / "results" / "length-window.json"
)


def trained_window_runs(
    window: int,
    seeds: int = 5,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    test_sentences: int = TEST_SENTENCES,
) -> dict[str, Any]:
    """The benchmark's RoPE model trained with a sliding window of ``window`` positions:
    ``{"window": ..., "steps": ..., "batch_size": ..., "seeds": ..., "lengths": {str(n): [gap
    of each seed]}}``, seed by seed beside the benchmark's ``"rope"`` runs."""
    lengths = [factor * TRAIN_LENGTH for factor in FACTORS]
    config = scheme_configs(len(language_model_vocab()), max(lengths))["rope"]
    config = config.replace(window=window)
    runs: dict[str, list[float]] = {str(n): [] for n in lengths}
    for seed in range(seeds):
        data = length_data(seed, steps * batch_size, test_sentences=test_sentences)
        for n, gap in gaps_by_length(config, data, seed, steps, batch_size, device).items():
            runs[str(n)].append(round(gap, 5))
    return {
        "window": window,
        "steps": steps,
        "batch_size": batch_size,
        "seeds": seeds,
        "lengths": runs,
    }


def main() -> None:
    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    runs = trained_window_runs(8, device=device)
    record = {
        **common.run_record("length", device, threads, load_before),
        "benchmark": "python -m companion.bench.length_window",
        "seconds": round(time.perf_counter() - start, 1),
        **runs,
    }
    common.write_results(record, WINDOW_RESULTS, "length, window 8")
    print(json.dumps(runs["lengths"]))


if __name__ == "__main__":
    main()
