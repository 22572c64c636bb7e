"""Whole-site checks: the browser really is offline, the root forwards to the first page,
search works without a network, and the glossary carries its bilingual terms."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from site_test.book import BookConfig, screenshot_dir, screenshot_name
from site_test.browser import SEARCH_FINISHED, WAIT_MS, OfflineSite
from site_test.links import LinkChecker

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
MIN_GLOSSARY_TERMS = 20

FETCH_JS = """
async (url) => {
  try { const response = await fetch(url, {mode: 'no-cors', cache: 'no-store'});
        return `reached (${response.type})`; }
  catch (error) { return `failed: ${error}`; }
}
"""


@pytest.fixture
def tab(site: OfflineSite) -> Iterator[Page]:
    page = site.context.new_page()
    yield page
    page.close()


def test_browser_cannot_reach_the_internet(browser: Browser, origin: str) -> None:
    """Chromium itself is offline, not only our route filter: in a context without it, a fetch
    of a public host name or IP address fails while the local server answers."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{origin}/search.html")
        assert page.evaluate(FETCH_JS, f"{origin}/searchindex.js").startswith("reached")
        for url in (
            "https://colab.research.google.com/",
            "http://1.1.1.1/",
            "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js",
        ):
            outcome = page.evaluate(FETCH_JS, url)
            assert outcome.startswith("failed"), f"{url} {outcome}"
    finally:
        context.close()


def test_root_forwards_to_the_first_page(
    tab: Page, origin: str, config: BookConfig, links: LinkChecker
) -> None:
    """The site's address opens the root page of _toc.yml."""
    tab.goto(f"{origin}/index.html")
    tab.wait_for_url(f"{origin}/{config.root_page}", timeout=WAIT_MS)
    assert links.problem(f"{origin}/{config.root_page}") is None


def test_search_finds_pages_offline(site: OfflineSite, links: LinkChecker) -> None:
    """search.html?q=attention lists several chapters from the local search index, each result
    a live page, with nothing asked of the internet."""
    record = site.visit(
        "search.html",
        screenshot_dir() / screenshot_name("search.html"),
        query="?q=attention",
        wait_for=SEARCH_FINISHED,
    )
    assert not record.blocked, f"search asked the internet: {record.blocked}"
    assert not record.failed, record.failed
    results = record.data["searchResults"]
    pages = {url.split("#")[0] for url in results}
    assert len(pages) >= 3, f"'attention' found only {sorted(pages)}"
    problems = {
        url: links.problem(url) if links.is_internal(url) else "not on this site" for url in results
    }
    broken = {url: problem for url, problem in problems.items() if problem}
    assert not broken, f"search results that lead nowhere: {broken}"


def test_glossary_is_bilingual(tab: Page, origin: str) -> None:
    """Each glossary entry has an English and a Chinese term (`dt`s) and a definition (`dd`)."""
    response = tab.goto(f"{origin}/book/glossary.html")
    assert response is not None and response.status == 200
    entries = tab.eval_on_selector_all(
        "dl.glossary > dd",
        """definitions => definitions.map(dd => {
             const terms = [];
             for (let e = dd.previousElementSibling; e && e.tagName === 'DT';
                  e = e.previousElementSibling) terms.push(e.textContent.replace('#', '').trim());
             return {terms, definition: dd.textContent.trim()};
           })""",
    )
    assert len(entries) >= MIN_GLOSSARY_TERMS, f"only {len(entries)} glossary entries"
    one_sided = [
        entry["terms"]
        for entry in entries
        if not (
            any(LATIN.search(t) and not CJK.search(t) for t in entry["terms"])
            and any(CJK.search(t) for t in entry["terms"])
            and entry["definition"]
        )
    ]
    assert not one_sided, f"entries without both an English and a Chinese term: {one_sided}"
