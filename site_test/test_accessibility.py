"""Accessibility: axe-core's WCAG 2.1 A and AA rules on every page of the book (in light and
dark mode) and of the student edition (site_test/axe.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

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
