"""Sampling the next token from a language model's logits (sec-language-models): temperature,
top-k and top-p (nucleus) filtering.

A decoder-only model gives, for each row of a batch, one score per vocabulary entry: logits
``z`` of shape ``(batch, vocab)``. Generation draws the next token from

    P(token = i) = softmax(z / T)_i,   restricted to a kept set, then renormalised.

- **Temperature** ``T`` divides the logits: ``T < 1`` sharpens the distribution, ``T > 1``
  flattens it, ``T = 1`` leaves it as the model predicts, and ``T = 0`` is greedy decoding
  (the argmax; the limit of ``T -> 0`` when the maximum is unique).
- **Top-k** keeps the ``k`` most likely tokens. *Ties:* it keeps every token whose logit is at
  least the ``k``-th largest, so with ties at that value more than ``k`` tokens survive, and no
  tied token is preferred to another (nanoGPT and Hugging Face do the same). A kept token always
  has fewer than ``k`` tokens strictly more likely than itself.
- **Top-p** (nucleus sampling; Holtzman et al., 2020) keeps the smallest set of most likely
  tokens whose probability adds up to at least ``p``: a token is dropped when the tokens more
  likely than it already hold ``p``. *Ties* in the order are broken by the lower index (a
  stable sort), so the kept set is minimal: dropping its least likely token leaves less than
  ``p``. ``p = 1`` keeps every token.

The order is that of Hugging Face's generation: temperature, then top-k, then top-p (on the
tempered distribution). The random draw takes an explicit ``torch.Generator``, so a seeded
generator gives the same tokens on every run.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from companion._validate import check_integer, check_type, values_checked
from companion.modes import eval_mode


def _check_logits(logits: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a 2-D tensor (batch, vocab); got {shape}")
    if not logits.dtype.is_floating_point:
        raise ValueError(f"logits must be floating point; got {logits.dtype}")
    if logits.shape[-1] < 1:
        raise ValueError(
            f"logits must hold a score for at least one token in each row; got shape "
            f"{tuple(logits.shape)}"
        )


def _check_finite(logits: torch.Tensor) -> None:
    """Each row needs a finite maximum, and no NaN (read on the CPU only, see _validate)."""
    if logits.numel() and values_checked(logits):
        row_max = logits.max(dim=-1).values  # NaN if the row holds one
        if not torch.isfinite(row_max).all():
            bad = int((~torch.isfinite(row_max)).nonzero()[0, 0])
            raise ValueError(
                "logits must be finite in each row (-inf only for tokens ruled out), with no "
                f"NaN; row {bad} holds {logits[bad].tolist()[:8]}..."
            )


def _check_temperature(temperature: float, *, allow_zero: bool) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ValueError(f"temperature must be a number; got {temperature!r}")
    low_ok = temperature >= 0 if allow_zero else temperature > 0
    if not (low_ok and temperature < math.inf):
        wanted = ">= 0" if allow_zero else "> 0 (0 means greedy: see sample_next)"
        raise ValueError(f"temperature must be finite and {wanted}; got {temperature!r}")


def _check_top_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k must be an integer >= 1; got {k!r}")


def _check_top_p(p: float) -> None:
    if isinstance(p, bool) or not isinstance(p, int | float) or not (0 < p <= 1):
        raise ValueError(f"top_p must be a number in (0, 1]; got {p!r}")


def _check_generator(generator: torch.Generator | None) -> None:
    check_type(
        "generator",
        generator,
        (torch.Generator, type(None)),
        "a torch.Generator, such as torch.Generator().manual_seed(0), or None",
    )


def _check_generate_arguments(
    model: nn.Module,
    max_new_tokens: int,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator: torch.Generator | None,
) -> None:
    """The arguments of :func:`generate_tokens` but the prompt and the caches, which the model
    checks at its first step."""
    check_type("model", model, nn.Module, "a torch.nn.Module, a decoder-only language model")
    check_integer("max_new_tokens", max_new_tokens)
    check_sampling_arguments(temperature, top_k, top_p)
    _check_generator(generator)


def check_sampling_arguments(
    temperature: float, top_k: int | None = None, top_p: float | None = None
) -> None:
    """The arguments of :func:`sample_next`, checked at once: ``temperature`` a finite number
    ``>= 0``, ``top_k`` an integer ``>= 1`` and ``top_p`` in ``(0, 1]``, or ``None``."""
    _check_temperature(temperature, allow_zero=True)
    if top_k is not None:
        _check_top_k(top_k)
    if top_p is not None:
        _check_top_p(top_p)


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / temperature`` for ``temperature > 0``, shape ``(batch, vocab)``.

    ``temperature = 0`` has no logits of its own (it is the argmax); :func:`sample_next`
    handles it. A negative or infinite temperature is a ``ValueError``.
    """
    _check_logits(logits)
    _check_temperature(temperature, allow_zero=False)
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Set every logit below the ``k``-th largest of its row to ``-inf``: ``(batch, vocab)``.

    Ties at the ``k``-th value are all kept. ``k`` larger than the vocabulary keeps every token.
    """
    _check_logits(logits)
    _check_top_k(k)
    k = min(k, logits.shape[-1])
    kth_largest = logits.topk(k, dim=-1).values[:, -1:]  # (batch, 1)
    return logits.masked_fill(logits < kth_largest, -math.inf)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep each row's nucleus, the fewest most likely tokens holding probability ``>= p``;
    set the other logits to ``-inf``. ``(batch, vocab)`` in, ``(batch, vocab)`` out."""
    _check_logits(logits)
    _check_top_p(p)
    if p == 1:
        return logits  # everything is kept (rounding in the sums below could drop a tail)
    probs = logits.softmax(dim=-1)  # (batch, vocab)
    sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
    # The probability held by the tokens before each one in that order: (batch, vocab)
    before = torch.cat((torch.zeros_like(sorted_probs[:, :1]), sorted_probs.cumsum(-1)[:, :-1]), -1)
    drop_sorted = before >= p  # enough mass already: this token and every later one go
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)  # back to vocab order
    return logits.masked_fill(drop, -math.inf)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One token id per row of ``logits`` ``(batch, vocab)``: returns ``(batch,)`` (long).

    ``temperature = 0`` is greedy (the first index of the maximum); otherwise the tempered,
    filtered softmax is sampled with ``generator`` (torch's global one if None), which must live
    on the logits' device.
    """
    _check_logits(logits)
    check_sampling_arguments(temperature, top_k, top_p)
    _check_generator(generator)
    _check_finite(logits)
    if temperature == 0:
        return logits.argmax(dim=-1)  # (batch,); the argmax survives any filter
    # Softmax ignores a shift: with each row's maximum at 0, a tiny temperature sends the others
    # to -inf (greedy in the limit) instead of every logit to +-inf, which would give NaN.
    logits = apply_temperature(logits - logits.max(dim=-1, keepdim=True).values, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    probs = logits.softmax(dim=-1)  # (batch, vocab), zero outside the kept set
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (batch,)


@torch.no_grad()
def generate_tokens(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    caches: object | None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The loop of a decoder-only model's ``generate`` (sec-language-models), shared by
    :class:`~companion.models.decoder.GPT` and :class:`~companion.models.decoder.DecoderLM`, which
    check the arguments first. ``model(inputs, caches)`` returns ``(batch, steps, vocab_size)``
    logits; each step samples the next token from the last row with :func:`sample_next` and appends
    it, ``max_new_tokens`` (a positive integer) times. With ``caches`` (empty ones, from the model's
    ``new_caches()``) every step after the first feeds only the newest token; with ``None``, the
    whole sequence so far. Returns ``(batch, steps + max_new_tokens)``; the model runs in eval mode
    and is left in the mode it had, even if a step raises."""
    _check_generate_arguments(model, max_new_tokens, temperature, top_k, top_p, generator)
    tokens = inputs = prompt  # (batch, steps)
    with eval_mode(model):
        for _ in range(max_new_tokens):
            logits = model(inputs, caches)[:, -1]  # (batch, vocab_size): the next token
            next_token = sample_next(logits, temperature, top_k, top_p, generator)  # (batch,)
            tokens = torch.cat((tokens, next_token[:, None]), dim=1)
            inputs = next_token[:, None] if caches is not None else tokens
    return tokens
