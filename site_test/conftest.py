"""Fixtures for the browser test: the built site and the student edition served on localhost,
one offline Chromium for the whole run, and each page visited once (its record shared by every
check on that page)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from site_test.book import (
    BookConfig,
    content_pages,
    screenshot_dir,
    screenshot_name,
    site_dir,
    student_site_dir,
)
from site_test.browser import OfflineSite, Visit, launch_offline, refusing_port
from site_test.links import LinkChecker
from site_test.server import serve


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise `page` over every content page of the built site, and `student_page` over
    every content page of the student edition."""
    for name, site, command in (
        ("page", site_dir(), "make book"),
        ("student_page", student_site_dir(), "make student"),
    ):
        if name in metafunc.fixturenames:
            pages = content_pages(site) if site.is_dir() else []
            if not pages:
                raise pytest.UsageError(f"no built pages under {site}: run `{command}` first")
            metafunc.parametrize(name, pages)


@pytest.fixture(scope="session")
def config() -> BookConfig:
    return BookConfig.load()


@pytest.fixture(scope="session")
def origin() -> Iterator[str]:
    with serve(site_dir()) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    dead_proxy = refusing_port()
    try:
        with sync_playwright() as playwright:
            browser = launch_offline(playwright, dead_proxy.getsockname()[1])
            yield browser
            browser.close()
    finally:
        dead_proxy.close()


@pytest.fixture(scope="session")
def site(browser: Browser, origin: str) -> Iterator[OfflineSite]:
    offline_site = OfflineSite(browser, origin)
    yield offline_site
    offline_site.context.close()


def visit_once(site: OfflineSite, screenshots: bool) -> Callable[[str], Visit]:
    """`visit(page)` -> the record of that page's one load (with its screenshot, if asked)."""
    visits: dict[str, Visit | Exception] = {}

    def visit(page: str) -> Visit:
        if page not in visits:
            shot = screenshot_dir() / screenshot_name(page) if screenshots else None
            try:
                visits[page] = site.visit(page, shot)
            except Exception as error:  # one failed load fails each check of that page once
                visits[page] = error
        result = visits[page]
        if isinstance(result, Exception):
            pytest.fail(f"{page} could not be loaded: {result}")
        return result

    return visit


@pytest.fixture(scope="session")
def visit(site: OfflineSite) -> Callable[[str], Visit]:
    return visit_once(site, screenshots=True)


@pytest.fixture(scope="session")
def student_site(browser: Browser) -> Iterator[OfflineSite]:
    """The student edition on a server of its own, in its own browser context. axe checks it in
    light mode only: it is the book's pages, less the solutions, with the same stylesheets, so a
    dark-mode pass would repeat the book's."""
    with serve(student_site_dir()) as student_origin:
        offline_site = OfflineSite(browser, student_origin, colour_modes=("light",))
        yield offline_site
        offline_site.context.close()


@pytest.fixture(scope="session")
def student_visit(student_site: OfflineSite) -> Callable[[str], Visit]:
    """Like `visit`, for the student edition's pages (no screenshots)."""
    return visit_once(student_site, screenshots=False)


@pytest.fixture(scope="session")
def links(origin: str) -> LinkChecker:
    return LinkChecker(origin)
