"""Per-page checks of the built site, opened offline in Chromium: math rendered, images loaded,
internal links resolve, no error output, nothing fetched from the internet, a screenshot."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from urllib.parse import urlsplit

from site_test.browser import VIEWPORT, Visit
from site_test.links import LinkChecker

# Math delimiters that MathJax would have consumed: any `$` (inline or display), \( \) \[ \],
# or an environment. Code, preformatted output and rendered math are not part of the prose.
RAW_TEX = re.compile(r"\$+|\\[()\[\]]|\\begin\{")
TRACEBACK = "Traceback (most recent call last)"
# An exception or warning line as Python prints it: `ValueError: ...`, `torch.OutOfMemoryError`.
EXCEPTION_LINE = re.compile(
    r"^[ \t]*(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Warning)(?::[ \t].*|[ \t]*)$", re.MULTILINE
)
SKIPPED_SCHEMES = ("mailto:", "javascript:", "tel:", "data:")


def snippets(text: str, pattern: re.Pattern[str], limit: int = 5) -> list[str]:
    """Each match with some context, whitespace collapsed, for the failure message."""
    return [
        " ".join(text[max(0, m.start() - 40) : m.end() + 40].split())
        for m in list(pattern.finditer(text))[:limit]
    ]


def test_page_loads_without_script_errors(page: str, visit: Callable[[str], Visit]) -> None:
    record = visit(page)
    assert record.status == 200, f"HTTP {record.status}"
    assert record.data["title"], "the page has no title"
    assert not record.page_errors, f"JavaScript errors: {record.page_errors}"


def test_math_is_rendered(page: str, visit: Callable[[str], Visit]) -> None:
    """Pages with math load MathJax, which must typeset every formula without a TeX error.
    (Sphinx also loads MathJax on the root page, whose table of contents leads to math.)"""
    record = visit(page)
    if record.mathjax != "not loaded":
        assert record.mathjax == "ready", f"MathJax: {record.mathjax}"
        assert record.data["mathjaxVersion"], "window.MathJax is only the configuration"
    if record.data["mathElements"] == 0:
        return  # no formulas here; a raw `$` would still fail test_no_raw_tex_left
    assert record.mathjax == "ready", "the page has formulas but does not load MathJax"
    assert record.data["mjxContainers"] > 0, "MathJax produced no output (no mjx-container)"
    assert not record.data["unrenderedMath"], (
        f"formulas MathJax left as TeX: {record.data['unrenderedMath'][:5]}"
    )
    errors = [e for e in record.data["errorElements"] if e.startswith("mjx-merror")]
    assert not errors, f"TeX errors: {errors}"


def test_no_raw_tex_left(page: str, visit: Callable[[str], Visit]) -> None:
    """No `$$`, `$`, `\\(` or `\\[` in the prose a reader sees (hidden dropdowns included)."""
    found = snippets(visit(page).data["prose"], RAW_TEX)
    assert not found, f"raw TeX delimiters in the text: {found}"


def test_images_load(page: str, visit: Callable[[str], Visit]) -> None:
    broken = [
        image["src"]
        for image in visit(page).data["images"]
        if not (image["complete"] and image["naturalWidth"] > 0)
    ]
    assert not broken, f"images that did not load: {broken}"


# Schematic figures are named fig-diagram-...; each must tell a screen reader what it shows.
DIAGRAM_PREFIX = "fig-diagram-"


def test_diagrams_have_alt_text(page: str, visit: Callable[[str], Visit]) -> None:
    diagrams = [
        image for image in visit(page).data["images"] if image["figure"].startswith(DIAGRAM_PREFIX)
    ]
    silent = [image["figure"] for image in diagrams if len(image["alt"].split()) < 5]
    assert not silent, f"schematic figures without alt text: {silent}"


def test_internal_links_resolve(
    page: str, visit: Callable[[str], Visit], links: LinkChecker
) -> None:
    """Every link into the site (navigation, cross-references, the download button) names a
    file the server has and, with a `#fragment`, an element of that page with that id."""
    record = visit(page)
    internal = [
        link
        for link in record.data["links"]
        if not link["href"].startswith(SKIPPED_SCHEMES) and links.is_internal(link["url"])
    ]
    assert internal, "the page links nowhere inside the site (not even its navigation)"
    broken = {}
    for link in internal:
        problem = links.problem(link["url"])
        if problem:
            broken[link["href"]] = problem
    assert not broken, f"broken internal links: {broken}"


def printed_on_purpose(exception_line: str, cell_source: str) -> bool:
    """A chapter may show an error message by catching the exception and printing it:
    `except ValueError as error: print("ValueError:", error)`."""
    name = re.sub(r"[:\s].*", "", exception_line.strip()).rsplit(".", 1)[-1]
    return re.search(rf"except\b[^:\n]*\b{re.escape(name)}\b", cell_source) is not None


def test_no_error_output(page: str, visit: Callable[[str], Visit]) -> None:
    """No traceback or stderr output, no Sphinx error markers, and no exception line in a cell's
    output unless that cell catches that exception itself."""
    data = visit(page).data
    assert not data["errorElements"], f"error output on the page: {data['errorElements'][:5]}"
    assert TRACEBACK not in data["nonCodeText"], snippets(
        data["nonCodeText"], re.compile(re.escape(TRACEBACK))
    )
    unexplained = [
        match.group(0).strip()
        for cell in data["cells"]
        for match in EXCEPTION_LINE.finditer(cell["output"])
        if not printed_on_purpose(match.group(0), cell["input"])
    ]
    assert not unexplained, f"exception lines in cell outputs: {unexplained[:5]}"


def test_page_needs_no_internet(page: str, visit: Callable[[str], Visit], origin: str) -> None:
    """The page asked for nothing outside the site, and the site answered every request;
    MathJax in particular comes from the site's own `_static/`."""
    record = visit(page)
    assert not record.blocked, f"requests to the internet: {record.blocked}"
    assert not record.failed, f"requests the site could not answer: {record.failed}"
    if record.mathjax != "not loaded":
        mathjax = [url for url in record.requests if "mathjax" in urlsplit(url).path.lower()]
        assert mathjax and all(url.startswith(origin + "/_static/") for url in mathjax), mathjax


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    return struct.unpack(">II", data[16:24])


def test_screenshot_saved(page: str, visit: Callable[[str], Visit]) -> None:
    record = visit(page)
    assert record.screenshot is not None and record.screenshot.is_file()
    width, height = png_size(record.screenshot.read_bytes())
    assert width >= VIEWPORT["width"] and height >= VIEWPORT["height"], (width, height)
