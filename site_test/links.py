"""Fetches link targets from the local server and lists the ids each page defines, so that a
link with a `#fragment` can be checked against the page it points at. Results are cached."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

# No proxy for the local server, whatever the environment's http_proxy says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _IdCollector(HTMLParser):
    """Every `id` in a page, and every `<a name>` (an older anchor form that browsers honour)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name == "id" or (tag == "a" and name == "name")):
                self.ids.add(value)


@dataclass(frozen=True)
class Target:
    """What the server answered for one URL (without its fragment)."""

    status: int
    content_type: str
    body: bytes


class LinkChecker:
    """Resolves internal links against the running server, one request per distinct target."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self._targets: dict[str, Target] = {}
        self._ids: dict[str, set[str]] = {}

    def is_internal(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and f"{parts.scheme}://{parts.netloc}" == (
            self.origin
        )

    def fetch(self, url: str) -> Target:
        key = urlsplit(url)._replace(query="", fragment="").geturl()
        if key not in self._targets:
            try:
                with _OPENER.open(key, timeout=10) as response:
                    target = Target(
                        response.status, response.headers.get_content_type(), response.read()
                    )
            except urllib.error.HTTPError as error:
                target = Target(error.code, "", b"")
            self._targets[key] = target
        return self._targets[key]

    def ids(self, url: str) -> set[str]:
        key = urlsplit(url)._replace(query="", fragment="").geturl()
        if key not in self._ids:
            collector = _IdCollector()
            collector.feed(self.fetch(key).body.decode("utf-8", errors="replace"))
            self._ids[key] = collector.ids
        return self._ids[key]

    def problem(self, url: str) -> str | None:
        """Why an internal link is broken, or None if its file is served and its anchor exists."""
        target = self.fetch(url)
        if target.status != 200:
            return f"HTTP {target.status}"
        fragment = unquote(urlsplit(url).fragment)
        if not fragment:
            return None
        if target.content_type != "text/html":
            return f"#{fragment} on a {target.content_type} file"
        if fragment not in self.ids(url):
            return f"no element with id {fragment!r}"
        return None
