"""Small texts of four kinds, shipped with companion, to train and measure tokenizers
(sec-tokenization). Nothing is downloaded.

- ``"english"``: the prose of this book's chapters (their markdown cells, with code blocks and
  display math removed), a snapshot taken when the tokenization chapter was written: English
  with inline math, code names and a few Chinese terms.
- ``"chinese"``: sixteen paragraphs of Chinese written for this book, on the same subjects.
- ``"code"``: a snapshot of eight of companion's own modules (Python).
- ``"numbers"``: arithmetic, dates and decimals drawn from a seeded generator.

The snapshots are files, not the live book or library, so the numbers a chapter prints from
them do not change when the book does.
"""

from __future__ import annotations

import random
from pathlib import Path

from companion._validate import check_integer, check_number, check_seed, check_type

KINDS = ("english", "chinese", "code", "numbers")
FILES = Path(__file__).parent / "corpus_files"


def numbers(lines: int = 2000, seed: int = 0) -> str:
    """``lines`` (a positive integer) lines of sums, dates and decimals, the same for the same
    ``seed`` (an integer)."""
    check_integer("lines", lines)
    check_seed(seed)
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        a, b = rng.randrange(10 ** rng.randint(1, 6)), rng.randrange(10 ** rng.randint(1, 6))
        kind = rng.randrange(3)
        if kind == 0:
            out.append(f"{a} + {b} = {a + b}")
        elif kind == 1:
            year, month, day = rng.randint(1900, 2099), rng.randint(1, 12), rng.randint(1, 28)
            out.append(f"{year}-{month:02d}-{day:02d}")
        else:
            out.append(f"{a / (b + 1):.{rng.randint(1, 6)}f}")
    return "\n".join(out) + "\n"


def load(kind: str) -> str:
    """The text of one kind: ``"english"``, ``"chinese"``, ``"code"`` or ``"numbers"``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "numbers":
        return numbers()
    return (FILES / f"{kind}.txt").read_text(encoding="utf-8")


def split(text: str, held_out: float = 0.1) -> tuple[str, str]:
    """``(training part, held-out part)`` of ``text`` (a str): the last ``held_out`` of the
    lines (a fraction in (0, 1)) are held out."""
    check_type("text", text, str, "a str")
    if not 0 < check_number("held_out", held_out) < 1:
        raise ValueError(f"held_out must be between 0 and 1, got {held_out}")
    lines = text.splitlines(keepends=True)
    cut = round(len(lines) * (1 - held_out))
    return "".join(lines[:cut]), "".join(lines[cut:])
