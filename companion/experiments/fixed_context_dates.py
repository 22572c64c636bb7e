"""Does the fixed-context decoder fade with length on the dates? The experiment behind the
answer to sec-bahdanau's exercise ``ex-bahdanau-dates-plain``.

The chapter's date task, vocabularies and arrays; its ``make_model`` (a one-layer GRU encoder
and decoder of 64 units) and ``fit`` (batches of 128, ``lr=0.01``, the same batches at every
seed). The fixed-context decoder (``Seq2SeqDecoder``) trains for 10 epochs, the attention
decoder for the chapter's 3. Each model is scored on the 800 test dates: exact match overall,
by the length of the source (6-10, 11-19 and 20-29 characters), and how often the year, the
month and the day of the output are right. The seeds shift the models' initial weights as the
chapter's seed sweep does (seed k initialises from ``torch.manual_seed(1000 * k)``).

``python -m companion.experiments.fixed_context_dates`` trains both over seeds 0, 1 and 2 (about
a minute per seed on two CPU cores) and writes ``results/fixed_context_dates.json``, which the
exercise's solution reads with :func:`load_fixed_context_results`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from companion.data.tasks import date_task
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays
from companion.generation.decoding import decode
from companion.models.seq2seq import (
    EncoderDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from companion.training.metrics import exact_match
from companion.training.train import train_seq2seq

RESULTS = Path(__file__).parent / "results" / "fixed_context_dates.json"
SETTINGS: dict[str, Any] = {  # the chapter's
    "num_examples": 8000,
    "data_seed": 0,
    "num_steps": 30,
    "tgt_num_steps": 11,
    "num_hiddens": 64,
    "batch_size": 128,
    "lr": 0.01,
    "num_epochs": {"fixed context": 10, "attention": 3},
}
DECODERS = {"fixed context": Seq2SeqDecoder, "attention": Seq2SeqAttentionDecoder}
BANDS = ((6, 10), (11, 19), (20, 29))  # characters in the source
FIELDS = {"year": (0, 4), "month": (5, 7), "day": (8, 10)}  # characters of yyyy-mm-dd


def _model(name: str, src_vocab: Vocab, tgt_vocab: Vocab, seed: int) -> EncoderDecoder:
    """The chapter's ``make_model``, with the seed sweep's shift of the initial weights."""
    torch.manual_seed(1000 * seed)
    d = SETTINGS["num_hiddens"]
    return EncoderDecoder(
        Seq2SeqEncoder(len(src_vocab), d, d, num_layers=1),
        DECODERS[name](len(tgt_vocab), d, d, num_layers=1),
    )


def scores(predictions: Sequence[Sequence[str]], test: ParallelCorpus) -> dict[str, Any]:
    """Exact match overall and by band of source length (``None`` for an empty band), and each
    field's share right."""
    result: dict[str, Any] = {"exact_match": round(exact_match(predictions, test.target), 4)}
    for low, high in BANDS:
        picked = [i for i, source in enumerate(test.source) if low <= len(source) <= high]
        if picked:
            band = exact_match([predictions[i] for i in picked], [test.target[i] for i in picked])
        result[f"exact_match_{low}_{high}"] = round(band, 4) if picked else None
        result[f"count_{low}_{high}"] = len(picked)
    for field, (a, b) in FIELDS.items():
        right = sum(list(p[a:b]) == list(t[a:b]) for p, t in zip(predictions, test.target))
        result[f"{field}_right"] = round(right / len(predictions), 4)
    return result


def train_and_score(name: str, seed: int) -> dict[str, Any]:
    """Train the chapter's ``name`` model from ``seed`` on the CPU and score it on the test
    dates (see :func:`scores`)."""
    s = SETTINGS
    dates = date_task(s["num_examples"], seed=s["data_seed"])
    src_vocab, tgt_vocab = Vocab(dates.train.source), Vocab(dates.train.target)
    steps, tgt_steps = s["num_steps"], s["tgt_num_steps"]
    arrays = build_arrays(*dates.train, src_vocab, tgt_vocab, steps, tgt_num_steps=tgt_steps)
    model = _model(name, src_vocab, tgt_vocab, seed)
    generator = torch.Generator().manual_seed(0)  # the chapter's fit: the same batches
    history = train_seq2seq(
        model,
        lambda: batches(arrays, s["batch_size"], generator=generator),
        pad_index=tgt_vocab.pad,
        num_epochs=s["num_epochs"][name],
        lr=s["lr"],
        device=torch.device("cpu"),
    )
    test = build_arrays(*dates.test, src_vocab, tgt_vocab, steps, tgt_steps)
    decoded = decode(model, test.src, test.src_valid_len, tgt_vocab.bos, tgt_vocab.eos, tgt_steps)
    predictions = [tgt_vocab.to_tokens(ids) for ids in decoded.tokens]
    return {"loss": round(history["loss"][-1], 4), **scores(predictions, dates.test)}


def load_fixed_context_results(path: Path = RESULTS) -> dict[str, Any]:
    """The committed results (or those at ``path``): ``{"settings", "runs"}``, where each run
    is ``{"seed", "model", ...}`` with :func:`scores`' keys."""
    if not path.exists():
        raise FileNotFoundError(
            f"no results at {path}: run `python -m companion.experiments.fixed_context_dates`"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    runs = []
    for seed in args.seeds:
        for name in DECODERS:
            run = {"seed": seed, "model": name, **train_and_score(name, seed)}
            print(json.dumps(run))
            runs.append(run)
    args.output.write_text(
        json.dumps({"settings": SETTINGS, "runs": runs}, indent=1) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
