"""The training loop, its history and progress display, and the recipes built on it."""

from __future__ import annotations

import dataclasses
import math
import sys
import types

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from companion import plot_history
from companion.data.tasks import reverse_task
from companion.data.text import Vocab, batches, build_arrays
from companion.experiments import recipes
from companion.experiments.recipes import RECIPES, build_model, evaluate, run_recipe
from companion.layers.losses import sequence_loss
from companion.models.seq2seq import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from companion.training.train import fit, train_seq2seq, weight_decay_groups


@pytest.fixture(scope="module")
def reverse_data():
    splits = reverse_task(600, seed=0, min_len=3, max_len=5)
    vocab = Vocab(splits.train.source + splits.train.target)
    arrays = build_arrays(*splits.train, vocab, vocab, num_steps=7)
    return splits, vocab, arrays


def small_model(vocab: Vocab) -> EncoderDecoder:
    torch.manual_seed(0)
    return EncoderDecoder(
        Seq2SeqEncoder(len(vocab), 16, 32, 1), Seq2SeqAttentionDecoder(len(vocab), 16, 32, 1)
    )


def test_sequence_loss_ignores_padding():
    logits = torch.randn(2, 3, 5)
    labels = torch.tensor([[1, 2, 0], [3, 0, 0]])  # 0 is padding
    manual = torch.stack(
        [
            torch.nn.functional.cross_entropy(logits[b, t][None], labels[b, t][None])
            for b, t in ((0, 0), (0, 1), (1, 0))
        ]
    ).mean()
    torch.testing.assert_close(sequence_loss(logits, labels, pad_index=0), manual)
    with pytest.raises(ValueError, match=r"got \(2, 3, 5\) and \(2, 4\)"):
        sequence_loss(logits, torch.zeros(2, 4, dtype=torch.long), pad_index=0)


def test_training_learns_and_records_its_history(reverse_data, monkeypatch, capsys):
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    splits, vocab, arrays = reverse_data
    model = small_model(vocab)
    generator = torch.Generator().manual_seed(0)
    history = train_seq2seq(
        model,
        lambda: batches(arrays, 32, generator=generator),
        pad_index=vocab.pad,
        num_epochs=6,
        lr=1e-2,
        evaluate=lambda m: {"score": 1.0},
        eval_every=2,
        device=torch.device("cpu"),
    )
    assert history["epoch"] == [1, 2, 3, 4, 5, 6]
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert [math.isnan(v) for v in history["score"]] == [True, False] * 3
    assert history["lr"][-1] < max(history["lr"])  # warm-up, then decay
    assert history["seconds"] == sorted(history["seconds"])
    assert capsys.readouterr().err == "", "COMPANION_PROGRESS=off is silent"


def test_stop_when_ends_training_early_and_progress_prints(reverse_data, monkeypatch, capsys):
    monkeypatch.setenv("COMPANION_PROGRESS", "on")
    splits, vocab, arrays = reverse_data
    scores = iter([0.1, 0.5, 0.9, 0.95])
    history = train_seq2seq(
        small_model(vocab),
        lambda: batches(arrays, 64, shuffle=False),
        pad_index=vocab.pad,
        num_epochs=10,
        evaluate=lambda m: {"accuracy": next(scores)},
        stop_when=lambda metrics: metrics["accuracy"] >= 0.9,
        device=torch.device("cpu"),
    )
    plot_history(history)  # the caller plots: the loop draws nothing
    assert history["epoch"] == [1, 2, 3]
    assert history["accuracy"] == [0.1, 0.5, 0.9]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("epoch 3/10  loss ")
    assert len(plt.gcf().axes) == 2, "loss and metric curves"
    plt.close("all")


def test_training_rejects_bad_settings(reverse_data):
    _, vocab, arrays = reverse_data
    model = small_model(vocab)
    common = dict(pad_index=vocab.pad, device=torch.device("cpu"))
    with pytest.raises(ValueError, match="num_epochs must be a positive integer; got 0"):
        train_seq2seq(model, lambda: batches(arrays, 8), num_epochs=0, **common)
    with pytest.raises(ValueError, match=r"warmup must be a fraction in \[0, 1\); got 1.5"):
        train_seq2seq(model, lambda: batches(arrays, 8), num_epochs=1, warmup=1.5, **common)
    with pytest.raises(ValueError, match="yielded no batch"):
        train_seq2seq(model, lambda: iter([]), num_epochs=1, **common)


def test_a_recipe_runs_end_to_end_and_scores_held_out_data(monkeypatch):
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    tiny = dataclasses.replace(
        RECIPES["bahdanau-dates"], num_examples=1500, num_epochs=2, num_hiddens=32, num_eval=50
    )
    monkeypatch.setitem(recipes.RECIPES, "tiny", tiny)
    result = run_recipe("tiny", device=torch.device("cpu"), stop_at_target=False)
    assert result.history["epoch"] == [1, 2]
    assert set(result.test_scores) == {"exact_match", "bleu"}
    assert 0 <= result.test_scores["exact_match"] <= result.test_scores["bleu"] <= 1
    again = evaluate(result.model, result.splits.test, result.src_vocab, result.tgt_vocab, tiny)
    assert again == result.test_scores


@pytest.mark.parametrize("name", list(RECIPES))
def test_recipe_models_build_on_the_cpu(name):
    recipe = RECIPES[name]
    vocab = Vocab(list("abcdefgh"))
    model = build_model(recipe, vocab, vocab)
    assert all(p.device.type == "cpu" for p in model.parameters())
    src = torch.randint(0, len(vocab), (2, recipe.num_steps))
    logits = model(src, src[:, : recipe.tgt_num_steps], torch.tensor([3, recipe.num_steps]))
    assert logits.shape == (2, recipe.tgt_num_steps, len(vocab))


def test_unknown_recipe_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown recipe 'gpt'; expected one of"):
        run_recipe("gpt")


def test_every_model_recipe_returns_the_one_result_the_benchmark_prints(monkeypatch):
    import importlib
    import typing

    from companion.bench import train as bench_train
    from companion.bench.report import train_table

    assert set(bench_train.MODEL_RECIPES) == {"gpt", "llama", "bert", "vit"}
    for name, module in bench_train.MODEL_RECIPES.items():
        time_to_quality = importlib.import_module(module).time_to_quality
        assert typing.get_type_hints(time_to_quality)["return"] is recipes.TimeToQuality, name
    measured = recipes.TimeToQuality("digits", "ViT", "accuracy >= 0.9", False, 1.25, 3, 0.5)
    vit = importlib.import_module(bench_train.MODEL_RECIPES["vit"])
    monkeypatch.setattr(vit, "time_to_quality", lambda seed, device: measured)
    rows = bench_train.model_rows(["vit"], 0, torch.device("cpu"))
    assert rows == [
        {
            "name": "vit",
            "kind": "model",
            "task": "digits",
            "model": "ViT",
            "target": "accuracy >= 0.9",
            "reached": False,
            "seconds": 1.25,
            "epochs": 3,
            "score": 0.5,
        }
    ]
    assert train_table({"rows": rows}).rows == [
        ["vit", "digits", "ViT", "accuracy >= 0.9", "not reached", "3", "0.5000"]
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        measured.seconds = 0.0  # type: ignore[misc]


def test_progress_is_one_live_line_in_a_notebook(monkeypatch):
    from IPython import display as ipython_display

    from companion.training.train import _Progress

    shown, updates = [], []

    class Handle:
        def update(self, obj, raw=False):
            updates.append(obj["text/plain"])

    def fake_display(obj, raw=False, display_id=False):
        shown.append(obj["text/plain"])
        return Handle()

    monkeypatch.setenv("COMPANION_PROGRESS", "auto")
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(ipython_display, "display", fake_display)
    progress = _Progress()
    progress.update("epoch 1/2")
    progress.update("epoch 2/2")
    assert shown == ["training..."] and updates == ["epoch 1/2", "epoch 2/2"]


def test_every_epoch_sees_the_next_shuffle_of_the_generator(reverse_data, monkeypatch):
    """Counting the steps must not use up a permutation: epoch e sees the e-th shuffle."""
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    _, vocab, arrays = reverse_data
    seen: list[torch.Tensor] = []

    def loss_fn(model, batch):
        src = batch[0]
        if torch.is_grad_enabled():  # a training step, not the pass that sizes lazy layers
            seen.append(src)
        return model(src, batch[1], batch[2]).float().mean() * 0

    generator = torch.Generator().manual_seed(0)
    fit(
        small_model(vocab),
        lambda: batches(arrays, 200, generator=generator),
        loss_fn,
        num_epochs=3,
        device=torch.device("cpu"),
    )
    fresh = torch.Generator().manual_seed(0)
    expected = [b[0] for _ in range(3) for b in batches(arrays, 200, generator=fresh)]
    assert len(seen) == len(expected)
    assert all(torch.equal(a, b) for a, b in zip(seen, expected))


def test_history_keys_have_a_fixed_order(reverse_data, monkeypatch):
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    _, vocab, arrays = reverse_data
    history = train_seq2seq(
        small_model(vocab),
        lambda: batches(arrays, 200, shuffle=False),
        pad_index=vocab.pad,
        num_epochs=2,
        evaluate=lambda m: {"zeta": 1.0, "alpha": 0.5, "mu": 0.0},
        device=torch.device("cpu"),
    )
    assert list(history) == ["epoch", "loss", "lr", "seconds", "zeta", "alpha", "mu"]


def test_weight_decay_spares_biases_norms_and_embeddings():
    model = torch.nn.Sequential(
        torch.nn.Embedding(10, 4),
        torch.nn.Linear(4, 4),
        torch.nn.LayerNorm(4),
        torch.nn.GRU(4, 4),
    )
    decay, no_decay = weight_decay_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    named = {id(p): name for name, p in model.named_parameters()}
    assert sorted(named[id(p)] for p in decay["params"]) == [
        "1.weight",
        "3.weight_hh_l0",
        "3.weight_ih_l0",
    ]
    assert sorted(named[id(p)] for p in no_decay["params"]) == [
        "0.weight",
        "1.bias",
        "2.bias",
        "2.weight",
        "3.bias_hh_l0",
        "3.bias_ih_l0",
    ]


def book_models() -> dict[str, torch.nn.Module]:
    from companion import (
        GPT,
        BERTModel,
        EncoderDecoder,
        TransformerDecoder,
        TransformerEncoder,
        ViT,
    )
    from companion.models.seq2seq import Seq2SeqAttentionDecoder, Seq2SeqEncoder

    return {
        "GPT": GPT(11, 8, 16, 2, 1, max_len=6),
        "GPT untied": GPT(11, 8, 16, 2, 1, max_len=6, tie_weights=False, use_bias=True),
        "BERT": BERTModel(11, 8, 16, 2, 1, 0.0, max_len=6),
        "ViT": ViT(8, 2, 8, 16, 2, 1, 0.0, 0.0, in_channels=1),
        "Transformer": EncoderDecoder(
            TransformerEncoder(11, 8, 16, 2, 1, 0.0), TransformerDecoder(11, 8, 16, 2, 1, 0.0)
        ),
        "Bahdanau": EncoderDecoder(
            Seq2SeqEncoder(11, 4, 8, 2), Seq2SeqAttentionDecoder(11, 4, 8, 2)
        ),
    }


# nn.Embedding tables are spared; embeddings stored as an nn.Parameter (ViT's cls_token and
# positions, BERT's positions) are decayed like matrices (train.py's docstring says why).
EMBEDDINGS = ("embedding.weight",)
SPARED = ("bias", "ln", "norm", *EMBEDDINGS)


@pytest.mark.parametrize("name", list(book_models()))
def test_one_weight_decay_rule_on_every_model(name):
    model = book_models()[name]
    decay, no_decay = weight_decay_groups(model, 0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = sorted(names[id(p)] for p in decay["params"])
    spared = sorted(names[id(p)] for p in no_decay["params"])
    assert sorted(decayed + spared) == sorted(names.values())  # each parameter once
    assert decayed and not [n for n in decayed if any(word in n for word in SPARED)], decayed
    embeddings = [n for n in names.values() if n.endswith(EMBEDDINGS)]
    assert set(embeddings) <= set(spared)
    parameters = [n for n in names.values() if n.endswith(("pos_embedding", "cls_token"))]
    assert set(parameters) <= set(decayed)  # the documented wart: stored as nn.Parameter
    weights = {n for n, p in model.named_parameters() if p.dim() >= 2}
    assert set(decayed) == weights - set(embeddings)  # every other matrix is a layer's weight


@pytest.mark.parametrize("num_steps", [5, 10, 20])
def test_a_warm_up_of_one_step_or_less_trains(num_steps, monkeypatch):
    """OneCycleLR divides by zero when the warm-up is exactly one step (10 steps at 0.1)."""
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(num_steps)]
    history = fit(
        model,
        lambda: iter(data),
        lambda m, batch: torch.nn.functional.mse_loss(m(batch[0]), batch[1]),
        num_epochs=1,
        warmup=0.1,
        device=torch.device("cpu"),
    )
    assert history["epoch"] == [1] and math.isfinite(history["loss"][0])


def test_fit_takes_integers_of_any_type_no_clipping_and_a_diverged_metric(monkeypatch):
    """numpy integers count as ints, ``grad_clip=math.inf`` clips nothing, and a metric that is
    nan (a diverged run) is recorded, not refused."""
    monkeypatch.setenv("COMPANION_PROGRESS", "off")
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]

    def train(**options):
        torch.manual_seed(0)
        return fit(
            torch.nn.Linear(3, 1),
            lambda: iter(data),
            lambda m, batch: torch.nn.functional.mse_loss(m(batch[0]), batch[1]),
            evaluate=lambda m: {"val": math.nan},
            device="cpu",
            **options,
        )

    plain = train(num_epochs=2, grad_clip=1e9)
    numpy = train(num_epochs=np.int64(2), grad_clip=math.inf)
    assert numpy["epoch"] == plain["epoch"] == [1, 2]
    assert numpy["loss"] == plain["loss"]
    assert all(math.isnan(v) for v in numpy["val"])
