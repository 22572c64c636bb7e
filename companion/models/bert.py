"""BERT: an encoder pretrained by masked language modelling (sec-pretraining; Devlin et al., 2019).

Names, signatures and parameter names follow the d2l 1.0.3 package (``BERTEncoder``,
``MaskLM``, ``NextSentencePred``, ``BERTModel``, ``get_tokens_and_segments``), so a d2l
``state_dict`` loads into these classes with ``strict=True`` and gives the same outputs. Where a
layer's input size is known it is an ``nn.Linear`` instead of d2l's lazy one (the keyword-only
``num_inputs``); the parameters are the same. ``BERTClassifier`` is the fine-tuning model of
d2l's chapter on natural language inference, with the number of classes as an argument.

:func:`mask_tokens` draws the masked-language-model inputs with BERT's 80/10/10 rule. d2l's
``_get_mlm_data_from_tokens`` is the reference for its behaviour: which positions may be
predicted (every token but ``<cls>`` and ``<sep>``), how many (``max(1, round(0.15 * length))``,
the length counting ``<cls>`` and ``<sep>``) and what replaces them. It works on a whole padded
batch at once and draws from an explicit ``torch.Generator``, never from global state, so the
same generator gives the same masks.

**Initialisation.** d2l draws the token, segment and position embeddings from N(0, 1). Here they
start with standard deviation 0.02, as in BERT's own code; only the initial values differ (a
d2l state dict loads as before). Pretrained as in sec-pretraining, the chapter's model learns
the gender and number of hidden articles (its claims, swept over seeds and CPUs, are in
book/claims.json). In the one run we made with d2l's N(0, 1) embeddings instead (seed 0, when
this was chosen), the masked-LM loss ended far higher, the agreement was mostly wrong, and
fine-tuning on agreement stayed at chance.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple, cast

import torch
from torch import nn

from companion._validate import (
    check_in_features,
    check_integer,
    check_positive,
    check_same_device,
    check_sequence,
    check_token_ids,
    check_type,
    check_valid_lens,
    values_checked,
)
from companion.layers.attention import _linear
from companion.layers.blocks import TransformerEncoderBlock

CLS, SEP, MASK = "<cls>", "<sep>", "<mask>"
INIT_STD = 0.02  # BERT's initializer range


def get_tokens_and_segments(
    tokens_a: list[str], tokens_b: list[str] | None = None
) -> tuple[list[str], list[int]]:
    """BERT's input for one sentence or a pair (sec-pretraining), as d2l writes it:

        <cls> tokens_a <sep>                  segments 0 ... 0
        <cls> tokens_a <sep> tokens_b <sep>   segments 0 ... 0 1 ... 1

    Segment 0 covers ``<cls>``, ``tokens_a`` and the first ``<sep>``; segment 1 covers
    ``tokens_b`` and the last ``<sep>``.
    """
    tokens = [CLS, *tokens_a, SEP]
    segments = [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += [*tokens_b, SEP]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def _embedding(num_embeddings: int, num_hiddens: int) -> nn.Embedding:
    check_positive(vocab_size=num_embeddings, num_hiddens=num_hiddens)
    embedding = nn.Embedding(num_embeddings, num_hiddens)
    nn.init.normal_(embedding.weight, std=INIT_STD)
    return embedding


class BERTEncoder(nn.Module):
    """The BERT encoder (sec-pretraining): three embeddings summed, then encoder blocks:

        H_0 = E_token[tokens] + E_segment[segments] + P[:steps],
        H_l = EncoderBlock_l(H_{l-1}, valid_lens),  l = 1..num_blks

    ``tokens`` and ``segments`` are ``(batch, steps)``; the output is ``(batch, steps,
    num_hiddens)``. The positions ``P`` (``pos_embedding``, ``(1, max_len, num_hiddens)``) are
    learned, not sinusoidal, and the blocks are companion's ``TransformerEncoderBlock`` with
    biases, as in d2l (named ``blks.0``, ``blks.1``, ...).
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
        max_len: int = 1000,
    ) -> None:
        super().__init__()
        check_positive(num_blks=num_blks, max_len=max_len)
        self.num_hiddens = num_hiddens
        self.token_embedding = _embedding(vocab_size, num_hiddens)
        self.segment_embedding = _embedding(2, num_hiddens)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"{i}",
                TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, True),
            )
        self.pos_embedding = nn.Parameter(INIT_STD * torch.randn(1, max_len, num_hiddens))

    def forward(
        self, tokens: torch.Tensor, segments: torch.Tensor, valid_lens: torch.Tensor | None
    ) -> torch.Tensor:
        tokens, segments = self._check_inputs(tokens, segments)
        # (batch, steps) -> (batch, steps, num_hiddens)
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, : X.shape[1], :]
        for blk in self.blks:
            X = blk(X, valid_lens)  # (batch, steps, num_hiddens)
        return X

    def _check_inputs(
        self, tokens: torch.Tensor, segments: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and segments 0 or 1, of one shape, at most ``max_len`` steps, on the
        model's device (the blocks check ``valid_lens``); returned as ``torch.long``."""
        tokens = check_token_ids(tokens, self.token_embedding.num_embeddings, "tokens")
        segments = check_token_ids(
            segments, 2, "segments", what="segment ids", within="the segments"
        )
        if segments.shape != tokens.shape:
            raise ValueError(
                f"segments must have the shape of tokens {tuple(tokens.shape)}; "
                f"got {tuple(segments.shape)}"
            )
        max_len = self.pos_embedding.shape[1]
        if tokens.shape[1] > max_len:
            raise ValueError(f"tokens has {tokens.shape[1]} steps, more than max_len={max_len}")
        check_same_device(tokens, self.token_embedding.weight, "tokens")
        return tokens, segments


class MaskLM(nn.Module):
    """The masked language model head (sec-pretraining): the encoder outputs at the predicted
    positions, through a one-hidden-layer MLP, give logits over the vocabulary:

        h_{b,j} = X[b, pred_positions[b, j]],
        logits_{b,j} = W_2 LayerNorm(ReLU(W_1 h_{b,j} + b_1)) + b_2

    ``X`` is ``(batch, steps, num_inputs)`` and ``pred_positions`` ``(batch, num_preds)``; the
    logits are ``(batch, num_preds, vocab_size)``. ``mlp.0``, ``mlp.2`` and ``mlp.3`` are d2l's
    two linear layers and the norm; ``num_inputs`` (keyword-only) fixes the input size of
    ``mlp.0``, which is lazy without it, as in d2l.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, *, num_inputs: int | None = None) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            _linear(num_inputs, num_hiddens, bias=True),
            nn.ReLU(),
            nn.LayerNorm(num_hiddens),
            nn.Linear(num_hiddens, vocab_size),
        )

    def forward(self, X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        first = cast(nn.Linear, self.mlp[0])  # nn.Sequential: untyped
        pred_positions = _check_mask_lm_inputs(X, pred_positions, first)
        index = pred_positions[..., None].expand(-1, -1, X.shape[-1])  # (batch, preds, d)
        masked_X = X.gather(1, index)  # (batch, num_preds, num_hiddens): row b, step p[b, j]
        return self.mlp(masked_X)  # (batch, num_preds, vocab_size)


def _check_mask_lm_inputs(
    X: torch.Tensor, pred_positions: torch.Tensor, first: nn.Linear
) -> torch.Tensor:
    """``X`` ``(batch, steps, num_hiddens)``, as the ``first`` layer takes it;
    ``pred_positions`` ``(batch, num_preds)``, each a position in ``[0, steps)``, returned as
    ``torch.long``."""
    check_in_features(X=(first, X))
    if X.dim() != 3:
        raise ValueError(f"X must be 3-D (batch, steps, num_hiddens); got {tuple(X.shape)}")
    pred_positions = check_token_ids(
        pred_positions, X.shape[1], "pred_positions", what="positions", within="the sequence"
    )
    if pred_positions.shape[0] != X.shape[0]:
        raise ValueError(
            f"pred_positions must be (batch={X.shape[0]}, num_preds); "
            f"got {tuple(pred_positions.shape)}"
        )
    return pred_positions


class NextSentencePred(nn.Module):
    """The next sentence prediction head (sec-pretraining): two logits, "is the next
    sentence" or not, from the ``<cls>`` representation ``X`` of shape ``(batch, num_inputs)``:
    ``logits = W X + b``, ``(batch, 2)``. ``num_inputs`` (keyword-only) makes the layer
    non-lazy."""

    def __init__(self, *, num_inputs: int | None = None) -> None:
        super().__init__()
        self.output = _linear(num_inputs, 2, bias=True)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_in_features(X=(self.output, X))
        if X.dim() != 2:
            raise ValueError(f"X must be 2-D (batch, num_hiddens); got {tuple(X.shape)}")
        return self.output(X)  # (batch, 2)


class BERTModel(nn.Module):
    """BERT (sec-pretraining): the encoder, the masked-LM head and the next-sentence head:

        H = BERTEncoder(tokens, segments, valid_lens)           (batch, steps, num_hiddens)
        mlm_Y_hat = MaskLM(H, pred_positions)                   (batch, num_preds, vocab_size)
        nsp_Y_hat = NextSentencePred(tanh(W_h H[:, 0] + b_h))   (batch, 2)

    ``forward`` returns ``(H, mlm_Y_hat, nsp_Y_hat)``; ``mlm_Y_hat`` is ``None`` without
    ``pred_positions``. ``hidden`` (the tanh layer over ``<cls>``) is shared with a classifier
    fine-tuned later (:class:`BERTClassifier`).
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        ffn_num_hiddens: int,
        num_heads: int,
        num_blks: int,
        dropout: float,
        max_len: int = 1000,
    ) -> None:
        super().__init__()
        self.encoder = BERTEncoder(
            vocab_size,
            num_hiddens,
            ffn_num_hiddens,
            num_heads,
            num_blks,
            dropout,
            max_len=max_len,
        )
        self.hidden = nn.Sequential(nn.Linear(num_hiddens, num_hiddens), nn.Tanh())
        self.mlm = MaskLM(vocab_size, num_hiddens, num_inputs=num_hiddens)
        self.nsp = NextSentencePred(num_inputs=num_hiddens)

    def forward(
        self,
        tokens: torch.Tensor,
        segments: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        pred_positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        encoded_X = self.encoder(tokens, segments, valid_lens)  # (batch, steps, num_hiddens)
        mlm_Y_hat = None if pred_positions is None else self.mlm(encoded_X, pred_positions)
        # Step 0 is <cls>: its output summarises the sequence for the sentence-level head.
        nsp_Y_hat = self.nsp(self.hidden(encoded_X[:, 0, :]))  # (batch, 2)
        return encoded_X, mlm_Y_hat, nsp_Y_hat


class BERTClassifier(nn.Module):
    """A sequence classifier fine-tuned from a BERT (sec-pretraining), as in d2l's chapter on
    natural language inference: the pretrained encoder and ``hidden`` layer, and a new output
    layer on a summary ``s`` of the sequence:

        H = BERTEncoder(tokens, segments, valid_lens),   logits = W_o tanh(W_h s + b_h) + b_o

    with ``s = H[:, 0]``, the ``<cls>`` position (``pooling="cls"``, d2l's and BERT's), or
    ``s`` the mean of ``H`` over the ``valid_lens`` real positions (``pooling="mean"``).
    ``<cls>`` is a good summary only if pretraining trained it, as BERT's next sentence
    prediction does. ``forward(tokens, segments, valid_lens)`` returns ``(batch, num_classes)``
    logits (d2l's takes the three as one tuple and has 3 classes). The encoder and ``hidden``
    are the ``bert``'s own modules, not copies: copy the model first to keep the pretrained one.
    """

    def __init__(self, bert: BERTModel, num_classes: int = 2, *, pooling: str = "cls") -> None:
        super().__init__()
        check_positive(num_classes=num_classes)
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean'; got {pooling!r}")
        self.pooling = pooling
        self.encoder = bert.encoder
        self.hidden = bert.hidden
        self.output = nn.Linear(bert.encoder.num_hiddens, num_classes)

    def forward(
        self, tokens: torch.Tensor, segments: torch.Tensor, valid_lens: torch.Tensor | None = None
    ) -> torch.Tensor:
        encoded_X = self.encoder(tokens, segments, valid_lens)  # (batch, steps, num_hiddens)
        if self.pooling == "cls":
            summary = encoded_X[:, 0, :]  # (batch, num_hiddens)
        else:
            real = torch.ones_like(encoded_X[..., :1])  # (batch, steps, 1)
            if valid_lens is not None:  # 1 at the real positions, 0 at the padding
                _check_mean_pooling(valid_lens)
                steps = torch.arange(tokens.shape[1], device=tokens.device)
                real = (steps < valid_lens[:, None]).unsqueeze(-1).to(real.dtype)
            count = real.sum(dim=1).clamp(min=1)  # (batch, 1); never 0 (checked on the CPU)
            summary = (encoded_X * real).sum(dim=1) / count  # (batch, num_hiddens)
        return self.output(self.hidden(summary))  # (batch, num_classes)


def _check_mean_pooling(valid_lens: torch.Tensor) -> None:
    """A mean needs a real position in every row: ``valid_lens >= 1``."""
    if values_checked(valid_lens) and valid_lens.numel() and int(valid_lens.min()) < 1:
        raise ValueError(
            "valid_lens must be >= 1 with pooling='mean': a row with no real position has "
            f"no mean; got {valid_lens.tolist()}"
        )


class MaskedTokens(NamedTuple):
    """What :func:`mask_tokens` returns: the masked-LM inputs and targets of a batch."""

    tokens: torch.Tensor  # (batch, steps): the input, some tokens replaced
    pred_positions: torch.Tensor  # (batch, num_preds): positions to predict, ascending, 0-padded
    labels: torch.Tensor  # (batch, num_preds): the original tokens there, 0-padded
    weights: torch.Tensor  # (batch, num_preds): 1.0 for a prediction, 0.0 for padding


def _check_masking_arguments(
    tokens: torch.Tensor,
    valid_lens: torch.Tensor,
    vocab_size: int,
    mask_id: int,
    special_ids: Sequence[int],
    generator: torch.Generator,
    mask_prob: float,
    rule: Sequence[float],
) -> torch.Tensor:
    """The arguments of :func:`mask_tokens`; returns ``tokens`` as ``torch.long``."""
    check_integer("vocab_size", vocab_size)
    tokens = check_token_ids(tokens, vocab_size, "tokens")
    check_valid_lens(valid_lens, tokens.shape[0], tokens.shape[1], tokens.shape[1], axis="steps")
    check_integer("mask_id", mask_id, minimum=None)
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id must be in [0, vocab_size={vocab_size}); got {mask_id}")
    check_sequence("special_ids", special_ids, "a list of token ids, such as [cls_id, sep_id]")
    for i, special in enumerate(special_ids):
        check_integer(f"special_ids[{i}]", special, minimum=0)
    check_type("generator", generator, torch.Generator, "a torch.Generator().manual_seed(seed)")
    if generator.device.type != "cpu":
        raise ValueError(
            f"generator must be a CPU generator (the draws happen on the CPU); got "
            f"one on {generator.device}"
        )
    check_masking(mask_prob, rule)
    return tokens


def check_masking(mask_prob: float, rule: Sequence[float]) -> None:
    """:func:`mask_tokens`'s options: ``mask_prob`` a fraction in (0, 1), ``rule`` three
    fractions (mask, random, keep) that sum to 1. Checked by :func:`mask_tokens`, and by
    whatever passes them on to it later (:func:`companion.training.pretrain.mlm_batches`)."""
    if _not_a_number(mask_prob) or not 0 < mask_prob < 1:
        raise ValueError(f"mask_prob must be in (0, 1); got {mask_prob!r}")
    wanted = "three fractions (mask, random, keep) that sum to 1, such as (0.8, 0.1, 0.1)"
    check_sequence("rule", rule, wanted)
    if (
        len(rule) != 3
        or any(_not_a_number(p) for p in rule)
        or min(rule) < 0
        or abs(sum(rule) - 1) > 1e-9
    ):
        raise ValueError(f"rule must be {wanted}; got {tuple(rule)}")


def _not_a_number(value: object) -> bool:
    """Whether ``value`` is anything but a finite real number: a bool, a str, a tensor, NaN ..."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return True
    return not math.isfinite(value)


def mask_tokens(
    tokens: torch.Tensor,
    valid_lens: torch.Tensor,
    *,
    vocab_size: int,
    mask_id: int,
    special_ids: Sequence[int],
    generator: torch.Generator,
    mask_prob: float = 0.15,
    rule: Sequence[float] = (0.8, 0.1, 0.1),
) -> MaskedTokens:
    """Choose the positions a masked language model predicts, and corrupt them with BERT's
    80/10/10 rule (sec-pretraining).

    In each row ``b``, the first ``valid_lens[b]`` tokens are real, the rest padding. The
    candidates are the real tokens whose id is not in ``special_ids`` (``<cls>`` and
    ``<sep>``). ``k_b = max(1, round(mask_prob * valid_lens[b]))`` of them (all of them if
    there are fewer), drawn uniformly without replacement, are predicted. Each predicted token
    is independently replaced by ``mask_id`` with probability ``rule[0]`` (0.8), by a token
    drawn uniformly from the whole vocabulary with probability ``rule[1]`` (0.1; as in d2l and
    BERT, the draw may return the token itself), and kept with probability ``rule[2]`` (0.1).
    The label is always the original token.

    Returns :class:`MaskedTokens`; the prediction axis has ``max_b k_b`` entries, padded with
    position 0, label 0 and weight 0 (d2l's padding). Every draw comes from ``generator`` (a CPU
    generator; the results move to the device of ``tokens``).
    """
    tokens = _check_masking_arguments(
        tokens, valid_lens, vocab_size, mask_id, special_ids, generator, mask_prob, rule
    )
    batch_size, steps = tokens.shape
    device = tokens.device
    cpu_tokens, lens = tokens.cpu(), valid_lens.cpu()  # the draws happen on the CPU
    positions = torch.arange(steps)
    is_special = torch.isin(cpu_tokens, torch.tensor(list(special_ids), dtype=cpu_tokens.dtype))
    candidate = (positions < lens[:, None]) & ~is_special  # (batch, steps)
    # round() halves to even, like Python's; float64 like d2l's len(tokens) * 0.15
    num_preds = torch.round(lens.double() * mask_prob).long().clamp(min=1)
    num_preds = torch.minimum(num_preds, candidate.sum(dim=1))  # (batch,)
    # A uniform random subset of k candidates: the k smallest of i.i.d. uniform keys.
    keys = torch.rand(batch_size, steps, generator=generator).masked_fill(~candidate, 2.0)
    ranks = keys.argsort(dim=1).argsort(dim=1)  # (batch, steps): rank of each key in its row
    chosen = ranks < num_preds[:, None]  # (batch, steps), k_b True per row
    # The 80/10/10 rule: one uniform draw per position decides what replaces it.
    u = torch.rand(batch_size, steps, generator=generator)
    random_ids = torch.randint(0, vocab_size, (batch_size, steps), generator=generator)
    to_mask = chosen & (u < rule[0])
    to_random = chosen & (u >= rule[0]) & (u < rule[0] + rule[1])
    corrupted = torch.where(to_random, random_ids, cpu_tokens).masked_fill(to_mask, mask_id)
    # The chosen positions in ascending order, then padding: sort chosen first by position.
    order = torch.where(chosen, positions, steps + positions).sort(dim=1).values
    width = int(num_preds.max()) if batch_size else 0
    order = order[:, :width]  # (batch, num_preds)
    real = order < steps
    pred_positions = torch.where(real, order, 0)
    labels = cpu_tokens.gather(1, pred_positions).masked_fill(~real, 0)
    return MaskedTokens(
        corrupted.to(device),
        pred_positions.to(device),
        labels.to(device),
        real.float().to(device),
    )


def mlm_loss(mlm_Y_hat: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The masked-LM loss (sec-pretraining): cross-entropy at the predicted positions, averaged
    over the real predictions (weight 1), padding (weight 0) left out:

        loss = sum_{b,j} w_{b,j} CE(logits_{b,j}, y_{b,j}) / sum_{b,j} w_{b,j}

    ``mlm_Y_hat`` is ``(batch, num_preds, vocab)``; ``labels`` and ``weights`` ``(batch,
    num_preds)``.
    """
    if mlm_Y_hat.shape[:2] != labels.shape or labels.shape != weights.shape:
        raise ValueError(
            "mlm_Y_hat (batch, num_preds, vocab), labels and weights (batch, num_preds) "
            f"disagree: got {tuple(mlm_Y_hat.shape)}, {tuple(labels.shape)}, "
            f"{tuple(weights.shape)}"
        )
    losses = nn.functional.cross_entropy(
        mlm_Y_hat.reshape(-1, mlm_Y_hat.shape[-1]), labels.reshape(-1), reduction="none"
    )  # (batch * num_preds,)
    weights = weights.reshape(-1).to(losses.dtype)
    return (losses * weights).sum() / weights.sum().clamp(min=1)
