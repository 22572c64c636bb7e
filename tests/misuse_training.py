"""What a student does wrong with companion's training loop, metrics, data, recipes, figures and
helpers, and the error each gets: the rows that ``tests/test_misuse.py`` appends to its
``MISUSES`` table.

Each row is ``(what a student does, a zero-argument call, the exception, a regex its message
must match)``. Every message names the argument and what it got. A number of the wrong type or
out of range is a ``ValueError``; an object of the wrong kind (a str where a list is meant, a
tensor where a tuple of tensors is) a ``TypeError``.
"""

from __future__ import annotations

import datetime
import functools
import random
import types
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from companion.claims import claim
from companion.data import corpus
from companion.data.regression import kernel_regression_data
from companion.data.tasks import copy_task, date_task, format_date, translation_task
from companion.data.tasks.digits import ImageSet, digit_splits, stratified_subset
from companion.data.tasks.language import (
    cross_entropy_per_token,
    invented_sentences,
    is_sentence,
    language_model_vocab,
    lm_arrays,
    sample_clause,
    to_sentences,
)
from companion.data.tasks.pretraining import bert_arrays, bert_vocab, swap_articles
from companion.data.text import ParallelCorpus, Vocab, batches, build_arrays, parse_parallel_text
from companion.device import get_device
from companion.experiments.recipes import RECIPES, Recipe, run_recipe
from companion.experiments.recipes.vit import (
    DigitsRecipe,
    classification_accuracy,
    train_classifier,
)
from companion.figures.decoder import plot_ablation
from companion.figures.diagrams import draw_multihead, draw_vit_patching
from companion.figures.plot import plot, plot_attention, plot_history, show_heatmaps
from companion.figures.pretraining import plot_learning_curves
from companion.measure import memory_probe, run_in_fresh_process
from companion.repro import reproducible
from companion.source import show_source
from companion.training.metrics import bleu, corpus_bleu, exact_match, standard_corpus_bleu
from companion.training.pretrain import (
    accuracy,
    bert_model,
    fine_tune,
    mlm_batches,
    mlm_step_loss,
)
from companion.training.train import fit, train_seq2seq

CPU = torch.device("cpu")
X, Y = torch.randn(6, 2), torch.tensor([0, 1, 0, 1, 0, 1])


def linear() -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(2, 2)


def loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    inputs, labels = batch
    return nn.functional.cross_entropy(model(inputs), labels)


def fit_with(**changes: object) -> Callable[[], object]:
    """``fit`` of a linear classifier on ``(X, Y)``, with ``changes`` to its arguments."""
    arguments: dict[str, object] = dict(
        model=linear(),
        batches=lambda: batches((X, Y), 3, generator=torch.Generator().manual_seed(0)),
        loss_fn=loss,
        num_epochs=1,
        device=CPU,
    )
    arguments.update(changes)
    return lambda: fit(**arguments)  # type: ignore[arg-type]


@functools.cache
def vocab() -> Vocab:
    return Vocab("the cat sat on the mat".split())


@functools.cache
def lm_vocab() -> Vocab:
    return language_model_vocab()


@functools.cache
def bert_data() -> tuple:
    """A tiny BERT, its vocabulary, arrays of four sentences and their labels."""
    words = bert_vocab()
    sentences = invented_sentences(4, seed=0)
    return bert_model(len(words), seed=0), words, bert_arrays(sentences, words, 14), Y[:4]


def digits() -> tuple[np.ndarray, np.ndarray]:
    """20 fake digits, 8x8 pixels 0..16, two of each class."""
    images = np.random.default_rng(0).integers(0, 17, size=(20, 8, 8))
    return images, np.arange(20) % 10


def recipe(**changes: object) -> Callable[[], Recipe]:
    """A change to the ``transformer-dates`` recipe: ``Recipe`` checks its fields when made."""
    fields = dict(vars(RECIPES["transformer-dates"]))
    fields.update(changes)
    return lambda: Recipe(**fields)  # type: ignore[arg-type]


def no_grad_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    with torch.no_grad():
        return loss(model, batch)


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # the training loop
    (
        "fit(..., grad_clip=-1): would flip every gradient",
        fit_with(grad_clip=-1),
        ValueError,
        r"grad_clip must be a number > 0 \(the largest gradient norm; math.inf for no "
        r"clipping\); got -1",
    ),
    (
        "fit(..., grad_clip=0): would freeze training",
        fit_with(grad_clip=0),
        ValueError,
        r"grad_clip must be a number > 0 .*; got 0",
    ),
    (
        "fit on an epoch of bare tensors, not (inputs, labels) batches",
        fit_with(batches=lambda: [X[:3], X[3:]]),
        TypeError,
        r"batches\(\) must yield tuples of tensors such as \(inputs, labels\); it yielded a "
        r"torch.float32 tensor of shape \(3, 2\): wrap a lone tensor as \(X,\)",
    ),
    (
        "fit given one epoch of batches instead of a function that makes them",
        fit_with(batches=batches((X, Y), 3)),
        TypeError,
        r"batches must be a function that returns one epoch of batches, such as "
        r"lambda: companion.batches\(arrays, 64\); got <generator",
    ),
    (
        "fit given the model's class, not a model",
        fit_with(model=nn.Linear),
        TypeError,
        r"model must be a torch.nn.Module \(a model, not its class\); got <class",
    ),
    (
        "fit(..., lr=0)",
        fit_with(lr=0),
        ValueError,
        r"lr must be a number > 0; got 0",
    ),
    (
        "fit(..., lr='3e-3'): a str where a number is meant",
        fit_with(lr="3e-3"),
        ValueError,
        r"lr must be a number > 0; got '3e-3'",
    ),
    (
        "fit(..., warmup=100): warm-up steps where a fraction is meant",
        fit_with(warmup=100),
        ValueError,
        r"warmup must be a fraction in \[0, 1\); got 100",
    ),
    (
        "fit(..., weight_decay=-0.01)",
        fit_with(weight_decay=-0.01),
        ValueError,
        r"weight_decay must be a number >= 0; got -0.01",
    ),
    (
        "fit(..., device='gpu')",
        fit_with(device="gpu"),
        ValueError,
        r"device='gpu' is not a device",
    ),
    (
        "fit(..., stop_when=...) without evaluate: never asked",
        fit_with(stop_when=lambda metrics: True),
        ValueError,
        r"stop_when needs evaluate",
    ),
    (
        "evaluate returns a metric named 'loss', which would be dropped",
        fit_with(evaluate=lambda m: {"loss": 0.5}),
        ValueError,
        r"evaluate returned a metric named 'loss', a column fit's history has already "
        r"\(epoch, loss, lr, seconds\): call it, e.g., 'val_loss'",
    ),
    (
        "evaluate returns a number, not a dict of metrics",
        fit_with(evaluate=lambda m: 0.9),
        TypeError,
        r"evaluate must return a dict of metrics such as \{'accuracy': 0.9\}; got 0.9 \(float\)",
    ),
    (
        "a loss_fn that returns one loss per example (reduction='none')",
        fit_with(loss_fn=lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1], reduction="none")),
        ValueError,
        r"loss_fn must return the loss as a 0-d tensor \(the mean over the batch\); got a "
        r"torch.float32 tensor of shape \(3,\)",
    ),
    (
        "a loss_fn that returns loss.item()",
        fit_with(loss_fn=lambda m, b: loss(m, b).item()),
        ValueError,
        r"loss_fn must return the loss as a 0-d tensor .*; got [\d.]+ \(float\)",
    ),
    (
        "a loss_fn that computes its loss under torch.no_grad()",
        fit_with(loss_fn=no_grad_loss),
        ValueError,
        r"loss_fn returned a loss that carries no gradient: was it computed under "
        r"torch.no_grad\(\)",
    ),
    (
        "an epoch with an empty batch",
        fit_with(batches=lambda: [(X[:0], Y[:0])]),
        ValueError,
        r"batches\(\) yielded an empty batch: a torch.float32 tensor of shape \(0, 2\)",
    ),
    (
        "train_seq2seq on a language model's (inputs, labels) batches",
        lambda: train_seq2seq(linear(), lambda: [(X, Y)], pad_index=0, num_epochs=1, device=CPU),
        ValueError,
        r"train_seq2seq's batches must be \(src, tgt_input, src_valid_len, label\), as "
        r"build_arrays makes them; got a batch of 2 tensors",
    ),
    (
        "train_seq2seq(..., label_smoothing=1.0)",
        lambda: train_seq2seq(linear(), lambda: [], pad_index=0, label_smoothing=1.0),
        ValueError,
        r"label_smoothing must be a fraction in \[0, 1\); got 1.0",
    ),
    # BERT's pretraining and fine-tuning
    (
        "fine_tune with float labels (cross-entropy would read them as probabilities)",
        lambda: fine_tune(*bert_data()[::2], bert_data()[3].float(), num_steps=1, device=CPU),
        TypeError,
        r"labels must be a 1-D tensor of integer classes; got a torch.float32 tensor of shape "
        r"\(4,\)",
    ),
    (
        "fine_tune(..., num_steps=0)",
        lambda: fine_tune(*bert_data()[::2], bert_data()[3], num_steps=0, device=CPU),
        ValueError,
        r"num_steps must be a positive integer; got 0",
    ),
    (
        "accuracy with one label for four examples (it would broadcast)",
        lambda: accuracy(bert_data()[0], bert_data()[2], Y[:1]),
        ValueError,
        r"labels and arrays must have the same number of rows; got 1 and 4",
    ),
    (
        "the masked-LM loss given a fine-tuning batch (tokens, segments, valid_lens, labels)",
        lambda: mlm_step_loss(bert_data()[0], (*bert_data()[2], bert_data()[3])),
        ValueError,
        r"batch must be \(tokens, segments, valid_lens, pred_positions, labels, weights\); got "
        r"a batch of 4 tensors",
    ),
    (
        "mlm_batches given a seed where its generator is meant",
        lambda: mlm_batches(bert_data()[2], bert_data()[1], 2, 0),
        TypeError,
        r"generator must be a torch.Generator\(\).manual_seed\(seed\); got 0 \(int\)",
    ),
    # metrics
    (
        "exact_match('cat', 'cut'): a str where a list of sentences is meant",
        lambda: exact_match("cat", "cut"),
        TypeError,
        r"predictions must be a list of sentences, each a list of str tokens or a "
        r"space-separated str; got the str 'cat'",
    ),
    (
        "corpus_bleu of two sentences, not two lists of them",
        lambda: corpus_bleu("the cat sat", "the cat sat"),
        TypeError,
        r"predictions must be a list of sentences.*; got the str 'the cat sat'",
    ),
    (
        "bleu of two lists of sentences (corpus_bleu is meant)",
        lambda: bleu([["the", "cat"]], [["the", "cat"]]),
        TypeError,
        r"pred_tokens\[0\] is \['the', 'cat'\] \(list\): pred_tokens must be one sentence, a "
        r"list of str tokens or a space-separated str",
    ),
    (
        "bleu of token-id tensors (every id would be a distinct token)",
        lambda: bleu(torch.tensor([4, 5, 6]), torch.tensor([4, 5, 6])),
        TypeError,
        r"pred_tokens must be one sentence, .*; got a torch.int64 tensor of shape \(3,\)",
    ),
    (
        "exact_match of lists of ids, not of tokens",
        lambda: exact_match([[4, 5]], [[4, 5]]),
        TypeError,
        r"predictions\[0\]\[0\] is 4 \(int\): predictions\[0\] must be one sentence",
    ),
    (
        "bleu(..., k=2.5)",
        lambda: bleu("a b c", "a b c", k=2.5),
        ValueError,
        r"k must be a positive integer; got 2.5",
    ),
    (
        "standard_corpus_bleu(..., k=0)",
        lambda: standard_corpus_bleu(["a b"], ["a b"], k=0),
        ValueError,
        r"k must be a positive integer; got 0",
    ),
    (
        "corpus_bleu of lists of unequal length",
        lambda: corpus_bleu(["a b", "c"], ["a b"]),
        ValueError,
        r"predictions and references must have the same length; got 2 and 1",
    ),
    (
        "exact_match of empty lists",
        lambda: exact_match([], []),
        ValueError,
        r"predictions is empty; there is nothing to score",
    ),
    # vocabularies, arrays, batches
    (
        "Vocab('the cat sat'): a str where a list of tokens is meant",
        lambda: Vocab("the cat sat"),
        TypeError,
        r"tokens must be a list of str tokens or of sentences \(lists of tokens\), not the str "
        r"'the cat sat': list\(text\) gives characters, text.split\(\) words",
    ),
    (
        "Vocab(tokens, reserved_tokens='<cls>'): five reserved characters",
        lambda: Vocab(["a"], reserved_tokens="<cls>"),
        TypeError,
        r"reserved_tokens must be a list of str tokens such as \['<cls>'\]; got the str '<cls>'",
    ),
    (
        "the same reserved token twice",
        lambda: Vocab(["a"], reserved_tokens=["<cls>", "<sep>", "<cls>"]),
        ValueError,
        r"reserved_tokens holds \['<cls>'\] more than once",
    ),
    (
        "Vocab(tokens, min_freq=1.5)",
        lambda: Vocab(["a"], min_freq=1.5),
        ValueError,
        r"min_freq must be an integer >= 0; got 1.5",
    ),
    (
        "vocab[5]: an index where a token is meant (it would map to <unk>)",
        lambda: vocab()[5],
        TypeError,
        r"tokens must be a token \(a str\) or a list of them; got 5 \(int\): the token at an "
        r"index is vocab.to_tokens\(index\)",
    ),
    (
        "to_tokens of float ids (int() would cut 1.7 to 1)",
        lambda: vocab().to_tokens(torch.tensor([1.7, 2.0])),
        ValueError,
        r"indices\[0\] must be an integer; got tensor\(1.7000\)",
    ),
    (
        "to_tokens of a batch of rows",
        lambda: vocab().to_tokens(torch.zeros(2, 3, dtype=torch.long)),
        TypeError,
        r"indices must be an index or a 1-D sequence of indices; got a torch.int64 tensor of "
        r"shape \(2, 3\)",
    ),
    (
        "batches(X, 2): a lone tensor where a tuple of tensors is meant",
        lambda: batches(X, 2),
        TypeError,
        r"arrays must be a tuple of tensors with one row per example, such as \(X, y\); got a "
        r"torch.float32 tensor of shape \(6, 2\): for one tensor, pass \(X,\)",
    ),
    (
        "batches(arrays, 64, g): the generator taken as shuffle, the order not reproducible",
        lambda: batches((X, Y), 2, torch.Generator()),
        TypeError,
        r"shuffle must be True or False \(a generator goes in generator=\); got "
        r"<torch._C.Generator",
    ),
    (
        "batches(arrays, 64, generator=0): a seed where a generator is meant",
        lambda: batches((X, Y), 2, generator=0),
        TypeError,
        r"generator must be a torch.Generator such as torch.Generator\(\).manual_seed\(0\), or "
        r"None; got 0 \(int\)",
    ),
    (
        "build_arrays(corpus, src_vocab, tgt_vocab, 8, 4): the corpus not unpacked",
        lambda: build_arrays(ParallelCorpus([["a"]], [["b"]]), vocab(), vocab(), 8, 4),
        TypeError,
        r"source_tokens is a whole ParallelCorpus: unpack it, build_arrays\(\*corpus, "
        r"src_vocab, tgt_vocab, num_steps\)",
    ),
    (
        "build_arrays of sentences as strs (they would be read character by character)",
        lambda: build_arrays(["the cat"], ["le chat"], vocab(), vocab(), 4),
        TypeError,
        r"source_tokens\[0\] is the str 'the cat': each sentence must be a list of words "
        r"\(sentence.split\(\)\)",
    ),
    (
        "build_arrays(..., num_steps=10.0)",
        lambda: build_arrays([["the"]], [["cat"]], vocab(), vocab(), 10.0),
        ValueError,
        r"num_steps must be a positive integer; got 10.0",
    ),
    (
        "parse_parallel_text(text, max_examples=1.5) (it would read every line)",
        lambda: parse_parallel_text("a\tb\nc\td", max_examples=1.5),
        ValueError,
        r"max_examples must be a positive integer; got 1.5",
    ),
    (
        "corpus.split(text, held_out='0.1')",
        lambda: corpus.split("a\nb\n", held_out="0.1"),
        ValueError,
        r"held_out must be a number; got '0.1'",
    ),
    (
        "kernel_regression_data(seed=None): other data at each run",
        lambda: kernel_regression_data(seed=None),
        ValueError,
        r"seed must be an integer; got None",
    ),
    # tasks
    (
        "date_task(1000, seed=None): other data at each run",
        lambda: date_task(1000, seed=None),
        ValueError,
        r"seed must be an integer; got None",
    ),
    (
        "split fractions that leave no training set",
        lambda: translation_task(100, seed=0, val_fraction=0.5, test_fraction=0.5),
        ValueError,
        r"val_fraction \+ test_fraction must be < 1, the rest being the training set; got "
        r"0.5 \+ 0.5 = 1",
    ),
    (
        "copy_task(1e3, seed=0): a float where a count is meant",
        lambda: copy_task(1e3, seed=0),
        ValueError,
        r"num_examples must be a positive integer; got 1000.0",
    ),
    (
        "format_date('2026-11-21', 0): a str where a date is meant",
        lambda: format_date("2026-11-21", 0),
        TypeError,
        r"date must be a datetime.date such as datetime.date\(2026, 11, 21\); got the str "
        r"'2026-11-21'",
    ),
    (
        "format_date(date, 16): a style past the last",
        lambda: format_date(datetime.date(2026, 11, 21), 16),
        ValueError,
        r"style must be an integer in \[0, 15\]; got 16",
    ),
    (
        "sample_clause(0): a seed where a random.Random is meant",
        lambda: sample_clause(0),
        TypeError,
        r"rng must be a random.Random such as random.Random\(0\); got 0 \(int\)",
    ),
    (
        "sample_clause(rng, max_words=4): no sentence is that short, it would draw forever",
        lambda: sample_clause(random.Random(0), max_words=4),
        ValueError,
        r"max_words=4 admits no sentence \(the shortest has 5 words\)",
    ),
    (
        "is_sentence('ka riti ...'): a str where the list of words is meant",
        lambda: is_sentence("ka riti mo falo mivu"),
        TypeError,
        r"tokens must be one sentence, a list of str tokens; got the str 'ka riti mo falo mivu'",
    ),
    (
        "lm_arrays of sentences as strs (each word would be <unk>)",
        lambda: lm_arrays(["ka riti mo falo mivu"], lm_vocab()),
        TypeError,
        r"sentences\[0\] is the str 'ka riti mo falo mivu': each sentence must be a list of "
        r"words",
    ),
    (
        "to_sentences of a list of ids, not a tensor",
        lambda: to_sentences([[1, 5, 2]], lm_vocab()),
        TypeError,
        r"tokens must be a tensor of token ids; got list",
    ),
    (
        "cross_entropy_per_token on labels that are all padding (0 / 0)",
        lambda: cross_entropy_per_token(nn.Embedding(4, 4), (torch.zeros(2, 3).long(),) * 2),
        ValueError,
        r"arrays hold no label that is not padding \(0\): no token to score",
    ),
    (
        "digit_splits with float labels (they would be cut to integers)",
        lambda: digit_splits(digits()[0], digits()[1] + 0.5),
        ValueError,
        r"images must hold numbers and labels integer classes; got images int64, labels float64",
    ),
    (
        "digit_splits of images valued 0..255, not 0..16",
        lambda: digit_splits(digits()[0] * 15, digits()[1]),
        ValueError,
        r"images must hold pixel values 0..16, as load_digits gives them; got values from 0 to "
        r"240",
    ),
    (
        "stratified_subset of a plain (images, labels) tuple",
        lambda: stratified_subset((torch.zeros(2, 1, 8, 8), Y[:2]), 0.5),
        TypeError,
        r"data must be an ImageSet \(images, labels\), such as splits.train; got a tuple of "
        r"2: \(a torch.float32 tensor of shape \(2, 1, 8, 8\), a torch.int64 tensor of shape "
        r"\(2,\)\)",
    ),
    (
        "bert_arrays of sentences as strs",
        lambda: bert_arrays(["ka riti mo falo mivu"], bert_vocab(), 14),
        TypeError,
        r"sentences\[0\] is the str 'ka riti mo falo mivu'",
    ),
    (
        "swap_articles(sentence_str, rng)",
        lambda: swap_articles("ka riti mo falo mivu", random.Random(0)),
        TypeError,
        r"tokens must be one sentence, a list of str tokens; got the str",
    ),
    # recipes
    (
        "a Recipe with an unknown metric (it would fail after its first epoch)",
        recipe(metric="accuracy"),
        ValueError,
        r"metric must be one of exact_match, bleu; got 'accuracy'",
    ),
    (
        "a dates Recipe whose num_steps cuts the longest dates",
        recipe(num_steps=16),
        ValueError,
        r"num_steps=16 would cut the dates task's sentences \(up to 29 tokens and <eos>\): use "
        r"num_steps >= 30",
    ),
    (
        "a Transformer recipe whose width the heads do not divide",
        recipe(num_heads=5),
        ValueError,
        r"num_hiddens=64 must be divisible by num_heads=5",
    ),
    (
        "run_recipe(name, seed='0')",
        lambda: run_recipe("transformer-dates", seed="0"),
        ValueError,
        r"seed must be an integer; got '0'",
    ),
    (
        "DigitsRecipe(epochs_at_target=50): never met in 40 epochs",
        lambda: DigitsRecipe(epochs_at_target=50),
        ValueError,
        r"epochs_at_target=50 can never be met in num_epochs=40",
    ),
    (
        "classification_accuracy of no images (0 / 0)",
        lambda: classification_accuracy(linear(), ImageSet(torch.zeros(0, 2), Y[:0])),
        ValueError,
        r"data holds no image; there is nothing to classify",
    ),
    (
        "train_classifier on an (images, labels) tuple",
        lambda: train_classifier(linear(), (X, Y), num_epochs=1, batch_size=2, lr=0.1),
        TypeError,
        r"data must be an ImageSet \(images, labels\), such as splits.train; got a tuple of "
        r"2: \(a torch.float32 tensor of shape \(6, 2\)",
    ),
    # figures
    (
        "plot of five curves with the four default formats (the fifth would be dropped)",
        lambda: plot(X[:, 0], [X[:, 1]] * 5),
        ValueError,
        r"fmts has 4 formats for 5 curves: pass one per curve",
    ),
    (
        "plot(..., legend='loss'): a legend of four letters",
        lambda: plot(X[:, 0], X[:, 1], legend="loss"),
        TypeError,
        r"legend must be a list of labels, one for each of the curves; got the str 'loss'",
    ),
    (
        "plot(..., legend=['train']) for two curves",
        lambda: plot(X[:, 0], [X[:, 1], X[:, 0]], legend=["train"]),
        ValueError,
        r"legend has 1 label for 2 curves",
    ),
    (
        "plot(epochs, history): a dict of curves",
        lambda: plot([1, 2], {"loss": [1.0, 0.5], "val": [1.2, 0.7]}),
        TypeError,
        r"Y must be a curve or a list of curves; got a dict: pass list\(d.values\(\)\), with "
        r"legend=list\(d\)",
    ),
    (
        "show_heatmaps(..., titles='head'): a title per letter",
        lambda: show_heatmaps(torch.rand(1, 4, 3, 3), "keys", "queries", titles="head"),
        TypeError,
        r"titles must be a list of labels, one for each of the columns; got the str 'head'",
    ),
    (
        "show_heatmaps with tick labels for another number of keys",
        lambda: show_heatmaps(torch.rand(3, 3), "keys", "queries", xticklabels=["a", "b"]),
        ValueError,
        r"xticklabels has 2 labels for 3 keys",
    ),
    (
        "plot_history(result): the recipe's result, not its history",
        lambda: plot_history(types.SimpleNamespace(history={"epoch": [1], "loss": [0.5]})),
        TypeError,
        r"history must be the dict fit returns, with 'epoch' and 'loss' lists; got "
        r"namespace\(.*\): pass its .history",
    ),
    (
        "plot_attention with the source sentence as one str",
        lambda: plot_attention(torch.rand(3, 3), "the cat sat", ["le", "chat", "."]),
        ValueError,
        r"source_tokens holds 11 tokens for weights of 3 source steps: one token per step, at "
        r"least one \(a str is one token per character\)",
    ),
    (
        "plot_learning_curves with five curves and four colours",
        lambda: plot_learning_curves([50], {str(i): [[0.5]] for i in range(5)}),
        ValueError,
        r"accuracies has 5 curves; the figure has colours for 4",
    ),
    (
        "plot_ablation({'GPT-2': 0.05}): one gap where the seeds' list is meant",
        lambda: plot_ablation({"GPT-2": 0.05}),
        ValueError,
        r"gaps must map each variant's name to a non-empty list of gaps \(one per seed\); "
        r"gaps\['GPT-2'\] is 0.05 \(float\)",
    ),
    (
        "draw_vit_patching(8, 3): patches that do not tile the image",
        lambda: draw_vit_patching(8, 3),
        ValueError,
        r"patch_size=3 must divide image_size=8",
    ),
    (
        "draw_multihead(2.0)",
        lambda: draw_multihead(2.0),
        ValueError,
        r"num_heads must be a positive integer; got 2.0",
    ),
    # helpers
    (
        "get_device(torch.device('cpu')): a device where its name is meant",
        lambda: get_device(torch.device("cpu")),
        TypeError,
        r"name must be one of auto, cpu, cuda, mps \(a str\) or None; got device\(type='cpu'\)",
    ),
    (
        "get_device('gpu'): the argument, not $COMPANION_DEVICE, is named",
        lambda: get_device("gpu"),
        ValueError,
        r"name must be one of auto, cpu, cuda, mps; got 'gpu'",
    ),
    (
        "reproducible(seed=None): seeded from the clock",
        lambda: reproducible(seed=None),
        ValueError,
        r"seed must be an integer; got None",
    ),
    (
        "claim with bounds the wrong way round (it could never hold)",
        lambda: claim("the loss is small", 0.5, above=0.9, below=0.1),
        ValueError,
        r"claim 'the loss is small': above=0.9 must be less than below=0.1",
    ),
    (
        "claim on a tensor of many values",
        lambda: claim("the accuracies are high", torch.tensor([0.9, 0.95]), above=0.8),
        ValueError,
        r"claim 'the accuracies are high': value must be one number; got a torch.float32 "
        r"tensor of shape \(2,\)",
    ),
    (
        "claim on a printed number, a str",
        lambda: claim("the gap is small", "0.02", below=0.03),
        ValueError,
        r"value must be one number; got the str '0.02'",
    ),
    (
        "show_source(f, start=3): a line number where a piece of the line is meant",
        lambda: show_source(fit, start=3),
        TypeError,
        r"start must be a piece of a line of the code \(a str\), or None; got 3 \(int\)",
    ),
    (
        "memory_probe(None)",
        lambda: memory_probe(None),
        TypeError,
        r"device must be a torch.device or a name such as 'cpu'; got None",
    ),
    (
        "run_in_fresh_process with a tensor argument (the child reads literals)",
        lambda: run_in_fresh_process("json", "dumps", torch.zeros(2)),
        ValueError,
        r"args must be Python literals \(numbers, strings, lists, dicts\); got \(tensor",
    ),
]
