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

The table goes to stdout (:mod:`companion.bench.report`); ``--output PATH`` writes the rows as
JSON, with the machine and versions that produced them.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Sequence
from typing import Any

import torch

from companion.bench.common import (
    add_output,
    load_average,
    log,
    run_lines,
    run_record,
    write_results,
)
from companion.bench.report import train_report
from companion.device import get_device
from companion.experiments.recipes import RECIPES, TimeToQuality, run_recipe
from companion.measure import use_threads

# name -> the module whose time_to_quality(seed, device) trains that chapter's model
MODEL_RECIPES = {
    name: f"companion.experiments.recipes.{name}" for name in ("gpt", "llama", "bert", "vit")
}


def model_rows(names: Sequence[str], seed: int, device: torch.device) -> list[dict[str, Any]]:
    """One row per model recipe: what it trains, its target, seconds and held-out score."""
    rows: list[dict[str, Any]] = []
    for name in names:
        log(f"[train] {name}")
        result: TimeToQuality = importlib.import_module(MODEL_RECIPES[name]).time_to_quality(
            seed, device
        )
        rows.append(
            {
                "name": name,
                "kind": "model",
                "task": result.task,
                "model": result.model,
                "target": result.target,
                "reached": result.reached,
                "seconds": round(result.seconds, 2),
                "epochs": result.epochs,
                "score": round(result.score, 5),
            }
        )
    return rows


def recipe_row(name: str, seed: int, device: torch.device) -> dict[str, Any]:
    """Recipe ``name`` of :data:`RECIPES` trained to its target: the same fields as a model's."""
    log(f"[train] {name}")
    result = run_recipe(name, seed=seed, device=device)
    recipe = result.recipe
    return {
        "name": name,
        "kind": "recipe",
        "task": recipe.task,
        "model": f"{recipe.model} ({recipe.num_hiddens} wide, {recipe.num_layers} layers)",
        "target": f"{recipe.metric} >= {recipe.target}",
        "reached": result.reached_target,
        "seconds": round(result.seconds, 2),
        "epochs": result.history["epoch"][-1],
        "score": round(result.test_scores[recipe.metric], 5),
    }


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
    add_output(parser)
    args = parser.parse_args(list(argv))

    device = get_device()
    threads = use_threads(device)
    load_before, start = load_average(), time.perf_counter()
    rows = [recipe_row(name, args.seed, device) for name in args.recipes]
    rows += model_rows(args.models, args.seed, device)
    results: dict[str, Any] = {
        **run_record("train", device, threads, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {"seed": args.seed, "recipes": args.recipes, "models": args.models},
        "rows": rows,
    }
    write_results(results, args.output, "train")
    lines = [
        "Time to quality: training from scratch until the validation score reaches the target",
        *run_lines(results, f"torch {torch.__version__}, seed {args.seed}"),
        "",
        train_report(results).markdown(),
    ]
    print("\n".join(lines))
    return 0
