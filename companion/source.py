"""Show a layer's own source code in a chapter, read from the installed module at run time.

A chapter that introduces a layer prints the part of companion's code that teaches it
(sec-attention-scoring shows ``masked_softmax``, sec-bahdanau the attention decoder's
``forward``). The code is read with :func:`inspect.getsource` when the cell runs, so the page,
Colab and the library cannot disagree, and a test that re-runs the notebook notices when the
code changes.

``show_source(obj)`` returns a :class:`Source`. In Jupyter it displays highlighted (HTML built
with Pygments, imported only then); its plain-text form is the code itself, so a notebook
checker that compares text outputs compares the code line for line.

Part of an object: ``start`` and ``stop`` are pieces of text. The part shown runs from the first
line that contains ``start`` to the first line from there on that contains ``stop``, both
included. With ``signature=True`` (the default) the ``def`` or ``class`` line stays on top, and
a ``...`` line at the right indentation stands for each run of lines left out. A ``start`` or
``stop`` that no line contains raises ``ValueError``: the code changed, so the chapter's text
around it may need to change too.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from companion._validate import check_type

ELLIPSIS = "..."


@dataclass(frozen=True)
class Source:
    """Source code to display: ``code`` is the text, ``title`` says where it comes from."""

    code: str
    title: str

    def __repr__(self) -> str:  # the plain-text output: the code itself
        return self.code

    def __str__(self) -> str:
        return self.code

    def _repr_html_(self) -> str:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
        except ImportError:  # Pygments comes with Jupyter; without it, plain preformatted text
            body = f"<pre>{html.escape(self.code)}</pre>"
        else:
            body = highlight(self.code, PythonLexer(), HtmlFormatter(noclasses=True))
        caption = f'<div style="font-size: 0.85em; opacity: 0.75">{html.escape(self.title)}</div>'
        return f'<div class="companion-source">{caption}{body}</div>'


def show_source(
    obj: Callable[..., Any],
    start: str | None = None,
    stop: str | None = None,
    *,
    docstring: bool = True,
    signature: bool = True,
) -> Source:
    """The source of ``obj`` (a function, method or class of an installed module), dedented.

    - ``start``, ``stop``: show only the lines from the first one containing ``start`` to the
      first one from there containing ``stop`` (see the module docstring).
    - ``docstring=False`` leaves the docstring out (for a class, its own docstring only).
    - ``signature``: with ``start`` or ``stop`` given, keep the ``def``/``class`` header on top
      and mark each run of left-out lines with ``...``.

    ``start`` and ``stop`` are pieces of a line (strs) or ``None``.
    """
    for name, text in (("start", start), ("stop", stop)):
        if text is not None:
            check_type(name, text, str, "a piece of a line of the code (a str), or None")
    try:
        code = textwrap.dedent(inspect.getsource(obj))
    except (TypeError, OSError) as error:
        raise ValueError(
            f"obj must be a function, method or class defined in a file; {error}"
        ) from None
    lines = code.rstrip("\n").split("\n")
    header, docstring_lines = _header_and_docstring(code)
    if docstring:
        docstring_lines = range(0)
    elif docstring_lines:  # the blank lines after a docstring go with it
        end = docstring_lines.stop
        while end < len(lines) and not lines[end].strip():
            end += 1
        docstring_lines = range(docstring_lines.start, end)
    shown = [i for i in range(len(lines)) if i not in docstring_lines]
    if start is not None or stop is not None:
        part = _part(lines, start, stop, name=_qualified_name(obj))
        keep = set(header) if signature else set()
        shown = [i for i in shown if i in keep or i in part]
    code = textwrap.dedent(_join_with_ellipses(lines, shown, silent=docstring_lines))
    return Source(code, _title(obj))


def _header_and_docstring(code: str) -> tuple[range, range]:
    """The line indices of the ``def``/``class`` header (decorators and signature) and of the
    docstring, in the dedented ``code`` of one function or class."""
    node = ast.parse(code).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return range(0), range(0)
    first_body = node.body[0]
    header = range(0, first_body.lineno - 1)
    if (
        isinstance(first_body, ast.Expr)
        and isinstance(first_body.value, ast.Constant)
        and isinstance(first_body.value.value, str)
    ):
        end = first_body.end_lineno or first_body.lineno  # always set by ast.parse
        return header, range(first_body.lineno - 1, end)
    return header, range(0)


def _part(lines: list[str], start: str | None, stop: str | None, name: str) -> range:
    first = 0
    if start is not None:
        found = next((i for i, line in enumerate(lines) if start in line), None)
        if found is None:
            raise ValueError(f"start: no line of {name} contains {start!r}")
        first = found
    last = len(lines) - 1
    if stop is not None:
        found = next((i for i in range(first, len(lines)) if stop in lines[i]), None)
        if found is None:
            raise ValueError(f"stop: no line of {name} from {start!r} on contains {stop!r}")
        last = found
    return range(first, last + 1)


def _join_with_ellipses(lines: list[str], shown: list[int], silent: range) -> str:
    """The ``shown`` lines. Where code is left out, between shown lines or after the last one,
    one ``...`` stands for it, indented like the first line it stands for. Lines in ``silent``
    (a docstring left out) and blank lines need no ``...``."""

    def first_left_out(first: int, stop: int) -> str | None:
        return next(
            (lines[j] for j in range(first, stop) if lines[j].strip() and j not in silent), None
        )

    out: list[str] = []
    previous = -1
    for i in [*shown, len(lines)]:
        missing = first_left_out(previous + 1, i) if out else None
        if missing is not None:
            out.append(missing[: len(missing) - len(missing.lstrip())] + ELLIPSIS)
        if i < len(lines):
            out.append(lines[i])
        previous = i
    return "\n".join(out)


def _qualified_name(obj: object) -> str:
    return getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))


def _title(obj: object) -> str:
    module = getattr(inspect.getmodule(obj), "__name__", "?")
    return f"{module}.{_qualified_name(obj)}"
