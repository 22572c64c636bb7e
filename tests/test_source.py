"""show_source prints an object's own code: whole, without its docstring, or one part of it
with the signature on top and ``...`` where lines are left out."""

from __future__ import annotations

import inspect
import sys
import textwrap

import pytest

from companion import masked_softmax
from companion.source import Source, show_source


def sample(x: int, y: int = 2) -> int:
    """Add, then scale.

    A second paragraph.
    """

    total = x + y  # the sum
    if total > 3:
        total = total * 2
        total = total - 1
    return total


class Sample:
    """A class with one method."""

    def method(self, x: int) -> int:
        doubled = 2 * x
        return doubled + 1


def test_the_whole_object_is_its_source_dedented():
    assert show_source(sample).code == inspect.getsource(sample).rstrip("\n")
    method = show_source(Sample.method).code
    assert method == textwrap.dedent(inspect.getsource(Sample.method)).rstrip("\n")
    assert method.startswith("def method(self, x: int) -> int:\n    doubled")


def test_the_plain_text_output_is_the_code():
    shown = show_source(sample)
    assert isinstance(shown, Source)
    assert repr(shown) == str(shown) == shown.code
    assert shown.title.endswith("test_source.sample")


def test_it_reads_the_installed_library():
    shown = show_source(masked_softmax)
    assert shown.title == "companion.layers.attention.masked_softmax"
    assert shown.code.startswith("def masked_softmax(")
    assert "F.softmax(" in shown.code


def test_docstring_left_out_without_an_ellipsis():
    code = show_source(sample, docstring=False).code
    assert code.splitlines() == [
        "def sample(x: int, y: int = 2) -> int:",
        "    total = x + y  # the sum",
        "    if total > 3:",
        "        total = total * 2",
        "        total = total - 1",
        "    return total",
    ]
    assert show_source(Sample, docstring=False).code.splitlines()[:2] == [
        "class Sample:",
        "    def method(self, x: int) -> int:",
    ]


def test_a_part_keeps_the_signature_and_marks_what_is_left_out():
    code = show_source(sample, start="if total", stop="* 2").code
    assert code.splitlines() == [
        "def sample(x: int, y: int = 2) -> int:",
        "    ...",
        "    if total > 3:",
        "        total = total * 2",
        "        ...",
    ]


def test_a_part_to_the_end_and_a_part_from_the_start():
    assert show_source(sample, start="return").code.splitlines() == [
        "def sample(x: int, y: int = 2) -> int:",
        "    ...",
        "    return total",
    ]
    assert show_source(Sample.method, stop="doubled =").code.splitlines() == [
        "def method(self, x: int) -> int:",
        "    doubled = 2 * x",
        "    ...",
    ]


def test_a_part_without_the_signature_is_dedented():
    code = show_source(sample, start="if total", stop="- 1", signature=False).code
    assert code.splitlines() == [
        "if total > 3:",
        "    total = total * 2",
        "    total = total - 1",
        "...",
    ]


def test_stop_is_searched_from_start_on():
    # "total" is on lines before "if" too; stop matches the start line itself first.
    code = show_source(sample, start="if total", stop="total", signature=False).code
    assert code.splitlines() == ["if total > 3:", "    ..."]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"start": "no such line"}, "start: no line of sample contains 'no such line'"),
        ({"start": "return", "stop": "if total"}, "stop: no line of sample from 'return' on"),
    ],
)
def test_a_part_that_is_not_there_is_an_error(options, message):
    with pytest.raises(ValueError, match=message):
        show_source(sample, **options)


def test_objects_without_a_source_file_are_an_error():
    with pytest.raises(ValueError, match="obj must be a function, method or class"):
        show_source(len)
    with pytest.raises(ValueError, match="obj must be a function, method or class"):
        show_source(3)


def test_html_is_highlighted_and_titled():
    page = show_source(sample)._repr_html_()
    assert "test_source.sample</div>" in page
    assert "<span" in page and "style=" in page  # Pygments, inline styles: no CSS needed
    assert "&gt;" in page  # the "->" of the signature, escaped


def test_html_without_pygments_is_escaped_plain_text(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)  # import pygments now fails
    page = show_source(sample)._repr_html_()
    assert "<pre>def sample(x: int, y: int = 2) -&gt; int:" in page
    assert "<span" not in page
