"""The attention explorer (``companion.show_attention``) driven in offline Chromium: on a page of
explorers for known weights (site_test/explorer.py), choosing a query by click, hover or keyboard
shows the weights the page embeds for it, switching head and layer changes them, explorers on one
page do not clash, axe's WCAG 2.1 A/AA rules pass in every state, and nothing is fetched from
outside. Every explorer in the built pages is driven too, and its readout checked against the
data it embeds."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import torch
from playwright.sync_api import Browser, Locator, Page

from companion.figures.explorer import show_attention
from site_test import axe
from site_test.book import content_pages, site_dir
from site_test.browser import OfflineSite, Visit
from site_test.explorer import (
    INJECT_JS,
    STATE_JS,
    TEST_PAGE,
    check_shows,
    make_test_site,
    radio,
    row_numbers,
)
from site_test.server import serve
from site_test.test_accessibility import assert_accessible

ALL_READY = "() => !document.querySelector('.companion-attention:not([data-ready])')"
EXPLORER_ROOT = re.compile(r'<div class="companion-attention[ "]')  # as show_attention writes it
MAX_QUERIES = 12  # queries clicked per head in a built page's explorer (first, middle, last beyond)


@pytest.fixture(scope="module")
def explorer_site(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OfflineSite]:
    """The test page, served on its own port beside links to the built site's files."""
    if not site_dir().is_dir():
        raise pytest.UsageError(f"no built site under {site_dir()}: run `make book` first")
    folder = tmp_path_factory.mktemp("explorer-site")
    make_test_site(site_dir(), folder)
    with serve(folder) as origin:
        offline_site = OfflineSite(browser, origin)
        yield offline_site
        offline_site.context.close()


@pytest.fixture(scope="module")
def explorer_visit(explorer_site: OfflineSite) -> Visit:
    return explorer_site.visit(TEST_PAGE, None)


@pytest.fixture
def tab(explorer_site: OfflineSite) -> Iterator[Page]:
    """The test page, freshly loaded, every explorer set up."""
    page = explorer_site.context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{explorer_site.origin}/{TEST_PAGE}", wait_until="load")
    page.wait_for_function(ALL_READY)
    yield page
    page.close()
    assert not errors, f"JavaScript errors: {errors}"


def explorers(tab: Page) -> list[Locator]:
    count = tab.locator(".companion-attention").count()
    return [tab.locator(".companion-attention").nth(i) for i in range(count)]


def state(root: Locator) -> dict:
    return root.evaluate(STATE_JS)


def option(root: Locator, query: int) -> Locator:
    return root.locator(f".ca-queries [role=option][data-index='{query}']")


def test_explorer_page_loads_offline_and_passes_axe(explorer_visit: Visit) -> None:
    assert explorer_visit.status == 200
    assert not explorer_visit.page_errors, f"JavaScript errors: {explorer_visit.page_errors}"
    assert not explorer_visit.blocked, f"requests outside: {explorer_visit.blocked}"
    assert not explorer_visit.failed, f"failed requests: {explorer_visit.failed}"
    assert_accessible(explorer_visit)
    # MathJax typesets the page's math, and leaves a token that looks like math as text.
    assert explorer_visit.mathjax in ("ready", "not loaded"), explorer_visit.mathjax
    assert "$x$" in explorer_visit.data["prose"], "MathJax took the token $x$ for math"


def test_each_explorer_is_set_up_apart_from_the_others(tab: Page) -> None:
    """Four explorers, the first and third the same data: every one set up, showing its first
    query; ids unique (the copy took a suffix), and radio groups of their own."""
    states = [state(root) for root in explorers(tab)]
    assert len(states) == 4
    ids = [s["id"] for s in states]
    assert ids[2] == ids[0] + "-2" and len(set(ids)) == 4, ids
    assert all(s["ready"] and s["live"] == "polite" for s in states)
    names = [name for s in states for name in s["radioNames"]]
    assert len(names) == len(set(names)) == 4, names  # layer and head, of two explorers
    for s in states:
        assert s["selected"] == s["tabStops"] == [s["data"]["query"]]
        assert (s["layer"], s["head"]) == (0, 0)
        check_shows(s, s["data"]["query"])


def test_clicking_or_hovering_a_query_shows_its_weights(tab: Page) -> None:
    root = explorers(tab)[0]
    for query in range(4):
        option(root, query).click()
        now = state(root)
        assert now["selected"] == now["tabStops"] == [query] and now["focused"] == query
        check_shows(now, query)
    option(root, 1).hover()  # a preview of query 1, while 3 stays selected
    check_shows(state(root), 1)
    tab.locator("#explorers h2").hover()
    now = state(root)
    assert now["selected"] == [3]
    check_shows(now, 3)


def test_the_keyboard_chooses_the_query(tab: Page) -> None:
    """Tab reaches the list at its selected query; the arrows, Home and End move the choice
    (and the focus) along it, Enter keeps it, and each shows that query's weights."""
    root = explorers(tab)[0]
    root.locator(".ca-show-numbers").focus()
    tab.keyboard.press("Tab")
    assert state(root)["focused"] == 0, "Tab after the check box goes to the selected query"
    for key, query in [
        ("ArrowRight", 1),
        ("ArrowDown", 2),
        ("ArrowRight", 3),
        ("ArrowRight", 3),  # the last stays
        ("Home", 0),
        ("ArrowLeft", 0),
        ("End", 3),
        ("ArrowUp", 2),
        ("Enter", 2),
        (" ", 2),
    ]:
        tab.keyboard.press(key)
        now = state(root)
        assert now["selected"] == now["tabStops"] == [query], f"after {key}"
        assert now["focused"] == query, f"after {key}, the focus"
        check_shows(now, query)
    tab.keyboard.press("Tab")
    assert state(root)["focused"] == -1, "the list is one tab stop"


# The focused element: which part of an explorer it is, and whether it shows a focus ring.
FOCUS_JS = """
() => {
  const e = document.activeElement;
  const root = e && e.closest('.companion-attention');
  const style = getComputedStyle(e);
  return {root: root ? root.id : null,
          part: e.getAttribute('data-axis') || e.className || e.getAttribute('role'),
          ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0};
}
"""


def test_tab_reaches_each_control_once_and_shows_the_focus(tab: Page) -> None:
    """From the heading above it, Tab goes through the first explorer's layer radios, head
    radios, check box and query list, one stop each, each with a visible focus ring."""
    tab.locator("#explorers h2").click()
    first_id = state(explorers(tab)[0])["id"]
    stops = []
    for _ in range(20):
        tab.keyboard.press("Tab")
        stop = tab.evaluate(FOCUS_JS)
        if stop["root"] != first_id:
            break
        stops.append(stop)
    assert [stop["part"] for stop in stops] == ["layer", "head", "ca-show-numbers", "option"]
    assert all(stop["ring"] for stop in stops), stops


def test_switching_head_and_layer_changes_the_weights(tab: Page) -> None:
    first, _, copy, _ = explorers(tab)
    option(first, 1).click()
    before = state(first)["numbers"]
    radio(first, "head", 1).check()
    now = state(first)
    assert (now["layer"], now["head"]) == (0, 1)
    check_shows(now, 1)
    assert now["numbers"] != before, "head B shows other weights than head A"
    radio(first, "head", 1).focus()
    tab.keyboard.press("ArrowRight")  # the radio group's own keys: the next head
    now = state(first)
    assert now["head"] == 2
    check_shows(now, 1)
    radio(first, "layer", 1).check()
    now = state(first)
    assert (now["layer"], now["head"]) == (1, 2)
    check_shows(now, 1)
    assert now["numbers"] == row_numbers(now["data"], 1, 2, 1)
    untouched = state(copy)
    assert (untouched["layer"], untouched["head"], untouched["selected"]) == (0, 0, [0])
    check_shows(untouched, 0)


def test_numbers_on_demand_a_masked_query_and_axe_in_every_state(tab: Page) -> None:
    """The check box shows every key's number; a masked query says it attends to no key; and
    axe's rules pass with the numbers shown, another head and query chosen, in both modes."""
    first, causal, _, masked = explorers(tab)
    first.locator(".ca-show-numbers").focus()
    tab.keyboard.press("Space")
    assert state(first)["numbersShown"] and not state(causal)["numbersShown"]
    radio(first, "head", 2).check()
    option(first, 2).click()
    causal.locator(".ca-show-numbers").check()
    option(causal, 4).click()
    option(masked, 2).click()
    now = state(masked)
    assert "attends to no key" in now["readout"]
    check_shows(now, 2)
    version, violations = axe.check(tab)
    assert version, "axe did not run"
    assert not violations, "\n".join(str(violation) for violation in violations)


def test_an_explorer_inserted_as_jupyterlab_does_works(tab: Page) -> None:
    """JupyterLab sets an output's HTML with innerHTML and then re-creates its scripts."""
    weights = torch.softmax(torch.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0], [2.0, 1.0, 1.0]]), -1)
    explorer = show_attention(weights, ["a", "b", "c"])
    root_id = tab.evaluate(INJECT_JS, explorer.html)
    root = tab.locator(f"#{root_id}")
    tab.wait_for_function(ALL_READY)
    check_shows(state(root), 0)
    option(root, 1).click()
    check_shows(state(root), 1)
    assert state(root)["data"] == explorer.data


def test_no_request_left_localhost(explorer_site: OfflineSite) -> None:
    """Run last in this module: what every tab above asked for outside the test page's server."""
    assert not explorer_site.blocked_outside_visits


def pages_with_explorers() -> list[str]:
    site = site_dir()
    if not site.is_dir():
        return []
    return [
        page
        for page in content_pages(site)
        if EXPLORER_ROOT.search((site / page).read_text(encoding="utf-8"))
    ]


def queries_to_try(count: int) -> list[int]:
    if count <= MAX_QUERIES:
        return list(range(count))
    return sorted({*range(MAX_QUERIES - 2), count // 2, count - 1})


@pytest.mark.parametrize(
    "built_page",
    pages_with_explorers()
    or [pytest.param("", marks=pytest.mark.skip(reason="no built page shows an explorer yet"))],
)
def test_explorers_in_the_built_pages(built_page: str, site: OfflineSite) -> None:
    """Each explorer of a chapter: choosing a query (click, then an arrow key) shows the weights
    the page embeds for it, in every head and layer."""
    tab = site.context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto(f"{site.origin}/{built_page}", wait_until="load")
        tab.wait_for_function(ALL_READY)
        roots = explorers(tab)
        assert roots, "the page's HTML has an explorer, the loaded page none"
        for root in roots:
            # An explorer in a folded cell or dropdown: open it, as a reader would.
            root.evaluate(
                "r => { for (let d = r.closest('details'); d; "
                "d = d.parentElement.closest('details')) d.open = true; }"
            )
            data = state(root)["data"]
            for layer in range(len(data["layers"])):
                for head in range(len(data["heads"])):
                    for axis, index, count in (
                        ("layer", layer, len(data["layers"])),
                        ("head", head, len(data["heads"])),
                    ):
                        if count > 1:
                            radio(root, axis, index).check()
                    for query in queries_to_try(len(data["queries"])):
                        option(root, query).click()
                        check_shows(state(root), query)
            option(root, 0).click()
            tab.keyboard.press("ArrowRight")
            check_shows(state(root), min(1, len(data["queries"]) - 1))
        assert not errors, f"JavaScript errors: {errors}"
    finally:
        tab.close()
