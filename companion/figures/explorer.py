"""An attention explorer for a notebook or a page: pick a query token and read where it looks.

:func:`show_attention` returns an object that Jupyter, JupyterLab, Colab and Jupyter Book show
as HTML: the tokens, a choice of layer and head, and for the chosen query a bar and a tint per
key, each key's weight in its tooltip (and under it, on demand), and a line that names the
largest weights, which screen readers announce. The page carries the weights the notebook
computed, rounded, as JSON; its small script (``explorer.js``, with ``explorer.css``, both
inlined) only shows them. Nothing is fetched, so it works offline, and the HTML is the same
for the same arguments (its id is a hash of the data), so notebook tests can compare it.

It is the interactive companion of a static heatmap
(:func:`companion.figures.plot.plot_attention`), which stays: the heatmap is what prints and what
a figure's alt text describes. This module does not import matplotlib.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from importlib import resources

import numpy as np
import torch

from companion._validate import check_integer, check_sequence, check_type, describe

MAX_WEIGHTS = 65_536  # numbers one explorer embeds in its page (about 6 characters each)
ROW_SUM_TOLERANCE = 0.01  # a row of softmax weights sums to 1 within this
SHAPES = "(queries, keys), (heads, queries, keys) or (layers, heads, queries, keys)"


class AttentionExplorer:
    """What :func:`show_attention` returns: Jupyter shows its ``html``; ``data`` is what that
    HTML embeds (tokens, labels, the rounded weights as ``[layer][head][query][key]`` lists)."""

    def __init__(self, html_text: str, data: dict) -> None:
        self.html = html_text
        self.data = data

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        weights = self.data["weights"]
        return (
            f"<attention explorer: {len(weights)} layer(s) x {len(weights[0])} head(s), "
            f"{len(self.data['queries'])} queries x {len(self.data['keys'])} keys>"
        )


def show_attention(
    weights,
    queries: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    heads: Sequence[str] | None = None,
    layers: Sequence[str] | None = None,
    title: str | None = None,
    query: int = 0,
    decimals: int = 3,
    allow_masked: bool = False,
) -> AttentionExplorer:
    """An explorer of attention ``weights``: the reader picks a query token (click, hover, or
    Tab then the arrow keys, Home and End) and a layer and head, and sees that query's weights
    over the keys.

    ``weights`` is a tensor or array of shape ``(queries, keys)``, ``(heads, queries, keys)``
    or ``(layers, heads, queries, keys)``, one example's (``weights[0]`` of a batch), each row
    summing to 1; with ``allow_masked=True`` a row may also be all zeros (a query masked out).
    ``queries`` and ``keys`` are lists of str tokens, one per row and per column; ``keys``
    defaults to ``queries`` (self-attention). ``heads`` and ``layers`` label the heads and
    layers (default ``head 1``, ... and ``layer 1``, ...); ``title`` heads the explorer;
    ``query`` is the query shown first. The weights are embedded rounded to ``decimals``.
    """
    _check_strings(
        "queries", queries, "a list of str tokens, one per query (such as 'the cat sat'.split())"
    )
    keys = queries if keys is None else keys
    _check_strings(
        "keys", keys, "a list of str tokens, one per key (such as 'the cat sat'.split())"
    )
    array = _weights_array(weights, len(queries), len(keys))
    num_layers, num_heads = array.shape[:2]
    heads = _labels("heads", heads, num_heads, "head", weights)
    layers = _labels("layers", layers, num_layers, "layer", weights)
    if title is not None:
        check_type("title", title, str, "a str or None")
    check_type("allow_masked", allow_masked, bool, "True or False")
    query = check_integer("query", query, minimum=0, maximum=len(queries) - 1)
    decimals = check_integer("decimals", decimals, minimum=1, maximum=6)
    _check_rows(array, allow_masked, weights.ndim)
    data = {
        "queries": list(queries),
        "keys": list(keys),
        "layers": layers,
        "heads": heads,
        "query": query,
        "decimals": decimals,
        "weights": np.round(array, decimals).tolist(),
    }
    return AttentionExplorer(_page(data, title), data)


def _check_strings(name: str, values: object, what: str) -> None:
    """``values`` must be a non-empty list (or tuple) of str: ``what`` says of what."""
    check_sequence(name, values, what)
    items: Sequence[object] = values  # type: ignore[assignment]  # checked just above
    for i, value in enumerate(items):
        if not isinstance(value, str):
            raise TypeError(f"{name}[{i}] is {describe(value)}: {name} must be {what}")
    if not items:
        raise ValueError(f"{name} is empty: {name} must be {what}")


def _weights_array(weights: object, num_queries: int, num_keys: int) -> np.ndarray:
    """``weights`` as a float64 array of shape (layers, heads, queries, keys)."""
    if isinstance(weights, torch.Tensor):
        if weights.dtype == torch.bool or weights.is_complex():
            raise TypeError(f"weights must be real numbers; got {describe(weights)}")
        array = weights.detach().cpu().double().numpy()
    elif isinstance(weights, np.ndarray):
        if weights.dtype.kind not in "iuf":
            raise TypeError(f"weights must be real numbers; got {describe(weights)}")
        array = weights.astype(np.float64)
    else:
        raise TypeError(
            f"weights must be a tensor or an array of shape {SHAPES}; got {describe(weights)}"
        )
    if array.ndim not in (2, 3, 4):
        hint = " (of a batch, pass one example: weights[0])" if array.ndim == 5 else ""
        raise ValueError(f"weights must have shape {SHAPES}; got shape {array.shape}{hint}")
    if array.shape[-2:] != (num_queries, num_keys):
        raise ValueError(
            f"weights' last two axes must be (queries, keys) = ({num_queries}, {num_keys}), one "
            f"row per query token and one column per key token; got shape {array.shape}"
        )
    if array.size > MAX_WEIGHTS:
        raise ValueError(
            f"weights hold {array.size} numbers, more than the {MAX_WEIGHTS} an explorer "
            "embeds in a page: show fewer layers or heads, or a shorter sequence"
        )
    return array.reshape((1,) * (4 - array.ndim) + array.shape)


def _labels(
    name: str, labels: Sequence[str] | None, count: int, thing: str, weights: object
) -> list[str]:
    """Labels for the heads or layers: the given list of ``count`` str, or "head 1", ..."""
    if labels is None:
        return [f"{thing} {i + 1}" for i in range(count)]
    _check_strings(name, labels, f"a list of str labels, one per {thing}")
    if len(labels) != count:
        given = f"{len(labels)} label" + ("" if len(labels) == 1 else "s")
        things = f"{count} {thing}" + ("" if count == 1 else "s")
        raise ValueError(
            f"{name} has {given} for weights of {things} ({describe(weights)}): one label per "
            f"{thing}"
        )
    return list(labels)


def _check_rows(array: np.ndarray, allow_masked: bool, ndim: int) -> None:
    """Every weight finite and >= 0, every row summing to 1 (or, if allowed, all zeros). The
    message names the first bad weight or row as the caller indexes ``weights`` (``ndim``
    axes), e.g. ``weights[1, 3]``."""

    def row(index: tuple[int, ...]) -> str:
        return "weights[" + ", ".join(str(i) for i in index[4 - ndim :]) + "]"

    if not np.isfinite(array).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise ValueError(
            f"weights must be finite; {row(index)} holds {array[index]} (softmax over a "
            "row whose every score is -inf gives NaN: mask such a query with zeros instead)"
        )
    if (array < 0).any():
        index = tuple(int(i) for i in np.argwhere(array < 0)[0])
        raise ValueError(
            f"weights must be >= 0, softmax weights rather than scores; {row(index)} holds "
            f"{array[index]:.4g}"
        )
    sums = array.sum(axis=-1)
    zero = (array == 0).all(axis=-1)
    bad = np.abs(sums - 1) > ROW_SUM_TOLERANCE
    if allow_masked:
        bad &= ~zero
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        total = float(sums[index])
        hint = (
            "a query masked out entirely? pass allow_masked=True"
            if total == 0
            else "weights recorded in training mode, after dropout, sum to 1 / (1 - dropout): "
            "record them in eval mode"
        )
        raise ValueError(
            f"each row of weights must sum to 1 (a softmax over the keys); {row(index)} sums to "
            f"{total:.4g} ({hint})"
        )


def _asset(name: str) -> str:
    """``explorer.js`` or ``explorer.css``, shipped beside this module."""
    return resources.files("companion.figures").joinpath(name).read_text(encoding="utf-8")


def _page(data: dict, title: str | None) -> str:
    """The explorer's HTML: controls and tokens, the data as JSON, the style and script."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c")  # no "</script>" inside the script element
    digest = hashlib.sha256(f"{payload}\n{title}".encode()).hexdigest()[:12]
    uid = f"attention-{digest}"
    esc = html.escape

    def shown(token: str) -> str:  # a blank token still takes room and has a name
        return esc(token) if token.strip() else esc(repr(token))

    controls = []
    for axis, labels in (("layer", data["layers"]), ("head", data["heads"])):
        if len(labels) > 1:
            radios = "".join(
                f'<label><input type="radio" name="{uid}-{axis}" data-axis="{axis}" '
                f'value="{i}">{esc(label)}</label>'
                for i, label in enumerate(labels)
            )
            controls.append(f"<fieldset><legend>{axis.title()}</legend>{radios}</fieldset>")
    controls.append(
        '<label><input type="checkbox" class="ca-show-numbers">show every weight</label>'
    )
    options = "".join(
        f'<span role="option" data-index="{q}" '
        + (
            'aria-selected="true" tabindex="0">'
            if q == data["query"]
            else 'aria-selected="false" tabindex="-1">'
        )
        + f"{shown(token)}</span>"
        for q, token in enumerate(data["queries"])
    )
    keys = "".join(
        f'<li class="ca-key" data-index="{k}"><span class="ca-bar" aria-hidden="true">'
        f'<span class="ca-fill"></span></span><span class="ca-token">{shown(token)}</span>'
        '<span class="ca-weight"></span></li>'
        for k, token in enumerate(data["keys"])
    )
    name = esc(title) if title else "Attention weights"
    return "\n".join(
        [
            # MathJax (in Jupyter and the site) leaves a token such as "$" alone.
            f'<div class="companion-attention tex2jax_ignore mathjax_ignore" id="{uid}" '
            f'role="group" aria-label="{name}" '
            'data-lm-suppress-shortcuts="true">',
            f"<style>{_asset('explorer.css')}</style>",
            f'<p class="ca-title">{esc(title)}</p>' if title else "",
            f'<div class="ca-controls">{"".join(controls)}</div>',
            '<div class="ca-row"><span class="ca-label">Query</span>'
            '<div class="ca-tokens ca-queries" role="listbox" aria-orientation="horizontal" '
            f'aria-label="Query: choose a token to see its weights over the keys">{options}</div>'
            "</div>",
            '<div class="ca-row"><span class="ca-label">Keys</span>'
            '<ul class="ca-tokens ca-keys" aria-label="Keys, with the chosen query\'s weights">'
            f"{keys}</ul></div>",
            '<p class="ca-readout" aria-live="polite" aria-atomic="true">Choose a query token to '
            "see its weights (this needs JavaScript: in Jupyter, trust the notebook).</p>",
            f'<script type="application/json" class="ca-data">{payload}</script>',
            f"<script>{_asset('explorer.js')}</script>",
            "</div>",
        ]
    )
