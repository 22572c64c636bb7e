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

from companion._validate import (
    check_device,
    check_integer,
    check_number,
    check_seed,
    check_type,
)
from companion.data.tasks import Splits, date_task, translation_task
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays
from companion.generation.decoding import decode
from companion.models.seq2seq import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from companion.models.transformer import TransformerDecoder, TransformerEncoder
from companion.training.metrics import corpus_bleu, exact_match
from companion.training.train import train_seq2seq

# The longest source and target of each task, in tokens (<eos> not counted): a recipe's
# num_steps and tgt_num_steps must hold them, or build_arrays would cut them silently.
TASK_LENGTHS = {"dates": (29, 10), "translation": (12, 12)}
TASKS, MODELS, METRICS = tuple(TASK_LENGTHS), ("bahdanau", "transformer"), ("exact_match", "bleu")


@dataclass(frozen=True)
class Recipe:
    """Everything that defines one training run; see the module docstring for the three.

    The fields are checked when a recipe is made: a task, a model and a metric named below;
    positive integers for the sizes, steps long enough for the task's sentences and a width
    divisible by the heads; ``target`` in (0, 1], ``lr > 0``, fractions in [0, 1).
    """

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

    def __post_init__(self) -> None:
        _check_recipe(self)


def _check_recipe(recipe: Recipe) -> None:
    """A :class:`Recipe`'s fields, each alone and against each other."""
    for name, value, choices in (
        ("task", recipe.task, TASKS),
        ("model", recipe.model, MODELS),
        ("metric", recipe.metric, METRICS),
    ):
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    for name in (
        "num_examples",
        "num_steps",
        "tgt_num_steps",
        "num_epochs",
        "batch_size",
        "num_hiddens",
        "num_layers",
        "num_heads",
        "num_eval",
    ):
        check_integer(name, getattr(recipe, name))
    check_number("target", recipe.target, above=0, at_most=1, what="a score")
    check_number("lr", recipe.lr, above=0)
    for name in ("dropout", "label_smoothing"):
        check_number(name, getattr(recipe, name), at_least=0, below=1, what="a fraction")
    for name, longest in zip(("num_steps", "tgt_num_steps"), TASK_LENGTHS[recipe.task]):
        if getattr(recipe, name) < longest + 1:
            raise ValueError(
                f"{name}={getattr(recipe, name)} would cut the {recipe.task} task's sentences "
                f"(up to {longest} tokens and <eos>): use {name} >= {longest + 1}"
            )
    if recipe.model == "transformer" and recipe.num_hiddens % recipe.num_heads:
        raise ValueError(
            f"num_hiddens={recipe.num_hiddens} must be divisible by num_heads="
            f"{recipe.num_heads}: each head gets an equal share of the width"
        )


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
    """The splits of the :class:`Recipe`'s task, drawn from ``seed``, an integer."""
    check_type("recipe", recipe, Recipe, "a Recipe, such as RECIPES['transformer-mt']")
    if recipe.task == "dates":
        return date_task(recipe.num_examples, seed=seed)
    if recipe.task == "translation":
        return translation_task(recipe.num_examples, seed=seed)
    raise ValueError(f"unknown task {recipe.task!r}; expected 'dates' or 'translation'")


def build_model(recipe: Recipe, src_vocab: Vocab, tgt_vocab: Vocab) -> EncoderDecoder:
    """The :class:`Recipe`'s encoder-decoder for two :class:`Vocab`, initialised on the CPU."""
    check_type("recipe", recipe, Recipe, "a Recipe, such as RECIPES['transformer-mt']")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        check_type(name, vocab, Vocab, "a Vocab")
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
    """Decode every source of ``corpus`` (a non-empty :class:`ParallelCorpus`) in batches of
    ``batch_size`` (a positive integer) and score it: exact match and BLEU (d2l's)."""
    _check_evaluate_arguments(model, corpus, src_vocab, tgt_vocab, recipe, batch_size)
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


def _check_evaluate_arguments(
    model: nn.Module,
    corpus: ParallelCorpus,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    recipe: Recipe,
    batch_size: int,
) -> None:
    check_type("model", model, nn.Module, "a torch.nn.Module")
    check_type("corpus", corpus, ParallelCorpus, "a ParallelCorpus, such as splits.val")
    if not corpus.source:
        raise ValueError("corpus holds no sentence pairs; there is nothing to score")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        check_type(name, vocab, Vocab, "a Vocab")
    check_type("recipe", recipe, Recipe, "a Recipe, such as RECIPES['transformer-mt']")
    check_integer("batch_size", batch_size)


def run_recipe(
    name: str,
    seed: int = 0,
    device: torch.device | None = None,
    stop_at_target: bool = True,
) -> RecipeResult:
    """Train recipe ``name`` (a key of :data:`RECIPES`) from scratch, with an integer ``seed``,
    and score it on the test split. The result holds the training history, for
    ``plot_history(result.history)``."""
    if not isinstance(name, str) or name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; expected one of {', '.join(RECIPES)}")
    check_seed(seed)
    device = check_device(device)
    check_type("stop_at_target", stop_at_target, bool, "True or False")
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
