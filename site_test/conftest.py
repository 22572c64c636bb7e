"""Fixtures for the browser test: the built site served on localhost, one offline Chromium for
the whole run, and each page visited once (its record shared by every check on that page)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from site_test.book import BookConfig, content_pages, screenshot_dir, screenshot_name, site_dir
from site_test.browser import OfflineSite, Visit, launch_offline, refusing_port
from site_test.links import LinkChecker
from site_test.server import serve


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise `page` over every content page of the built site."""
    if "page" in metafunc.fixturenames:
        pages = content_pages(site_dir()) if site_dir().is_dir() else []
        if not pages:
            raise pytest.UsageError(f"no built pages under {site_dir()}: run `make book` first")
        metafunc.parametrize("page", pages)


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


@pytest.fixture(scope="session")
def visit(site: OfflineSite) -> Callable[[str], Visit]:
    """`visit(page)` -> the record of that page's one load (with its screenshot)."""
    visits: dict[str, Visit | Exception] = {}

    def visit_once(page: str) -> Visit:
        if page not in visits:
            try:
                visits[page] = site.visit(page, screenshot_dir() / screenshot_name(page))
            except Exception as error:  # one failed load fails each check of that page once
                visits[page] = error
        result = visits[page]
        if isinstance(result, Exception):
            pytest.fail(f"{page} could not be loaded: {result}")
        return result

    return visit_once


@pytest.fixture(scope="session")
def links(origin: str) -> LinkChecker:
    return LinkChecker(origin)
