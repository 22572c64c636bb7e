"""Headless Chromium, offline, and what one visit to a page records: math, images, links,
error output, every request the page made, a screenshot and axe's accessibility violations.

Chromium is Debian's (`/usr/bin/chromium`), driven by Playwright through its executable_path,
so nothing is downloaded. Two layers keep it offline: Chromium resolves no host name except
localhost and sends everything that is not loopback to a proxy port that refuses connections,
and a route handler aborts (and records) any request that is not for the local server."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Playwright, Request, Response, Route
from playwright.sync_api import Error as PlaywrightError

from site_test import axe

CHROMIUM = os.environ.get("SITE_TEST_CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 2000}
WAIT_MS = 20_000
# Sphinx's searchtools.js lists results one at a time, then writes this summary.
SEARCH_FINISHED = """() => /Search finished|did not match/.test(
    (document.querySelector('#search-results .search-summary') || {}).textContent || '')"""

# Collected in the page after MathJax has finished and every image has loaded (or failed).
_COLLECT_JS = """
() => {
  const skippedTags = new Set(['SCRIPT', 'STYLE', 'PRE', 'CODE', 'TEXTAREA', 'NOSCRIPT',
                               'SAMP', 'KBD', 'MJX-CONTAINER']);
  const textOutside = (isSkipped) => {
    const parts = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      let skip = false;
      for (let e = walker.currentNode.parentElement; e && !skip; e = e.parentElement) {
        skip = isSkipped(e);
      }
      if (!skip) parts.push(walker.currentNode.nodeValue);
    }
    return parts.join('');
  };
  const mathElements = [...document.querySelectorAll('.math')];
  const launch = [...document.querySelectorAll('.dropdown-launch-buttons a')];
  return {
    title: document.title,
    mathElements: mathElements.length,
    unrenderedMath: mathElements.filter(e => !e.querySelector('mjx-container'))
                                .map(e => e.textContent.trim().slice(0, 80)),
    mjxContainers: document.querySelectorAll('mjx-container').length,
    mathjaxVersion: (window.MathJax && window.MathJax.version) || '',
    // Prose as a reader sees it, hidden dropdowns included, code and rendered math excluded.
    prose: textOutside(e => skippedTags.has(e.tagName.toUpperCase())),
    // Everything but code cell inputs and scripts: where a traceback must not appear.
    nonCodeText: textOutside(e => ['SCRIPT', 'STYLE'].includes(e.tagName.toUpperCase())
                                  || e.classList.contains('cell_input')),
    // Each code cell's source and its outputs, so an exception line can be told apart from
    // a cell that catches the exception and prints it on purpose.
    cells: [...document.querySelectorAll('.cell_output')].map(output => {
      const cell = output.closest('.cell');
      const input = cell && cell.querySelector('.cell_input');
      return {input: input ? input.textContent : '', output: output.textContent};
    }),
    errorElements: [...document.querySelectorAll(
        '.output.traceback, .output.stderr, .output.error, .system-message, .problematic, '
        + 'mjx-merror')].map(e => [e.tagName.toLowerCase(), ...e.classList].join('.') + ': '
                                  + (e.getAttribute('data-mjx-error') || e.textContent)
                                      .trim().slice(0, 120)),
    images: [...document.images].map(i => ({src: i.currentSrc || i.src, complete: i.complete,
                                            naturalWidth: i.naturalWidth,
                                            alt: i.getAttribute('alt') || '',
                                            figure: (i.closest('figure') || {}).id || ''})),
    links: [...document.querySelectorAll('a[href]')].map(a => ({
        href: a.getAttribute('href'), url: a.href, text: a.textContent.trim().slice(0, 60)})),
    launchLinks: launch.map(a => ({label: a.textContent.trim(), href: a.getAttribute('href')})),
    repositoryLinks: [...document.querySelectorAll('a.btn-source-repository-button')]
                       .map(a => a.getAttribute('href')),
    downloadLinks: [...document.querySelectorAll('a.btn-download-source-button')]
                     .map(a => a.href),
    searchResults: [...document.querySelectorAll('#search-results ul.search li a')]
                     .map(a => a.href),
  };
}
"""

# Lazy images load only near the viewport: make them eager and wait for each to settle.
_LOAD_IMAGES_JS = """
async (timeoutMs) => {
  const images = [...document.images];
  images.forEach(i => { i.loading = 'eager'; });
  const settled = images.map(i => i.complete ? null : new Promise(resolve => {
    i.addEventListener('load', resolve); i.addEventListener('error', resolve); }));
  await Promise.race([Promise.all(settled), new Promise(r => setTimeout(r, timeoutMs))]);
  await document.fonts.ready;
}
"""

# Records, without blocking on it, how MathJax's start-up (which typesets the page) ended.
_MATHJAX_DONE_JS = """
() => { MathJax.startup.promise.then(() => { window.__siteTestMathJax = 'ready'; },
                                     e => { window.__siteTestMathJax = `failed: ${e}`; }); }
"""


def refusing_port() -> socket.socket:
    """A bound, never-listening socket: connecting to its port is refused at once.
    Keep the socket open as long as Chromium uses the port as its proxy."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def launch_offline(playwright: Playwright, dead_proxy_port: int) -> Browser:
    """Debian's Chromium, headless, unable to resolve or reach any host but this one."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=[
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
            # Loopback bypasses a proxy implicitly; everything else goes to a refused port.
            f"--proxy-server=http://127.0.0.1:{dead_proxy_port}",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    )


@dataclass
class Visit:
    """What one page load saw. The tests assert on it; the browser work happens once per page."""

    page: str
    url: str = ""
    status: int = 0
    final_url: str = ""
    mathjax: str = "not loaded"  # "ready", "not loaded", or why it never became ready
    data: dict = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # attempted non-local requests
    failed: list[str] = field(default_factory=list)  # local requests without a 2xx/3xx answer
    page_errors: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    axe_version: str = ""
    axe_error: str = ""
    accessibility: list[axe.Violation] = field(default_factory=list)


class OfflineSite:
    """One browser context on the local server; each page is visited once, in a fresh tab."""

    def __init__(
        self, browser: Browser, origin: str, colour_modes: tuple[str, ...] = axe.MODES
    ) -> None:
        self.origin = origin
        self.colour_modes = colour_modes  # those in which axe checks the pages
        self.context: BrowserContext = browser.new_context(viewport=VIEWPORT)
        self.context.set_default_timeout(WAIT_MS)
        self.blocked_outside_visits: list[str] = []
        self._blocked = self.blocked_outside_visits
        self.context.route("**/*", self._only_local)

    def is_local(self, url: str) -> bool:
        return url.startswith(self.origin + "/") or url == self.origin

    def _only_local(self, route: Route) -> None:
        url = route.request.url
        if self.is_local(url):
            route.continue_()
        else:
            self._blocked.append(url)
            route.abort("internetdisconnected")

    def visit(
        self, page: str, screenshot: Path | None, query: str = "", wait_for: str | None = None
    ) -> Visit:
        """Open `page`, let MathJax and images finish, collect, take a full-page shot, and run
        axe. `wait_for` is a JavaScript predicate to wait for first (e.g. search finished)."""
        visit = Visit(page=page, url=f"{self.origin}/{page}{query}")
        recording = True  # requests cut off by closing the tab are not the page's fault

        def on_request(request: Request) -> None:
            if recording:
                visit.requests.append(request.url)

        def on_failed(request: Request) -> None:
            if recording and self.is_local(request.url):
                visit.failed.append(f"{request.url}: {request.failure}")

        def on_response(response: Response) -> None:
            if recording and response.status >= 400 and self.is_local(response.url):
                visit.failed.append(f"{response.url}: HTTP {response.status}")

        self._blocked = visit.blocked
        tab = self.context.new_page()
        tab.on("request", on_request)
        tab.on("requestfailed", on_failed)
        tab.on("response", on_response)
        tab.on("pageerror", lambda error: visit.page_errors.append(str(error)))
        try:
            response = tab.goto(visit.url, wait_until="load")
            visit.status = response.status if response else 0
            visit.final_url = tab.url
            visit.mathjax = _wait_for_mathjax(tab)
            if wait_for:
                tab.wait_for_function(wait_for)
            tab.evaluate(_LOAD_IMAGES_JS, 10_000)
            visit.data = tab.evaluate(_COLLECT_JS)
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                tab.screenshot(path=str(screenshot), full_page=True)
                visit.screenshot = screenshot
            # axe last, as it switches the colour mode. Its own requests are not the page's: it
            # re-reads @import-ed stylesheets, resolving their relative URLs against the page.
            recording = False
            self._blocked = self.blocked_outside_visits
            try:  # a failure fails the accessibility test alone
                visit.axe_version, visit.accessibility = axe.check(tab, self.colour_modes)
            except PlaywrightError as error:
                visit.axe_error = error.message.splitlines()[0]
        finally:
            recording = False
            self._blocked = self.blocked_outside_visits
            tab.close()
        return visit


def _wait_for_mathjax(tab) -> str:
    """Wait until MathJax has typeset the page, if the page loads MathJax at all."""
    if tab.locator("script[src*='mathjax']").count() == 0:
        return "not loaded"
    try:
        tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        tab.evaluate(_MATHJAX_DONE_JS)
        return str(tab.wait_for_function("() => window.__siteTestMathJax").json_value())
    except PlaywrightError as error:
        return f"never ready: {error.message.splitlines()[0]}"
