"""The Llama-style model's time-to-quality recipe (sec-modern-decoder): the GPT recipe of
:mod:`companion.experiments.recipes.gpt`, with the ablation's "all four" model (RMSNorm, RoPE,
SwiGLU, grouped-query attention) in place of the GPT, at the same parameter count.
"""

from __future__ import annotations

import torch
from torch import nn

from companion.experiments.ablation import variant_configs
from companion.experiments.recipes import TimeToQuality, gpt
from companion.models.decoder import DecoderLM


def recipe_llama(vocab_size: int) -> tuple[nn.Module, str]:
    """The "all four" variant (RMSNorm, RoPE, SwiGLU, GQA) at the GPT recipe's parameter count
    (the GPT recipe's model is the ablation's GPT-2 block), and its name."""
    config = variant_configs(vocab_size)["all four"]
    name = (
        f"Llama-style (RMSNorm, RoPE, SwiGLU, GQA), {config.num_hiddens} wide, "
        f"{config.num_blks} blocks"
    )
    return DecoderLM(config), name


def time_to_quality(seed: int = 0, device: torch.device | None = None) -> TimeToQuality:
    """``python -m companion.bench train``'s llama row:
    :func:`companion.experiments.recipes.gpt.time_to_quality`, the GPT recipe, with
    :func:`recipe_llama`'s model in place of the GPT."""
    return gpt.time_to_quality(seed, device, build=recipe_llama)
