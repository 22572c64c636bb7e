"""``python -m companion.bench train``: seconds for each recipe to reach its held-out target.

Each recipe of :mod:`companion.experiments.recipes` trains from scratch (data generated, model
initialised on the CPU, then moved to :func:`companion.device.get_device`). After every epoch the
model greedily decodes 500 validation sources; training stops once their score reaches the target.
The time counts everything after the data are built: training steps and those evaluations.
The final score is then measured on the test split, whose sources training never saw.

The models of "Transformers today" each bring their own recipe, a ``time_to_quality(seed,
device)`` in their module of :mod:`companion.experiments.recipes` (:data:`MODEL_RECIPES`), which
returns a :class:`companion.experiments.recipes.TimeToQuality`: the language model trains until its
validation cross-entropy is within a stated gap of the language's entropy floor (GPT, and the
Llama-style model of the same size with the same recipe), the pretrained
BERT fine-tunes to a stated accuracy and the ViT trains until its validation accuracy has
been 0.95 three epochs in a row; each is then scored on its test split. Their
seconds count training and evaluation after the data are built (BERT's include pretraining).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

import torch

from companion.bench.common import device_name, load_average, log
from companion.device import get_device
from companion.experiments.recipes import RECIPES, TimeToQuality, run_recipe
from companion.measure import use_threads

# name -> the module whose time_to_quality(seed, device) trains that chapter's model
MODEL_RECIPES = {
    name: f"companion.experiments.recipes.{name}" for name in ("gpt", "llama", "bert", "vit")
}


def _table(titles: Sequence[str], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(t), *(len(r[i]) for r in rows)) for i, t in enumerate(titles)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in (titles, *rows)
    ]


def model_rows(names: Sequence[str], seed: int, device: torch.device) -> list[tuple[str, ...]]:
    """One row per model recipe: what it trains, its target, seconds and held-out score."""
    rows: list[tuple[str, ...]] = []
    for name in names:
        log(f"[train] {name}")
        result: TimeToQuality = importlib.import_module(MODEL_RECIPES[name]).time_to_quality(
            seed, device
        )
        seconds = f"{result.seconds:.1f}" if result.reached else "not reached"
        rows.append(
            (
                name,
                result.task,
                result.model,
                result.target,
                seconds,
                str(result.epochs),
                f"{result.score:.4f}",
            )
        )
    return rows


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench train",
        description="Time for each training recipe to reach its held-out target.",
    )
    parser.add_argument("--recipes", nargs="*", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument(
        "--models", nargs="*", default=list(MODEL_RECIPES), choices=list(MODEL_RECIPES)
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before = load_average()
    rows: list[tuple[str, ...]] = []
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
    models = model_rows(args.models, args.seed, device)
    lines = [
        "Time to quality: training from scratch until the validation score reaches the target",
        f"device: {device.type} ({device_name(device)})"
        + (f", {threads} threads" if threads else "")
        + f", torch {torch.__version__}, seed {args.seed}",
        f"1-minute load average {load_before} before, {load_average()} after",
    ]
    titles = ("recipe", "task", "model", "target", "seconds", "epochs", "test score")
    if rows:
        lines += ["", *_table(titles, rows)]
    if models:
        lines += [
            "",
            "Transformers today (test score: the gap to the floor for gpt and llama, "
            "else accuracy)",
        ]
        lines += _table(titles, models)
    print("\n".join(lines))
    return 0
