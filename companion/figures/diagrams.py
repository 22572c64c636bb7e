"""Schematic diagrams of the book's mechanisms, drawn by code so that they stay consistent.

Each function draws one picture on a new figure and returns it: boxes for tensors and layers,
arrows for data flow. The style is shared (:data:`COLORS`): queries are orange, keys blue,
values green, learned layers grey, and attention weights purple, in every picture of the book.
A chapter shows one with its caption and alt text in the cell's ``mystnb`` metadata.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Arc, FancyArrowPatch, FancyBboxPatch, Rectangle

from companion._validate import check_integer, check_number, check_sequence

COLORS = {
    "query": "#f4a259",
    "key": "#5b8def",
    "value": "#62b36f",
    "layer": "#d9d9d9",
    "weight": "#9b72cf",
    "state": "#f2e394",
    "plain": "#ffffff",
}


def _canvas(width: float, height: float, size: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure whose axes measure ``width`` by ``height`` drawing units, with no frame."""
    fig, ax = plt.subplots(figsize=size)
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


@dataclass(frozen=True)
class Box:
    """A drawn box: its centre and size, with the anchor points arrows start and end at."""

    x: float
    y: float
    width: float
    height: float

    @property
    def left(self) -> tuple[float, float]:
        return self.x - self.width / 2, self.y

    @property
    def right(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y

    @property
    def top(self) -> tuple[float, float]:
        return self.x, self.y + self.height / 2

    @property
    def bottom(self) -> tuple[float, float]:
        return self.x, self.y - self.height / 2


def _box(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    kind: str = "layer",
    width: float = 1.6,
    height: float = 0.7,
    fontsize: int = 10,
) -> Box:
    """A rounded box centred on ``(x, y)``, coloured by ``kind``."""
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.05",
            facecolor=COLORS[kind],
            edgecolor="#333333",
            linewidth=1,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)
    return Box(x, y, width, height)


def _arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    text: str = "",
    color: str = "#333333",
    bend: float = 0.0,
) -> None:
    """An arrow from ``start`` to ``end`` (anchor points), with an optional label beside it."""
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=color,
            linewidth=1.2,
            shrinkA=3,
            shrinkB=3,
            connectionstyle=f"arc3,rad={bend}",
        )
    )
    if text:
        middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        ax.text(middle[0], middle[1] + 0.15, text, fontsize=8, color=color, ha="center")


def _check_weights(weights: tuple[float, ...]) -> None:
    check_sequence("weights", weights, "a list of attention weights, one per key")
    for i, weight in enumerate(weights):
        check_number(f"weights[{i}]", weight, at_least=0)
    if not weights or max(weights) == 0:
        raise ValueError(f"weights must hold at least one weight above 0; got {weights!r}")


def draw_attention_step(weights: tuple[float, ...] = (0.1, 0.6, 0.3)) -> Figure:
    """One attention step (sec-attention-pooling): a query scores every key, softmax turns the
    scores into weights, and the output is the weighted sum of the values. ``weights``: one
    per key, numbers >= 0, not all 0."""
    _check_weights(weights)
    fig, ax = _canvas(12, 5.4, (8.5, 3.9))
    query = _box(ax, 1.0, 2.6, "query $q$", "query", width=1.5)
    output = _box(ax, 11.0, 2.6, "output\n$\\sum_i \\alpha_i v_i$", "value", width=1.5, height=1.0)
    for i, weight in enumerate(weights):
        y = 4.3 - 1.7 * i
        key = _box(ax, 3.5, y, f"key $k_{i + 1}$", "key", width=1.3)
        _arrow(ax, query.right, key.left, color=COLORS["query"])
        score = _box(ax, 5.7, y, f"score $a(q, k_{i + 1})$", "plain", width=2.0)
        _arrow(ax, key.right, score.left)
        ax.add_patch(
            Rectangle((7.1, y - 0.3), 0.9 * weight / max(weights), 0.6, facecolor=COLORS["weight"])
        )
        ax.text(7.1, y + 0.45, f"$\\alpha_{i + 1}$ = {weight:.1f}", fontsize=8)
        _arrow(ax, score.right, (7.1, y), color=COLORS["weight"])
        value = _box(ax, 9.0, y, f"value $v_{i + 1}$", "value", width=1.3)
        _arrow(ax, (8.05, y), value.left, color=COLORS["weight"])
        _arrow(ax, value.right, output.left, color=COLORS["value"])
    ax.text(7.1, 5.1, "softmax over the keys", fontsize=9, color=COLORS["weight"])
    return fig


def draw_bahdanau_decoder() -> Figure:
    """The Bahdanau decoder at step t' (sec-bahdanau): the previous decoder state s_{t'-1}
    scores the encoder states h_t (the keys); the weights average the same h_t (the values)
    into the context c_{t'}, which enters the GRU with the previous token's embedding; the new
    state s_{t'} gives the logits and is the query of the next step."""
    fig, ax = _canvas(12, 7.4, (8.4, 5.2))
    states = [
        _box(ax, 1.3 + 1.4 * t, 1.2, f"$\\mathbf{{h}}_{t + 1}$", "key", width=1.0) for t in range(4)
    ]
    ax.add_patch(
        FancyBboxPatch(
            (0.6, 0.7),
            5.6,
            1.0,
            boxstyle="round,pad=0.08",
            facecolor="none",
            edgecolor=COLORS["value"],
            linestyle="--",
            linewidth=1.2,
        )
    )
    ax.text(0.6, 0.15, "encoder states $\\mathbf{h}_t$: the keys and the values", fontsize=9)
    weights = _box(
        ax,
        3.4,
        3.2,
        "weights $\\alpha_{t',t}$\n(softmax over $t$)",
        "weight",
        width=2.6,
        height=0.9,
    )
    for state in states:
        _arrow(ax, state.top, weights.bottom, color=COLORS["key"])
    ax.text(1.55, 2.2, "keys", fontsize=8, color=COLORS["key"])
    context = _box(
        ax,
        3.4,
        5.1,
        "context $\\mathbf{c}_{t'} = \\sum_t \\alpha_{t',t} \\mathbf{h}_t$",
        "value",
        width=3.4,
    )
    _arrow(ax, weights.top, context.bottom, color=COLORS["weight"])
    _arrow(ax, (0.5, 1.2), context.left, color=COLORS["value"], bend=-0.4)
    ax.text(0.05, 3.4, "values", fontsize=8, color=COLORS["value"], rotation=90)
    query = _box(ax, 7.8, 3.2, "$\\mathbf{s}_{t'-1}$\n(the query)", "query", width=1.9, height=0.9)
    _arrow(ax, query.left, weights.right, color=COLORS["query"])
    gru = _box(ax, 7.8, 5.1, "GRU", "layer", width=1.2)
    _arrow(ax, context.right, gru.left)
    _arrow(ax, query.top, gru.bottom, color=COLORS["query"])
    token = _box(ax, 10.1, 5.1, "$e(y_{t'-1})$", "plain", width=1.6)
    _arrow(ax, token.left, gru.right)
    new_state = _box(ax, 7.8, 6.7, "$\\mathbf{s}_{t'}$", "state", width=1.1)
    _arrow(ax, gru.top, new_state.bottom)
    logits = _box(ax, 4.9, 6.7, "logits of $y_{t'}$", "plain", width=2.0)
    _arrow(ax, new_state.left, logits.right)
    # The recurrence: s_{t'} is the query of step t' + 1, drawn round the right-hand side.
    corner = 11.4
    ax.plot(
        [new_state.right[0] + 0.05, corner, corner],
        [new_state.y, new_state.y, query.y],
        color="#333333",
        linewidth=1.2,
        linestyle="--",
    )
    _arrow(ax, (corner, query.y), query.right)
    ax.text(corner + 0.15, 4.9, "query of step $t'+1$", fontsize=8, rotation=90, va="center")
    return fig


def draw_multihead(num_heads: int = 3) -> Figure:
    """Multi-head attention (sec-multihead-attention), in the chapter's notation: head ``i``
    projects all ``d`` features of the queries, keys and values with its own ``W_i^q``,
    ``W_i^k`` and ``W_i^v`` (``d x p`` each) and attends, giving ``H_i``; the heads' outputs are
    concatenated and mixed by ``W_o``. ``num_heads`` is a positive integer."""
    check_integer("num_heads", num_heads)
    fig, ax = _canvas(12.4, 6.2, (8.8, 4.4))
    inputs = _box(ax, 1.0, 3.2, "$Q, K, V$\nall $d$\nfeatures", "plain", width=1.4, height=1.4)
    concat = _box(ax, 9.3, 3.2, "concat", "plain", width=1.2)
    ax.text(9.3, 2.55, "$[H_1, \\dots, H_h]$", ha="center", va="top", fontsize=9)
    step = 4.0 / max(num_heads - 1, 1)
    for head in range(num_heads):
        i = head + 1
        y = 5.2 - step * head if num_heads > 1 else 3.2
        projection = _box(ax, 3.95, y, f"$W_{{{i}}}^q, W_{{{i}}}^k, W_{{{i}}}^v$", width=2.4)
        _arrow(ax, inputs.right, projection.left)
        attend = _box(ax, 6.5, y, f"attention\nhead {i}", "weight", width=1.6, height=0.9)
        _arrow(ax, projection.right, attend.left)
        _arrow(ax, attend.right, concat.left, color=COLORS["weight"])
        ax.text(attend.right[0] + 0.1, y + 0.12, f"$H_{{{i}}}$", fontsize=9, va="bottom")
    mix = _box(ax, 11.55, 3.2, "$W_o$", "layer", width=0.9)
    _arrow(ax, concat.right, mix.left)
    ax.text(
        6.2,
        0.25,
        "each head projects all $d$ features to its own $p = d/h$; $W_o$ mixes the heads",
        fontsize=9,
        ha="center",
    )
    return fig


HEAD_COLORS = ("#ef8a8a", "#6cc3c3", "#f3c262", "#a9a2e3")  # draw_split_heads: one per head
WRONG = "#b03a2e"  # draw_split_heads: the pitfall


def _head_cells(
    ax: Axes, left: float, top: float, heads: list[list[int]], positions: list[list[int]]
) -> None:
    """A matrix whose top-left corner is ``(left, top)``: cell ``[r][c]`` is coloured by the
    head its feature belongs to, ``heads[r][c]``, and labelled with its position."""
    size = 0.45  # the side of a cell
    for r, (row_heads, row_positions) in enumerate(zip(heads, positions)):
        for c, (head, position) in enumerate(zip(row_heads, row_positions)):
            x, y = left + c * size, top - (r + 1) * size
            ax.add_patch(
                Rectangle((x, y), size, size, facecolor=HEAD_COLORS[head], edgecolor="white")
            )
            ax.text(x + size / 2, y + size / 2, str(position), ha="center", va="center")


def draw_split_heads(n: int = 3, num_heads: int = 2, head_size: int = 2) -> Figure:
    """Splitting one example's projected queries into heads (sec-multihead-attention): the
    ``(n, d)`` matrix is viewed as ``(n, h, p)``, which moves no data, and transposed to
    ``(h, n, p)``, one ``n x p`` matrix per head. Below, a reshape straight to ``(h, n, p)``
    reads the same memory in the wrong order and mixes heads with positions. Each feature is
    coloured by its head and labelled with its position. ``n`` is 2 to 5, ``num_heads`` 2 to 4
    and ``head_size`` 1 to 3."""
    check_integer("n", n, minimum=2, maximum=5)
    check_integer("num_heads", num_heads, minimum=2, maximum=len(HEAD_COLORS))
    check_integer("head_size", head_size, minimum=1, maximum=3)
    h, p, size = num_heads, head_size, 0.45
    d, tall = h * p, n * size  # the width, and the height of every matrix
    gap_b, gap_c = 0.18, 0.45  # between the heads' blocks in the view, and their matrices
    left_a = 0.8
    left_b = left_a + d * size + 1.4
    width_b = d * size + (h - 1) * gap_b
    left_c = left_b + width_b + 1.7
    width_c = h * p * size + (h - 1) * gap_c
    top, low = 2 * tall + 2.3, tall + 0.85  # the tops of the two rows of matrices
    width, height = left_c + width_c + 0.4, top + 0.55
    fig, ax = _canvas(width, height, (0.87 * width, 0.87 * height))
    middle = top - tall / 2
    by_position = [[t] * p for t in range(n)]  # one head's block: row t is position t
    _head_cells(ax, left_a, top, [[f // p for f in range(d)]] * n, [[t] * d for t in range(n)])
    for t in range(n):
        ax.text(left_a - 0.1, top - (t + 0.5) * size, f"$t={t}$", ha="right", va="center")
    ax.text(left_a + d * size / 2, top + 0.2, "$XW_q$: $(n, d)$", ha="center")
    _arrow(ax, (left_a + d * size, middle), (left_b, middle))
    ax.text(left_b - 0.7, middle + 0.2, "no data\nmoves", ha="center", fontsize=8)
    for head in range(h):  # the view: the same rows, each head's features a block
        x = left_b + head * (p * size + gap_b)
        _head_cells(ax, x, top, [[head] * p] * n, by_position)
    ax.text(left_b + width_b / 2, top + 0.2, "view as $(n, h, p)$", ha="center")
    _arrow(ax, (left_b + width_b, middle), (left_c, middle))
    ax.text(left_c - 0.85, middle + 0.2, "swap positions\nand heads", ha="center", fontsize=8)
    for head in range(h):  # the transpose: one n x p matrix per head
        x = left_c + head * (p * size + gap_c)
        _head_cells(ax, x, top, [[head] * p] * n, by_position)
        ax.text(x + p * size / 2, top - tall - 0.1, f"head {head + 1}", ha="center", va="top")
    ax.text(left_c + width_c / 2, top + 0.2, "transpose: $(h, n, p)$", ha="center")
    for head in range(h):  # the pitfall: element k of the memory, read in (h, n, p) order
        x = left_c + head * (p * size + gap_c)
        flat = [[head * n * p + r * p + c for c in range(p)] for r in range(n)]
        heads = [[k % d // p for k in row] for row in flat]
        _head_cells(ax, x, low, heads, [[k // d for k in row] for row in flat])
        label = f"head {head + 1}?"
        ax.text(x + p * size / 2, low - tall - 0.1, label, ha="center", va="top", color=WRONG)
    label = "reshape straight to $(h, n, p)$:\nheads and positions mixed"
    ax.text(left_c + width_c / 2, low + 0.2, label, ha="center", color=WRONG)
    _arrow(
        ax, (left_a + d * size / 2, top - tall), (left_c, low - tall / 2), color=WRONG, bend=0.25
    )
    legend = "colour: the head a feature belongs to;  number: its position $t$"
    ax.text(0.2, 0.15, legend, fontsize=9)
    return fig


def _grid(
    ax: Axes,
    x: float,
    y: float,
    rows: int,
    cols: int,
    kind: str,
    shades: list[list[float]] | None = None,
    highlight: int | None = None,
    cell: float = 0.32,
) -> Box:
    """A matrix drawn as ``rows`` by ``cols`` cells centred on ``(x, y)``, coloured by ``kind``
    (``shades``, in [0, 1], makes each cell that strong); row ``highlight`` gets a dark frame."""
    left, top = x - cols * cell / 2, y + rows * cell / 2
    for r in range(rows):
        for c in range(cols):
            alpha = 0.85 if shades is None else 0.1 + 0.9 * shades[r][c]
            ax.add_patch(
                Rectangle(
                    (left + c * cell, top - (r + 1) * cell),
                    cell,
                    cell,
                    facecolor=COLORS[kind],
                    alpha=alpha,
                    edgecolor="white",
                    linewidth=1,
                )
            )
    if highlight is not None:
        ax.add_patch(
            Rectangle(
                (left, top - (highlight + 1) * cell),
                cols * cell,
                cell,
                fill=False,
                edgecolor="#333333",
                linewidth=1.6,
            )
        )
    return Box(x, y, cols * cell, rows * cell)


def draw_self_attention(n: int = 4) -> Figure:
    """Self-attention in matrix form (sec-self-attention): one X makes the queries, keys and
    values; every query meets every key in the n x n scores; a softmax over each row gives the
    weights, which mix the values. Row 2 (query 2) is framed throughout. ``n``, the number of
    positions, is an integer from 2 to 8."""
    check_integer("n", n, minimum=2, maximum=8)
    fig, ax = _canvas(15.5, 7.7, (9.5, 4.7))
    row = 1  # the framed row: query 2
    X = _grid(ax, 1.1, 4.1, n, 5, "state", highlight=row)
    ax.text(
        X.x,
        X.y - X.height / 2 - 0.35,
        "$X$: $n \\times d$,\none row per\nposition",
        ha="center",
        va="top",
        fontsize=9,
    )
    shapes = {
        "query": ("$W_q$", "$Q = XW_q$", 6.5),
        "key": ("$W_k$", "$K = XW_k$", 4.1),
        "value": ("$W_v$", "$V = XW_v$", 1.7),
    }
    made = {}
    for kind, (weight, name, y) in shapes.items():
        layer = _box(ax, 3.5, y, weight, "layer", width=0.9, height=0.6)
        _arrow(ax, X.right, layer.left)
        matrix = _grid(ax, 5.6, y, n, 3, kind, highlight=row if kind == "query" else None)
        _arrow(ax, layer.right, matrix.left)
        ax.text(
            matrix.x, matrix.y - matrix.height / 2 - 0.15, name, ha="center", va="top", fontsize=9
        )
        made[kind] = matrix
    scores = _grid(ax, 8.8, 5.3, n, n, "weight", shades=[[0.15] * n] * n, highlight=row)
    _arrow(ax, made["query"].right, scores.left, color=COLORS["query"])
    _arrow(ax, made["key"].right, scores.left, color=COLORS["key"], text="$K^\\top$")
    ax.text(
        scores.x,
        scores.y + scores.height / 2 + 0.15,
        "scores $QK^\\top/\\sqrt{d_k}$\n$n \\times n$",
        ha="center",
        va="bottom",
        fontsize=9,
    )
    shades = [[((i * 3 + j * 5) % 7) / 6 for j in range(n)] for i in range(n)]
    weights = _grid(ax, 12.0, 5.3, n, n, "weight", shades=shades, highlight=row)
    _arrow(ax, scores.right, weights.left, color=COLORS["weight"])
    ax.text(
        (scores.x + weights.x) / 2,
        scores.y - scores.height / 2 - 0.2,
        "softmax over each row",
        ha="center",
        va="top",
        fontsize=8,
        color=COLORS["weight"],
    )
    ax.text(
        weights.x,
        weights.y + weights.height / 2 + 0.15,
        "weights $\\alpha$\nrows sum to 1",
        ha="center",
        va="bottom",
        fontsize=9,
    )
    output = _grid(ax, 14.6, 3.1, n, 3, "value", highlight=row)
    _arrow(ax, weights.bottom, output.left, color=COLORS["weight"])
    _arrow(ax, made["value"].right, output.left, color=COLORS["value"])
    ax.text(
        output.x,
        output.y - output.height / 2 - 0.15,
        "$O$: $n \\times d_v$",
        ha="center",
        va="top",
        fontsize=9,
    )
    ax.text(
        7.8,
        0.15,
        "framed: row 2, query 2 against every key; its output mixes every value",
        ha="center",
        fontsize=8,
    )
    return fig


def _stack(ax: Axes, x: float, title: str, sublayers: list[tuple[str, str]]) -> list[Box]:
    """One post-norm Transformer block: a frame of sublayers, bottom to top, each sublayer
    followed by its "add & norm", into which a residual arrow carries the sublayer's input;
    returns the boxes."""
    height = 0.75 * len(sublayers) + 0.3
    ax.add_patch(
        FancyBboxPatch(
            (x - 1.5, 1.0),
            3.0,
            height,
            boxstyle="round,pad=0.08",
            facecolor="#f7f7f7",
            edgecolor="#333333",
        )
    )
    ax.text(x + 0.3, 1.0 + height + 0.2, title, ha="left", fontsize=10)  # beside the arrow out
    boxes: list[Box] = []
    for i, (text, kind) in enumerate(sublayers):
        current = _box(ax, x + 0.2, 1.5 + 0.75 * i, text, kind, width=2.4, height=0.5, fontsize=9)
        _arrow(ax, boxes[-1].top if boxes else (x + 0.2, 0.6), current.bottom)
        if text == "add & norm":  # the residual: the sublayer's input, around the sublayer
            below = current.y - 1.5 + 0.375  # where the arrow into the sublayer starts
            ax.plot([x + 0.2, x - 1.3, x - 1.3], [below, below, current.y], color=COLORS["key"])
            _arrow(ax, (x - 1.3, current.y), current.left, color=COLORS["key"])
        boxes.append(current)
    return boxes


def draw_transformer() -> Figure:
    """The encoder-decoder Transformer (sec-transformer): N encoder blocks; N decoder blocks,
    each with masked self-attention, cross-attention on the encoder's output, and an FFN; every
    sublayer in a residual connection (blue) and a layer norm."""
    fig, ax = _canvas(10.4, 7.6, (7.8, 5.7))
    add_norm = ("add & norm", "plain")
    encoder = _stack(
        ax,
        2.3,
        "encoder block (× N)",
        [("self-attention", "weight"), add_norm, ("feed-forward", "layer"), add_norm],
    )
    decoder = _stack(
        ax,
        7.5,
        "decoder block (× N)",
        [
            ("masked self-attention", "weight"),
            add_norm,
            ("cross-attention", "weight"),
            add_norm,
            ("feed-forward", "layer"),
            add_norm,
        ],
    )
    ax.text(2.5, 0.2, "source tokens + positions", ha="center", fontsize=9)
    ax.text(7.7, 0.2, "target tokens (shifted) + positions", ha="center", fontsize=9)
    _arrow(ax, encoder[-1].right, decoder[2].left, "keys, values", color=COLORS["key"])
    linear = _box(ax, 7.7, 7.05, "linear + softmax", "plain", width=2.4, height=0.5, fontsize=9)
    _arrow(ax, decoder[-1].top, linear.bottom)
    ax.text(9.05, 7.05, "→ next token", va="center", fontsize=9)
    ax.text(0.62, 1.9, "residual", ha="right", fontsize=8, color=COLORS["key"])
    return fig


def draw_norm_placement() -> Figure:
    """Post-norm (the 2017 Transformer) against pre-norm (GPT-2, ViT and later) blocks
    (sec-transformer): where the layer norm sits relative to the residual path."""
    fig, ax = _canvas(10, 5.8, (8, 4.6))
    for x, title, order in (
        (2.5, "post-norm: $\\mathrm{LN}(x + f(x))$", ["sublayer $f$", "add", "layer norm"]),
        (7.5, "pre-norm: $x + f(\\mathrm{LN}(x))$", ["layer norm", "sublayer $f$", "add"]),
    ):
        ax.text(x, 5.4, title, ha="center", fontsize=10)
        previous = _box(ax, x, 0.5, "$x$", "plain", width=0.8)
        boxes = []
        for i, text in enumerate(order):
            kind = "weight" if text.startswith("sublayer") else "plain"
            current = _box(ax, x, 1.6 + 1.1 * i, text, kind, width=2.0, height=0.6)
            _arrow(ax, previous.top, current.bottom)
            boxes.append(previous := current)
        add = boxes[order.index("add")]
        _arrow(ax, (x - 0.4, 0.5), add.left, color=COLORS["key"], bend=-0.5)
        ax.text(x - 2.2, 1.5, "residual", fontsize=8, color=COLORS["key"])
        _arrow(ax, previous.top, (x, 5.1))
    return fig


def draw_decoder_caches(num_steps: int = 4, source_steps: int = 3) -> Figure:
    """The two caches of an encoder-decoder's decoder layer (sec-kv-cache): on the left the
    self-attention cache across decoding steps, where only the new token's key and value are
    computed and the earlier ones are read from the cache; on the right the cross-attention
    cache, the encoder outputs' keys and values, computed at step 1 and only read after that.
    ``num_steps`` and ``source_steps`` are positive integers."""
    check_integer("num_steps", num_steps)
    check_integer("source_steps", source_steps)
    return _draw_caches(num_steps, source_steps)


def _draw_caches(num_steps: int, source_steps: int) -> Figure:
    """The self-attention cache over ``num_steps`` steps, with ``source_steps`` > 0 a
    cross-attention cache beside it."""
    cross_x = 1.6 + num_steps + 1.9  # where the cross-attention cache starts
    width = cross_x + source_steps + 0.3 if source_steps else num_steps + 4.5
    fig, ax = _canvas(width, num_steps + 2.0, (7 + 0.8 * source_steps, 4.4))
    light = {"key": "#c9d7f5", "value": "#cfe8d3"}

    def cell(x: float, y: float, text: str, kind: str, computed: bool) -> None:
        color = COLORS[kind] if computed else light[kind]
        ax.add_patch(Rectangle((x, y + 0.1), 0.9, 0.7, facecolor=color, edgecolor="#333333"))
        ax.text(x + 0.45, y + 0.45, text, ha="center", va="center", fontsize=7)

    for step in range(num_steps):
        y = num_steps - step
        ax.text(0.1, y + 0.45, f"step {step + 1}", fontsize=9, va="center")
        for position in range(step + 1):
            label = f"$k_{position + 1}, v_{position + 1}$"
            cell(1.6 + position, y, label, "key", position == step)
        ax.text(
            2.7 + step,
            y + 0.45,
            f"← query $q_{step + 1}$",
            fontsize=8,
            va="center",
            color=COLORS["query"],
        )
        for j in range(source_steps):
            cell(cross_x + j, y, f"$k'_{j + 1}, v'_{j + 1}$", "value", step == 0)
    top = num_steps + 1.1
    if source_steps:
        ax.text(1.6, top, "self-attention cache: grows", fontsize=9, va="center")
        ax.text(cross_x, top, "cross-attention cache: static", fontsize=9, va="center")
    ax.add_patch(Rectangle((1.6, 0.2), 0.5, 0.3, facecolor=light["key"], edgecolor="#333333"))
    ax.text(2.2, 0.35, "read from the cache", fontsize=8, va="center")
    ax.add_patch(Rectangle((4.6, 0.2), 0.5, 0.3, facecolor=COLORS["key"], edgecolor="#333333"))
    ax.text(5.2, 0.35, "computed at this step", fontsize=8, va="center")
    return fig


def draw_prefill_decode(prompt: int = 4, new: int = 3) -> Figure:
    """Prefill and decode (sec-kv-cache) on the causal score matrix of one head: a query (row)
    against the keys (columns) up to its own position. Prefill runs the ``prompt`` rows in one
    pass and fills the cache; decode then adds one row per step, its query against every key
    cached so far. ``prompt`` and ``new`` are positive integers."""
    check_integer("prompt", prompt)
    check_integer("new", new)
    n = prompt + new
    fig, ax = _canvas(n + 6.2, n + 1.8, (7.2, 4.8))
    for row in range(n):
        y = n - row  # the first position on top
        decoding = row >= prompt
        for column in range(row + 1):
            color = COLORS["state"] if decoding else COLORS["weight"]
            ax.add_patch(Rectangle((1.2 + column, y), 0.95, 0.95, facecolor=color, alpha=0.8))
        ax.text(1.0, y + 0.47, f"$q_{row + 1}$", ha="right", va="center", fontsize=9)
        if decoding:
            ax.text(1.4 + n, y + 0.47, f"decode step {row - prompt + 1}: 1 query, {row + 1} keys",
                    va="center", fontsize=8)  # fmt: skip
    for column in range(n):
        ax.text(1.67 + column, n + 1.25, f"$k_{column + 1}$", ha="center", fontsize=9)
    prefill_y = n - prompt + 1 + prompt / 2
    ax.text(1.4 + n, prefill_y, f"prefill: {prompt} queries\nin one pass", va="center", fontsize=9)
    return fig


def draw_vit_patching(image_size: int = 8, patch_size: int = 4) -> Figure:
    """ViT patching (sec-vit): the image is cut into non-overlapping patches, numbered row by row
    and each drawn in its own colour; each is flattened and projected to a token of the same
    colour; a learned ``<cls>`` token goes first, a learned position is added to every token, and
    a layer norm and a linear head read the class from ``<cls>``'s output. ``image_size`` and
    ``patch_size`` are positive integers, the patch dividing the image, at most 4 patches."""
    if check_integer("image_size", image_size) % check_integer("patch_size", patch_size):
        raise ValueError(f"patch_size={patch_size} must divide image_size={image_size}")
    grid = image_size // patch_size
    if grid * grid > len(HEAD_COLORS):
        raise ValueError(f"draws at most {len(HEAD_COLORS)} patches; got {grid * grid}")
    fig, ax = _canvas(14.2, 6.2, (9.6, 4.2))
    cell = 4.0 / image_size
    for row in range(image_size):
        for col in range(image_size):
            patch = (row // patch_size) * grid + col // patch_size
            ax.add_patch(
                Rectangle(
                    (0.5 + cell * col, 5.0 - cell * (row + 1)),
                    cell,
                    cell,
                    facecolor=HEAD_COLORS[patch],
                    edgecolor="white",
                )
            )
    for line in range(grid + 1):
        edge = cell * patch_size * line
        ax.plot([0.5 + edge] * 2, [1.0, 5.0], color="#333333")
        ax.plot([0.5, 4.5], [1.0 + edge] * 2, color="#333333")
    side = cell * patch_size
    for patch in range(grid * grid):
        x = 0.5 + side * (patch % grid + 0.5)
        y = 5.0 - side * (patch // grid + 0.5)
        ax.text(x, y, str(patch + 1), ha="center", va="center", fontsize=14, weight="bold")
    ax.text(
        0.5, 0.4, f"{image_size}×{image_size} image, {patch_size}×{patch_size} patches", fontsize=9
    )
    encoder = _box(ax, 10.0, 3.0, "Transformer\nencoder", "layer", width=2.0, height=1.4)
    tokens = [_box(ax, 7.0, 5.5, "<cls> + pos", "query", width=1.9, height=0.5, fontsize=9)]
    for index in range(grid * grid):
        y = 4.6 - 0.9 * index
        tokens.append(_box(ax, 7.0, y, f"patch {index + 1} + pos", width=1.9, height=0.5,
                           fontsize=9))  # fmt: skip
        ax.patches[-1].set_facecolor(HEAD_COLORS[index])
    _arrow(ax, (4.6, 3.0), (6.0, 3.0), "flatten,\nlinear")
    for token in tokens:
        _arrow(ax, token.right, encoder.left)
    head = _box(ax, 12.9, 4.6, "LN + linear\n→ class", "plain", width=2.0, height=0.9, fontsize=9)
    _arrow(ax, encoder.top, head.left, "<cls>'s\noutput", bend=-0.3)
    return fig


def draw_decoder_blocks() -> Figure:
    """GPT-2's decoder block beside a Llama-style one (sec-modern-decoder): the same pre-norm
    skeleton, normalize, attend, add; normalize, feed forward, add. The four changes are drawn
    in orange: RMSNorm for layer norm, RoPE's rotation of the queries and keys inside attention
    for learned positions added to the input, SwiGLU for the GELU MLP, and key-value heads
    shared by groups of query heads."""
    fig, ax = _canvas(10.4, 8.2, (7.6, 6.0))
    changed = "query"  # the four changes, in orange
    columns = (
        (2.6, "GPT-2 block (2019)", "tokens + learned positions", [
            ("layer norm", "plain"),
            ("masked multi-head\nattention", "weight"),
            ("layer norm", "plain"),
            ("MLP: GELU, width 4d", "layer"),
        ]),
        (7.8, "Llama-style block (2023)", "tokens (no position vectors)", [
            ("RMSNorm", changed),
            ("masked attention, RoPE on q, k;\nkey-value heads shared (GQA)", changed),
            ("RMSNorm", changed),
            ("SwiGLU, width ≈ 8d/3", changed),
        ]),
    )  # fmt: skip
    for x, title, inputs, sublayers in columns:
        ax.text(x, 7.85, title, ha="center", fontsize=11, weight="bold")
        start = _box(ax, x, 0.55, inputs, "plain", width=3.6, height=0.55, fontsize=9)
        if "learned" in inputs:
            ax.patches[-1].set_facecolor(COLORS["state"])
        previous, y = start, 1.55
        for i, (text, kind) in enumerate(sublayers):
            box = _box(ax, x, y, text, kind, width=3.4, height=0.8 if "\n" in text else 0.55,
                       fontsize=9)  # fmt: skip
            _arrow(ax, previous.top, box.bottom)
            previous, y = box, y + 1.05 + (0.2 if "\n" in text else 0)
            if i % 2:  # after the sublayer: add the residual
                add = _box(ax, x, y, "+", "plain", width=0.5, height=0.45)
                _arrow(ax, previous.top, add.bottom)
                bottom = y - 1.05 * 2 - (0.2 if "\n" in text else 0) - 0.45
                ax.plot([x - 2.0, x - 2.0], [bottom, y], color=COLORS["key"], lw=1.2)
                ax.plot([x, x - 2.0], [bottom, bottom], color=COLORS["key"], lw=1.2)
                _arrow(ax, (x - 2.0, y), add.left, color=COLORS["key"])
                previous, y = add, y + 0.8
        _arrow(ax, previous.top, (x, 7.45))
    ax.text(0.3, 2.4, "residual", rotation=90, va="center", fontsize=8, color=COLORS["key"])
    ax.add_patch(Rectangle((3.6, 0.02), 0.35, 0.2, facecolor=COLORS[changed]))
    ax.text(4.05, 0.12, "changed from GPT-2", va="center", fontsize=8)
    return fig


def draw_kv_sharing(num_heads: int = 4) -> Figure:
    """Multi-head, grouped-query and multi-query attention (sec-modern-decoder), side by side:
    ``num_heads`` query heads on top, the key-value heads below, a line from each query head to
    the key-value head it reads. Grouped-query attention shares each key-value head among
    ``num_heads / 2`` consecutive query heads (2 key-value heads); the cache keeps only the
    key-value heads. ``num_heads`` is 2, 4 or 6."""
    check_integer("num_heads", num_heads, minimum=2, maximum=6)
    if num_heads % 2:
        raise ValueError(f"num_heads must be even (GQA shares 2 key-value heads); got {num_heads}")
    step = 0.75
    width = 3 * (num_heads * step + 0.9) + 0.3
    fig, ax = _canvas(width, 4.4, (min(9.5, 0.9 * width), 3.9))
    kinds = (("multi-head (MHA)", num_heads), ("grouped-query (GQA)", 2), ("multi-query (MQA)", 1))
    for panel, (title, kv_heads) in enumerate(kinds):
        left = 0.3 + panel * (num_heads * step + 0.9)
        middle = left + num_heads * step / 2
        ax.text(middle, 4.1, title, ha="center", fontsize=10, weight="bold")
        group = num_heads // kv_heads
        kv_x = [left + (j * group + group / 2) * step for j in range(kv_heads)]
        for i in range(num_heads):
            x = left + (i + 0.5) * step
            _box(ax, x, 3.2, f"$q_{i + 1}$", "query", width=0.55, height=0.5, fontsize=9)
            ax.plot([x, kv_x[i // group]], [2.93, 1.67], color="#555555", lw=1)
        for j, x in enumerate(kv_x):
            _box(ax, x, 1.3, f"$k_{j + 1}, v_{j + 1}$", "key", width=min(0.9, group * step - 0.1)
                 if group > 1 else 0.62, height=0.62, fontsize=8)  # fmt: skip
        ax.text(middle, 0.35, f"cache: {kv_heads} head{'s' if kv_heads > 1 else ''} per token",
                ha="center", fontsize=9)  # fmt: skip
    return fig


def draw_rope_pairings(head_dim: int = 8) -> Figure:
    """The two ways RoPE pairs a head's features (sec-modern-decoder): the paper's interleaved
    pairs ``(2j, 2j+1)`` and Hugging Face Llama's halves ``(j, j + d/2)``. Each feature is drawn
    as a cell coloured by its pair ``j``, which turns by the angle ``i omega_j`` at position
    ``i``; an arc joins the two features of each pair. ``head_dim`` is 4, 6 or 8."""
    check_integer("head_dim", head_dim, minimum=4, maximum=2 * len(HEAD_COLORS))
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (RoPE turns pairs); got {head_dim}")
    half, size = head_dim // 2, 0.8
    fig, ax = _canvas(3.2 + head_dim * size + 0.4, 4.6, (7.0, 3.3))
    rows = (
        (3.1, "interleaved\n(the paper, Meta)", [f // 2 for f in range(head_dim)]),
        (0.9, "halves\n(Hugging Face)", [f % half for f in range(head_dim)]),
    )
    for y, title, pair_of in rows:
        ax.text(3.0, y + size / 2, title, ha="right", va="center", fontsize=9)
        for feature, pair in enumerate(pair_of):
            x = 3.2 + feature * size
            ax.add_patch(Rectangle((x, y), size - 0.06, size, facecolor=HEAD_COLORS[pair],
                                   edgecolor="#333333"))  # fmt: skip
            ax.text(x + size / 2, y + size / 2, f"$x_{{{feature}}}$", ha="center", va="center",
                    fontsize=9)  # fmt: skip
        for pair in range(half):
            a, b = (f for f, p in enumerate(pair_of) if p == pair)
            xa, xb = (3.2 + (f + 0.47) * size for f in (a, b))
            ax.add_patch(Arc(((xa + xb) / 2, y + size), xb - xa, 0.35 + 0.12 * (b - a),
                             theta1=0, theta2=180, color="#333333", lw=1))  # fmt: skip
    ax.text(3.2, 0.25, "colour: the pair $j$, turned by $i\\omega_j$ at position $i$",
            fontsize=8)  # fmt: skip
    return fig


def draw_rolling_cache(window: int = 4, num_steps: int = 7) -> Figure:
    """The rolling cache of a sliding window of ``window`` tokens (sec-modern-decoder): a ring of
    ``window`` slots; the token at position ``i`` is written into slot ``i mod window``,
    over the token ``window`` places before it, which no query can see any more. One row per
    decoding step, the slot written at that step highlighted. ``window`` is 2 to 6 and
    ``num_steps`` from ``window + 1`` to 10."""
    check_integer("window", window, minimum=2, maximum=6)
    check_integer("num_steps", num_steps, minimum=window + 1, maximum=10)
    size = 0.9
    fig, ax = _canvas(2.2 + window * size + 4.4, num_steps * size + 1.6, (7.0, 4.6))
    light = "#c9d7f5"
    top = num_steps * size + 0.4
    for slot in range(window):
        ax.text(2.2 + (slot + 0.5) * size, top + 0.35, f"slot {slot}", ha="center", fontsize=8)
    for m in range(num_steps):
        y = top - (m + 1) * size
        ax.text(2.0, y + size / 2, f"token {m}", ha="right", va="center", fontsize=9)
        for slot in range(window):
            held = [p for p in range(m + 1) if p % window == slot]
            if not held:
                continue
            position = held[-1]
            color = COLORS["key"] if position == m else light
            ax.add_patch(Rectangle((2.2 + slot * size, y + 0.05), size - 0.05, size - 0.1,
                                   facecolor=color, edgecolor="#333333"))  # fmt: skip
            ax.text(2.2 + (slot + 0.5) * size, y + size / 2, f"$k_{{{position}}}$", ha="center",
                    va="center", fontsize=8)  # fmt: skip
        if m >= window:
            note = f"overwrites $k_{{{m - window}}}$ in slot {m % window}"
            ax.text(2.4 + window * size, y + size / 2, note, va="center", fontsize=8)
    ax.text(0.2, 0.15, f"slot of token $i$: $i$ mod {window}; the cache never holds more than "
            f"{window} tokens", fontsize=8)  # fmt: skip
    return fig


def sparse_patterns(
    n: int = 16, window: int = 1, stride: int = 4, num_global: int = 1, num_random: int = 2
) -> dict[str, list[list[bool]]]:
    """The attention patterns of sec-efficient-attention as ``n x n`` masks, True where query
    ``i`` (a row) attends to key ``j`` (a column): "full"; "sliding window", ``|i - j| <=
    window``; "strided" (Sparse Transformer), the ``stride`` nearest keys and every
    ``stride``-th one, ``|i - j| < stride`` or ``(i - j) % stride == 0``; "window + global"
    (Longformer), the window, and ``num_global`` global tokens that attend to and are attended
    by every position; "BigBird", window + global + ``num_random`` keys per query drawn at
    random (a fixed draw). Integers: ``n`` from 4 to 64, the others from 0 (``stride`` from 1)
    and below ``n``."""
    check_integer("n", n, minimum=4, maximum=64)
    for name, value, low in [
        ("window", window, 0),
        ("stride", stride, 1),
        ("num_global", num_global, 0),
        ("num_random", num_random, 0),
    ]:
        check_integer(name, value, minimum=low, maximum=n - 1)
    near = [[abs(i - j) <= window for j in range(n)] for i in range(n)]
    far = [[abs(i - j) < stride or (i - j) % stride == 0 for j in range(n)] for i in range(n)]
    hub = [[near[i][j] or min(i, j) < num_global for j in range(n)] for i in range(n)]
    draw = random.Random(0)  # the same random keys on every call
    bigbird = [row[:] for row in hub]
    for i in range(num_global, n):
        for j in draw.sample([j for j in range(n) if not hub[i][j]], num_random):
            bigbird[i][j] = True
    full = [[True] * n for _ in range(n)]
    return {
        "full": full,
        "sliding window": near,
        "strided": far,
        "window + global": hub,
        "BigBird": bigbird,
    }


def draw_sparse_patterns(n: int = 24) -> Figure:
    """The attention patterns of sec-efficient-attention side by side, as masks: row ``i`` is
    query ``i``, column ``j`` key ``j``, a filled cell a score that is computed
    (:func:`sparse_patterns` with its defaults and ``n`` positions, an integer from 4 to 64).
    Each title counts the scores kept."""
    patterns = sparse_patterns(n)
    cell = 2.6 / n
    fig, ax = _canvas(16.2, 3.9, (10, 2.6))
    for k, (name, mask) in enumerate(patterns.items()):
        left, top = 0.3 + 3.2 * k, 3.0
        for i, row in enumerate(mask):
            for j, computed in enumerate(row):
                if computed:
                    ax.add_patch(
                        Rectangle(
                            (left + j * cell, top - (i + 1) * cell),
                            cell,
                            cell,
                            facecolor=COLORS["weight"],
                            edgecolor="white",
                            linewidth=0.3,
                        )
                    )
        ax.add_patch(Rectangle((left, top - 2.6), 2.6, 2.6, fill=False, edgecolor="#333333"))
        count = sum(row.count(True) for row in mask)
        ax.text(left + 1.3, top + 0.55, name, ha="center", fontsize=10)
        ax.text(left + 1.3, top + 0.15, f"{count} of {n * n} scores", ha="center", fontsize=8)
    ax.text(0.3, 0.05, "rows: queries, columns: keys", fontsize=8)
    return fig


def draw_blockwise_attention(num_blocks: int = 4) -> Figure:
    """Exact attention in tiles (sec-efficient-attention): the queries and the keys and values
    are cut into ``num_blocks`` blocks each (an integer from 2 to 6). One query block ``Q_i``
    meets the key blocks one after another; only the tile of scores ``A_ij = Q_i K_j^T / sqrt(p)``
    in hand exists, and the running maximum, sum and unnormalised output ``m_i, l_i, U_i`` carry
    what the earlier tiles contributed. The tiles done are shaded, the current one dark."""
    check_integer("num_blocks", num_blocks, minimum=2, maximum=6)
    size, row, current = 1.0, 1, min(2, num_blocks - 1)  # tile (row, current) is in hand
    fig, ax = _canvas(6.8 + num_blocks, 3.4 + num_blocks, (8, 5))
    left, top = 2.0, 1.6 + num_blocks
    for j in range(num_blocks):
        _box(
            ax,
            left + (j + 0.5) * size,
            top + 0.55,
            f"$K_{j + 1}, V_{j + 1}$",
            "key",
            width=0.9,
            height=0.55,
            fontsize=8,
        )
    for i in range(num_blocks):
        y = top - (i + 0.5) * size
        _box(ax, 1.1, y, f"$Q_{i + 1}$", "query", width=0.8, height=0.8, fontsize=9)
        for j in range(num_blocks):
            done, now = i == row and j < current, i == row and j == current
            ax.add_patch(
                Rectangle(
                    (left + j * size, top - (i + 1) * size),
                    size,
                    size,
                    facecolor=COLORS["weight"] if now else "#d9c8ef" if done else "white",
                    edgecolor="#333333",
                )
            )
    y = top - (row + 0.5) * size
    ax.text(
        left + (current + 0.5) * size,
        y,
        f"$A_{{{row + 1}{current + 1}}}$",
        ha="center",
        va="center",
        color="white",
        fontsize=9,
    )
    state = _box(
        ax,
        left + num_blocks + 2.0,
        y,
        f"$m_{row + 1}, \\ell_{row + 1}, U_{row + 1}$",
        "state",
        width=2.0,
        height=0.8,
        fontsize=9,
    )
    _arrow(ax, (left + (current + 1) * size, y), state.left, "update")
    ax.text(
        state.x,
        y - 0.75,
        "running max, sum,\nunnormalised output",
        ha="center",
        va="top",
        fontsize=8,
    )
    _arrow(
        ax,
        (left + 0.1, top - num_blocks - 0.35),
        (left + num_blocks - 0.1, top - num_blocks - 0.35),
    )
    ax.text(
        left + num_blocks / 2,
        top - num_blocks - 0.85,
        f"key blocks, one tile at a time; then $O_{row + 1} = U_{row + 1} / \\ell_{row + 1}$",
        ha="center",
        fontsize=8,
    )
    return fig


def draw_product_orders(n: int = 8, d: int = 2) -> Figure:
    """The two orders of linear attention's products (sec-efficient-attention), each matrix a
    rectangle to scale: ``(phi(Q) phi(K)^T) V`` makes an ``n x n`` matrix first, ``phi(Q)
    (phi(K)^T V)`` a ``d x d`` one; both end with the same ``n x d`` output. ``n`` and ``d`` are
    integers, ``1 <= d < n <= 12``."""
    check_integer("n", n, minimum=2, maximum=12)
    check_integer("d", d, minimum=1, maximum=n - 1)
    u = 0.3  # drawing units per row or column of a matrix
    width = (3 * n + 3 * d) * u + 4.5  # the first row, the wider
    fig, ax = _canvas(width, 2 * n * u + 3.8, (8, 1.4 + 0.46 * n))

    def matrix(x: float, y: float, shape: tuple[int, int], kind: str, name: str) -> float:
        """A matrix of ``shape`` drawn to scale, left edge at ``x``, centred on ``y``; returns
        where the next item starts."""
        rows, cols = shape
        ax.add_patch(
            Rectangle(
                (x, y - rows * u / 2),
                cols * u,
                rows * u,
                facecolor=COLORS[kind],
                edgecolor="#333333",
            )
        )
        ax.text(
            x + cols * u / 2,
            y - n * u / 2 - 0.1,
            f"{name}\n{rows}×{cols}",
            ha="center",
            va="top",
            fontsize=8,
        )
        return x + cols * u + 0.15

    def sign(x: float, y: float, text: str) -> float:
        room = 0.25 + 0.2 * len(text)
        ax.text(x + room / 2, y, text, ha="center", va="center", fontsize=10)
        return x + room + 0.1

    rows: list[tuple[str, list[tuple[tuple[int, int], str, str] | str]]] = [
        (
            "$(\\phi(Q)\\,\\phi(K)^\\top)\\,V$: the $n \\times n$ matrix first",
            [
                ((n, d), "query", "φ(Q)"),
                ((d, n), "key", "φ(K)ᵀ"),
                "=",
                ((n, n), "weight", ""),
                "then",
                ((n, n), "weight", ""),
                ((n, d), "value", "V"),
                "=",
                ((n, d), "plain", "out"),
            ],
        ),
        (
            "$\\phi(Q)\\,(\\phi(K)^\\top V)$: a $d \\times d$ matrix first",
            [
                ((d, n), "key", "φ(K)ᵀ"),
                ((n, d), "value", "V"),
                "=",
                ((d, d), "state", "S"),
                "then",
                ((n, d), "query", "φ(Q)"),
                ((d, d), "state", "S"),
                "=",
                ((n, d), "plain", "out"),
            ],
        ),
    ]
    for k, (title, items) in enumerate(rows):
        y = 2 * n * u + 3.0 - k * (n * u + 1.9) - n * u / 2
        ax.text(0.1, y + n * u / 2 + 0.35, title, fontsize=10)
        x = 0.2
        for item in items:
            if isinstance(item, str):
                x = sign(x, y, item)
            else:
                shape, kind, name = item
                x = matrix(x, y, shape, kind, name)
    return fig


class _TreeNode(NamedTuple):
    """A token in a merge tree: its id, its position across and its height (bytes at 0)."""

    token: int
    x: float
    level: int


def draw_merge_tree(
    word: bytes = b" lowest",
    merges: Sequence[tuple[int, int]] = (
        (101, 115),
        (256, 116),
        (32, 108),
        (111, 119),
        (258, 259),
        (32, 110),
    ),
) -> Figure:
    """How BPE encodes one pre-token (sec-tokenization), as a tree: the word's bytes at the
    bottom, and above them each merge that applies, in the order the encoder applies them
    (lowest rank first, then leftmost), joining two tokens into one; the tokens left at the
    top are the word's ids. ``word`` is a pre-token's bytes (1 to 16), ``merges`` the pairs
    in rank order (merge ``k`` makes id ``256 + k``)."""
    if not isinstance(word, bytes) or not 1 <= len(word) <= 16:
        raise ValueError(f"word must be 1 to 16 bytes (one pre-token); got {word!r}")
    ranks = {(a, b): k for k, (a, b) in enumerate(merges)}
    vocab = {i: bytes([i]) for i in range(256)}
    for k, (a, b) in enumerate(merges):
        vocab[256 + k] = vocab[a] + vocab[b]
    nodes = [_TreeNode(byte, float(i), 0) for i, byte in enumerate(word)]
    drawn, edges = list(nodes), []
    while True:
        found = [
            (ranks[(left.token, right.token)], i)
            for i, (left, right) in enumerate(zip(nodes, nodes[1:]))
            if (left.token, right.token) in ranks
        ]
        if not found:
            break
        rank, i = min(found)
        left, right = nodes[i], nodes[i + 1]  # a merge sits one level above its higher part
        parent = _TreeNode(256 + rank, (left.x + right.x) / 2, max(left.level, right.level) + 1)
        edges += [(parent, left), (parent, right)]
        drawn.append(parent)
        nodes[i : i + 2] = [parent]
    height = max(node.level for node in nodes)
    fig, ax = _canvas(
        len(word) + 0.6, 1.1 * height + 2.1, (1 + 0.8 * len(word), 1.2 + 0.9 * height)
    )

    def at(node: _TreeNode) -> tuple[float, float]:
        return node.x + 0.8, 1.1 * node.level + 0.7

    for parent, child in edges:
        (x0, y0), (x1, y1) = at(parent), at(child)
        ax.plot([x0, x1], [y0, y1], color="#333333", linewidth=1, zorder=0)
    for node in drawn:
        text = vocab[node.token].decode("utf-8", errors="replace").replace(" ", "␣")
        merged = node.token >= 256
        _box(
            ax,
            *at(node),
            f"{text}\n{node.token}",
            "weight" if merged else "plain",
            width=0.62 + 0.12 * len(vocab[node.token]) if merged else 0.62,
            height=0.62,
            fontsize=8,
        )
    ids = ", ".join(str(node.token) for node in nodes)
    ax.text(0.1, 1.1 * height + 1.55, f"ids: [{ids}]", fontsize=9)
    return fig


def draw_additive_attention() -> Figure:
    """Additive attention's score as a small network (sec-attention-scoring): each query and
    each key is projected once, to ``d_a`` features; broadcasting adds every query to every key,
    and ``tanh`` and ``w_v`` turn each sum into one score. The shapes are the code's."""
    fig, ax = _canvas(13, 4.6, (8.8, 3.2))
    query = _box(ax, 1.2, 3.5, "query $\\mathbf{q}$\n$(b, n_q, d_q)$", "query", 1.9, 0.95)
    key = _box(ax, 1.2, 1.1, "key $\\mathbf{k}$\n$(b, n_k, d_k)$", "key", 1.9, 0.95)
    project_q = _box(ax, 3.6, 3.5, "$\\mathbf{W}_q$", "layer", 0.9)
    project_k = _box(ax, 3.6, 1.1, "$\\mathbf{W}_k$", "layer", 0.9)
    _arrow(ax, query.right, project_q.left, color=COLORS["query"])
    _arrow(ax, key.right, project_k.left, color=COLORS["key"])
    add = _box(ax, 7.0, 2.3, "+\n$(b, n_q, n_k, d_a)$", "plain", 2.0, 0.95)
    _arrow(ax, project_q.right, add.top, color=COLORS["query"])
    _arrow(ax, project_k.right, add.bottom, color=COLORS["key"])
    ax.text(5.0, 3.75, "$(b, n_q, 1, d_a)$", fontsize=9, ha="center")
    ax.text(5.0, 0.6, "$(b, 1, n_k, d_a)$", fontsize=9, ha="center")
    squash = _box(ax, 9.0, 2.3, "tanh", "layer", 0.9)
    _arrow(ax, add.right, squash.left)
    read = _box(ax, 10.4, 2.3, "$\\mathbf{w}_v^\\top$", "layer", 0.9)
    _arrow(ax, squash.right, read.left)
    score = _box(ax, 12.0, 2.3, "scores\n$(b, n_q, n_k)$", "weight", 1.6, 0.95)
    _arrow(ax, read.right, score.left)
    ax.text(7.0, 4.3, "every query meets every key by broadcasting", fontsize=9, ha="center")
    return fig


def draw_gpt_stack() -> Figure:
    """GPT, a decoder-only language model (sec-language-models), bottom to top: token ids, the
    token embedding ``E`` plus learned positions, ``L`` pre-norm blocks whose self-attention is
    causal, a final layer norm, and the output layer ``E^T`` (tied to the embedding), which
    gives each position's scores for the next token."""
    fig, ax = _canvas(10, 10.0, (6.0, 6.0))
    ids = _box(ax, 4.0, 0.5, "token ids $x_1 \\dots x_n$", "plain", width=3.2, height=0.55)
    embed = _box(ax, 4.0, 1.6, "$E[x]$ + positions $P$", "layer", width=3.2, height=0.6)
    _arrow(ax, ids.top, embed.bottom)
    ax.add_patch(
        FancyBboxPatch(
            (1.7, 2.3),
            4.6,
            4.85,
            boxstyle="round,pad=0.08",
            facecolor="#f7f7f7",
            edgecolor="#333333",
        )
    )
    ax.text(6.6, 6.7, "block (× $L$)", fontsize=10, va="center")
    parts = [
        (2.9, "layer norm", "plain"),
        (3.7, "masked self-attention", "weight"),
        (5.3, "layer norm", "plain"),
        (6.1, "MLP", "layer"),
    ]
    ln1, attention, ln2, mlp = (
        _box(ax, 4.0, y, text, kind, width=3.1, height=0.5, fontsize=9) for y, text, kind in parts
    )
    add1, add2 = (_box(ax, 4.0, y, "+", "plain", width=0.45, height=0.4) for y in (4.5, 6.8))
    for lower, upper in ((embed, ln1), (ln1, attention), (attention, add1), (add1, ln2)):
        _arrow(ax, lower.top, upper.bottom)
    _arrow(ax, ln2.top, mlp.bottom)
    _arrow(ax, mlp.top, add2.bottom)
    for branch, add in ((2.45, add1), (4.9, add2)):  # the residual paths: plain sums
        ax.plot([4.0, 2.3, 2.3], [branch, branch, add.y], color=COLORS["key"], linewidth=1.2)
        _arrow(ax, (2.3, add.y), add.left, color=COLORS["key"])
    ax.text(0.2, 3.6, "residual", fontsize=8, color=COLORS["key"])
    norm = _box(ax, 4.0, 8.0, "final layer norm", "plain", width=2.8, height=0.5, fontsize=9)
    _arrow(ax, add2.top, norm.bottom)
    head = _box(ax, 4.0, 8.9, "$\\times E^\\top$ → logits", "layer", width=2.8, height=0.5)
    _arrow(ax, norm.top, head.bottom)
    ax.text(4.0, 9.6, "position $t$ scores the next token, $x_{t+1}$", ha="center", fontsize=9)
    ax.plot([5.6, 8.6, 8.6], [1.6, 1.6, 8.9], color=COLORS["weight"], linewidth=1.2)
    _arrow(ax, (8.6, 8.9), head.right, color=COLORS["weight"])
    ax.text(8.75, 5.2, "tied: the same $E$", fontsize=8, color=COLORS["weight"], rotation=90)
    ax.text(6.55, 3.7, "sees only\nearlier steps", fontsize=8, va="center")
    return fig


def draw_bert_input(
    tokens: Sequence[str] = ("<cls>", "ka", "rita", "kipu", "<sep>", "mo", "garo", "biku", "<sep>"),
    segments: Sequence[int] = (0, 0, 0, 0, 0, 1, 1, 1, 1),
) -> Figure:
    """BERT's input (sec-pretraining): for each token, the sum of three learned vectors, its
    token embedding, its segment's embedding (A or B) and its position's embedding. ``tokens``
    (1 to 12 strs) and ``segments`` (0 or 1 each) have the same length."""
    check_sequence("tokens", tokens, "a list of tokens (strs)")
    check_sequence("segments", segments, "a list of segment ids, 0 or 1")
    if not 1 <= len(tokens) <= 12 or len(segments) != len(tokens):
        raise ValueError(
            f"tokens (1 to 12) and segments need the same length; got {len(tokens)} and "
            f"{len(segments)}"
        )
    if any(s not in (0, 1) for s in segments):
        raise ValueError(f"segments must be 0 (A) or 1 (B); got {list(segments)}")
    n = len(tokens)
    fig, ax = _canvas(2.4 + 1.3 * n, 5.6, (1.5 + 0.8 * n, 3.6))
    rows = (
        (4.4, "input", lambda i, t: t, "plain"),
        (3.2, "token", lambda i, t: f"E[{t}]", "layer"),
        (2.0, "segment", lambda i, t: "$E_A$" if segments[i] == 0 else "$E_B$", "state"),
        (0.8, "position", lambda i, t: f"$P_{{{i}}}$", "value"),
    )
    for y, name, label, kind in rows:
        ax.text(0.1, y, name, fontsize=9, va="center")
        for i, token in enumerate(tokens):
            x = 2.3 + 1.3 * i
            size = 10 if name in ("segment", "position") else 8
            _box(ax, x, y, label(i, token), kind, width=1.2, height=0.6, fontsize=size)
            if y < 3.0:  # the rows below the token embedding are added to it
                ax.text(x, y + 0.6, "+", ha="center", va="center", fontsize=11)
    ax.text(0.1, 5.25, "each token's input vector: the sum of its three embeddings", fontsize=9)
    return fig


def draw_masking_rule(
    sentence: Sequence[str] = ("ka", "poda", "gefi", "kas", "fekan", "pave", "mo", "vibo", "mivu"),
    chosen: Sequence[tuple[int, str, str]] = (
        (0, "<mask>", "80%: <mask>"),
        (3, "lovan", "10%: a random word"),
        (7, "vibo", "10%: unchanged"),
    ),
) -> Figure:
    """BERT's masked language model on one sentence (sec-pretraining): about 15% of the
    positions are chosen; each chosen token becomes ``<mask>`` with probability 0.8, a random
    word with 0.1, or stays with 0.1, and the loss asks for the original token at every chosen
    position, and at no other. ``chosen`` holds ``(position, what the input shows, why)``."""
    check_sequence("sentence", sentence, "a list of words")
    check_sequence("chosen", chosen, "a list of (position, shown token, note)")
    n = len(sentence)
    if not 1 <= n <= 12 or any(not 0 <= p < n for p, _, _ in chosen):
        raise ValueError(f"a sentence of 1 to 12 words and positions inside it; got {n} words")
    fig, ax = _canvas(2.0 + 1.15 * n, 5.6, (1.3 + 0.72 * n, 3.6))
    picked = {p: (shown, note) for p, shown, note in chosen}
    for y, name in ((4.6, "original"), (3.0, "input"), (1.0, "label")):
        ax.text(0.1, y, name, fontsize=9, va="center")
    for i, word in enumerate(sentence):
        x = 2.0 + 1.15 * i
        top = _box(ax, x, 4.6, word, "query" if i in picked else "plain", 1.0, 0.6, 8)
        shown = picked[i][0] if i in picked else word
        kind = "weight" if shown == "<mask>" else ("key" if i in picked else "plain")
        middle = _box(ax, x, 3.0, shown, kind, 1.0, 0.6, 8)
        _arrow(ax, top.bottom, middle.top)
        if i in picked:
            label = _box(ax, x, 1.0, word, "query", 1.0, 0.6, 8)
            _arrow(ax, middle.bottom, label.top, color=COLORS["query"])
            ax.text(x, 2.35, picked[i][1], ha="center", fontsize=7)
        else:
            ax.text(x, 1.0, "–", ha="center", va="center", fontsize=9, color="#888888")
    ax.text(0.1, 0.2, "loss only at the chosen positions (orange); – : no loss", fontsize=8)
    ax.text(
        0.1, 5.35, "chosen: 15% of a corpus's positions (three here, one of each kind)", fontsize=9
    )
    return fig


def draw_span_corruption(
    sentence: Sequence[str] = ("ka", "poda", "gefi", "kas", "fekan", "pave", "mo", "vibo", "mivu"),
    spans: Sequence[tuple[int, int]] = ((2, 4), (7, 8)),
) -> Figure:
    """T5's span corruption (sec-pretraining; Raffel et al., 2020): runs of tokens are dropped
    from the input, each replaced by one sentinel (``<X>``, ``<Y>``, ...), and the decoder
    writes only the dropped spans, each after its sentinel, and a final sentinel. ``spans``
    are ``(start, stop)`` word ranges, in order and apart."""
    check_sequence("sentence", sentence, "a list of words")
    check_sequence("spans", spans, "a list of (start, stop) ranges")
    n = len(sentence)
    if not 1 <= n <= 12 or not 1 <= len(spans) <= 3:
        raise ValueError(f"1 to 12 words and 1 to 3 spans; got {n} and {len(spans)}")
    edges = [e for span in spans for e in span]
    if edges != sorted(edges) or edges[0] < 0 or edges[-1] > n or any(a >= b for a, b in spans):
        raise ValueError(f"spans must be ordered, non-empty ranges inside the sentence: {spans}")
    sentinels = ["<X>", "<Y>", "<Z>", "<W>"]
    dropped = {i: k for k, (a, b) in enumerate(spans) for i in range(a, b)}
    inputs, targets = [], []
    for i, word in enumerate(sentence):
        if i in dropped:
            if i == spans[dropped[i]][0]:
                inputs.append((sentinels[dropped[i]], "weight"))
            continue
        inputs.append((word, "plain"))
    for k, (a, b) in enumerate(spans):
        targets += [(sentinels[k], "weight")] + [(w, "query") for w in sentence[a:b]]
    targets.append((sentinels[len(spans)], "weight"))
    width = 2.6 + 1.15 * max(n, len(targets))
    fig, ax = _canvas(width, 4.6, (1.6 + 0.72 * max(n, len(targets)), 3.0))
    for y, name, row in (
        (
            3.9,
            "original",
            [(w, "query" if i in dropped else "plain") for i, w in enumerate(sentence)],
        ),
        (2.4, "encoder input", inputs),
        (0.9, "decoder target", targets),
    ):
        ax.text(0.1, y, name, fontsize=9, va="center")
        for i, (word, kind) in enumerate(row):
            _box(ax, 3.1 + 1.15 * i, y, word, kind, 1.0, 0.6, 8)
    return fig
