"""Length: train at one context length, evaluate at two and four times it (sec-modern-decoder).
``python -m companion.bench length`` runs it over seeds.

Position schemes on the GPT-2 block of the ablation (:mod:`companion.experiments.ablation`), which
differ in nothing else: learned positions, the sinusoids of sec-positional-encoding, RoPE and ALiBi.
Each is trained on rows of ``L`` tokens and scored on rows of ``L``, ``2L`` and ``4L``.

The sinusoids run twice. ``DecoderLM`` adds them as they are, entries of size about 1, to token
embeddings initialised at 0.02 (GPT-2's scale, made for learned positions): the pitfall of
sec-positional-encoding, where the inputs are mostly position. ``"sinusoidal, scaled"``
multiplies the table by :data:`SINUSOID_SCALE`, which brings its entries (root mean square
``1/sqrt(2)``) to the tokens' 0.02.

A row packs whole sentences of the invented language (sec-language-models), each closed by
``<eos>``, after one ``<bos>``, and pads the rest; a sentence never straddles two rows::

    inputs  <bos> w_1 ... w_n <eos> v_1 ... v_k <eos> v'_1 ...  <pad> ...
    labels  w_1  ...  w_n <eos> v_1  ...  v_k <eos> ...         <pad> ...

So a row of ``4L`` tokens holds about four times as many sentences, and every label has its
whole sentence in front of it: the true distribution needs nothing more (sentences are drawn
independently). The test rows of every length hold the same test sentences, so they share one
entropy floor, and the gap to it (nats per token) compares the lengths directly.

The learned table has a row for each of the ``4L`` positions, but training reaches only the
first ``L``: the others keep their random initialisation. That is the honest test of what a
model with learned positions does beyond its training length; a shorter table could not
evaluate there at all (``DecoderLM`` raises a ``ValueError``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from companion.data.tasks.language import (
    cross_entropy_per_token,
    invented_sentences,
    language_model_vocab,
    sentence_log_prob,
)
from companion.data.text import Vocab
from companion.experiments.ablation import BASE, TEST_SENTENCES, train_decoder
from companion.models.decoder import DecoderConfig, DecoderLM, gpt2_config

RESULTS = Path(__file__).resolve().parent / "results" / "length.json"
SCHEMES = {  # name -> DecoderConfig.positions
    "learned": "learned",
    "sinusoidal": "sinusoidal",
    "sinusoidal, scaled": "sinusoidal",
    "rope": "rope",
    "alibi": "alibi",
}
TOKEN_STD = 0.02  # DecoderLM's initialisation of the token embeddings (GPT-2's)
SINUSOID_SCALE = TOKEN_STD * math.sqrt(2)
TRAIN_LENGTH, FACTORS = 16, (1, 2, 4)
STEPS, BATCH_SIZE = 300, 32  # rows of 16 tokens hold one or two sentences


def packed_arrays(
    sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels ``(rows, num_steps)``: the sentences in order, as many whole ones per
    row as fit after its ``<bos>``, each followed by ``<eos>`` (an input too, where the next
    sentence starts), then ``<pad>``. A sentence that cannot fit in a row is a ``ValueError``."""
    rows: list[list[int]] = []
    row: list[int] = []
    for sentence in sentences:
        ids = [*vocab[list(sentence)], vocab.eos]
        if len(ids) > num_steps:  # with its <bos>, the row holds num_steps + 1 tokens
            raise ValueError(
                f"a sentence of {len(sentence)} words needs num_steps >= {len(ids)}; "
                f"got num_steps={num_steps}"
            )
        if row and len(row) + len(ids) > num_steps + 1:  # full: pad it, start the next
            rows.append(row + [vocab.pad] * (num_steps + 1 - len(row)))
            row = []
        row = (row or [vocab.bos]) + ids
    if row:
        rows.append(row + [vocab.pad] * (num_steps + 1 - len(row)))
    sequences = torch.tensor(rows, dtype=torch.long).reshape(-1, num_steps + 1)
    return sequences[:, :-1], sequences[:, 1:]  # label t follows inputs 0..t


def length_data(
    seed: int,
    num_rows: int,
    train_length: int = TRAIN_LENGTH,
    factors: Sequence[int] = FACTORS,
    test_sentences: int = TEST_SENTENCES,
) -> dict[str, Any]:
    """One seed's data: ``num_rows`` training rows of ``train_length`` tokens, the same test
    sentences packed into rows of each ``factor * train_length`` tokens (``"test"``: length ->
    arrays), and the test sentences' surprisal per token, the floor of every length."""
    vocab = language_model_vocab()
    per_row = max(1, train_length // 8)  # at most: sentences average 8.8 tokens with <eos>
    sentences = invented_sentences(2 * num_rows * per_row, seed=3 * seed)
    train = packed_arrays(sentences, vocab, train_length)
    if len(train[0]) < num_rows:
        raise ValueError(f"drew {len(train[0])} training rows; {num_rows} were asked for")
    test = invented_sentences(test_sentences, seed=3 * seed + 2)
    floor = sum(-sentence_log_prob(s) for s in test) / sum(len(s) + 1 for s in test)
    lengths = [factor * train_length for factor in factors]
    return {
        "train": tuple(a[:num_rows] for a in train),
        "test": {n: packed_arrays(test, vocab, n) for n in lengths},
        "floor": floor,
    }


def scheme_configs(vocab_size: int, max_len: int) -> dict[str, DecoderConfig]:
    """The ablation's GPT-2 block with each position scheme of :data:`SCHEMES`, its table
    (learned, sinusoidal) ``max_len`` positions long."""
    base = gpt2_config(vocab_size, **{**BASE, "max_len": max_len})
    return {name: base.replace(positions=positions) for name, positions in SCHEMES.items()}


def scale_sinusoids(model: DecoderLM) -> None:
    """Multiply ``model``'s sinusoidal table by :data:`SINUSOID_SCALE`, in place."""
    if model.pos_encoding is None:
        raise ValueError(f"the model has {model.config.positions} positions, not sinusoidal")
    model.pos_encoding.P.mul_(SINUSOID_SCALE)


def gaps_by_length(
    config: DecoderConfig,
    data: dict[str, Any],
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    scheme: str | None = None,
) -> dict[int, float]:
    """Train ``DecoderLM(config)`` on ``data["train"]`` (rows of the training length) and
    return its gap to the floor on the test rows of each length, nats per token. ``scheme``
    ``"sinusoidal, scaled"`` scales the sinusoids first (:func:`scale_sinusoids`)."""
    if scheme is not None and SCHEMES.get(scheme) != config.positions:
        raise ValueError(
            f"scheme must be one of {list(SCHEMES)} with positions {config.positions!r}; "
            f"got {scheme!r}"
        )
    longest = max(data["test"])
    if config.positions in ("learned", "sinusoidal") and longest > config.max_len:
        raise ValueError(
            f"{config.positions} positions stop at max_len={config.max_len}, but the test "
            f"rows are {longest} tokens long: build the table for the longest evaluation"
        )
    prepare = scale_sinusoids if scheme == "sinusoidal, scaled" else None
    model = train_decoder(config, data["train"], seed, steps, batch_size, device, prepare)
    return {
        n: cross_entropy_per_token(model, arrays) - data["floor"]
        for n, arrays in data["test"].items()
    }


def load_length_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench length`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(
            f"no length results at {path}: run `python -m companion.bench length`"
        )
    return json.loads(path.read_text(encoding="utf-8"))
