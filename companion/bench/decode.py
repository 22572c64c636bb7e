"""``python -m companion.bench decode``: what a key-value cache saves when decoding, and what
grouped-query attention saves of the cache.

``--model transformer`` (the default). Greedy decoding of 128 new tokens with a Transformer
(width 256, 8 heads, 2 encoder and 2 decoder blocks, FFN 1024, vocabulary 1,000), batch 32,
source length 32, untrained weights (the cost does not depend on them), three ways:

- **KV cache**: companion's decoder. Each block caches its self-attention keys and values,
  projected and split into heads, and the encoder outputs' projections for cross-attention,
  made once. A step projects one new position.
- **block-input cache**: the design companion had before, and d2l's. Each block caches its
  *inputs*; at every step it projects all of them into keys and values again, and projects the
  encoder outputs again for cross-attention.
  :class:`companion.models.transformer.BlockInputCacheDecoder` keeps it, as a baseline, with the
  same weights.
- **no cache**: the whole prefix runs through the decoder again at every step.

All three must produce identical tokens; the table reports milliseconds per generated token
(the best of ``--repeats`` runs of all 128 steps, rounds interleaved so that load changes hit
all rows alike) and each row's time over the KV cache's. The target: the KV cache at least 4x
faster than the block-input cache.

``--model llama``. A Llama-style decoder (width 256, 8 query heads, 2 blocks) with multi-head,
grouped-query and multi-query attention (8, 2 and 1 key-value heads), alike in everything else,
holds a prompt of 2,048 tokens (batch 8) in its caches (random keys and values: the cost does
not depend on them) and decodes 32 tokens one at a time: the table reports milliseconds per new
token (the best of ``--repeats`` runs from the same cached prompt) and the bytes the caches
hold. At this context a step's reads are mostly the
cache, so a cache ``h / g`` times smaller makes a step faster: a step reads the shared heads
where they are, never copies them (:func:`companion.experiments.decoding.decode_cost`).

``--output PATH`` writes the results as JSON, with the machine and versions that produced them.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
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
from companion.device import get_device
from companion.experiments.decoding import KINDS, SETTINGS, decode_cost
from companion.generation.decoding import decode_steps
from companion.measure import synchronize, use_threads
from companion.models.seq2seq import EncoderDecoder
from companion.models.transformer import (
    BlockInputCacheDecoder,
    NoCacheDecoder,
    TransformerDecoder,
    TransformerEncoder,
)

BATCH, SOURCE_STEPS, NEW_TOKENS = 32, 32, 128
HIDDENS, HEADS, FFN, BLOCKS, VOCAB = 256, 8, 1024, 2, 1000
TARGET = 4.0  # KV cache vs block-input cache
BOS = 0


def build(device: torch.device) -> tuple[dict[str, EncoderDecoder], torch.Tensor, torch.Tensor]:
    """The model with each of the three decoders (shared weights), and a source batch."""
    torch.manual_seed(0)
    encoder = TransformerEncoder(VOCAB, HIDDENS, FFN, HEADS, BLOCKS, 0.0)
    decoder = TransformerDecoder(VOCAB, HIDDENS, FFN, HEADS, BLOCKS, 0.0)
    models = {
        "KV cache": EncoderDecoder(encoder, decoder),
        "block-input cache": EncoderDecoder(encoder, BlockInputCacheDecoder(decoder)),
        "no cache": EncoderDecoder(encoder, NoCacheDecoder(decoder)),
    }
    generator = torch.Generator().manual_seed(1)
    src = torch.randint(1, VOCAB, (BATCH, SOURCE_STEPS), generator=generator)
    src_valid_len = torch.randint(
        SOURCE_STEPS // 2, SOURCE_STEPS + 1, (BATCH,), generator=generator
    )
    return (
        {name: m.to(device).eval() for name, m in models.items()},
        src.to(device),
        src_valid_len.to(device),
    )


def decoder(model: EncoderDecoder, src: torch.Tensor, src_valid_len: torch.Tensor) -> Callable:
    bos = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)

    def run() -> torch.Tensor:  # greedy, no <eos>: all NEW_TOKENS steps
        tokens, _, _ = decode_steps(model, src, src_valid_len, bos, NEW_TOKENS, None, None, False)
        return tokens

    return run


def main(argv: Sequence[str]) -> int:
    """``python -m companion.bench decode [--model transformer|llama] [--output PATH]``."""
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench decode",
        description="Decoding cost: the KV cache against the designs it replaced (--model "
        "transformer), or multi-head, grouped-query and multi-query attention (--model llama).",
    )
    parser.add_argument("--model", choices=("transformer", "llama"), default="transformer")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per row (best kept)")
    sizes = ("batch", "prompt", "num_hiddens", "new_tokens")  # --model llama's
    for size in sizes:
        parser.add_argument(
            "--" + size.replace("_", "-"), type=int, default=SETTINGS[size], help="--model llama"
        )
    add_output(parser)
    args = parser.parse_args(list(argv))
    for name in ("repeats", *sizes):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    device = get_device()
    threads = use_threads(device)
    started, load_before = time.perf_counter(), load_average()
    if args.model == "transformer":
        results, lines, ok = transformer_decoding(device, args.repeats)
    else:
        chosen = {size: getattr(args, size) for size in sizes}
        results, lines, ok = llama_decoding(device, args.repeats, chosen)
    results = {
        **run_record("decode", device, threads, load_before),
        "seconds": round(time.perf_counter() - started, 1),
        "model": args.model,
        **results,
    }
    write_results(results, args.output, "decode")
    print("\n".join([lines[0], *run_lines(results, f"torch {torch.__version__}"), *lines[1:]]))
    return 0 if ok else 1


def transformer_decoding(
    device: torch.device, repeats: int
) -> tuple[dict[str, Any], list[str], bool]:
    """The encoder-decoder Transformer with each of its three decoders: results, lines, and
    whether they decoded identical tokens."""
    models, src, src_valid_len = build(device)
    runs = {name: decoder(model, src, src_valid_len) for name, model in models.items()}
    tokens = {name: run() for name, run in runs.items()}  # also the warm-up
    identical = all(torch.equal(t, tokens["KV cache"]) for t in tokens.values())
    best = dict.fromkeys(runs, math.inf)
    for round_ in range(repeats):
        order = list(runs)[round_ % len(runs) :] + list(runs)[: round_ % len(runs)]
        for name in order:
            log(f"[decode] round {round_ + 1}/{repeats}: {name}")
            synchronize(device)
            start = time.perf_counter()
            runs[name]()
            synchronize(device)
            best[name] = min(best[name], time.perf_counter() - start)
    per_token = {name: 1000 * seconds / NEW_TOKENS for name, seconds in best.items()}
    speedup = per_token["block-input cache"] / per_token["KV cache"]
    results = {
        "settings": {
            "batch": BATCH,
            "source_steps": SOURCE_STEPS,
            "new_tokens": NEW_TOKENS,
            "hiddens": HIDDENS,
            "heads": HEADS,
            "ffn": FFN,
            "blocks": BLOCKS,
            "vocab": VOCAB,
            "repeats": repeats,
        },
        "ms_per_token": {name: round(ms, 3) for name, ms in per_token.items()},
        "identical_tokens": identical,
    }
    lines = [
        f"Greedy decoding of {NEW_TOKENS} new tokens: batch {BATCH}, width {HIDDENS}, "
        f"{HEADS} heads, {BLOCKS}+{BLOCKS} blocks, FFN {FFN}, vocabulary {VOCAB}, "
        f"source length {SOURCE_STEPS}; best of {repeats} runs",
        "",
        f"{'decoder':<18}  {'ms/token':>8}  {'x KV cache':>10}",
    ]
    for name, ms in per_token.items():
        lines.append(f"{name:<18}  {ms:8.2f}  {ms / per_token['KV cache']:10.1f}")
    lines += [
        "",
        f"identical tokens: {'yes' if identical else 'NO'}",
        f"target: KV cache >= {TARGET:.0f}x faster than the block-input cache: "
        + ("met" if speedup >= TARGET and identical else "NOT met")
        + f" ({speedup:.1f}x)",
    ]
    return results, lines, identical


def llama_decoding(
    device: torch.device, repeats: int, sizes: dict[str, int]
) -> tuple[dict[str, Any], list[str], bool]:
    """Multi-head, grouped-query and multi-query attention in one Llama-style decoder of
    :data:`~companion.experiments.decoding.SETTINGS` changed by ``sizes`` (the SwiGLU's width
    follows the model's, 8/3 of it): results and lines."""
    ffn = 16 * round(sizes["num_hiddens"] * 8 / 3 / 16)  # Llama's 8d/3, a multiple of 16
    s = {**SETTINGS, **sizes, "ffn_num_hiddens": ffn}
    log(
        f"[decode] {', '.join(KINDS)}: a prompt of {s['prompt']} tokens each, then "
        f"{repeats} runs of {s['new_tokens']} new tokens"
    )
    costs = decode_cost(KINDS, repeats=repeats, device=device, **s)
    results = {"settings": {**s, "repeats": repeats}, "kinds": costs}
    lines = [
        f"Decoding {s['new_tokens']} tokens after a prompt of {s['prompt']}: batch {s['batch']}, "
        f"width {s['num_hiddens']}, {s['num_heads']} query heads, {s['num_blks']} blocks, "
        f"SwiGLU {s['ffn_num_hiddens']}, vocabulary {s['vocab_size']}; best of {repeats} runs",
        "",
        f"{'attention':<10}  {'kv heads':>8}  {'ms/token':>8}  {'x MHA':>6}  "
        f"{'cache MiB':>9}  {'bytes/token':>11}",
    ]
    mha = costs["MHA"]["ms_per_token"]
    for name, cost in costs.items():
        lines.append(
            f"{name:<10}  {cost['kv_heads']:8d}  {cost['ms_per_token']:8.2f}  "
            f"{cost['ms_per_token'] / mha:6.2f}  {cost['cache_bytes'] / 2**20:9.1f}  "
            f"{cost['bytes_per_token']:11d}"
        )
    lines += ["", "bytes/token: keys and values of every block, per token of context and row"]
    return results, lines, True
