"""A decoder-only language model whose block is configured, not rewritten (sec-modern-decoder):
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

Both are pre-norm. Submodule names are those of :class:`companion.lm.GPT` (``token_embedding``,
``pos_embedding``, ``blks``, each with ``ln1``, ``attention``, ``ln2``, ``mlp``, then ``ln``),
so a GPT state dict loads into ``DecoderLM(gpt2_config(...))`` unchanged; ``ln*`` are RMSNorms
when ``norm="rms"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from companion._validate import check_dropout, check_hiddens, check_positive, check_token_ids
from companion.feedforward import SwiGLU
from companion.gqa import Cache, GroupedQueryAttention, RollingKVCache, steps_seen
from companion.kv_cache import KVCache
from companion.norms import RMSNorm
from companion.positional import PositionalEncoding
from companion.rotary import RotaryEmbedding, check_pairing
from companion.sampling import check_sampling_arguments, generate_tokens
from companion.vit import ViTMLP

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
    means one per query head; ``window=None`` means full causal attention."""

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
        if not self.norm_eps > 0:
            raise ValueError(f"norm_eps must be positive; got {self.norm_eps}")
        # The attention checks num_kv_heads and window against num_heads when it is built.

    def replace(self, **changes: object) -> DecoderConfig:
        """A copy with some fields changed, e.g. ``config.replace(norm="rms")``."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def gpt2_config(vocab_size: int, **changes: object) -> DecoderConfig:
    """GPT-2's block: layer norm, learned positions, a GELU MLP, one key-value head per query
    head (the configuration of :class:`companion.lm.GPT`)."""
    return DecoderConfig(vocab_size).replace(**changes)


def llama_config(vocab_size: int, **changes: object) -> DecoderConfig:
    """A Llama-style block: RMSNorm, RoPE (Hugging Face's ``"half"`` pairing), SwiGLU, two query
    heads per key-value head, and an untied output layer."""
    base = DecoderConfig(vocab_size)
    llama = base.replace(
        norm="rms", positions="rope", ffn="swiglu", norm_eps=1e-6, tie_weights=False,
        num_kv_heads=max(1, base.num_heads // 2),
    )  # fmt: skip
    return llama.replace(**changes)


def make_norm(config: DecoderConfig) -> nn.Module:
    if config.norm == "rms":
        return RMSNorm(config.num_hiddens, eps=config.norm_eps)
    return nn.LayerNorm(config.num_hiddens, eps=config.norm_eps)


class DecoderBlock(nn.Module):
    """A pre-norm decoder block (sec-modern-decoder), whatever the configuration:

        X = X + Attention(Norm_1(X))      (causal; GQA, RoPE, window, ALiBi as configured)
        X = X + FFN(Norm_2(X))            (GELU MLP or SwiGLU)

    ``X`` is ``(batch, steps, num_hiddens)`` in and out; ``cache`` holds the earlier steps'
    keys and values (see :class:`~companion.gqa.GroupedQueryAttention`).
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        c = config
        head_dim = c.num_hiddens // c.num_heads
        rotary = (
            RotaryEmbedding(head_dim, c.rope_base, c.rope_pairing)
            if c.positions == "rope"
            else None
        )
        self.num_hiddens = c.num_hiddens
        self.ln1 = make_norm(c)
        self.attention = GroupedQueryAttention(
            c.num_hiddens, c.num_heads, c.num_kv_heads, c.dropout, c.bias,
            rotary=rotary, window=c.window, alibi=c.positions == "alibi",
        )  # fmt: skip
        self.ln2 = make_norm(c)
        self.mlp: nn.Module = (
            SwiGLU(c.num_hiddens, c.ffn_num_hiddens, c.dropout)
            if c.ffn == "swiglu"
            else ViTMLP(c.ffn_num_hiddens, c.num_hiddens, c.dropout, num_inputs=c.num_hiddens)
        )

    def forward(self, X: torch.Tensor, *, cache: Cache | None = None) -> torch.Tensor:
        check_hiddens(X, self.num_hiddens)
        X = X + self.attention(self.ln1(X), cache=cache)  # (batch, steps, num_hiddens)
        return X + self.mlp(self.ln2(X))


class DecoderLM(nn.Module):
    """A decoder-only language model built from a :class:`DecoderConfig` (sec-modern-decoder):

        H_0 = E[x] (+ positions),   H_l = DecoderBlock_l(H_{l-1}),   logits = Norm(H_L) W_out

    with ``W_out = E^T`` when ``tie_weights``. ``X`` of shape ``(batch, steps)`` holds token ids;
    the output holds ``(batch, steps, vocab_size)`` logits. ``caches`` (from
    :meth:`new_caches`, one per block) make the call continue the sequence they hold.
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
        self.blks = nn.ModuleList(DecoderBlock(c) for _ in range(c.num_blks))
        self.ln = make_norm(c)  # the final norm of a pre-norm stack
        self.head = None if c.tie_weights else nn.Linear(c.num_hiddens, c.vocab_size, bias=False)
        for embedding in (self.token_embedding, self.pos_embedding):
            if embedding is not None:
                nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's initialisation

    def new_caches(self) -> list[Cache]:
        """One empty cache per block: a rolling one of ``window`` steps, else a growing one."""
        window = self.config.window
        return [KVCache() if window is None else RollingKVCache(window) for _ in self.blks]

    def forward(self, X: torch.Tensor, caches: Sequence[Cache] | None = None) -> torch.Tensor:
        check_token_ids(X, self.config.vocab_size)
        if caches is not None and len(caches) != len(self.blks):
            raise ValueError(
                f"caches must hold one cache per block ({len(self.blks)}); got {len(caches)}"
            )
        start = steps_seen(caches[0]) if caches is not None else 0  # X's first position
        bounded = self.config.positions in ("learned", "sinusoidal")
        if bounded and start + X.shape[1] > self.config.max_len:
            raise ValueError(
                f"X of shape {tuple(X.shape)} after {start} cached steps needs positions up to "
                f"{start + X.shape[1] - 1}; {self.config.positions} positions stop at "
                f"max_len={self.config.max_len}"
            )
        H = self.token_embedding(X)  # (batch, steps, num_hiddens)
        if self.pos_embedding is not None:
            H = H + self.pos_embedding(torch.arange(start, start + X.shape[1], device=X.device))
        if self.pos_encoding is not None:
            H = self.pos_encoding(H, offset=start)
        H = self.dropout(H)
        per_block: Sequence[Cache | None] = caches or [None] * len(self.blks)
        for blk, cache in zip(self.blks, per_block):
            H = blk(H, cache=cache)  # (batch, steps, num_hiddens)
        H = self.ln(H)
        if self.head is None:  # tied: score each token by its own embedding
            return F.linear(H, self.token_embedding.weight)  # (batch, steps, vocab_size)
        return self.head(H)

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
        """Continue ``prompt`` ``(batch, steps)`` by ``max_new_tokens`` sampled tokens, as
        :meth:`companion.lm.GPT.generate` does; returns ``(batch, steps + max_new_tokens)``.
        With ``use_cache`` each step feeds only the newest token."""
        check_positive(max_new_tokens=max_new_tokens)
        check_token_ids(prompt, self.config.vocab_size, name="prompt")
        check_sampling_arguments(temperature, top_k, top_p)  # before any step runs
        caches = self.new_caches() if use_cache else None
        return generate_tokens(
            self, prompt, max_new_tokens, caches, temperature, top_k, top_p, generator
        )
