"""companion's docstrings cite the sections that teach each layer by their labels, and every
label they cite exists in the book; no docstring cites a chapter by its number, which moves."""

from __future__ import annotations

import re
from pathlib import Path

from tools.notebooks import ROOT

LABEL = re.compile(r"\bsec-[a-z0-9]+(?:-[a-z0-9]+)*")
DEFINED = re.compile(r"\((sec-[a-z0-9-]+)\)=")
CHAPTER_NUMBER = re.compile(r"\bchapters? \d", re.IGNORECASE)


def book_labels() -> set[str]:
    labels = set()
    for page in (ROOT / "book").glob("*"):
        if page.suffix in (".md", ".ipynb"):
            labels |= set(DEFINED.findall(page.read_text(encoding="utf-8")))
    return labels


def companion_sources() -> list[Path]:
    return sorted((ROOT / "companion").rglob("*.py"))


def test_every_label_a_module_cites_exists_in_the_book():
    labels = book_labels()
    missing = {
        f"{path.relative_to(ROOT)}: {label}"
        for path in companion_sources()
        for label in LABEL.findall(path.read_text(encoding="utf-8"))
        if label not in labels
    }
    assert not missing, sorted(missing)


def test_no_module_cites_a_chapter_by_number():
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in companion_sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CHAPTER_NUMBER.search(line)
    ]
    assert not cited, cited


def test_the_layers_cite_their_sections():
    import companion

    for name in ("DotProductAttention", "MultiHeadAttention", "TransformerDecoder", "KVCache"):
        layer = getattr(companion, name, None) or getattr(companion.layers.attention, name)
        assert LABEL.search(layer.__doc__), name
