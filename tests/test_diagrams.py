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
    "draw_multihead": ["attention\nhead 3", "concat", "$W_o$"],
    "draw_additive_attention": ["$\\mathbf{W}_q$", "tanh", "$(b, 1, n_k, h)$"],
    "draw_transformer": ["masked self-attention", "cross-attention", "keys, values"],
    "draw_norm_placement": ["post-norm: $\\mathrm{LN}(x + f(x))$", "residual"],
    "draw_kv_cache": ["step 4", "$k_4, v_4$", "read from the cache"],
    "draw_vit_patching": ["[CLS] + pos", "patch 4 + pos", "8×8 image, 4×4 patches"],
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
    fig = diagrams.draw_kv_cache(num_steps=6)
    try:
        assert "step 6" in texts(fig) and "step 7" not in texts(fig)
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
