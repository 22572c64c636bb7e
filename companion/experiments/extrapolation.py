"""Length: train at one context length, evaluate at two and four times it (sec-modern-decoder).
``python -m companion.bench length`` runs it over seeds.

Position schemes on the GPT-2 block of the ablation (:mod:`companion.experiments.ablation`), which
differ in nothing else: learned positions, the sinusoids of sec-positional-encoding, RoPE, ALiBi,
and no positions at all (``"none"``, NoPE: Haviv et al., 2022; Kazemnejad et al., 2023), where
the causal mask is all that tells positions apart. NoPE is ALiBi with every slope set to zero:
the same model with no bias and no table. Each is trained on rows of ``L`` tokens and scored on
rows of ``L``, ``2L`` and ``4L`` (:func:`length_scores`):

- ``gaps``: the gap to the floor at each length;
- ``by_position``: at each length, the gap of the sentences that end in each stretch of ``L``
  positions of a row (positions ``0 .. L-1``, ``L .. 2L-1``, ...): a sentence's surprisal is
  the exact floor of its own tokens, so each stretch has a floor of its own;
- ``window`` (RoPE, ALiBi and NoPE): the same model with a sliding window of ``L`` at
  evaluation, so that no query sees more keys, or keys further back, than in training;
- ``interpolated`` and ``ntk`` (RoPE): the same model with its rotations rescaled for a row
  ``s = n / L`` times longer, without further training: position interpolation (Chen et al.,
  2023) divides every frequency by ``s``; NTK-aware scaling raises the base to
  ``base * s^(d / (d - 2))``, which slows the low frequencies by about ``s`` and leaves the
  highest nearly alone.

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
import torch.nn.functional as F

from companion.data.tasks.language import (
    PAD_INDEX,
    invented_sentences,
    language_model_vocab,
    sentence_log_prob,
)
from companion.data.text import Vocab, batches
from companion.experiments.ablation import BASE, TEST_SENTENCES, train_decoder
from companion.layers.attention import MultiHeadAttention
from companion.layers.rotary import RotaryEmbedding
from companion.models.decoder import DecoderConfig, DecoderLM, gpt2_config
from companion.modes import eval_mode

RESULTS = Path(__file__).resolve().parent / "results" / "length.json"
SCHEMES = {  # name -> DecoderConfig.positions
    "learned": "learned",
    "sinusoidal": "sinusoidal",
    "sinusoidal, scaled": "sinusoidal",
    "rope": "rope",
    "alibi": "alibi",
    "none": "alibi",  # NoPE: ALiBi with every slope zero (no_positions)
}
WINDOWED = ("rope", "alibi", "none")  # scored again with a sliding window of the training length
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
    return _pack(sentences, vocab, num_steps)[0]


def packed_spans(
    sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int
) -> list[tuple[int, int, int]]:
    """Where each sentence of :func:`packed_arrays`' rows lies: ``(row, first, last)`` for each
    sentence in order, ``first .. last`` the positions of its labels, its words and its
    ``<eos>``."""
    return _pack(sentences, vocab, num_steps)[1]


def _pack(
    sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int
) -> tuple[tuple[torch.Tensor, torch.Tensor], list[tuple[int, int, int]]]:
    rows: list[list[int]] = []
    row: list[int] = []
    spans: list[tuple[int, int, int]] = []
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
        row = row or [vocab.bos]
        spans.append((len(rows), len(row) - 1, len(row) + len(ids) - 2))  # label positions
        row = row + ids
    if row:
        rows.append(row + [vocab.pad] * (num_steps + 1 - len(row)))
    sequences = torch.tensor(rows, dtype=torch.long).reshape(-1, num_steps + 1)
    return (sequences[:, :-1], sequences[:, 1:]), spans  # label t follows inputs 0..t


def length_data(
    seed: int,
    num_rows: int,
    train_length: int = TRAIN_LENGTH,
    factors: Sequence[int] = FACTORS,
    test_sentences: int = TEST_SENTENCES,
) -> dict[str, Any]:
    """One seed's data: ``num_rows`` training rows of ``train_length`` tokens, the same test
    sentences packed into rows of each ``factor * train_length`` tokens (``"test"``: length ->
    arrays; ``"spans"``: length -> where each sentence lies, :func:`packed_spans`), each test
    sentence's surprisal (``"surprisal"``, nats) and their surprisal per token, the floor of
    every length (``"floor"``)."""
    vocab = language_model_vocab()
    per_row = max(1, train_length // 8)  # at most: sentences average 8.8 tokens with <eos>
    sentences = invented_sentences(2 * num_rows * per_row, seed=3 * seed)
    train = packed_arrays(sentences, vocab, train_length)
    if len(train[0]) < num_rows:
        raise ValueError(f"drew {len(train[0])} training rows; {num_rows} were asked for")
    test = invented_sentences(test_sentences, seed=3 * seed + 2)
    surprisal = [-sentence_log_prob(s) for s in test]
    floor = sum(surprisal) / sum(len(s) + 1 for s in test)
    lengths = [factor * train_length for factor in factors]
    return {
        "train": tuple(a[:num_rows] for a in train),
        "test": {n: packed_arrays(test, vocab, n) for n in lengths},
        "spans": {n: packed_spans(test, vocab, n) for n in lengths},
        "surprisal": surprisal,
        "floor": floor,
        "train_length": train_length,
    }


def scheme_configs(vocab_size: int, max_len: int) -> dict[str, DecoderConfig]:
    """The ablation's GPT-2 block with each position scheme of :data:`SCHEMES`, its table
    (learned, sinusoidal) ``max_len`` positions long."""
    base = gpt2_config(vocab_size, **{**BASE, "max_len": max_len})
    return {name: base.replace(positions=positions) for name, positions in SCHEMES.items()}


def _attentions(model: DecoderLM) -> list[MultiHeadAttention]:
    """The attention layer of each block of ``model``, typed."""
    layers = [blk.attention for blk in model.blks]
    if not all(isinstance(layer, MultiHeadAttention) for layer in layers):
        raise TypeError("every block of the model must attend with MultiHeadAttention")
    return [layer for layer in layers if isinstance(layer, MultiHeadAttention)]


def no_positions(model: DecoderLM) -> None:
    """NoPE: set every ALiBi slope of ``model`` to zero, in place (no bias, no table)."""
    if model.config.positions != "alibi":
        raise ValueError(f"the model has {model.config.positions} positions, not ALiBi")
    for attention in _attentions(model):
        if attention.alibi_slopes is not None:
            attention.alibi_slopes.zero_()


def scale_sinusoids(model: DecoderLM) -> None:
    """Multiply ``model``'s sinusoidal table by :data:`SINUSOID_SCALE`, in place."""
    if model.pos_encoding is None:
        raise ValueError(f"the model has {model.config.positions} positions, not sinusoidal")
    model.pos_encoding.P.mul_(SINUSOID_SCALE)


PREPARE = {"sinusoidal, scaled": scale_sinusoids, "none": no_positions}


def train_scheme(
    config: DecoderConfig,
    data: dict[str, Any],
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    scheme: str | None = None,
) -> DecoderLM:
    """``DecoderLM(config)`` trained on ``data["train"]`` (rows of the training length); a
    ``scheme`` of :data:`PREPARE` changes the model first (scaled sinusoids, NoPE)."""
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
    prepare = PREPARE.get(scheme or "")
    return train_decoder(config, data["train"], seed, steps, batch_size, device, prepare)


def gaps_by_length(
    config: DecoderConfig,
    data: dict[str, Any],
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    scheme: str | None = None,
) -> dict[int, float]:
    """Train (:func:`train_scheme`) and return the gap to the floor on the test rows of each
    length, nats per token."""
    model = train_scheme(config, data, seed, steps, batch_size, device, scheme)
    return {n: gap for n, (gap, _) in _score(model, data).items()}


@torch.no_grad()
def _score(model: DecoderLM, data: dict[str, Any]) -> dict[int, tuple[float, list[float]]]:
    """At each test length: the gap to the floor, and the gap of the sentences ending in each
    stretch of ``train_length`` positions (``nan`` where none ends)."""
    stretch = data["train_length"]
    device = next(model.parameters()).device
    scores = {}
    with eval_mode(model):
        for n, (inputs, labels) in data["test"].items():
            losses = torch.cat(
                [  # (rows, n): each label's cross-entropy, 0 on padding
                    F.cross_entropy(
                        model(x.to(device)).transpose(1, 2),
                        y.to(device),
                        ignore_index=PAD_INDEX,
                        reduction="none",
                    ).cpu()
                    for x, y in batches((inputs, labels), 500, shuffle=False)
                ]
            )
            excess = [0.0] * (n // stretch)  # per stretch: summed loss minus summed surprisal
            tokens = [0] * (n // stretch)
            for (row, first, last), surprisal in zip(data["spans"][n], data["surprisal"]):
                where = last // stretch
                excess[where] += losses[row, first : last + 1].sum().item() - surprisal
                tokens[where] += last - first + 1
            gap = sum(excess) / sum(tokens)
            scores[n] = gap, [e / t if t else math.nan for e, t in zip(excess, tokens)]
    return scores


def rescale_rope(model: DecoderLM, factor: float, how: str) -> None:
    """Rescale every block's RoPE frequencies for rows ``factor`` times the training length, in
    place: ``"interpolated"`` divides each by ``factor``; ``"ntk"`` recomputes them with the base
    raised to ``base * factor^(d / (d - 2))``; ``"none"`` restores the trained ones."""
    d, base = model.config.num_hiddens // model.config.num_heads, model.config.rope_base
    exponents = torch.arange(0, d, 2, dtype=torch.float32) / d
    trained = base ** (-exponents)  # theta_i, as RotaryEmbedding computes them
    scaled = {
        "none": trained,
        "interpolated": trained / factor,
        "ntk": (base * factor ** (d / (d - 2))) ** (-exponents),
    }[how]
    for attention in _attentions(model):
        if not isinstance(attention.rotary, RotaryEmbedding):
            raise ValueError(f"the model has {model.config.positions} positions, not RoPE")
        attention.rotary.inv_freq.copy_(scaled)


def set_window(model: DecoderLM, window: int | None) -> None:
    """Give every block's attention a sliding window of ``window`` positions (``None``: none)."""
    for attention in _attentions(model):
        attention.window = window


def length_scores(
    config: DecoderConfig,
    data: dict[str, Any],
    seed: int,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    device: torch.device | None = None,
    scheme: str | None = None,
) -> dict[str, dict[int, Any]]:
    """Train (:func:`train_scheme`) and score one model: ``{"gaps": {n: gap}, "by_position":
    {n: [gap per stretch]}}``, and for RoPE, ALiBi and NoPE ``"window"`` (a sliding window of
    the training length at evaluation), for RoPE ``"interpolated"`` and ``"ntk"`` (rescaled
    rotations): ``{n: gap}`` each (see the module docstring)."""
    model = train_scheme(config, data, seed, steps, batch_size, device, scheme)
    scores = _score(model, data)
    result: dict[str, dict[int, Any]] = {
        "gaps": {n: gap for n, (gap, _) in scores.items()},
        "by_position": {n: stretches for n, (_, stretches) in scores.items()},
    }
    T = data["train_length"]
    if (scheme or config.positions) in WINDOWED:
        set_window(model, T)
        result["window"] = {n: gap for n, (gap, _) in _score(model, data).items()}
        set_window(model, None)
    if config.positions == "rope":
        for how in ("interpolated", "ntk"):
            result[how] = {}
            for n in data["test"]:
                rescale_rope(model, n / T, how)
                result[how][n] = _score(model, {**data, "test": {n: data["test"][n]}})[n][0]
            rescale_rope(model, 1.0, "none")
    return result


def load_length_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench length`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(
            f"no length results at {path}: run `python -m companion.bench length`"
        )
    return json.loads(path.read_text(encoding="utf-8"))
