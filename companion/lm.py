"""A decoder-only language model, GPT (sec-language-models; Radford et al., 2018), its data and
its time-to-quality recipe.

:class:`GPT` is a stack of the Vision Transformer's pre-norm blocks
(:class:`companion.transformer.PreNormBlock`, d2l's ``ViTBlock``) called with ``causal=True``:
the causal mask is the only change from an encoder. Each position predicts the next token, so
one forward pass over a sentence gives a loss at every position. It is
:class:`companion.decoder.DecoderLM` in GPT-2's configuration, so the Llama-style model of
sec-modern-decoder runs the same code.

Two choices, made here and explained in the chapter:

- **learned positions**, a ``max_len x num_hiddens`` table as in GPT-2 and ViT: a sentence of
  the invented language has at most 13 input tokens, the table is tiny, and the model never
  meets a position it was not trained on (``max_len`` is a hard limit, checked);
- **tied embeddings** (Press and Wolf, 2017): the output layer reuses the token embedding,
  ``logits = LayerNorm(H) E^T``. It saves ``vocab_size x num_hiddens`` parameters (a quarter of
  the untied model here), and a token's input and output vectors learn from both uses.
  ``tie_weights=False`` gives a separate output matrix.

:meth:`GPT.generate` (the decoder's) samples with :func:`companion.sampling.sample_next`
and, by default, reads the keys and values of earlier positions from a
:class:`companion.kv_cache.KVCache` per block, so each new token costs one position's work;
``use_cache=False`` re-runs the whole prefix at every step, for comparison. Both give the same
tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from companion.decoder import DecoderLM, gpt2_config
from companion.device import get_device
from companion.tasks.language import (
    invented_sentences,
    invented_words,
    sentence_log_prob,
)
from companion.text import Vocab, batches
from companion.train import eval_mode, fit, sequence_loss


class GPT(DecoderLM):
    """A decoder-only Transformer language model (sec-language-models):

        H_0 = E[x] + P,   H_l = Block_l(H_{l-1}, causal),   logits = LayerNorm(H_L) E^T

    ``X`` of shape ``(batch, steps)`` holds token ids; the output holds ``(batch, steps,
    vocab_size)`` logits, where row ``t`` scores the token after ``X[:, :t + 1]``. ``E`` is the
    ``(vocab_size, num_hiddens)`` token embedding, ``P`` the learned positions (``max_len``
    rows), each block a :class:`~companion.transformer.PreNormBlock` with a causal mask.

    GPT is :class:`~companion.decoder.DecoderLM` configured as GPT-2
    (:func:`~companion.decoder.gpt2_config`), built from d2l-style arguments: the forward pass,
    the caches and :meth:`generate` are the decoder's, and sec-modern-decoder changes only the
    configuration. ``caches`` (:meth:`new_caches`, one :class:`~companion.kv_cache.KVCache` per
    block, each its own) make the call continue the sequence they hold. ``causal=False`` drops
    the mask and turns the model into an encoder, which next-token training cannot use: each
    position would see the token it must predict.
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        mlp_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        max_len: int,
        dropout: float = 0.0,
        tie_weights: bool = True,
        use_bias: bool = False,
        *,
        causal: bool = True,
    ) -> None:
        super().__init__(
            gpt2_config(
                vocab_size, num_hiddens=num_hiddens, ffn_num_hiddens=mlp_num_hiddens,
                num_heads=num_heads, num_blks=num_blks, max_len=max_len, dropout=dropout,
                tie_weights=tie_weights, bias=use_bias, causal=causal,
            )
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Data, loss and a time-to-quality recipe on the invented language (sec-language-models).

PAD_INDEX = 0  # <pad> in every Vocab: its labels carry no loss
NUM_STEPS = 13  # <bos> and at most 12 words in; at most 12 words and <eos> out


def language_model_vocab() -> Vocab:
    """``<pad> <bos> <eos> <unk>``, then every word of the invented language (523 in all), so
    no sentence ever meets ``<unk>``, whichever sentences the training set happens to hold."""
    return Vocab(reserved_tokens=invented_words())


def lm_arrays(
    sentences: Sequence[Sequence[str]], vocab: Vocab, num_steps: int = NUM_STEPS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels for next-token prediction, each ``(num_sentences, num_steps)``:

        inputs  <bos> w_1 ... w_n  <pad> ...
        labels  w_1  ...  w_n <eos> <pad> ...

    Label ``t`` is the token after inputs ``0..t``. A sentence longer than ``num_steps - 1``
    words is a ``ValueError``, never cut silently.
    """
    rows = []
    for sentence in sentences:
        if len(sentence) + 1 > num_steps:
            raise ValueError(
                f"a sentence of {len(sentence)} words needs num_steps >= "
                f"{len(sentence) + 1}; got num_steps={num_steps}"
            )
        ids = [vocab.bos, *vocab[list(sentence)], vocab.eos]
        rows.append(ids + [vocab.pad] * (num_steps + 1 - len(ids)))
    sequences = torch.tensor(rows, dtype=torch.long)  # (num_sentences, num_steps + 1)
    inputs = sequences[:, :-1].masked_fill(sequences[:, :-1] == vocab.eos, vocab.pad)
    return inputs, sequences[:, 1:]  # <eos> is only ever a label


def to_sentences(tokens: torch.Tensor, vocab: Vocab) -> list[list[str]]:
    """The words of each generated row ``(batch, steps)``: a leading ``<bos>`` dropped, cut
    before the first ``<eos>``. A row that never emitted ``<eos>`` keeps all its tokens (with
    ``NUM_STEPS`` new tokens that is 13 words, longer than any sentence of the language)."""
    sentences = []
    for row in tokens.tolist():
        row = row[1:] if row and row[0] == vocab.bos else row
        sentences.append(vocab.to_tokens(row[: row.index(vocab.eos)] if vocab.eos in row else row))
    return sentences


def next_token_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Mean cross-entropy of each label given the inputs before it, padding excluded: the loss
    :func:`companion.train.fit` minimises for a language model."""
    inputs, labels = batch
    return sequence_loss(model(inputs), labels, PAD_INDEX)  # logits (batch, steps, vocab)


@torch.no_grad()
def cross_entropy_per_token(
    model: nn.Module, arrays: tuple[torch.Tensor, torch.Tensor], batch_size: int = 1000
) -> float:
    """Summed cross-entropy over every label that is not padding, divided by their number:
    nats per token, directly comparable with :func:`language_entropy`'s ``per_token``."""
    device = next(model.parameters()).device
    total, count = torch.zeros((), device=device), 0
    with eval_mode(model):
        for inputs, labels in batches(arrays, batch_size, shuffle=False):
            logits = model(inputs.to(device))  # (batch, steps, vocab)
            labels = labels.to(device)
            total += F.cross_entropy(
                logits.transpose(1, 2), labels, ignore_index=PAD_INDEX, reduction="sum"
            )
            count += int((labels != PAD_INDEX).sum())
    return total.item() / count


RECIPE_SENTENCES = 20_000
RECIPE_BATCH_SIZE = 128
RECIPE_EPOCHS = 3
RECIPE_LR = 3e-3
RECIPE_MODEL: dict[str, Any] = dict(
    num_hiddens=64, mlp_num_hiddens=128, num_heads=4, num_blks=2, max_len=NUM_STEPS
)


TARGET_GAP = 0.03  # nats per token above the entropy floor


def recipe_gpt(vocab_size: int) -> tuple[nn.Module, str]:
    """The recipe's model, a :class:`GPT` of :data:`RECIPE_MODEL`, and its name."""
    return GPT(vocab_size, **RECIPE_MODEL), "GPT, {num_hiddens} wide, {num_blks} blocks".format(
        **RECIPE_MODEL
    )


def time_to_quality(
    seed: int = 0,
    device: torch.device | None = None,
    build: Callable[[int], tuple[nn.Module, str]] = recipe_gpt,
) -> dict:
    """Train a language model from scratch on the invented language until its validation
    cross-entropy is within :data:`TARGET_GAP` nats per token of the entropy floor.

    ``build(vocab_size)`` returns the model (on the CPU) and its name: by default
    :func:`recipe_gpt`; :func:`companion.ablation.time_to_quality` passes a Llama-style model
    of the same size, so the two recipes differ only in the model.

    The gap of a corpus is measured against that corpus's own surprisal under the true
    distribution, ``-sum log P(S) / number of tokens``, whose expectation is the floor
    (``language_entropy().per_token``): the paired difference estimates the same gap without
    the sampling noise of the corpus's entropy (a standard deviation of about 0.005 nats per
    token for 2,000 sentences).

    Returns ``task``, ``model``, ``target``, ``reached`` (whether the validation gap met the
    target), ``seconds`` (training, evaluation included), ``epochs`` and ``score``: the gap on
    a test corpus drawn with another seed.
    """
    device = device or get_device()
    torch.manual_seed(seed)
    vocab = language_model_vocab()
    sentences = [  # train, val, test
        invented_sentences(n, seed=3 * seed + i)
        for i, n in enumerate((RECIPE_SENTENCES, 2000, 2000))
    ]
    val_floor, test_floor = (
        sum(-sentence_log_prob(s) for s in split) / sum(len(s) + 1 for s in split)
        for split in sentences[1:]
    )
    train, val, test = (lm_arrays(split, vocab) for split in sentences)
    model, name = build(len(vocab))
    model = model.to(device)
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    history = fit(
        model,
        lambda: batches(train, RECIPE_BATCH_SIZE, generator=generator),
        next_token_loss,
        num_epochs=RECIPE_EPOCHS,
        lr=RECIPE_LR,
        evaluate=lambda m: {"gap": cross_entropy_per_token(m, val) - val_floor},
        stop_when=lambda metrics: metrics["gap"] <= TARGET_GAP,
        device=device,
    )
    seconds = time.perf_counter() - start
    return {
        "task": f"invented language, {RECIPE_SENTENCES // 1000}k sentences",
        "model": name,
        "target": f"cross-entropy <= floor + {TARGET_GAP} nats/token",
        "reached": history["gap"][-1] <= TARGET_GAP,
        "seconds": seconds,
        "epochs": len(history["epoch"]),
        "score": cross_entropy_per_token(model, test) - test_floor,
    }
