"""A scaling measurement on the invented language (sec-language-models): GPT-2-style decoders
of five widths, each trained with two budgets of data, scored by their gap to the language's
known entropy floor. ``python -m companion.bench scaling`` runs it and writes :data:`RESULTS`, which
the chapter plots.

Chinchilla's fit writes the loss as ``L(N, D) = E + A / N^alpha + B / D^beta``. For natural text
the irreducible ``E`` must be fitted with the rest; here it is the floor, known exactly, so the
gap ``L - E`` is measured directly (paired with the test sentences' own surprisal, as in
:mod:`companion.experiments.ablation`). Each model sees every training sentence once (``steps``
batches of :data:`BATCH_SIZE`); the widths share the sentences of a seed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from companion.data.tasks.language import NUM_STEPS
from companion.experiments.ablation import gap_to_floor, language_data, num_parameters
from companion.models.decoder import DecoderConfig, gpt2_config

RESULTS = Path(__file__).resolve().parent / "results" / "scaling.json"
WIDTHS = (16, 32, 64, 128, 256)  # num_hiddens; 4 heads, 2 blocks, an MLP twice as wide
STEPS = (300, 900)  # batches of training sentences, each seen once: two budgets of data
BATCH_SIZE = 64


def width_config(vocab_size: int, width: int) -> DecoderConfig:
    """The GPT-2 block of sec-language-models at width ``width``."""
    return gpt2_config(
        vocab_size,
        num_hiddens=width,
        ffn_num_hiddens=2 * width,
        num_heads=4,
        num_blks=2,
        max_len=NUM_STEPS,
    )


def non_embedding_parameters(config: DecoderConfig) -> int:
    """The parameters outside the token and position tables, Kaplan et al.'s ``N`` (the output
    layer is the tied token table)."""
    tables = (config.vocab_size + config.max_len) * config.num_hiddens
    return num_parameters(config) - tables


def gaps_by_width(vocab_size: int, seed: int, steps: int, device: torch.device) -> dict[int, float]:
    """The test gap to the floor of each width after ``steps`` batches, nats per token."""
    data = language_data(seed, steps * BATCH_SIZE)
    return {
        width: gap_to_floor(width_config(vocab_size, width), data, seed, steps, BATCH_SIZE, device)
        for width in WIDTHS
    }


def load_scaling_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench scaling`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(f"no results at {path}: run `python -m companion.bench scaling`")
    return json.loads(path.read_text(encoding="utf-8"))
