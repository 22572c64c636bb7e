"""The Transformer against the GRU encoder-decoder with Bahdanau attention on the reordering
task of sec-transformer: the same data, optimiser, schedule, batches and number of updates,
and about the same number of parameters.

The baseline is Bahdanau et al.'s (2015): a bidirectional GRU encoder that reads the real tokens
only, and the attention decoder of sec-bahdanau, one layer each, of width 88, which gives it
about the Transformer's parameters (265,000 against 271,000). ``python -m companion.bench rnn``
trains both models over a small learning-rate sweep (:data:`LEARNING_RATES`, seeds 0 to 2), and
the Transformer also with dropout 0.1 and with label smoothing 0.1 (:data:`REGULARISED`), with
:func:`train_and_score`, and writes ``companion/experiments/results/rnn_comparison.json``. Each
run records its training loss and learning rate at every step, its exact match on the first 500
validation sentences (what picks a model's learning rate, :func:`chosen_lr`), and its test
scores. The chapter trains the Transformer live (seed 0 of its setting) and reads the rest from
that file.

Only the model's initialisation and the order of the batches change with the seed; the data
(``translation_task(25_000, seed=0)``) are the chapter's.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from companion.data.tasks import Splits, translation_task
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays
from companion.generation.decoding import decode
from companion.layers.losses import sequence_loss
from companion.models.seq2seq import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from companion.models.transformer import TransformerDecoder, TransformerEncoder
from companion.training.metrics import corpus_bleu, exact_match, standard_corpus_bleu
from companion.training.train import fit

RESULTS = Path(__file__).parent / "results" / "rnn_comparison.json"
SETTINGS: dict[str, Any] = {  # the chapter's, for both models
    "num_examples": 25_000,
    "data_seed": 0,
    "num_steps": 16,
    "batch_size": 128,
    "num_epochs": 2,
    "validation": 500,  # the first validation sentences, scored after training
    "transformer": {"num_hiddens": 64, "ffn_num_hiddens": 128, "num_heads": 4, "num_blks": 2},
    "bahdanau": {"num_hiddens": 88, "num_layers": 1, "bidirectional": True},
}
MODELS = ("Transformer", "Bahdanau")
LEARNING_RATES: dict[str, tuple[float, ...]] = {  # the peak of the one-cycle schedule
    "Transformer": (1e-3, 3e-3, 1e-2),
    "Bahdanau": (3e-3, 1e-2, 3e-2),
}
CHAPTER_LR = 3e-3  # the Transformer's, as the chapter trains it
REGULARISED: tuple[dict[str, float], ...] = ({"dropout": 0.1}, {"label_smoothing": 0.1})
EXAMPLE = 15  # the test sentence whose translation the chapter shows


def task() -> tuple[Splits, Vocab, Vocab]:
    """The chapter's splits and its source and target vocabularies."""
    splits = translation_task(SETTINGS["num_examples"], seed=SETTINGS["data_seed"])
    return splits, Vocab(splits.train.source), Vocab(splits.train.target)


def build_model(
    name: str, src_vocab: Vocab, tgt_vocab: Vocab, dropout: float = 0.0
) -> EncoderDecoder:
    """The chapter's ``"Transformer"`` or ``"Bahdanau"`` model, initialised from torch's
    global generator on the CPU."""
    if name == "Transformer":
        t = SETTINGS["transformer"]
        sizes = (t["num_hiddens"], t["ffn_num_hiddens"], t["num_heads"], t["num_blks"])
        return EncoderDecoder(
            TransformerEncoder(len(src_vocab), *sizes, dropout=dropout),
            TransformerDecoder(len(tgt_vocab), *sizes, dropout=dropout),
        )
    if name == "Bahdanau":
        b = SETTINGS["bahdanau"]
        d, layers = b["num_hiddens"], b["num_layers"]
        return EncoderDecoder(
            Seq2SeqEncoder(len(src_vocab), d, d, layers, dropout, bidirectional=b["bidirectional"]),
            Seq2SeqAttentionDecoder(len(tgt_vocab), d, d, layers, dropout),
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


class Trained(NamedTuple):
    """A model trained by :func:`train_model`, with the task it was trained on and its record."""

    model: EncoderDecoder
    splits: Splits
    src_vocab: Vocab
    tgt_vocab: Vocab
    history: dict[str, list[Any]]  # fit's, per epoch
    curve: dict[str, list[float]]  # the loss and the learning rate of every step
    seconds: float  # of training alone


def train_model(
    name: str,
    seed: int,
    device: torch.device,
    *,
    lr: float,
    dropout: float = 0.0,
    label_smoothing: float = 0.0,
) -> Trained:
    """Train model ``name`` with the chapter's settings from seed ``seed`` at peak learning rate
    ``lr``: ``train_seq2seq``'s training, step for step, recording the loss and the learning rate
    of every step. ``train_model("Transformer", 0, device, lr=CHAPTER_LR)`` is the model that
    sec-transformer trains (and sec-kv-cache decodes)."""
    splits, src_vocab, tgt_vocab = task()
    s = SETTINGS
    arrays = build_arrays(*splits.train, src_vocab, tgt_vocab, s["num_steps"], s["num_steps"])
    torch.manual_seed(seed)
    model = build_model(name, src_vocab, tgt_vocab, dropout).to(device)
    generator = torch.Generator().manual_seed(seed)
    losses: list[torch.Tensor] = []
    rates: list[float] = []

    def loss_fn(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        src, tgt_input, src_valid_len, label = batch
        logits = model(src, tgt_input, src_valid_len)  # (batch, steps, vocab)
        loss = sequence_loss(logits, label, tgt_vocab.pad, label_smoothing)
        losses.append(loss.detach())
        return loss

    def record_lr(optimizer: torch.optim.Optimizer, *_: Any) -> None:
        rates.append(optimizer.param_groups[0]["lr"])  # the rate this step used

    hook = register_optimizer_step_post_hook(record_lr)
    start = time.perf_counter()
    try:
        history = fit(
            model,
            lambda: batches(arrays, s["batch_size"], generator=generator),
            loss_fn,
            num_epochs=s["num_epochs"],
            lr=lr,
            device=device,
        )
    finally:
        hook.remove()
    seconds = time.perf_counter() - start
    steps = len(rates)  # a forward pass of a lazy model's first batch is not a step
    curve = {"loss": torch.stack(losses[-steps:]).tolist(), "lr": rates}
    return Trained(model, splits, src_vocab, tgt_vocab, history, curve, seconds)


def train_and_score(
    name: str,
    seed: int,
    device: torch.device,
    *,
    lr: float,
    dropout: float = 0.0,
    label_smoothing: float = 0.0,
) -> dict[str, Any]:
    """:func:`train_model`, then scores: training loss (the mean over the last epoch), exact
    match on the first validation sentences, then on the test split BLEU (companion's and the
    standard one), exact match and the example sentence's translation; training seconds; and
    the curve, the loss and learning rate of every step."""
    run = train_model(name, seed, device, lr=lr, dropout=dropout, label_smoothing=label_smoothing)
    model, splits, src_vocab, tgt_vocab = run.model, run.splits, run.src_vocab, run.tgt_vocab
    n = SETTINGS["validation"]
    validation = splits.val._replace(source=splits.val.source[:n], target=splits.val.target[:n])
    val_predictions = translate(model, validation, src_vocab, tgt_vocab)
    predictions = translate(model, splits.test, src_vocab, tgt_vocab)
    return {
        "loss": round(run.history["loss"][-1], 4),
        "val_exact_match": round(exact_match(val_predictions, validation.target), 4),
        "bleu": round(corpus_bleu(predictions, splits.test.target), 4),
        "standard_bleu": round(100 * standard_corpus_bleu(predictions, splits.test.target), 2),
        "exact_match": round(exact_match(predictions, splits.test.target), 4),
        "seconds": round(run.seconds, 1),
        "example": " ".join(predictions[EXAMPLE]),
        "curve": {
            "loss": [round(x, 4) for x in run.curve["loss"]],
            "lr": [float(f"{x:.4g}") for x in run.curve["lr"]],
        },
    }


def select_runs(
    results: dict[str, Any],
    model: str,
    lr: float | None = None,
    *,
    dropout: float = 0.0,
    label_smoothing: float = 0.0,
) -> list[dict[str, Any]]:
    """The runs of ``model`` in ``results`` with these settings (``lr=None``: every rate),
    in the order of their seeds."""
    return [
        run
        for run in results["runs"]
        if run["model"] == model
        and (lr is None or run["lr"] == lr)
        and run["dropout"] == dropout
        and run["label_smoothing"] == label_smoothing
    ]


def chosen_lr(results: dict[str, Any], model: str) -> float:
    """The learning rate of ``model``'s sweep with the highest mean validation exact match over
    the seeds (no regulariser): the rate picked on held-out data, not on the test split."""

    def mean_validation(lr: float) -> float:
        return statistics.mean(r["val_exact_match"] for r in select_runs(results, model, lr))

    return max(LEARNING_RATES[model], key=mean_validation)


def load_comparison_results(path: Path = RESULTS) -> dict[str, Any]:
    """The results of ``python -m companion.bench rnn`` (by default the committed ones)."""
    if not path.exists():
        raise FileNotFoundError(f"no results at {path}: run `python -m companion.bench rnn`")
    return json.loads(path.read_text(encoding="utf-8"))
