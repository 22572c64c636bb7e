"""Recipes that train the book's sequence models on a CPU in seconds (sec-bahdanau,
sec-transformer).

A recipe names a task, a model and the settings that train it to quality quickly:

=====================  ===========================================  =========================
recipe                 model                                        target (held-out)
=====================  ===========================================  =========================
``bahdanau-dates``     GRU encoder, Bahdanau (additive) decoder      95% exact match
``transformer-dates``  Transformer, 2 + 2 blocks                     99% exact match
``transformer-mt``     Transformer, 2 + 2 blocks, reordering task    BLEU 0.90
=====================  ===========================================  =========================

:func:`run_recipe` generates the data, trains with :func:`companion.training.train.train_seq2seq`,
stops once the validation score reaches the target, and reports the test score, measured on
sources never seen in training. ``python -m companion.bench train`` times all three.

The models of "Transformers today" each have a recipe module, whose ``time_to_quality(seed,
device)`` trains the model from scratch until a stated target and returns a
:class:`TimeToQuality`: :mod:`companion.experiments.recipes.gpt` (sec-language-models),
:mod:`companion.experiments.recipes.llama` (the GPT recipe with the Llama-style model,
sec-modern-decoder), :mod:`companion.experiments.recipes.bert` (sec-pretraining) and
:mod:`companion.experiments.recipes.vit` (sec-vit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from companion.data.tasks import Splits, date_task, translation_task
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays
from companion.generation.decoding import decode
from companion.models.seq2seq import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from companion.models.transformer import TransformerDecoder, TransformerEncoder
from companion.training.metrics import corpus_bleu, exact_match
from companion.training.train import train_seq2seq


@dataclass(frozen=True)
class Recipe:
    """Everything that defines one training run; see the module docstring for the three."""

    task: str  # "dates" or "translation"
    model: str  # "bahdanau" or "transformer"
    num_examples: int
    num_steps: int  # source length
    tgt_num_steps: int  # target length
    metric: str  # "exact_match" or "bleu"
    target: float
    num_epochs: int
    batch_size: int = 128
    lr: float = 3e-3
    num_hiddens: int = 64
    num_layers: int = 2  # GRU layers, or Transformer blocks on each side
    num_heads: int = 4
    dropout: float = 0.0
    label_smoothing: float = 0.0
    num_eval: int = 500  # validation examples decoded after each epoch


RECIPES = {
    "bahdanau-dates": Recipe("dates", "bahdanau", 20_000, 32, 12, "exact_match", 0.95, 6),
    "transformer-dates": Recipe(
        "dates", "transformer", 20_000, 32, 12, "exact_match", 0.99, 6, batch_size=64
    ),
    "transformer-mt": Recipe("translation", "transformer", 40_000, 16, 16, "bleu", 0.90, 12),
}


@dataclass
class RecipeResult:
    """A trained model with its vocabularies, its history and its held-out scores."""

    recipe: Recipe
    model: EncoderDecoder
    src_vocab: Vocab
    tgt_vocab: Vocab
    splits: Splits
    history: dict[str, list[Any]]
    seconds: float  # training time, evaluation included
    reached_target: bool
    test_scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class TimeToQuality:
    """What a model recipe's ``time_to_quality`` measured: one row of ``python -m
    companion.bench train``."""

    task: str  # the data it trained on
    model: str  # the model, with its size
    target: str  # the validation score it trained towards
    reached: bool  # whether validation met the target
    seconds: float  # training time, evaluation included, data generation excluded
    epochs: int
    score: float  # on the test split, which neither training nor stopping saw


def make_splits(recipe: Recipe, seed: int) -> Splits:
    if recipe.task == "dates":
        return date_task(recipe.num_examples, seed=seed)
    if recipe.task == "translation":
        return translation_task(recipe.num_examples, seed=seed)
    raise ValueError(f"unknown task {recipe.task!r}; expected 'dates' or 'translation'")


def build_model(recipe: Recipe, src_vocab: Vocab, tgt_vocab: Vocab) -> EncoderDecoder:
    """The recipe's encoder-decoder, initialised on the CPU."""
    hiddens, layers = recipe.num_hiddens, recipe.num_layers
    encoder: nn.Module
    decoder: nn.Module
    if recipe.model == "bahdanau":
        encoder = Seq2SeqEncoder(len(src_vocab), hiddens, hiddens, layers, recipe.dropout)
        decoder = Seq2SeqAttentionDecoder(len(tgt_vocab), hiddens, hiddens, layers, recipe.dropout)
    elif recipe.model == "transformer":
        ffn, heads = 2 * hiddens, recipe.num_heads
        encoder = TransformerEncoder(len(src_vocab), hiddens, ffn, heads, layers, recipe.dropout)
        decoder = TransformerDecoder(len(tgt_vocab), hiddens, ffn, heads, layers, recipe.dropout)
    else:
        raise ValueError(f"unknown model {recipe.model!r}; expected 'bahdanau' or 'transformer'")
    model = EncoderDecoder(encoder, decoder)
    with torch.no_grad():  # materialise the lazy layers, on the CPU
        src = torch.zeros(1, recipe.num_steps, dtype=torch.long)
        model(src, src, torch.tensor([recipe.num_steps]))
    return model


def evaluate(
    model: nn.Module,
    corpus: ParallelCorpus,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    recipe: Recipe,
    strategy: str = "greedy",
    beam_size: int = 4,
    batch_size: int = 500,
) -> dict[str, float]:
    """Decode every source of ``corpus`` and score it: exact match and BLEU (d2l's)."""
    device = next(model.parameters()).device
    predictions: list[list[str]] = []
    for start in range(0, len(corpus.source), batch_size):
        chunk = corpus.source[start : start + batch_size]
        arrays = build_arrays(chunk, chunk, src_vocab, src_vocab, recipe.num_steps)
        decoded = decode(
            model,
            arrays.src.to(device),
            arrays.src_valid_len.to(device),
            tgt_vocab.bos,
            tgt_vocab.eos,
            recipe.tgt_num_steps,
            strategy=strategy,
            beam_size=beam_size,
        )
        predictions += [tgt_vocab.to_tokens(ids) for ids in decoded.tokens]
    references = corpus.target
    return {
        "exact_match": exact_match(predictions, references),
        "bleu": corpus_bleu(predictions, references),
    }


def run_recipe(
    name: str,
    seed: int = 0,
    device: torch.device | None = None,
    stop_at_target: bool = True,
) -> RecipeResult:
    """Train recipe ``name`` from scratch and score it on the test split. The result holds the
    training history, for ``plot_history(result.history)``."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; expected one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    torch.manual_seed(seed)
    splits = make_splits(recipe, seed)
    src_vocab, tgt_vocab = Vocab(splits.train.source), Vocab(splits.train.target)
    arrays = build_arrays(
        *splits.train, src_vocab, tgt_vocab, recipe.num_steps, recipe.tgt_num_steps
    )
    model = build_model(recipe, src_vocab, tgt_vocab)
    validation = ParallelCorpus(
        splits.val.source[: recipe.num_eval], splits.val.target[: recipe.num_eval]
    )
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    history = train_seq2seq(
        model,
        lambda: batches(arrays, recipe.batch_size, generator=generator),
        pad_index=tgt_vocab.pad,
        num_epochs=recipe.num_epochs,
        lr=recipe.lr,
        label_smoothing=recipe.label_smoothing,
        evaluate=lambda m: evaluate(m, validation, src_vocab, tgt_vocab, recipe),
        stop_when=(lambda s: s[recipe.metric] >= recipe.target) if stop_at_target else None,
        device=device,
    )
    seconds = time.perf_counter() - start
    reached = history[recipe.metric][-1] >= recipe.target
    model.eval()
    test_scores = evaluate(model, splits.test, src_vocab, tgt_vocab, recipe)
    return RecipeResult(
        recipe, model, src_vocab, tgt_vocab, splits, history, seconds, reached, test_scores
    )
