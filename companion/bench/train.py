"""``python -m companion.bench train``: seconds for each recipe to reach its held-out target.

Each recipe of :mod:`companion.recipes` trains from scratch (data generated, model initialised
on the CPU, then moved to :func:`companion.device.get_device`). After every epoch the model
greedily decodes 500 validation sources; training stops once their score reaches the target.
The time counts everything after the data are built: training steps and those evaluations.
The final score is then measured on the test split, whose sources training never saw.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch

from companion.bench.common import device_name, load_average, log, set_threads
from companion.device import get_device
from companion.recipes import RECIPES, run_recipe


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench train",
        description="Time for each training recipe to reach its held-out target.",
    )
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = set_threads(device)
    load_before = load_average()
    rows = []
    for name in args.recipes:
        log(f"[train] {name}")
        result = run_recipe(name, seed=args.seed, device=device)
        recipe = result.recipe
        rows.append(
            (
                name,
                f"{recipe.task}",
                f"{recipe.model} ({recipe.num_hiddens} wide, {recipe.num_layers} layers)",
                f"{recipe.metric} >= {recipe.target}",
                f"{result.seconds:.1f}" if result.reached_target else "not reached",
                str(result.history["epoch"][-1]),
                f"{result.test_scores[recipe.metric]:.4f}",
            )
        )
    lines = [
        "Time to quality: training from scratch until the validation score reaches the target",
        f"device: {device.type} ({device_name(device)})"
        + (f", {threads} threads" if threads else "")
        + f", torch {torch.__version__}, seed {args.seed}",
        f"1-minute load average {load_before} before, {load_average()} after",
        "",
    ]
    titles = ("recipe", "task", "model", "target", "seconds", "epochs", "test score")
    widths = [max(len(t), *(len(r[i]) for r in rows)) for i, t in enumerate(titles)]
    for cells in (titles, *rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    print("\n".join(lines))
    return 0
