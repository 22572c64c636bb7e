"""The configurations of open decoder-only models that the modern decoder chapter tabulates
(sec-modern-decoder), quoted from each model's published configuration (its ``config.json`` on
the Hugging Face Hub, which its report describes). Nothing here is measured by the book.

- **Llama 2** 7B and 70B (Touvron et al., 2023b): ``meta-llama/Llama-2-7b-hf`` and
  ``meta-llama/Llama-2-70b-hf``; grouped-query attention in the 34B and 70B models only.
- **Llama 3** 8B and 70B (Grattafiori et al., 2024): ``meta-llama/Meta-Llama-3-8B`` and
  ``-70B``, trained at 8,192 tokens; Llama 3.1 extends the same weights' shape to 131,072
  tokens with its frequency-dependent RoPE scaling.
- **Mistral 7B** v0.1 (Jiang et al., 2023): ``mistralai/Mistral-7B-v0.1``, a sliding window of
  4,096 tokens in every layer.
- **Qwen2.5 7B** (Qwen Team, 2024): ``Qwen/Qwen2.5-7B``, biases on the query, key and value
  projections; 32,768 tokens, 131,072 with YaRN.
- **Gemma 2 9B** (Gemma Team, 2024): ``google/gemma-2-9b``, GeGLU, norms before and after each
  sublayer, a window of 4,096 tokens in every other layer (the others global), tied embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublishedDecoder:
    """One model's shape: ``layers`` blocks of width ``width``; ``heads`` query heads and
    ``kv_heads`` key-value heads of ``head_dim`` features; a gated feed-forward layer
    (``ffn``) of width ``ffn_width``; ``vocab`` tokens; RoPE with ``rope_base``; trained at
    ``context`` tokens; ``window`` tokens kept by its ``windowed_layers`` sliding-window layers
    (0: none); ``tied`` input and output embeddings."""

    name: str
    year: int
    layers: int
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: str
    ffn_width: int
    vocab: int
    rope_base: float
    context: int
    tied: bool
    window: int | None = None
    windowed_layers: int = 0


DECODERS = (
    PublishedDecoder("Llama 2 7B", 2023, 32, 4096, 32, 32, 128, "SwiGLU", 11008, 32000, 1e4,
                     4096, False),
    PublishedDecoder("Llama 2 70B", 2023, 80, 8192, 64, 8, 128, "SwiGLU", 28672, 32000, 1e4,
                     4096, False),
    PublishedDecoder("Mistral 7B", 2023, 32, 4096, 32, 8, 128, "SwiGLU", 14336, 32000, 1e4,
                     8192, False, window=4096, windowed_layers=32),
    PublishedDecoder("Llama 3 8B", 2024, 32, 4096, 32, 8, 128, "SwiGLU", 14336, 128256, 5e5,
                     8192, False),
    PublishedDecoder("Llama 3 70B", 2024, 80, 8192, 64, 8, 128, "SwiGLU", 28672, 128256, 5e5,
                     8192, False),
    PublishedDecoder("Qwen2.5 7B", 2024, 28, 3584, 28, 4, 128, "SwiGLU", 18944, 152064, 1e6,
                     32768, False),
    PublishedDecoder("Gemma 2 9B", 2024, 42, 3584, 16, 8, 256, "GeGLU", 14336, 256000, 1e4,
                     8192, True, window=4096, windowed_layers=21),
)  # fmt: skip


def kv_cache_bytes(
    model: PublishedDecoder,
    tokens: int,
    *,
    bytes_per_number: int = 2,
    kv_heads: int | None = None,
) -> int:
    """The bytes the key-value cache of one sequence of ``tokens`` tokens takes: keys and
    values, ``kv_heads`` heads (the model's own by default) of ``head_dim`` numbers in every
    layer, ``bytes_per_number`` bytes each (2: 16-bit floats); a sliding-window layer keeps at
    most ``window`` tokens."""
    heads = model.kv_heads if kv_heads is None else kv_heads
    per_layer_token = 2 * heads * model.head_dim * bytes_per_number
    windowed = min(tokens, model.window or tokens)
    full_layers = model.layers - model.windowed_layers
    return per_layer_token * (full_layers * tokens + model.windowed_layers * windowed)
