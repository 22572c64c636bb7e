"""The rules of an exercise that a checker enforces besides the values: what an answer must
not call.

A build-it-yourself exercise asks for code the chapter's own layer already has. An answer that
calls that layer returns the right numbers without doing the exercise, so the value check
alone passes it. :func:`forbidden_call` runs the answer once under :func:`sys.setprofile` and
names the first forbidden function it called, directly or through any helper: a name bound by
``from companion import ...`` is the same function, so no route around the rule is missed.

torch offers one kernel under several names: ``F.scaled_dot_product_attention`` is
``torch._C._nn.scaled_dot_product_attention``, ``torch.ops.aten.scaled_dot_product_attention``
reaches the same operator through the dispatcher, and ``torch.ops.aten`` also exposes its
backends (``_scaled_dot_product_attention_math``, ``_scaled_dot_product_flash_attention``,
...). So a forbidden torch function is matched by its name, wherever torch keeps it: every
function of torch whose name holds the forbidden name's words, in order, counts as a call of it.

A checker's own module holds the reference answer (``_multihead``, ``_naive_train``, ...), so an
answer could import and call it. :data:`CHECKER_CODE` forbids that: a function of
``companion.exercises`` counts as called only when the answer calls it, not when a checker's
wrapper or reference calls its own helpers. A checker adds it to its rules unless it hands the
answer code of its own to call (a module passed as an input, say).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

CHECKERS = "companion.exercises"
# The rule that a checker adds to its map: the answer calls none of the checkers' code.
CHECKER_CODE = {
    CHECKERS: (
        "the answer calls the checker's own code (companion.exercises), which holds the "
        "reference: write the function yourself"
    ),
}
# The checkers' plumbing, which holds no reference: a wrapper from here may stand for the answer.
PLUMBING = {f"{CHECKERS}.{name}" for name in ("adapters", "core", "rules", "sizes")}


def _module(frame: FrameType | None) -> str:
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def _in_checkers(frame: FrameType | None) -> bool:
    return _module(frame) == CHECKERS or _module(frame).startswith(f"{CHECKERS}.")


def calls_made(fn: Callable[..., Any], *args: Any) -> set[str]:
    """The functions that ``fn(*args)`` calls, directly or not: ``module.qualname`` of each
    Python function and of each builtin one (``torch._C._nn.scaled_dot_product_attention``),
    and ``torch.ops.<namespace>.<operator>`` of each operator called through ``torch.ops``.
    A function of the checkers counts when the answer calls it, or is it: called from outside
    the checkers or from their plumbing (:data:`PLUMBING`: ``fn`` is called from here, maybe
    through a wrapper of :mod:`companion.exercises.adapters`), but not from a reference of
    theirs, whose own helpers are not the answer's calls. An error that ``fn`` raises is
    ignored here; the checker reports it when it runs ``fn``."""
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and _in_checkers(frame):
            caller = frame.f_back
            if _module(frame) in PLUMBING or (
                _in_checkers(caller) and _module(caller) not in PLUMBING
            ):
                return  # a wrapper that stands for the answer, or a reference's own helper
        if event == "call":
            code = frame.f_code
            qualname = getattr(code, "co_qualname", code.co_name)  # Python 3.11 and later
            module = frame.f_globals.get("__name__", "?")
            seen.add(f"{module}.{qualname}")
            if module == "torch._ops" and code.co_name == "__call__":
                # torch.ops.aten.X(...) and torch.ops.aten.X.default(...): name the operator
                op = getattr(frame.f_locals.get("self"), "_qualified_op_name", None)
                op = op or getattr(frame.f_locals.get("self"), "_name", None)
                if isinstance(op, str):
                    seen.add("torch.ops." + op.replace("::", "."))
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
    (``companion.layers.attention.DotProductAttention``: its methods too), or a function of
    torch (``torch._C._nn.scaled_dot_product_attention``: under any of torch's names for it,
    see :func:`same_torch_function`).
    """
    seen = calls_made(fn, *args)
    for name, hint in forbidden.items():
        if any(
            called == name or called.startswith(f"{name}.") or same_torch_function(called, name)
            for called in seen
        ):
            return hint
    return None


@functools.cache
def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _words(name: str) -> list[str]:
    """The words of a function's own name, the last dotted part: ``_scaled_dot_product_attention``
    gives ``["scaled", "dot", "product", "attention"]``."""
    return [word for word in name.rsplit(".", 1)[-1].split("_") if word]


def same_torch_function(called: str, forbidden: str) -> bool:
    """Whether ``called`` is torch's ``forbidden`` under another name: both are functions of
    torch, and the words of the forbidden function's name appear, in order, in the called
    one's. So ``torch._C._nn.scaled_dot_product_attention`` is also
    ``torch.ops.aten.scaled_dot_product_attention`` and torch's backends of it,
    ``_scaled_dot_product_attention_math`` and ``_scaled_dot_product_flash_attention``.
    A function of the student's own with the same name is not torch's, and stays allowed; a
    forbidden module of torch (``torch.nn.modules.conv``) is matched by its path only."""
    if not (forbidden.startswith("torch.") and called.startswith("torch")):
        return False
    if _is_module(forbidden):
        return False
    wanted, words = _words(forbidden), iter(_words(called))
    return bool(wanted) and all(word in words for word in wanted)
