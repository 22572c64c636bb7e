"""A quiet local web server for the built site: the browser reads pages over HTTP, as a reader
does, so that relative links, fetches of `searchindex.js` and MathJax's lazy loads all work."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves files without logging every request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    """Ignores a browser that hangs up mid-response (a tab closed while MathJax fonts load)."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve `directory` on a free port of 127.0.0.1 and yield its origin (`http://host:port`)."""
    handler = partial(QuietHandler, directory=str(directory))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
