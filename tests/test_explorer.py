"""The attention explorer (``companion.show_attention``): its HTML embeds exactly the weights it
was given, rounded; it is the same for the same arguments, in any process; it is self-contained
(nothing fetched); Jupyter shows it as HTML; and ``import companion`` stays light. The wrong
arguments are rows of the misuse table (``tests/misuse_figures.py``); the browser test drives it
(``site_test/test_explorer.py``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.figures import explorer
from companion.figures.explorer import AttentionExplorer, show_attention

ROOT = Path(__file__).resolve().parent.parent
TOKENS = ["the", "cat", "sat", "down"]


def weights(*shape: int, seed: int = 0) -> torch.Tensor:
    scores = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return torch.softmax(scores * 2, dim=-1)


class Parsed(HTMLParser):
    """The elements of an explorer's HTML: tag and attributes of each, and the JSON data."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
            self._script = None

    @property
    def data(self) -> dict:
        (text,) = [text for attrs, text in self.scripts if attrs.get("type") == "application/json"]
        return json.loads(text)


@pytest.mark.parametrize(
    "shape, layers, heads",
    [((4, 4), 1, 1), ((3, 4, 4), 1, 3), ((2, 3, 4, 4), 2, 3)],
)
def test_the_html_embeds_exactly_the_weights_given_rounded(shape, layers, heads):
    given = weights(*shape)
    shown = show_attention(given, TOKENS)
    data = Parsed(shown.html).data
    assert data == shown.data
    expected = np.round(given.double().numpy(), 3).reshape(layers, heads, 4, 4)
    assert np.array(data["weights"]).shape == (layers, heads, 4, 4)
    assert data["weights"] == expected.tolist()
    assert data["queries"] == data["keys"] == TOKENS  # keys default to the queries
    assert data["heads"] == [f"head {h + 1}" for h in range(heads)]
    assert data["layers"] == [f"layer {layer + 1}" for layer in range(layers)]
    assert (data["query"], data["decimals"]) == (0, 3)


def test_tensors_and_arrays_of_any_float_type_give_the_same_explorer():
    given = weights(2, 4, 4)
    html = show_attention(given, TOKENS).html
    assert show_attention(given.numpy(), TOKENS).html == html
    assert show_attention(given.double().requires_grad_(), TOKENS).html == html


def test_cross_attention_labels_decimals_and_the_first_query():
    given = weights(2, 3, 5)
    shown = show_attention(
        given,
        ["le", "chat", "dort"],
        ["the", "cat", "is", "asleep", "."],
        heads=["local", "global"],
        title="Cross-attention",
        query=2,
        decimals=4,
    )
    data = shown.data
    assert data["keys"] == ["the", "cat", "is", "asleep", "."]
    assert data["heads"] == ["local", "global"]
    assert data["query"] == 2
    assert data["weights"][0] == np.round(given.double().numpy(), 4)[None].tolist()[0]
    elements = Parsed(shown.html).elements
    selected = [
        a for tag, a in elements if a.get("role") == "option" and a["aria-selected"] == "true"
    ]
    assert [a["data-index"] for a in selected] == ["2"]
    assert 'aria-label="Cross-attention"' in shown.html
    assert repr(shown) == "<attention explorer: 1 layer(s) x 2 head(s), 3 queries x 5 keys>"


def test_masked_rows_of_zeros_are_allowed_when_asked_for():
    given = weights(3, 3)
    given[1] = 0
    shown = show_attention(given, TOKENS[:3], allow_masked=True)
    assert shown.data["weights"][0][0][1] == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"weights\[1\] sums to 0"):
        show_attention(given, TOKENS[:3])


def test_the_same_arguments_give_the_same_html_in_another_process():
    """No random ids, no timestamps: nbval compares this HTML character for character."""
    code = (
        "import hashlib, torch\n"
        "from companion import show_attention\n"
        "w = torch.softmax(torch.arange(32.0).reshape(2, 4, 4).sin(), -1)\n"
        "html = show_attention(w, ['the', 'cat', 'sat', 'down'], title='t').html\n"
        "print(hashlib.sha256(html.encode()).hexdigest())\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONHASHSEED": "1"},
    )
    assert other.returncode == 0, other.stderr
    w = torch.softmax(torch.arange(32.0).reshape(2, 4, 4).sin(), -1)
    html = show_attention(w, TOKENS, title="t").html
    assert other.stdout == hashlib.sha256(html.encode()).hexdigest() + "\n"


def test_the_id_is_a_hash_of_the_data_and_the_only_id():
    a = show_attention(weights(2, 4, 4), TOKENS)
    b = show_attention(weights(2, 4, 4, seed=1), TOKENS)
    c = show_attention(weights(2, 4, 4), TOKENS, title="another title")
    ids = [
        [attrs["id"] for _, attrs in Parsed(shown.html).elements if "id" in attrs]
        for shown in (a, b, c)
    ]
    assert all(
        len(found) == 1 and re.fullmatch(r"attention-[0-9a-f]{12}", found[0]) for found in ids
    )
    assert len({found[0] for found in ids}) == 3
    names = {attrs["name"] for _, attrs in Parsed(a.html).elements if attrs.get("type") == "radio"}
    assert names == {ids[0][0] + "-head"}


def test_the_html_is_self_contained_and_escapes_the_tokens():
    """Nothing to fetch (no src, no href, no URL), the script and style inlined, and tokens
    that look like HTML, or would close the data's script, shown as text."""
    tokens = ["<b>", "</script><script>alert(1)</script>", "a&b", " "]
    shown = show_attention(weights(4, 4), tokens)
    parsed = Parsed(shown.html)
    assert not [a for _, a in parsed.elements if "src" in a or "href" in a]
    assert not re.search(r"https?:|//cdn|@import|url\(", shown.html)
    assert [tag for tag, _ in parsed.elements].count("script") == 2
    assert parsed.data["queries"] == tokens
    assert "&lt;b&gt;" in shown.html and "a&amp;b" in shown.html
    assert shown.html.count("</script>") == 2  # the data's, and the code's
    assert "' '" in shown.html  # a blank token is shown as its repr
    assert explorer._asset("explorer.js") in shown.html
    assert explorer._asset("explorer.css") in shown.html


def test_the_page_names_its_parts_for_screen_readers():
    parsed = Parsed(show_attention(weights(2, 2, 4, 4), TOKENS).html)
    roles = {a.get("role") for _, a in parsed.elements}
    assert {"group", "listbox", "option"} <= roles
    assert any(a.get("aria-live") == "polite" for _, a in parsed.elements)
    assert [tag for tag, _ in parsed.elements].count("fieldset") == 2  # layer and head
    assert [tag for tag, _ in parsed.elements].count("legend") == 2
    options = [a for _, a in parsed.elements if a.get("role") == "option"]
    assert [a["tabindex"] for a in options] == ["0", "-1", "-1", "-1"]  # one tab stop


def test_jupyter_shows_it_as_html():
    from IPython.core.formatters import DisplayFormatter

    shown = show_attention(weights(4, 4), TOKENS)
    bundle, _ = DisplayFormatter().format(shown)
    assert bundle["text/html"] == shown.html
    assert bundle["text/plain"] == repr(shown)
    assert isinstance(shown, AttentionExplorer)


def test_the_script_and_style_ship_as_package_data():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for name in ("explorer.js", "explorer.css"):
        assert f'"figures/{name}"' in pyproject
        assert (ROOT / "companion" / "figures" / name).is_file()
