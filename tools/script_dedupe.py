"""Sphinx extension: each page loads each script once.

sphinx-thebe adds its inline configuration (``const THEBE_JS_URL = ...``) when the
environment starts reading, and Sphinx 7.4 then lists it twice, once with the file name
``None`` and once with ``""``. The second copy re-declares a ``const`` and throws a
JavaScript error on every page (sphinx-togglebutton's inline script is
listed twice too). This drops repeated scripts from the page context.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _key(script) -> tuple:
    """What the page would load: None and "" both mean an inline script."""
    if isinstance(script, str):
        return (script, ())
    return (script.filename or "", tuple(sorted(script.attributes.items())))


def drop_repeated_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree):
    scripts, seen = [], set()
    for script in context.get("script_files", []):
        if _key(script) not in seen:
            seen.add(_key(script))
            scripts.append(script)
    context["script_files"] = scripts


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", drop_repeated_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
