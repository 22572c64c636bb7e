"""``python -m companion.bench decode``: what a key-value cache saves when decoding.

Greedy decoding of 128 new tokens with a Transformer (width 256, 8 heads, 2 encoder and 2
decoder blocks, FFN 1024, vocabulary 1,000), batch 32, source length 32, untrained weights
(the cost does not depend on them), three ways:

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
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence

import torch

from companion.bench.common import device_name, load_average, log
from companion.device import get_device
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
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench decode",
        description="Greedy decoding with a KV cache, a block-input cache and no cache.",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per row (best kept)")
    args = parser.parse_args(list(argv))
    device = get_device()
    threads = use_threads(device)
    load_before = load_average()
    models, src, src_valid_len = build(device)
    runs = {name: decoder(model, src, src_valid_len) for name, model in models.items()}
    tokens = {name: run() for name, run in runs.items()}  # also the warm-up
    identical = all(torch.equal(t, tokens["KV cache"]) for t in tokens.values())
    best = dict.fromkeys(runs, math.inf)
    for round_ in range(args.repeats):
        order = list(runs)[round_ % len(runs) :] + list(runs)[: round_ % len(runs)]
        for name in order:
            log(f"[decode] round {round_ + 1}/{args.repeats}: {name}")
            synchronize(device)
            start = time.perf_counter()
            runs[name]()
            synchronize(device)
            best[name] = min(best[name], time.perf_counter() - start)
    per_token = {name: 1000 * seconds / NEW_TOKENS for name, seconds in best.items()}
    speedup = per_token["block-input cache"] / per_token["KV cache"]
    lines = [
        f"Greedy decoding of {NEW_TOKENS} new tokens: batch {BATCH}, width {HIDDENS}, "
        f"{HEADS} heads, {BLOCKS}+{BLOCKS} blocks, FFN {FFN}, vocabulary {VOCAB}, "
        f"source length {SOURCE_STEPS}",
        f"device: {device.type} ({device_name(device)})"
        + (f", {threads} threads" if threads else "")
        + f", torch {torch.__version__}; best of {args.repeats} runs",
        f"1-minute load average {load_before} before, {load_average()} after",
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
    print("\n".join(lines))
    return 0 if identical else 1
