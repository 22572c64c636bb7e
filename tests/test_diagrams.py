"""The schematic diagrams: each draws its parts, labelled, inside its own canvas."""

from __future__ import annotations

import matplotlib.pyplot as plt
import nbformat
import pytest
from matplotlib.text import Text

from companion.figures import diagrams

# Each diagram and labels a reader must find in it.
EXPECTED = {
    "draw_attention_step": ["query $q$", "key $k_3$", "value $v_2$", "softmax over the keys"],
    "draw_bahdanau_decoder": [
        "GRU",
        "$\\mathbf{h}_4$",
        "$\\mathbf{s}_{t'-1}$\n(the query)",
        "values",
        "query of step $t'+1$",
    ],
    "draw_self_attention": ["$W_q$", "$K = XW_k$", "softmax over each row"],
    "draw_multihead": ["attention\nhead 3", "$W_{1}^q, W_{1}^k, W_{1}^v$", "$H_{2}$", "$W_o$"],
    "draw_split_heads": ["$t=2$", "view as $(n, h, p)$", "head 2", "head 2?"],
    "draw_additive_attention": ["$\\mathbf{W}_q$", "tanh", "$(b, 1, n_k, d_a)$"],
    "draw_sparse_patterns": ["sliding window", "BigBird", "576 of 576 scores"],
    "draw_blockwise_attention": ["$Q_2$", "$K_3, V_3$", "$A_{23}$", "$m_2, \\ell_2, U_2$"],
    "draw_product_orders": ["φ(K)ᵀ\n2×8", "S\n2×2", "then"],
    "draw_merge_tree": ["␣low\n260", "est\n257", "e\n101", "ids: [260, 257]"],
    "draw_transformer": ["masked self-attention", "cross-attention", "keys, values"],
    "draw_norm_placement": ["post-norm: $\\mathrm{LN}(x + f(x))$", "residual"],
    "draw_decoder_caches": ["step 4", "$k_4, v_4$", "$k'_3, v'_3$", "read from the cache"],
    "draw_prefill_decode": ["$q_7$", "$k_7$", "prefill: 4 queries\nin one pass"],
    "draw_vit_patching": ["<cls> + pos", "patch 4 + pos", "8×8 image, 4×4 patches", "4"],
    "draw_decoder_blocks": ["GPT-2 block (2019)", "RMSNorm", "SwiGLU, width ≈ 8d/3", "+"],
    "draw_kv_sharing": ["grouped-query (GQA)", "$q_4$", "cache: 2 heads per token"],
    "draw_rope_pairings": ["halves\n(Hugging Face)", "$x_{7}$"],
    "draw_rolling_cache": ["slot 3", "token 6", "overwrites $k_{2}$ in slot 2"],
    "draw_gpt_stack": ["masked self-attention", "final layer norm", "tied: the same $E$"],
    "draw_bert_input": ["E[<cls>]", "$E_A$", "$E_B$", "$P_{8}$"],
    "draw_masking_rule": ["<mask>", "lovan", "10%: unchanged", "kas"],
    "draw_span_corruption": ["<X>", "<Y>", "<Z>", "decoder target"],
}


def texts(fig) -> list[str]:
    return [artist.get_text() for artist in fig.findobj(Text)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_diagram_shows_its_labels_within_its_canvas(name):
    fig = getattr(diagrams, name)()
    try:
        found = texts(fig)
        missing = [label for label in EXPECTED[name] if label not in found]
        assert not missing, f"{name} lacks {missing}"
        (ax,) = fig.axes
        xmin, xmax = ax.get_xlim()
        ymin, ymax = ax.get_ylim()
        for artist in fig.findobj(Text):
            if artist.get_text() and artist.axes is ax:
                x, y = artist.get_position()
                assert xmin <= x <= xmax and ymin <= y <= ymax, f"{artist.get_text()!r} outside"
    finally:
        plt.close(fig)


def test_diagram_sizes_follow_their_arguments():
    fig = diagrams.draw_multihead(num_heads=5)
    try:
        assert "attention\nhead 5" in texts(fig)
    finally:
        plt.close(fig)
    fig = diagrams.draw_split_heads(n=4, num_heads=3)
    try:
        assert {"$t=3$", "head 3", "head 3?"} <= set(texts(fig)) and "head 4" not in texts(fig)
    finally:
        plt.close(fig)
    fig = diagrams.draw_decoder_caches(num_steps=3, source_steps=5)
    try:
        assert {"$k'_5, v'_5$", "cross-attention cache: static"} <= set(texts(fig))
        assert "$k'_6, v'_6$" not in texts(fig) and "step 4" not in texts(fig)
    finally:
        plt.close(fig)
    fig = diagrams.draw_rolling_cache(window=3, num_steps=5)
    try:
        assert "overwrites $k_{1}$ in slot 1" in texts(fig) and "slot 3" not in texts(fig)
    finally:
        plt.close(fig)
    fig = diagrams.draw_kv_sharing(num_heads=6)
    try:
        assert {"$q_6$", "cache: 6 heads per token"} <= set(texts(fig))
    finally:
        plt.close(fig)
    fig = diagrams.draw_prefill_decode(prompt=2, new=5)
    try:
        assert "decode step 5: 1 query, 7 keys" in texts(fig) and "$q_8$" not in texts(fig)
    finally:
        plt.close(fig)


def diagram_cells() -> dict[str, list[tuple[str, dict]]]:
    """For each draw_* function, the notebooks' cells that call it, with their mystnb metadata."""
    from tools.notebooks import toc_notebooks

    found: dict[str, list[tuple[str, dict]]] = {name: [] for name in EXPECTED}
    for path in toc_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            for name in EXPECTED:
                if cell.cell_type == "code" and f"{name}(" in cell.source:
                    found[name].append((path.stem, cell.metadata.get("mystnb", {})))
    return found


def test_every_diagram_is_shown_once_with_a_caption_and_alt_text():
    for name, cells in diagram_cells().items():
        assert len(cells) == 1, f"{name} is shown in {len(cells)} cells"
        _, mystnb = cells[0]
        assert mystnb["figure"]["name"].startswith("fig-diagram-"), name
        assert len(mystnb["figure"]["caption"].split()) >= 8, f"{name}: a caption"
        assert len(mystnb["image"]["alt"].split()) >= 15, f"{name}: alt text"


def test_sparse_patterns_keep_what_their_names_say():
    n = 24
    patterns = diagrams.sparse_patterns(n, window=1, stride=4, num_global=1, num_random=2)
    count = {name: sum(map(sum, mask)) for name, mask in patterns.items()}
    assert count["full"] == n * n
    assert count["sliding window"] == n * 3 - 2  # n (2w + 1) - w (w + 1)
    assert count["window + global"] == count["sliding window"] + 2 * (n - 2)  # row and column 0
    assert count["BigBird"] == count["window + global"] + 2 * (n - 1)  # 2 random keys per query
    for i in range(n):  # strided: the 3 nearest keys on each side, and every 4th
        assert [j for j in range(n) if patterns["strided"][i][j]] == [
            j for j in range(n) if abs(i - j) < 4 or (i - j) % 4 == 0
        ]
    assert diagrams.sparse_patterns(n) == patterns  # the same random keys on every call
