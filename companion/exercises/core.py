"""The checker behind every coding exercise of the book.

A checker runs the student's function on fresh random inputs and compares it with the
reference. It prints ``pass``, or a hint naming the first thing that differs: a shape, a NaN,
a known mistake (wrong softmax axis, a missing scale), or the first differing position.
Each checker returns ``True`` on a pass, so an instructor can grade with it.

**Fresh inputs on every call.** Every checker takes ``seed: int | None = None``. With
``None``, what a student gets, :func:`first_seed` draws the seed from the operating system, so
each call draws other inputs, and other shapes where ``make_inputs`` draws its sizes
(:mod:`companion.exercises.sizes`), never the sizes of a chapter's own variables. A solution
that reads the notebook's variables instead of its arguments therefore fails. An integer seed
repeats one run exactly, for tests. Every generator comes from :func:`seeded_generator`, so
the global random state is left alone and a notebook's later cells draw what they drew before.

**Several outputs.** A reference may return a tuple of tensors (a decoder step returns its
logits and its new state); the student's function must then return a tuple of the same length,
and a hint names the output that differs (``output_names``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import Any

import torch

Inputs = tuple
Output = torch.Tensor | tuple[torch.Tensor, ...]  # one output, or several (a decoder step)
Mistake = tuple[Callable[..., Output], str]  # (what the mistake computes, its hint)
ShapeHint = tuple[Callable[..., tuple[int, ...]], str]  # (a wrong shape for these inputs, hint)

EXTRA_TRIALS = 5  # fresh inputs that decide between mistakes which agree on one input


def first_seed(seed: int | None) -> int:
    """The seed of a checker's first trial: ``seed``, or a fresh one from the operating system
    when ``seed`` is ``None`` (what a student gets: other inputs on every call)."""
    if seed is None:
        return secrets.randbits(62)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or None; got {seed!r}")
    return seed


def seeded_generator(seed: int) -> torch.Generator:
    """A generator of its own, seeded with ``seed``: the global random state (the notebook's
    seeds) is left untouched."""
    return torch.Generator().manual_seed(seed)


def check(
    student_fn: Callable[..., Output],
    reference_fn: Callable[..., Output],
    make_inputs: Callable[[torch.Generator], Inputs],
    mistakes: Sequence[Mistake] = (),
    trials: int = 5,
    atol: float = 1e-5,
    *,
    seed: int | None = None,
    output_names: Sequence[str] = (),
    shape_hints: Sequence[ShapeHint] = (),
) -> bool:
    """Run ``student_fn`` and ``reference_fn`` on ``trials`` random inputs; print the verdict.

    ``make_inputs(generator)`` draws one set of inputs; trial ``t`` gets a generator seeded with
    ``first_seed(seed) + t``. Each mistake is ``(function of the inputs, hint)``: when the
    student's output equals what the function computes, the hint is printed. Each shape hint is
    ``(function of the inputs giving a wrong shape, hint)``: a wrong shape that says which axes
    were mixed up gets its own hint instead of "shape: expected ...".
    """
    name = getattr(student_fn, "__name__", "your function")
    start = first_seed(seed)
    for trial in range(trials):
        inputs = make_inputs(seeded_generator(start + trial))
        expected = reference_fn(*inputs)
        got, verdict = run_student(student_fn, *inputs)
        if verdict:
            print(verdict)
            return False
        hint = _shape_hint(got, inputs, shape_hints) or _first_difference(
            got, expected, atol, output_names
        )
        if hint is None:
            continue
        suspects = _matching(got, inputs, mistakes, atol)
        more_inputs = (
            make_inputs(seeded_generator(start + trials + extra)) for extra in range(EXTRA_TRIALS)
        )
        hint = _narrow(suspects, student_fn, more_inputs, atol) or hint
        print(f"hint: {hint}")
        return False
    print(f"pass: {name} matches the reference on {trials} random inputs")
    return True


def run_student(student_fn: Callable, *args) -> tuple[Any, str | None]:
    """``(student_fn(*args), None)``; or ``(None, verdict)`` when the function is not written
    yet or raises: the line a checker prints instead of a traceback."""
    name = getattr(student_fn, "__name__", "your function")
    try:
        result = student_fn(*args)
    except NotImplementedError:
        return None, f"not implemented yet: {name} raises NotImplementedError"
    except Exception as error:  # the student's bug, reported instead of a traceback
        return None, f"error: {name} raised {type(error).__name__}: {error}"
    if result is None:
        return None, f"not implemented yet: {name} returns None (is a `return` missing?)"
    return result, None


def _shape_hint(got, inputs: Inputs, shape_hints: Sequence[ShapeHint]) -> str | None:
    """The hint of the first known wrong shape that ``got`` has, else ``None``."""
    if not isinstance(got, torch.Tensor):
        return None
    for wrong_shape, hint in shape_hints:
        if tuple(got.shape) == tuple(wrong_shape(*inputs)):
            return hint
    return None


def _matching(got, inputs: Inputs, mistakes: Sequence[Mistake], atol: float) -> list[Mistake]:
    """The mistakes whose output on ``inputs`` equals the student's output ``got``."""
    return [(mistake, hint) for mistake, hint in mistakes if _same(got, mistake(*inputs), atol)]


def _narrow(suspects: list[Mistake], student_fn, more_inputs, atol: float) -> str | None:
    """The hint of the mistake that explains the student's output.

    Several mistakes can agree on one input: when a row's most likely token already holds
    mass ``p``, every nucleus mistake keeps that one token. The student's function then runs on
    fresh inputs, and only the mistakes that still equal it stay suspects.
    """
    for inputs in more_inputs:
        if len(suspects) <= 1:
            break
        try:
            got = student_fn(*inputs)
        except Exception:  # reported as a difference already; keep the suspects we have
            break
        suspects = _matching(got, inputs, suspects, atol) or suspects
    return suspects[0][1] if suspects else None


def _first_difference(got, expected, atol: float, names=()) -> str | None:
    """``None`` if ``got`` matches ``expected`` (a tensor, or a tuple of tensors), else what
    differs first."""
    if not isinstance(expected, tuple):
        return _tensor_difference(got, expected, atol)
    if not isinstance(got, tuple | list) or len(got) != len(expected):
        found = f"{len(got)} outputs" if isinstance(got, tuple | list) else type(got).__name__
        return f"expected a tuple of {len(expected)} outputs, got {found}"
    names = list(names) or [f"output {i}" for i in range(len(expected))]
    for label, got_one, expected_one in zip(names, got, expected):
        hint = _tensor_difference(got_one, expected_one, atol)
        if hint:
            return f"{label}: {hint}"
    return None


def _tensor_difference(got, expected: torch.Tensor, atol: float) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        return f"shape: expected {tuple(expected.shape)}, got {tuple(got.shape)}"
    got = got.detach().to(expected.dtype)
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        position = tuple(torch.nonzero(torch.isnan(got))[0].tolist())
        return f"NaN at position {position}, where the reference has a number"
    if torch.allclose(got, expected, atol=atol):
        return None
    position = tuple(torch.nonzero(~torch.isclose(got, expected, atol=atol))[0].tolist())
    return (
        f"values differ first at position {position}: expected "
        f"{expected[position].item():.4f}, got {got[position].item():.4f}"
    )


def _same(got, wrong, atol: float) -> bool:
    """Whether ``got`` is what a mistake computes, ``wrong``: a NaN where the mistake has a NaN
    counts as equal (a mask that hides every key of a query gives one)."""
    if isinstance(wrong, tuple):
        return (
            isinstance(got, tuple | list)
            and len(got) == len(wrong)
            and all(_same(g, w, atol) for g, w in zip(got, wrong))
        )
    return (
        isinstance(got, torch.Tensor)
        and got.shape == wrong.shape
        and torch.allclose(got.detach().to(wrong.dtype), wrong, atol=atol, equal_nan=True)
    )


def named_like(fn: Callable, like: Callable) -> Callable:
    fn.__name__ = getattr(like, "__name__", "your function")
    return fn
