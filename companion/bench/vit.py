"""``python -m companion.bench vit``: the chapter's ViT against a CNN of about its size on the
8x8 digits, with all the training images, a quarter of them, and a quarter with shuffled
pixels, over seeds; and what each trained ViT does with the image's layout (positions zeroed or
permuted, the ``<cls>`` query's weight on ink, attention distances, position similarities)
(companion.experiments.vit_comparison, sec-vit). Prints the tables and writes
companion/experiments/results/vit.json, which the chapter plots."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from companion.bench import common
from companion.device import get_device
from companion.experiments.recipes.vit import DigitsRecipe
from companion.experiments.vit_comparison import (
    CNN_CHANNELS,
    INK,
    QUARTER,
    RESULTS,
    matmul_flops,
    vit_run,
)
from companion.measure import use_threads
from companion.models.cnn import SmallCNN


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def main(argv: Sequence[str]) -> int:
    description = "The ViT against a CNN on the digits, and what the ViT does with the layout."
    parser = common.results_parser("vit", description, output=RESULTS)
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = common.load_average(), time.perf_counter()
    runs = []
    for seed in range(args.seeds):
        common.log(f"[vit] seed {seed}")
        runs.append(_rounded(vit_run(seed, device)))
    torch.manual_seed(0)
    image = torch.zeros(1, 1, 8, 8)
    flops = {
        "ViT": matmul_flops(DigitsRecipe().make_vit(), image),
        "CNN": matmul_flops(SmallCNN(channels=CNN_CHANNELS), image),
    }
    results: dict[str, Any] = {
        **common.run_record("vit", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {
            "recipe": DigitsRecipe().__dict__,
            "cnn_channels": list(CNN_CHANNELS),
            "quarter": QUARTER,
            "ink_threshold": INK,
            "seeds": args.seeds,
        },
        "flops_per_image": flops,
        "runs": runs,
    }
    common.write_results(results, args.output, "vit")
    lines = [
        "ViT and CNN on the 8x8 digits: test accuracy per seed",
        *common.run_lines(results, f"{args.seeds} seeds"),
        f"FLOPs of one forward pass per image: ViT {flops['ViT']:,}, CNN {flops['CNN']:,}",
        "",
    ]
    for model in ("ViT", "CNN"):
        for setting in runs[0]["accuracy"][model]:
            values = [run["accuracy"][model][setting] for run in runs]
            lines.append(
                f"{model} {setting:<18} mean {statistics.fmean(values):.3f}  "
                + " ".join(f"{v:.3f}" for v in values)
            )
    for key in ("zero_positions", "permuted_positions"):
        values = [run[key] for run in runs]
        lines.append(f"ViT, {key.replace('_', ' '):<14} " + " ".join(f"{v:.3f}" for v in values))
    gains = [
        statistics.fmean(o - b for o, b in zip(r["ink"]["own"], r["ink"]["other"])) for r in runs
    ]
    lines.append(
        "<cls> weight on its image's ink minus another's, mean over heads: "
        + " ".join(f"{g:+.3f}" for g in gains)
    )
    print("\n".join(lines))
    return 0
