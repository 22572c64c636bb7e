"""Sphinx extension: the bibliography's entries are list items for assistive technology.

docutils 0.21's HTML5 writer wraps a run of citations (sphinxcontrib-bibtex's bibliography)
in ``<div role="list">`` and gives each entry ``role="doc-biblioentry"``. DPUB-ARIA 1.1
deprecated that role, and axe (``make site-test``) reports it on every entry
(``aria-deprecated-role``); a screen reader that no longer knows the role finds a list whose
children are not list items, so axe also reports the list (``aria-required-children``). ARIA
in HTML advises plain list items instead: this swaps the role for ``listitem`` in each page's
body.
"""

from __future__ import annotations

from sphinx.application import Sphinx

DEPRECATED = ' role="doc-biblioentry"'
REPLACEMENT = ' role="listitem"'


def citations_as_list_items(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree
) -> None:
    body = context.get("body")
    if isinstance(body, str) and DEPRECATED in body:
        context["body"] = body.replace(DEPRECATED, REPLACEMENT)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", citations_as_list_items)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
