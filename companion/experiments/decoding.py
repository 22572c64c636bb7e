"""What one decoding step costs with multi-head, grouped-query and multi-query attention
(sec-modern-decoder): the milliseconds per new token, and the bytes the key-value cache holds.

At a long context a step's work is dominated by reading the cache: every new token's query
reads the keys and values of every earlier token, in every layer. Grouped-query attention
shares each key-value head between ``num_heads / num_kv_heads`` query heads, so the cache, and
what a step reads of it, shrinks by that factor; the weights a step reads shrink much less.
:func:`decode_cost` measures both for a Llama-style :class:`~companion.models.decoder.DecoderLM`
of each kind, alike in everything else; ``python -m companion.bench decode --model llama``
prints it.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterable, Mapping

import torch

from companion._validate import check_device, check_integer, check_seed, check_type, describe
from companion.device import get_device
from companion.layers.kv_cache import KVCache
from companion.measure import synchronize
from companion.models.decoder import DecoderLM, llama_config

KINDS = {"MHA": 8, "GQA": 2, "MQA": 1}  # key-value heads for 8 query heads
SETTINGS = {  # a context long enough that the cache, not the weights, dominates a step's reads
    "batch": 8,
    "prompt": 2048,
    "new_tokens": 32,
    "num_hiddens": 256,
    "num_heads": 8,
    "num_blks": 2,
    "ffn_num_hiddens": 688,
    "vocab_size": 512,
}


def cache_bytes(caches: Iterable[KVCache]) -> int:
    """The bytes of keys and values the caches of every layer hold: ``caches`` are a model's
    ``new_caches()``, or another iterable of :class:`KVCache`, each written to."""
    if not isinstance(caches, Iterable) or isinstance(caches, (str, torch.Tensor)):
        raise TypeError(
            f"caches must be KVCaches, such as model.new_caches(); got {describe(caches)}"
        )
    caches = list(caches)
    for i, cache in enumerate(caches):
        check_type(f"caches[{i}]", cache, KVCache, "a KVCache, such as model.new_caches() holds")
    return sum(keys.nbytes + values.nbytes for keys, values in (c.stored() for c in caches))


def _check_settings(changes: Mapping[str, object]) -> dict[str, int]:
    """:data:`SETTINGS` with ``changes``, each the name of one and a positive integer."""
    unknown = sorted(set(changes) - set(SETTINGS))
    if unknown:
        raise ValueError(
            f"decode_cost has no setting {', '.join(map(repr, unknown))}; the settings are "
            f"{', '.join(SETTINGS)}"
        )
    return {name: check_integer(name, value) for name, value in {**SETTINGS, **changes}.items()}


def _check_kinds(kinds: Mapping[str, int], num_heads: int) -> None:
    """``kinds``: at least one name, each with a number of key-value heads dividing
    ``num_heads``."""
    check_type("kinds", kinds, Mapping, "a dict of names and key-value heads, such as KINDS")
    if not kinds:
        raise ValueError("kinds must name at least one kind of attention, such as {'MHA': 8}")
    for name, kv_heads in kinds.items():
        kv_heads = check_integer(f"kinds[{name!r}]", kv_heads)
        if num_heads % kv_heads:
            raise ValueError(
                f"kinds[{name!r}] = {kv_heads} key-value heads must divide num_heads = "
                f"{num_heads}: each serves as many query heads"
            )


def decode_cost(
    kinds: Mapping[str, int] = KINDS,
    *,
    repeats: int = 3,
    device: torch.device | None = None,
    seed: int = 0,
    **changes: int,
) -> dict[str, dict[str, float]]:
    """For each kind in ``kinds`` (a name and its number of key-value heads), a Llama-style
    decoder of :data:`SETTINGS` (``changes`` override them) with a prompt of ``prompt`` tokens in
    its caches decodes ``new_tokens`` tokens one at a time. Returns, per kind, the milliseconds
    per new token (the best of ``repeats`` runs from the same cached prompt, after one run that
    warms up, the kinds taking turns so that a change of load hits them alike) and the bytes the
    caches hold at the end, ``cache_bytes``, and per token of context and row,
    ``bytes_per_token``.

    The prompt's keys and values are random, written straight into the caches: what a step
    costs depends on their shapes, not on their values, and running the prompt through the
    model would cost more than all the steps measured.

    ``kinds`` maps at least one name to a number of key-value heads that divides
    ``num_heads``; ``repeats`` and every setting are positive integers; ``changes`` name
    settings of :data:`SETTINGS` only; ``seed`` is an integer."""
    settings = _check_settings(changes)
    _check_kinds(kinds, settings["num_heads"])
    repeats = check_integer("repeats", repeats)
    seed = check_seed(seed)
    device = check_device(device) or get_device()
    generator = torch.Generator().manual_seed(seed)
    vocab, batch, prompt = settings["vocab_size"], settings["batch"], settings["prompt"]
    new = torch.randint(0, vocab, (batch, settings["new_tokens"]), generator=generator)
    new = new.to(device)
    prompted = {}
    for name, kv_heads in kinds.items():
        torch.manual_seed(seed)
        config = llama_config(
            vocab,
            num_hiddens=settings["num_hiddens"],
            num_heads=settings["num_heads"],
            num_kv_heads=kv_heads,
            num_blks=settings["num_blks"],
            ffn_num_hiddens=settings["ffn_num_hiddens"],
        )
        model = DecoderLM(config).to(device).eval()
        caches = model.new_caches()
        head_dim = config.num_hiddens // config.num_heads
        with torch.no_grad():
            for cache in caches:  # the prompt's keys and values: (batch, kv_heads, prompt, d)
                keys, values = torch.randn(2, batch, kv_heads, prompt, head_dim, device=device)
                cache.update(keys, values)
        prompted[name] = model, caches
    best = dict.fromkeys(kinds, math.inf)
    held = dict.fromkeys(kinds, 0)
    with torch.no_grad():
        for round_ in range(1 + repeats):  # round 0 warms up: it is not timed
            for name, (model, prompt_caches) in prompted.items():
                caches = copy.deepcopy(prompt_caches)  # each run from the same cached prompt
                synchronize(device)
                start = time.perf_counter()
                for t in range(new.shape[1]):
                    model(new[:, t : t + 1], caches)
                synchronize(device)
                if round_:
                    best[name] = min(best[name], time.perf_counter() - start)
                held[name] = cache_bytes(caches)
    context = prompt + new.shape[1]
    return {
        name: {
            "kv_heads": kinds[name],
            "ms_per_token": 1000 * best[name] / new.shape[1],
            "cache_bytes": held[name],
            "bytes_per_token": held[name] // (batch * context),
        }
        for name in kinds
    }
