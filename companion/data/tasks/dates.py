"""Dates written in many ways, to be normalised to ISO 8601: a character-level task
(sec-bahdanau)."""

from __future__ import annotations

import datetime
import random

from companion._validate import check_integer, check_type
from companion.data.tasks.splits import Pair, Splits, make_splits

# Six months a line, as on a calendar (kept so by fmt: skip).
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_YEAR, LAST_YEAR = 1950, 2049  # two-digit years: 50-99 mean 1950-1999, 00-49 2000-2049


def _ordinal(day: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, 22nd, 23rd, ..., 31st."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# Fields: d/dd day (dd zero-padded), m/mm month, y year, yy its last two digits, month/mon
# month name/abbreviation, weekday/wkd weekday name/abbreviation, nth the day as an ordinal.
DATE_STYLES = (
    "{d} {month} {y}",  # 21 November 2026
    "{d} {mon} {y}",  # 21 Nov 2026
    "{month} {d}, {y}",  # November 21, 2026
    "{mon} {d}, {y}",  # Nov 21, 2026
    "{month} {nth}, {y}",  # November 21st, 2026
    "{nth} of {month} {y}",  # 21st of November 2026
    "{weekday}, {month} {d}, {y}",  # Saturday, November 21, 2026
    "{wkd}, {d} {mon} {y}",  # Sat, 21 Nov 2026
    "{weekday} {d} {month} {y}",  # Saturday 21 November 2026
    "{d}-{mon}-{yy}",  # 21-Nov-26
    "{dd}.{mm}.{yy}",  # 21.11.26
    "{dd}.{mm}.{y}",  # 21.11.2026
    "{d}.{m}.{y}",  # 21.11.2026, 5.3.2026
    "{mm}/{dd}/{y}",  # 11/21/2026
    "{m}/{d}/{y}",  # 11/21/2026, 3/5/2026
    "{y}-{mm}-{dd}",  # 2026-11-21
)
NUM_DATE_STYLES = len(DATE_STYLES)


def format_date(date: datetime.date, style: int, case: str = "title") -> str:
    """Write ``date`` (a ``datetime.date``) in ``DATE_STYLES[style]``, ``style`` an integer
    in [0, 15]; ``case`` ('title', 'lower', 'upper') is for names.

    Numeric styles follow fixed conventions, so no source is ambiguous: slashes are US
    month/day/year, dots are day.month.year, dashes with a leading 4-digit year are ISO.
    A two-digit year ``yy`` means 19yy for yy >= 50 and 20yy for yy < 50.
    """
    check_type("date", date, datetime.date, "a datetime.date such as datetime.date(2026, 11, 21)")
    style = check_integer("style", style, minimum=0, maximum=NUM_DATE_STYLES - 1)
    if case not in ("title", "lower", "upper"):
        raise ValueError(f"case must be 'title', 'lower' or 'upper'; got {case!r}")
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    if case != "title":
        month, weekday = getattr(month, case)(), getattr(weekday, case)()
    return DATE_STYLES[style].format(
        d=date.day,
        dd=f"{date.day:02d}",
        m=date.month,
        mm=f"{date.month:02d}",
        y=date.year,
        yy=f"{date.year % 100:02d}",
        month=month,
        mon=month[:3],
        weekday=weekday,
        wkd=weekday[:3],
        nth=_ordinal(date.day),
    )


def date_task(
    num_examples: int, seed: int, val_fraction: float = 0.1, test_fraction: float = 0.1
) -> Splits:
    """Dates in 16 styles and 3 letter cases (at most 29 characters) to ``yyyy-mm-dd``.

    Tokens are characters, source and target. Dates are uniform over 1950-2049 and weekdays
    are those of the date. Splits differ in their source strings; the same date may appear in
    two splits written differently. The Bahdanau chapter trains a GRU with attention on it.
    """
    first_day = datetime.date(FIRST_YEAR, 1, 1).toordinal()
    last_day = datetime.date(LAST_YEAR, 12, 31).toordinal()

    def sample(rng: random.Random) -> Pair:
        date = datetime.date.fromordinal(rng.randint(first_day, last_day))
        style = rng.randrange(NUM_DATE_STYLES)
        case = rng.choice(("title", "lower", "upper"))
        return list(format_date(date, style, case)), list(date.isoformat())

    return make_splits(sample, num_examples, seed, val_fraction, test_fraction)
