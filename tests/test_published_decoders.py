"""The published configurations the modern decoder chapter tabulates, and the cache arithmetic
it applies to them (companion.experiments.published_decoders)."""

from __future__ import annotations

from companion.experiments.published_decoders import DECODERS, kv_cache_bytes

BY_NAME = {m.name: m for m in DECODERS}


def test_the_shapes_fit_together():
    for m in DECODERS:
        assert m.heads % m.kv_heads == 0, m.name
        assert m.windowed_layers <= m.layers and (m.window is None) == (m.windowed_layers == 0)
    assert all(m.head_dim * m.heads == m.width for m in DECODERS if m.name != "Gemma 2 9B")


def test_llama_3_70b_keeps_320_kib_per_token_and_40_gib_at_128k():
    llama = BY_NAME["Llama 3 70B"]
    assert kv_cache_bytes(llama, 1) == 2 * 80 * 8 * 128 * 2 == 320 * 1024
    assert kv_cache_bytes(llama, 128 * 1024) == 40 * 2**30
    assert kv_cache_bytes(llama, 128 * 1024, kv_heads=64) == 320 * 2**30  # with MHA


def test_windowed_layers_keep_at_most_their_window():
    mistral, gemma = BY_NAME["Mistral 7B"], BY_NAME["Gemma 2 9B"]
    assert kv_cache_bytes(mistral, 8192) == kv_cache_bytes(mistral, 4096)
    per_layer_token = 2 * 8 * 256 * 2
    assert kv_cache_bytes(gemma, 8192) == per_layer_token * (21 * 8192 + 21 * 4096)
