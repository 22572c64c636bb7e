"""Benchmarks: ``python -m companion.bench [NAME] [options]``.

- ``attention`` (the default): time and peak memory of multi-head self-attention, explicit vs
  fused vs ``torch.nn.MultiheadAttention`` (:mod:`companion.bench.attention`).
- ``train``: seconds to reach each recipe's held-out target (:mod:`companion.bench.train`).
- ``decode``: milliseconds per generated token with a KV cache, the block-input cache it
  replaced, and no cache (:mod:`companion.bench.decode`). ``decode --model llama``: the
  milliseconds per new token and the bytes the key-value cache holds with multi-head,
  grouped-query and multi-query attention (MHA, GQA and MQA) in a Llama-style decoder
  (:func:`companion.experiments.decoding.decode_cost`).
- ``tokenizer``: training time of companion's byte-level BPE on about 1 MB, and its encode
  throughput against tiktoken's with the same merges (:mod:`companion.bench.tokenizer`).
- ``ablation``: the gap to the entropy floor of the GPT-2 block, each modern change and all of
  them, at equal parameters and steps; writes ``companion/experiments/results/ablation.json``
  (:mod:`companion.bench.ablation`, over :mod:`companion.experiments.ablation`).
- ``scaling``: the gap to the entropy floor of decoders of five widths, each trained with two
  budgets of data, over seeds; writes ``companion/experiments/results/scaling.json``
  (:mod:`companion.bench.scaling`, over :mod:`companion.experiments.scaling`).
- ``rnn``: the Transformer and the GRU encoder-decoder with Bahdanau attention, trained alike
  over seeds on the reordering task; writes ``companion/experiments/results/rnn_comparison.json``
  (:mod:`companion.bench.rnn`, over :mod:`companion.experiments.rnn_comparison`).
- ``length``: the gap to the entropy floor of learned, sinusoidal, RoPE and ALiBi positions at
  one, two and four times the training length; writes ``companion/experiments/results/length.json``
  (:mod:`companion.bench.length`, over :mod:`companion.experiments.extrapolation`).
- ``vit``: the ViT against a CNN on the digits with all, a quarter and a shuffled quarter of
  the training images, and what the trained ViT does with the layout, over seeds; writes
  ``companion/experiments/results/vit.json`` (:mod:`companion.bench.vit`, over
  :mod:`companion.experiments.vit_comparison`).

They print measured numbers; no test times anything. ``attention``, ``decode``, ``train`` and
``tokenizer`` write theirs as JSON with ``--output PATH`` (``make benchmarks`` writes them into
``book/benchmarks/``), and :mod:`companion.bench.report` makes the tables and figures of the
book's page of benchmarks (sec-benchmarks) from those files, and what ``attention``, ``train``
and ``tokenizer`` print.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from companion.bench import (
    ablation,
    attention,
    decode,
    length,
    rnn,
    scaling,
    tokenizer,
    train,
    vit,
)

BENCHMARKS: dict[str, Callable[[Sequence[str]], int]] = {
    "attention": attention.main,
    "train": train.main,
    "decode": decode.main,
    "tokenizer": tokenizer.main,
    "ablation": ablation.main,
    "length": length.main,
    "rnn": rnn.main,
    "scaling": scaling.main,
    "vit": vit.main,
}
DEFAULT = "attention"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = DEFAULT if not argv or argv[0].startswith("-") else argv.pop(0)
    if name not in BENCHMARKS:
        print(
            f"python -m companion.bench: unknown benchmark {name!r}; "
            f"choose one of: {', '.join(BENCHMARKS)} (default: {DEFAULT})",
            file=sys.stderr,
        )
        return 2
    return BENCHMARKS[name](argv)
