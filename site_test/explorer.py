"""The attention explorer (``companion.show_attention``) in the browser: a page of explorers
for known weights, built from a page of the site, and what an explorer shows, read back from
the page and compared with the weights it embeds.

The test page is a copy of one of the site's pages with explorers added to its article,
wrapped as myst-nb wraps a cell's HTML output, so they are seen with the site's stylesheets
and scripts. It lives in a folder of its own that links to the built site's files, served on
its own port: nothing is written into the built site.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from playwright.sync_api import Locator

from companion.figures.explorer import AttentionExplorer, show_attention
from site_test.book import content_pages

TEST_FOLDER = "explorer-test"
TEST_PAGE = f"{TEST_FOLDER}/index.html"
ARTICLE_END = re.compile(r"</article>")

# What an explorer shows now, and the weights it embeds, read from the page.
STATE_JS = """
(root) => {
  const checked = axis => {
    const input = root.querySelector(`input[data-axis=${axis}]:checked`);
    return input ? Number(input.value) : (root.querySelector(`input[data-axis=${axis}]`) ? -1 : 0);
  };
  const options = [...root.querySelectorAll('.ca-queries [role=option]')];
  const active = document.activeElement;
  return {
    id: root.id,
    ready: root.hasAttribute('data-ready'),
    data: JSON.parse(root.querySelector('script.ca-data').textContent),
    layer: checked('layer'),
    head: checked('head'),
    selected: options.map((o, i) => o.getAttribute('aria-selected') === 'true' ? i : -1)
                     .filter(i => i >= 0),
    tabStops: options.map((o, i) => o.tabIndex === 0 ? i : -1).filter(i => i >= 0),
    focused: options.indexOf(active),
    numbers: [...root.querySelectorAll('.ca-key .ca-weight')].map(e => e.textContent),
    numbersShown: [...root.querySelectorAll('.ca-key .ca-weight')]
                    .every(e => getComputedStyle(e).display !== 'none'),
    titles: [...root.querySelectorAll('.ca-key')].map(e => e.title),
    fills: [...root.querySelectorAll('.ca-key .ca-fill')].map(e => e.style.height),
    readout: root.querySelector('.ca-readout').textContent,
    live: root.querySelector('.ca-readout').getAttribute('aria-live'),
    radioNames: [...new Set([...root.querySelectorAll('input[type=radio]')].map(i => i.name))],
  };
}
"""

# Inserts an explorer's HTML the way JupyterLab renders a trusted output: innerHTML (which
# does not run scripts), then each script replaced by a new one with the same text.
INJECT_JS = """
(markup) => {
  const host = document.createElement('div');
  host.className = 'injected-output';
  document.querySelector('article.bd-article').append(host);
  host.innerHTML = markup;
  for (const old of host.querySelectorAll('script')) {
    const script = document.createElement('script');
    for (const attribute of old.attributes) script.setAttribute(attribute.name, attribute.value);
    script.textContent = old.textContent;
    old.replaceWith(script);
  }
  return host.querySelector('.companion-attention').id;
}
"""

READOUT_PAIR = re.compile(r"'(.*?)' (\d+\.\d+)")


def known_explorers() -> dict[str, AttentionExplorer]:
    """Explorers of fixed weights: cross-attention over two layers of three heads (every row
    different), a one-head self-attention with tokens that need escaping, and a masked row."""
    scores = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).reshape(2, 3, 4, 5)
    scores = torch.sin(scores * 1.7) * 3  # distinct rows; no ties at 3 decimals
    cross = show_attention(
        torch.softmax(scores, dim=-1),
        ["le", "chat", "dort", "<eos>"],
        ["the", "cat", "sleeps", "<eos>", "<pad>"],
        heads=["head A", "head B", "head C"],
        title="Cross-attention, two layers",
    )
    tokens = ["<b>it</b>", "it's", " the", "\u732b", "&amp;", "$x$"]  # "$x$": not for MathJax
    causal = torch.tril(torch.ones(6, 6))
    self_weights = causal / causal.sum(dim=-1, keepdim=True)
    masked = self_weights.clone()
    masked[2] = 0
    return {
        "cross": cross,
        "causal": show_attention(self_weights, tokens, query=2),
        "masked": show_attention(masked, tokens, allow_masked=True, title="A masked query"),
    }


def explorer_page_html(site: Path) -> str:
    """The shortest chapter-level page of the site with the known explorers at the end of its
    article (the cross-attention one twice, as a notebook that shows the same weights in two
    cells would). The page's own content stays: the theme's scripts expect it."""
    pages = [p for p in content_pages(site) if p.count("/") == 1]
    template = min(pages, key=lambda p: ((site / p).stat().st_size, p))
    page = (site / template).read_text(encoding="utf-8")
    explorers = known_explorers()
    outputs = "\n".join(
        '<div class="cell_output docutils container"><div class="output text_html">'
        f"{explorer.html}</div></div>"
        for explorer in (
            explorers["cross"],
            explorers["causal"],
            explorers["cross"],
            explorers["masked"],
        )
    )
    section = f'<section id="explorers"><h2>Attention explorers</h2>\n{outputs}\n</section>'
    page, found = ARTICLE_END.subn(lambda m: section + m.group(0), page, count=1)
    assert found, f"{template} has no <article class='bd-article'>"
    return page


def make_test_site(site: Path, folder: Path) -> None:
    """``folder``: links to every top-level entry of the built site, and the test page in a
    folder of its own at the depth of a chapter (so its relative links to ``../_static`` hold)."""
    for entry in site.iterdir():
        (folder / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    (folder / TEST_FOLDER).mkdir()
    (folder / TEST_PAGE).write_text(explorer_page_html(site), encoding="utf-8")


def row_numbers(data: dict, layer: int, head: int, query: int) -> list[str]:
    """The numbers an explorer should show for one query: the embedded row, at its decimals."""
    return [f"{w:.{data['decimals']}f}" for w in data["weights"][layer][head][query]]


def check_shows(state: dict, query: int) -> None:
    """The explorer shows the embedded weights of `query` in its chosen layer and head: every
    key's number, tooltip and bar, and a readout that names the largest weights, largest first,
    with the numbers of the data."""
    data = state["data"]
    layer, head = max(state["layer"], 0), max(state["head"], 0)
    expected = row_numbers(data, layer, head, query)
    where = f"{state['id']}, layer {layer}, head {head}, query {query}"
    assert state["numbers"] == expected, f"{where}: the keys' numbers"
    keys = data["keys"]
    assert state["titles"] == [f"'{k}': {n}" for k, n in zip(keys, expected)], where
    row = data["weights"][layer][head][query]
    bars = [float(fill.rstrip("%")) for fill in state["fills"]]
    assert all(abs(b - w * 100) < 1e-6 for b, w in zip(bars, row)), f"{where}: the bars {bars}"
    readout = state["readout"]
    assert f"query '{data['queries'][query]}'" in readout, f"{where}: {readout!r}"
    pairs = READOUT_PAIR.findall(readout.split("\u2192", 1)[-1]) if "\u2192" in readout else []
    nonzero = sorted((w for w in row if w > 0), reverse=True)
    assert [float(n) for _, n in pairs] == nonzero[:3], f"{where}: {readout!r} for row {row}"
    for token, number in pairs:
        assert any(k == token and n == number for k, n in zip(keys, expected)), (
            f"{where}: the readout says {token!r} {number}, which is no key's weight"
        )
    if not nonzero:
        assert "attends to no key" in readout, f"{where}: {readout!r}"


def radio(root: Locator, axis: str, index: int) -> Locator:
    return root.locator(f"input[data-axis={axis}][value='{index}']")
