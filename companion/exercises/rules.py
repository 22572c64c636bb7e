"""The rules of an exercise that a checker enforces besides the values: what an answer must
not call.

A build-it-yourself exercise asks for code the chapter's own layer already has. An answer that
calls that layer returns the right numbers without doing the exercise, so the value check
alone passes it. :func:`forbidden_call` runs the answer once under :func:`sys.setprofile` and
names the first forbidden function it called, directly or through any helper: a name bound by
``from companion import ...`` is the same function, so no route around the rule is missed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any


def calls_made(fn: Callable[..., Any], *args: Any) -> set[str]:
    """The functions that ``fn(*args)`` calls, directly or not: ``module.qualname`` of each
    Python function and of each builtin one (``torch._C._nn.scaled_dot_product_attention``).
    An error that ``fn`` raises is ignored here; the checker reports it when it runs ``fn``."""
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            qualname = getattr(code, "co_qualname", code.co_name)  # Python 3.11 and later
            seen.add(f"{frame.f_globals.get('__name__', '?')}.{qualname}")
        elif event == "c_call":
            name = getattr(arg, "__qualname__", getattr(arg, "__name__", "?"))
            seen.add(f"{getattr(arg, '__module__', None) or '?'}.{name}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn(*args)
    except Exception:  # the checker's own run of fn reports the student's error
        pass
    finally:
        sys.setprofile(previous)
    return seen


def forbidden_call(fn: Callable[..., Any], args: tuple, forbidden: Mapping[str, str]) -> str | None:
    """The hint of the first rule ``fn(*args)`` breaks, else ``None``.

    ``forbidden`` maps a name to the hint to print when the answer calls it: a module
    (``companion.layers.pooling``: any function of it), a function
    (``companion.layers.attention.DotProductAttention``: its methods too), or a builtin
    (``torch._C._nn.scaled_dot_product_attention``).
    """
    seen = calls_made(fn, *args)
    for name, hint in forbidden.items():
        if any(called == name or called.startswith(f"{name}.") for called in seen):
            return hint
    return None
