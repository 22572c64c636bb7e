"""The Transformer against the GRU encoder-decoder with Bahdanau attention on the reordering
task of sec-transformer: the same data, optimiser, schedule, batches and number of updates.

``python -m companion.bench rnn`` trains both models over seeds with :func:`train_and_score`
and writes ``companion/experiments/results/rnn_comparison.json``; the chapter trains its Transformer
live (seed 0 of this setting) and reads the Bahdanau model's results from that file, which holds
what a run of about 20 seconds per model and seed would print.

Only the model's initialisation and the order of the batches change with the seed; the data
(``translation_task(25_000, seed=0)``) are the chapter's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from companion.data.tasks import Splits, translation_task
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays
from companion.generation.decoding import decode
from companion.models.seq2seq import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from companion.models.transformer import TransformerDecoder, TransformerEncoder
from companion.training.metrics import corpus_bleu, exact_match, standard_corpus_bleu
from companion.training.train import train_seq2seq

RESULTS = Path(__file__).parent / "results" / "rnn_comparison.json"
SETTINGS: dict[str, Any] = {  # the chapter's, for both models
    "num_examples": 25_000,
    "data_seed": 0,
    "num_steps": 16,
    "num_hiddens": 64,
    "batch_size": 128,
    "num_epochs": 2,
    "lr": {"Transformer": 3e-3, "Bahdanau": 0.02},
    "transformer": {"ffn_num_hiddens": 128, "num_heads": 4, "num_blks": 2},
    "bahdanau": {"num_layers": 1},
}
MODELS = ("Transformer", "Bahdanau")
EXAMPLE = 15  # the test sentence whose translation the chapter shows


def task() -> tuple[Splits, Vocab, Vocab]:
    """The chapter's splits and its source and target vocabularies."""
    splits = translation_task(SETTINGS["num_examples"], seed=SETTINGS["data_seed"])
    return splits, Vocab(splits.train.source), Vocab(splits.train.target)


def build_model(name: str, src_vocab: Vocab, tgt_vocab: Vocab) -> EncoderDecoder:
    """The chapter's ``"Transformer"`` or ``"Bahdanau"`` model, initialised from torch's
    global generator on the CPU."""
    d = SETTINGS["num_hiddens"]
    if name == "Transformer":
        t = SETTINGS["transformer"]
        sizes = (d, t["ffn_num_hiddens"], t["num_heads"], t["num_blks"])
        return EncoderDecoder(
            TransformerEncoder(len(src_vocab), *sizes, dropout=0.0),
            TransformerDecoder(len(tgt_vocab), *sizes, dropout=0.0),
        )
    if name == "Bahdanau":
        layers = SETTINGS["bahdanau"]["num_layers"]
        return EncoderDecoder(
            Seq2SeqEncoder(len(src_vocab), d, d, num_layers=layers),
            Seq2SeqAttentionDecoder(len(tgt_vocab), d, d, num_layers=layers),
        )
    raise ValueError(f"name must be one of {MODELS}; got {name!r}")


def translate(
    model: nn.Module, corpus: ParallelCorpus, src_vocab: Vocab, tgt_vocab: Vocab
) -> list[list[str]]:
    """Greedy translations of ``corpus.source``, as lists of target tokens."""
    num_steps = SETTINGS["num_steps"]
    inputs = build_arrays(corpus.source, corpus.target, src_vocab, tgt_vocab, num_steps)
    device = next(model.parameters()).device
    decoded = decode(
        model,
        inputs.src.to(device),
        inputs.src_valid_len.to(device),
        tgt_vocab.bos,
        tgt_vocab.eos,
        num_steps,
    )
    return [tgt_vocab.to_tokens(ids) for ids in decoded.tokens]


def train_and_score(name: str, seed: int, device: torch.device) -> dict[str, Any]:
    """Train model ``name`` with the chapter's settings from seed ``seed`` and score it on
    the test split: training loss (the mean over the last epoch), BLEU (companion's and the
    standard one), exact match, training seconds and the example sentence's translation."""
    splits, src_vocab, tgt_vocab = task()
    s = SETTINGS
    arrays = build_arrays(*splits.train, src_vocab, tgt_vocab, s["num_steps"], s["num_steps"])
    torch.manual_seed(seed)
    model = build_model(name, src_vocab, tgt_vocab).to(device)
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    history = train_seq2seq(
        model,
        lambda: batches(arrays, s["batch_size"], generator=generator),
        pad_index=tgt_vocab.pad,
        num_epochs=s["num_epochs"],
        lr=s["lr"][name],
        device=device,
    )
    seconds = time.perf_counter() - start
    predictions = translate(model, splits.test, src_vocab, tgt_vocab)
    return {
        "loss": round(history["loss"][-1], 4),
        "bleu": round(corpus_bleu(predictions, splits.test.target), 4),
        "standard_bleu": round(100 * standard_corpus_bleu(predictions, splits.test.target), 2),
        "exact_match": round(exact_match(predictions, splits.test.target), 4),
        "seconds": round(seconds, 1),
        "example": " ".join(predictions[EXAMPLE]),
    }


def load_comparison_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench rnn`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(f"no results at {path}: run `python -m companion.bench rnn`")
    return json.loads(path.read_text(encoding="utf-8"))
