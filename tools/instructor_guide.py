"""The instructor guide's exercise table and schedules, written from the notebooks.

    python -m tools.instructor_guide          # rewrite them in book/instructor-guide.md
    python -m tools.instructor_guide --check  # exit 1 if the page is not up to date

Everything from the page's ``## Every exercise`` heading to its end is generated: one row per
exercise of every chapter in ``_toc.yml`` (``tools/exercises.py`` reads them), and a four- and
an eight-week schedule that split the chapters, in order, over the weeks. ``make outputs`` runs
it, and a test fails while the page is stale, so a new exercise or chapter joins the guide
without a hand edit. The minutes are estimates: a row keeps the minutes the page already gives
it (edit them there, they survive), and a new exercise starts from :data:`MINUTES`.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.exercises import Exercise, exercises
from tools.record import ROOT
from tools.toc import chapter_notebooks

GUIDE = ROOT / "book" / "instructor-guide.md"
SECTION = "## Every exercise"
HEADER = ("Chapter", "Exercise", "Kind", "Difficulty", "Checker", "Points", "Minutes")
NO_CHECKER = "—"
MINUTES = {"easy": 15, "medium": 35, "open-ended": 60}  # a new exercise's first estimate
SCHEDULES = {"Four weeks": 4, "Eight weeks": 8}

INTRO = """\
(sec-instructor-exercises)=
## Every exercise

Each chapter ends with its exercises. The tag at the start of each says how hard it is: *easy*
exercises check the chapter's main idea, *medium* ones take a calculation or a small
experiment, and *open-ended* ones have no single answer; their solutions sketch one. Coding
exercises are graded by the checker named in the table; written ones by reading. The points are
those of the nbgrader course. The minutes are our estimate for a student who has read the
chapter, including running any code.

This table and the schedules below are written from the notebooks by
`python -m tools.instructor_guide` (`make outputs` runs it): edit the minutes here, and they are
kept.
"""

SCHEDULE_INTRO = """\
## Suggested schedules

Both schedules follow the order of the chapters; each chapter builds on the ones before it.
*Read* is the reading for the week, done before the lab. *Assign* is the lab work, and *Lab
minutes* adds up its estimated minutes from the table above. *Optional* exercises suit
students who finish early.
"""

SCHEDULE_TEXT = {
    "Four weeks": (
        "The lab takes the easy and the coding exercises; the medium written ones are optional. "
        "The open-ended exercises are left for a final project: each student picks one and "
        "writes it up."
    ),
    "Eight weeks": (
        "The lab covers the easy, coding and medium exercises; the open-ended ones are optional. "
        "Asking each student for one open-ended exercise over the course makes a good written "
        "project."
    ),
}


@dataclass(frozen=True)
class Chapter:
    name: str  # the notebook's name without .ipynb, as {doc} names it from book/
    title: str
    exercises: tuple[Exercise, ...]

    @property
    def link(self) -> str:
        return f"{{doc}}`{self.title} <{self.name}>`"


def chapters(root: Path = ROOT, titles: dict[str, str] | None = None) -> list[Chapter]:
    """Every chapter of ``_toc.yml`` with its exercises; a known short title is kept."""
    found = []
    for path in chapter_notebooks(root):
        notebook = nbformat.read(path, as_version=4)
        heading = next(
            (
                line[2:]
                for c in notebook.cells
                for line in c.source.splitlines()
                if c.cell_type == "markdown" and line.startswith("# ")
            ),
            path.stem,
        )
        title = (titles or {}).get(path.stem) or heading.split(":")[0].strip()
        found.append(Chapter(path.stem, title, tuple(exercises(notebook))))
    return found


def known_rows(text: str) -> tuple[dict[str, int], dict[str, str]]:
    """The minutes per label and the title per chapter that the page's table gives now."""
    minutes, titles = {}, {}
    for line in text.splitlines():
        label = re.search(r"\{ref\}`(ex-[\w-]+) <", line)
        chapter = re.match(r"\| \{doc\}`([^<`]+) <([^>]+)>`", line)
        if label and chapter:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if cells[-1].isdigit():
                minutes[label.group(1)] = int(cells[-1])
            titles[chapter.group(2)] = chapter.group(1).strip()
    return minutes, titles


def table(book: list[Chapter], minutes: dict[str, int]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " |", "| --- | --- | --- | --- | --- | ---: | ---: |"]
    for chapter in book:
        for e in chapter.exercises:
            checker = ", ".join(f"`{name}`" for name in e.checkers) or NO_CHECKER
            lines.append(
                f"| {chapter.link} | {{ref}}`{e.label} <{e.label}>` | {e.kind} | "
                f"{e.difficulty} | {checker} | {e.points} | {minutes[e.label]} |"
            )
    return lines


def split(book: list[Chapter], weeks: int) -> list[list[Chapter]]:
    """The chapters in order over ``weeks`` weeks, as evenly as they go (earlier weeks more)."""
    weeks = min(weeks, len(book))
    size, extra = divmod(len(book), weeks)
    groups, start = [], 0
    for week in range(weeks):
        end = start + size + (1 if week < extra else 0)
        groups.append(book[start:end])
        start = end
    return groups


def schedule(book: list[Chapter], weeks: int, heading: str, minutes: dict[str, int]):
    lab = {"Four weeks": ("easy",), "Eight weeks": ("easy", "medium")}[heading]
    optional = {"Four weeks": ("medium",), "Eight weeks": ("open-ended",)}[heading]
    lines = [f"### {heading}", "", SCHEDULE_TEXT[heading], ""]
    lines += ["| Week | Read | Assign | Optional | Lab minutes |"]
    lines += ["| --- | --- | --- | --- | ---: |"]
    for week, group in enumerate(split(book, weeks), start=1):
        all_exercises = [e for chapter in group for e in chapter.exercises]
        assign = [e for e in all_exercises if e.kind == "coding" or e.difficulty in lab]
        extra = [e for e in all_exercises if e not in assign and e.difficulty in optional]
        read = ", ".join(chapter.link for chapter in group)
        labels = ", ".join(f"`{e.label}`" for e in assign)
        others = ", ".join(f"`{e.label}`" for e in extra) or NO_CHECKER
        total = sum(minutes[e.label] for e in assign)
        lines.append(f"| {week} | {read} | {labels} | {others} | {total} |")
    return lines + [""]


def generated(text: str, root: Path = ROOT) -> str:
    """``text`` (the guide) with its generated section written anew from the notebooks."""
    minutes, titles = known_rows(text)
    book = chapters(root, titles)
    for chapter in book:
        for e in chapter.exercises:
            minutes.setdefault(e.label, MINUTES.get(e.difficulty or "", 30))
    start = text.index(SECTION)
    start = (
        text.rindex("(sec-instructor-exercises)=", 0, start)
        if ("(sec-instructor-exercises)=" in text[:start])
        else start
    )
    lines = [INTRO, *table(book, minutes), "", SCHEDULE_INTRO]
    for heading, weeks in SCHEDULES.items():
        lines += schedule(book, weeks, heading, minutes)
    return text[:start] + "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.instructor_guide", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args(argv)
    text = GUIDE.read_text()
    new = generated(text)
    if args.check:
        if new != text:
            print(f"{GUIDE.relative_to(ROOT)} is stale: run python -m tools.instructor_guide")
            return 1
        return 0
    GUIDE.write_text(new)
    print(f"wrote the exercise table and schedules of {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
