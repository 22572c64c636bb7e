"""Figures of the Bahdanau attention chapter (sec-bahdanau).

Like :mod:`companion.figures.plot`, each function draws with matplotlib and saves the figure
when given ``path=``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from companion._validate import check_integer, check_sequence
from companion.data.text import Vocab, build_arrays
from companion.figures.plot import plot_attention
from companion.generation.decoding import greedy_decode


def show_alignment(
    model: nn.Module,
    source: Sequence[str],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    num_steps: int = 30,
    tgt_num_steps: int = 11,
    *,
    path: str | Path | None = None,
) -> tuple[str, torch.Tensor]:
    """Decode one source greedily and draw its alignment.

    ``model`` is an encoder-decoder whose decoder records its attention weights (such as
    ``Seq2SeqAttentionDecoder``); ``source`` is a list of tokens, padded to ``num_steps``; at
    most ``tgt_num_steps`` tokens are decoded. Prints ``source -> output`` and draws the
    weights of each output token, and of ``<eos>`` if it was decoded (rows), over the source
    tokens and ``<eos>`` (columns), a space shown as ␣. Returns the output, joined into a
    str, and the ``(output steps, num_steps)`` weights, on the CPU.
    """
    check_sequence("source", source, "a list of source tokens")
    check_integer("num_steps", num_steps)
    check_integer("tgt_num_steps", tgt_num_steps)
    device = next(model.parameters()).device
    arrays = build_arrays([list(source)], [[]], src_vocab, tgt_vocab, num_steps, tgt_num_steps)
    decoded = greedy_decode(
        model,
        arrays.src.to(device),
        arrays.src_valid_len.to(device),
        tgt_vocab.bos,
        tgt_vocab.eos,
        tgt_num_steps,
        save_attention_weights=True,
    )
    output = tgt_vocab.to_tokens(decoded.tokens[0])
    steps = [step[0][0] for step in decoded.attention_weights]  # each (1, num_steps)
    weights = torch.cat(steps).cpu()  # (output steps, num_steps)
    print("".join(source), "->", "".join(output))
    characters = [token if token != " " else "␣" for token in source] + ["<eos>"]
    rows = [*output, "<eos>"][: len(weights)]  # no <eos> if decoding stopped at the limit
    plot_attention(weights, characters, rows, path=path)
    return "".join(output), weights
