"""A decoder-only language model, GPT (sec-language-models; Radford et al., 2018).

:class:`GPT` is a stack of the Vision Transformer's pre-norm blocks
(:class:`companion.layers.blocks.PreNormBlock`, d2l's ``ViTBlock``) called with
``causal=True``: the causal mask is the only change from an encoder. Each position predicts the next
token, so one forward pass over a sentence gives a loss at every position. It is
:class:`companion.models.decoder.DecoderLM` in GPT-2's configuration, so the Llama-style model of
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
:class:`companion.layers.kv_cache.KVCache` per block, so each new token costs one position's work;
``use_cache=False`` re-runs the whole prefix at every step, for comparison. Both give the same
tokens.

Its data are :func:`companion.tasks.language.lm_arrays`, its loss
:func:`companion.train.next_token_loss` and its time-to-quality recipe
:mod:`companion.recipes.gpt`.
"""

from __future__ import annotations

from companion.models.decoder import DecoderLM, gpt2_config


class GPT(DecoderLM):
    """A decoder-only Transformer language model (sec-language-models):

        H_0 = E[x] + P,   H_l = Block_l(H_{l-1}, causal),   logits = LayerNorm(H_L) E^T

    ``X`` of shape ``(batch, steps)`` holds token ids; the output holds ``(batch, steps,
    vocab_size)`` logits, where row ``t`` scores the token after ``X[:, :t + 1]``. ``E`` is the
    ``(vocab_size, num_hiddens)`` token embedding, ``P`` the learned positions (``max_len``
    rows), each block a :class:`~companion.layers.blocks.PreNormBlock` with a causal mask.

    GPT is :class:`~companion.models.decoder.DecoderLM` configured as GPT-2
    (:func:`~companion.models.decoder.gpt2_config`), built from d2l-style arguments: the forward
    pass, the caches and :meth:`generate` are the decoder's, and sec-modern-decoder changes only the
    configuration. ``caches`` (:meth:`new_caches`, one :class:`~companion.layers.kv_cache.KVCache`
    per block, each its own) make the call continue the sequence they hold. ``causal=False`` drops
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
