"""The decoder-only language model: GPT (sec-language-models; Radford et al., 2018) and the
Llama-style decoder (sec-modern-decoder), one model whose block is configured, not rewritten:
GPT-2's block and a Llama-style block are two :class:`DecoderConfig` values of one code path.

============  ======================  =========================
field         GPT-2 (2019)            Llama, Mistral (2023-)
============  ======================  =========================
``norm``      ``"layer"``             ``"rms"``
``positions`` ``"learned"``           ``"rope"``
``ffn``       ``"gelu"``              ``"swiglu"``
``num_kv``    ``num_heads`` (MHA)     fewer (GQA)
``window``    ``None``                ``None`` (Mistral: 4096)
============  ======================  =========================

Both stack :class:`companion.layers.blocks.PreNormBlock`, the ViT's block too, called with
``causal=True``: the causal mask is the only change from an encoder. Each position predicts the
next token, so one forward pass over a sentence gives a loss at every position. The submodules
are ``token_embedding``, ``pos_embedding``, ``blks`` (each with ``ln1``, ``attention``, ``ln2``
and ``mlp``), then ``ln``; the ``ln*`` are RMSNorms when ``norm="rms"``.

:class:`GPT` is :class:`DecoderLM` in GPT-2's configuration, built from d2l-style arguments, with
two choices made for it and explained in sec-language-models:

- **learned positions**, a ``max_len x num_hiddens`` table as in GPT-2 and ViT: a sentence of
  the invented language has at most 13 input tokens, the table is tiny, and the model never
  meets a position it was not trained on (``max_len`` is a hard limit, checked);
- **tied embeddings** (Press and Wolf, 2017): the output layer reuses the token embedding,
  ``logits = LayerNorm(H) E^T``. It saves ``vocab_size x num_hiddens`` parameters (a quarter of
  the untied model here), and a token's input and output vectors learn from both uses.
  ``tie_weights=False`` gives a separate output matrix.

:meth:`DecoderLM.generate` samples with :func:`companion.generation.sampling.sample_next` and, by
default, reads the keys and values of earlier positions from the caches of
:meth:`DecoderLM.new_caches` (a :class:`companion.layers.kv_cache.KVCache` per block, rolling ones
with a window), so each new token costs one position's work; ``use_cache=False`` re-runs the
whole prefix at every step, for comparison. Both give the same tokens.

GPT's data are :func:`companion.data.tasks.language.lm_arrays`, its loss
:func:`companion.data.tasks.language.next_token_loss` and its time-to-quality recipe
:mod:`companion.experiments.recipes.gpt`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import (
    check_attention_shape,
    check_dropout,
    check_number,
    check_positive,
    check_same_device,
    check_steps,
    check_token_ids,
    check_type,
)
from companion.generation.sampling import check_sampling_arguments, generate_tokens
from companion.layers.blocks import PreNormBlock
from companion.layers.kv_cache import ModelCaches
from companion.layers.norms import make_norm
from companion.layers.positional import PositionalEncoding
from companion.layers.rotary import RotaryEmbedding, check_pairing

CHOICES = {
    "norm": ("layer", "rms"),
    "positions": ("learned", "sinusoidal", "rope", "alibi"),
    "ffn": ("gelu", "swiglu"),
}


@dataclass(frozen=True)
class DecoderConfig:
    """The shape of a :class:`DecoderLM` and the choice made at each place a modern decoder
    differs from GPT-2 (see the module docstring). ``max_len`` bounds the positions of
    ``"learned"`` and ``"sinusoidal"`` (RoPE and ALiBi need no table); ``num_kv_heads=None``
    means one per query head; ``window=None`` means full causal attention. ``causal=False``
    drops the mask (the counter-example of sec-language-models: an encoder cannot learn to
    predict the next token, since it sees it)."""

    vocab_size: int
    num_hiddens: int = 64
    num_heads: int = 4
    num_blks: int = 2
    ffn_num_hiddens: int = 128
    max_len: int = 64
    norm: Literal["layer", "rms"] = "layer"
    positions: Literal["learned", "sinusoidal", "rope", "alibi"] = "learned"
    ffn: Literal["gelu", "swiglu"] = "gelu"
    num_kv_heads: int | None = None
    window: int | None = None
    rope_pairing: Literal["half", "interleaved"] = "half"
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    bias: bool = False  # in the attention's projections
    dropout: float = 0.0
    tie_weights: bool = True
    causal: bool = True

    def __post_init__(self) -> None:
        check_positive(
            vocab_size=self.vocab_size,
            num_hiddens=self.num_hiddens,
            num_heads=self.num_heads,
            num_blks=self.num_blks,
            ffn_num_hiddens=self.ffn_num_hiddens,
            max_len=self.max_len,
        )
        for field, choices in CHOICES.items():
            if getattr(self, field) not in choices:
                raise ValueError(f"{field} must be one of {choices}; got {getattr(self, field)!r}")
        check_pairing(self.rope_pairing)
        check_dropout(self.dropout)
        check_number("norm_eps", self.norm_eps, above=0)
        check_number("rope_base", self.rope_base, above=1)
        for flag in ("bias", "tie_weights", "causal"):
            check_type(flag, getattr(self, flag), bool, "True or False")
        # The fields must fit together, here rather than when a model is built from them.
        check_attention_shape(
            self.num_hiddens, self.num_heads, self.num_kv_heads, self.window, None
        )
        head_dim = self.num_hiddens // self.num_heads
        if self.positions == "rope" and head_dim % 2:
            raise ValueError(
                f"positions='rope' rotates pairs of features: each head's num_hiddens / num_heads "
                f"= {self.num_hiddens} / {self.num_heads} = {head_dim} features must be even"
            )
        if not self.causal and (self.window is not None or self.positions == "alibi"):
            raise ValueError(
                f"a window ({self.window}) and ALiBi (positions={self.positions!r}) mask by "
                "position and are causal: they need causal=True"
            )

    def replace(self, **changes: object) -> DecoderConfig:
        """A copy with some fields changed, e.g. ``config.replace(norm="rms")``."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def gpt2_config(vocab_size: int, **changes: object) -> DecoderConfig:
    """GPT-2's block: layer norm, learned positions, a GELU MLP, one key-value head per query
    head (the configuration of :class:`GPT`)."""
    return DecoderConfig(vocab_size).replace(**changes)


def llama_config(vocab_size: int, **changes: object) -> DecoderConfig:
    """A Llama-style block: RMSNorm, RoPE (Hugging Face's ``"half"`` pairing), SwiGLU, two query
    heads per key-value head (of the final ``num_heads``, unless ``changes`` set
    ``num_kv_heads``), and an untied output layer."""
    if "num_kv_heads" not in changes:  # two query heads per key-value head
        num_heads = changes.get("num_heads", DecoderConfig.num_heads)
        if isinstance(num_heads, int) and not isinstance(num_heads, bool):
            if num_heads % 2:
                raise ValueError(
                    f"llama_config shares each key-value head between two query heads, so "
                    f"num_heads must be even; got num_heads={num_heads}. Pass num_kv_heads too"
                )
            changes = {**changes, "num_kv_heads": num_heads // 2}
    llama = DecoderConfig(vocab_size).replace(
        norm="rms", positions="rope", ffn="swiglu", norm_eps=1e-6, tie_weights=False
    )
    return llama.replace(**changes)


def build_block(config: DecoderConfig) -> PreNormBlock:
    """One pre-norm block as ``config`` says
    (:class:`~companion.layers.blocks.PreNormBlock`)."""
    c = config
    rotary = (
        RotaryEmbedding(c.num_hiddens // c.num_heads, c.rope_base, c.rope_pairing)
        if c.positions == "rope"
        else None
    )
    return PreNormBlock(
        c.num_hiddens,
        c.num_hiddens,
        c.ffn_num_hiddens,
        c.num_heads,
        c.dropout,
        c.bias,
        norm=c.norm,
        norm_eps=c.norm_eps,
        ffn=c.ffn,
        num_kv_heads=c.num_kv_heads,
        rotary=rotary,
        window=c.window,
        alibi=c.positions == "alibi",
    )


class DecoderLM(nn.Module):
    """A decoder-only language model built from a :class:`DecoderConfig` (sec-modern-decoder):

        H_0 = E[x] (+ positions),   H_l = PreNormBlock_l(H_{l-1}),   logits = Norm(H_L) W_out

    with ``W_out = E^T`` when ``tie_weights``. ``X`` of shape ``(batch, steps)`` holds token ids;
    the output holds ``(batch, steps, vocab_size)`` logits. ``caches`` (from
    :meth:`new_caches`, a :class:`~companion.layers.kv_cache.ModelCaches`) make the call continue
    the sequence they hold.
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.config = c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.num_hiddens)  # E
        self.pos_embedding = (
            nn.Embedding(c.max_len, c.num_hiddens) if c.positions == "learned" else None
        )
        self.pos_encoding = (
            PositionalEncoding(c.num_hiddens, 0.0, c.max_len)
            if c.positions == "sinusoidal"
            else None
        )
        self.dropout = nn.Dropout(c.dropout)
        self.blks = nn.ModuleList(build_block(c) for _ in range(c.num_blks))
        self.ln = make_norm(c.norm, c.num_hiddens, c.norm_eps)  # a pre-norm stack's final norm
        self.head = None if c.tie_weights else nn.Linear(c.num_hiddens, c.vocab_size, bias=False)
        for embedding in (self.token_embedding, self.pos_embedding):
            if embedding is not None:
                nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's initialisation

    def new_caches(self) -> ModelCaches:
        """Empty caches, one per block: rolling ones of ``window`` steps, else growing ones."""
        return ModelCaches(len(self.blks), window=self.config.window)

    def forward(self, X: torch.Tensor, caches: ModelCaches | None = None) -> torch.Tensor:
        X, start = self._check_inputs(X, caches)  # token ids; X's first position
        H = self.token_embedding(X)  # (batch, steps, num_hiddens)
        if self.pos_embedding is not None:
            H = H + self.pos_embedding(torch.arange(start, start + X.shape[1], device=X.device))
        if self.pos_encoding is not None:
            H = self.pos_encoding(H, offset=start)
        H = self.dropout(H)
        per_block = caches if caches is not None else [None] * len(self.blks)
        for blk, cache in zip(self.blks, per_block):
            H = blk(H, causal=self.config.causal, cache=cache)  # (batch, steps, num_hiddens)
        H = self.ln(H)
        if self.head is None:  # tied: score each token by its own embedding
            return F.linear(H, self.token_embedding.weight)  # (batch, steps, vocab_size)
        return self.head(H)

    def _check_inputs(
        self, X: torch.Tensor, caches: ModelCaches | None, name: str = "X"
    ) -> tuple[torch.Tensor, int]:
        """``X``: token ids on the model's device, at least one step; ``caches``: what
        :meth:`new_caches` returns; the positions of the cached and the new steps within
        ``max_len`` where the positions are a table. Returns ``X`` as ``torch.long`` and the
        position of its first step. (Each block's attention checks its cache.)"""
        X = check_token_ids(X, self.config.vocab_size, name)
        check_steps(X, name)
        check_same_device(X, self.token_embedding.weight, name)
        if caches is not None and not (
            isinstance(caches, ModelCaches) and len(caches) == len(self.blks)
        ):
            got = f"ModelCaches of {len(caches)}" if isinstance(caches, ModelCaches) else None
            raise TypeError(
                f"caches must be what new_caches() returns, one KVCache per block "
                f"({len(self.blks)}); got {got or type(caches).__name__}"
            )
        start = 0 if caches is None else caches.seen
        if self.config.positions in ("learned", "sinusoidal"):
            if start + X.shape[1] > self.config.max_len:
                raise ValueError(
                    f"{name} of shape {tuple(X.shape)} after {start} cached steps needs "
                    f"{start + X.shape[1]} positions; {self.config.positions} positions stop "
                    f"at max_len={self.config.max_len}"
                )
        return X, start

    @torch.no_grad()
    def generate(
        self,
        prompt: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
        *,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Continue ``prompt`` ``(batch, steps)`` by ``max_new_tokens`` sampled tokens; returns
        ``(batch, steps + max_new_tokens)``. ``temperature=0`` is greedy; see
        :func:`~companion.generation.sampling.sample_next`. With ``use_cache`` each step feeds only
        the newest token (earlier keys and values come from the caches); without it each step
        feeds the whole sequence so far."""
        check_positive(max_new_tokens=max_new_tokens)
        prompt, _ = self._check_inputs(prompt, None, name="prompt")
        needed = prompt.shape[1] + max_new_tokens - 1  # the last token is sampled, never fed
        if self.config.positions in ("learned", "sinusoidal") and needed > self.config.max_len:
            raise ValueError(
                f"a prompt of {prompt.shape[1]} steps and max_new_tokens={max_new_tokens} "
                f"need {needed} positions; max_len is {self.config.max_len}"
            )
        check_sampling_arguments(temperature, top_k, top_p)  # before any step runs
        caches = self.new_caches() if use_cache else None
        return generate_tokens(
            self, prompt, max_new_tokens, caches, temperature, top_k, top_p, generator
        )


class GPT(DecoderLM):
    """A decoder-only Transformer language model (sec-language-models):

        H_0 = E[x] + P,   H_l = Block_l(H_{l-1}, causal),   logits = LayerNorm(H_L) E^T

    ``X`` of shape ``(batch, steps)`` holds token ids; the output holds ``(batch, steps,
    vocab_size)`` logits, where row ``t`` scores the token after ``X[:, :t + 1]``. ``E`` is the
    ``(vocab_size, num_hiddens)`` token embedding, ``P`` the learned positions (``max_len``
    rows), each block a :class:`~companion.layers.blocks.PreNormBlock` with a causal mask.

    GPT is :class:`DecoderLM` configured as GPT-2 (:func:`gpt2_config`), built from d2l-style
    arguments: the forward pass, the caches and :meth:`generate` are the decoder's, and
    sec-modern-decoder changes only the configuration. ``caches`` (:meth:`new_caches`, one
    :class:`~companion.layers.kv_cache.KVCache` per block) make the call continue the sequence
    they hold. ``causal=False`` drops the mask and turns the model into an encoder,
    which next-token training cannot use: each position would see the token it must predict.
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
                vocab_size,
                num_hiddens=num_hiddens,
                ffn_num_hiddens=mlp_num_hiddens,
                num_heads=num_heads,
                num_blks=num_blks,
                max_len=max_len,
                dropout=dropout,
                tie_weights=tie_weights,
                bias=use_bias,
                causal=causal,
            )
        )
