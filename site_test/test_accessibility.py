"""Accessibility: axe-core's WCAG 2.1 A and AA rules on every page of the book (in light and
dark mode) and of the student edition (site_test/axe.py), and a keyboard walk through a chapter,
which checks what axe cannot: that the controls are reached and work with the keyboard alone,
and that the focus is always visible."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page

from site_test.book import content_pages, site_dir
from site_test.browser import SEARCH_FINISHED, OfflineSite, Visit


def assert_accessible(record: Visit) -> None:
    """No axe violation; the message names the page, and for each rule its impact, the colour
    mode and the elements' selectors."""
    assert not record.axe_error, f"axe could not run on {record.page}: {record.axe_error}"
    assert record.axe_version, "axe did not run"
    if record.accessibility:
        problems = "\n  ".join(str(violation) for violation in record.accessibility)
        pytest.fail(f"axe {record.axe_version} (WCAG 2.1 A, AA) on {record.page}:\n  {problems}")


def test_page_is_accessible(page: str, visit: Callable[[str], Visit]) -> None:
    assert_accessible(visit(page))


def test_student_page_is_accessible(
    student_page: str, student_visit: Callable[[str], Visit]
) -> None:
    assert_accessible(student_visit(student_page))


@pytest.mark.parametrize(
    "generated, query, wait_for",
    [("search.html", "?q=attention", SEARCH_FINISHED), ("genindex.html", "", None)],
)
def test_generated_page_is_accessible(
    site: OfflineSite, generated: str, query: str, wait_for: str | None
) -> None:
    """Sphinx's search page (with results) and index, which the per-page tests leave out."""
    assert_accessible(site.visit(generated, None, query=query, wait_for=wait_for))


# Where the focus is after each Tab: what kind of control, its name, and whether it shows a
# focus indicator (an outline or the theme's box-shadow ring). `stop` marks the element so that
# the test can put the focus back on it after operating it.
_FOCUSED_JS = """
(stop) => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  e.dataset.siteTestStop = stop;
  const kind = e.closest('#pst-skip-link') ? 'skip link'
    : e.matches('.search-button__button') ? 'search'
    : e.closest('nav.bd-docs-nav') ? 'navigation'
    : e.closest('.dropdown-launch-buttons') ? 'launch'
    : e.matches('.solution button.toggle-button') ? 'solution toggle'
    : e.matches('details.hide > summary') ? 'hidden cell'
    : e.closest('article.bd-article') ? 'content' : 'other';
  const style = getComputedStyle(e);
  const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
               || style.boxShadow !== 'none';
  const name = (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40);
  return {kind, name, ring};
}
"""
MAX_TABS = 600
# Every kind the walk must reach before the first solution toggle (a hidden cell, if any).
MUST_REACH = ("skip link", "search", "navigation", "launch", "content")


def chapter_with_solutions() -> str:
    """The first chapter page (in site order) with a solution dropdown."""
    for page in content_pages(site_dir()):
        if 'class="solution dropdown' in (site_dir() / page).read_text(encoding="utf-8"):
            return page
    raise AssertionError("no page of the built site has a solution dropdown")


@pytest.fixture
def tab(site: OfflineSite) -> Iterator[Page]:
    page = site.context.new_page()
    yield page
    page.close()


def operate(tab: Page, kind: str, stop: int) -> None:
    """Press the keys a keyboard user would on a control of this kind, check what they did,
    and leave the control as it was, with the focus on it."""
    if kind == "search":
        tab.keyboard.press("Enter")
        tab.wait_for_function(
            "() => document.activeElement && document.activeElement.matches('input[name=q]')"
        )
        tab.keyboard.press("Escape")
    elif kind == "launch":
        tab.keyboard.press("Enter")
        menu = tab.locator(".dropdown-launch-buttons .dropdown-menu")
        assert "show" in (menu.get_attribute("class") or ""), "Enter did not open the menu"
        assert menu.locator("a").count() > 0, "the launch menu has no links"
        tab.keyboard.press("Escape")
    elif kind == "hidden cell":
        details = tab.locator(f'[data-site-test-stop="{stop}"]').locator("xpath=..")
        for key, opened in (("Enter", True), ("Space", False)):
            tab.keyboard.press(key)
            assert details.evaluate("d => d.open") is opened, f"{key} on a hidden cell"
    elif kind == "solution toggle":
        button = tab.locator(f'[data-site-test-stop="{stop}"]')
        content = button.locator("xpath=ancestor::div[contains(@class, 'solution')][1]")
        for key, opened in (("Enter", True), ("Space", False)):
            tab.keyboard.press(key)
            assert button.get_attribute("aria-expanded") == str(opened).lower(), key
            hidden = "toggle-hidden" in (content.get_attribute("class") or "")
            assert hidden is not opened, f"{key} did not {'open' if opened else 'close'} it"
    tab.focus(f'[data-site-test-stop="{stop}"]')


def test_keyboard_reaches_the_content_and_opens_a_solution(tab: Page, origin: str) -> None:
    """Tab from the top of a chapter: the focus passes the skip link, the search, the main
    navigation, the launch buttons and the content (a hidden cell's toggle too, if one comes
    first), each shows where the focus is, and each of these opens with the keyboard; then the
    first solution opens with Enter and closes with Space."""
    page = chapter_with_solutions()
    tab.goto(f"{origin}/{page}", wait_until="load")
    tab.wait_for_selector(".solution button.toggle-button", state="attached")
    stops: list[dict] = []
    operated: set[str] = set()
    for number in range(MAX_TABS):
        tab.keyboard.press("Tab")
        stop = tab.evaluate(_FOCUSED_JS, number)
        if stop is None:
            continue
        stops.append(stop)
        if stop["kind"] in {"search", "launch", "hidden cell", "solution toggle"} - operated:
            operate(tab, stop["kind"], number)
            operated.add(stop["kind"])
        if stop["kind"] == "solution toggle":
            break
    reached = [stop["kind"] for stop in stops]
    assert "solution toggle" in reached, f"{MAX_TABS} Tabs on {page} never reached a solution"
    missing = [kind for kind in MUST_REACH if kind not in reached]
    assert not missing, f"Tab never reached: {missing} (order: {reached})"
    assert reached[0] == "skip link", f"the first Tab goes to {stops[0]}"
    unmarked = [f"{stop['kind']}: {stop['name']}" for stop in stops if not stop["ring"]]
    assert not unmarked, f"focus not shown on: {unmarked}"
