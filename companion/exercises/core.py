"""The checker behind every coding exercise of the book.

A checker runs the student's function on fresh random inputs and compares it with the
reference. It prints ``pass``, or a hint naming the first thing that differs: a shape, a NaN,
a known mistake (wrong softmax axis, a missing scale), or the first differing position.
Each checker returns ``True`` on a pass, so an instructor can grade with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

Inputs = tuple
Mistake = tuple[Callable[..., torch.Tensor], str]  # (what the mistake computes, its hint)


def check(
    student_fn: Callable[..., torch.Tensor],
    reference_fn: Callable[..., torch.Tensor],
    make_inputs: Callable[[torch.Generator], Inputs],
    mistakes: Sequence[Mistake] = (),
    trials: int = 5,
    atol: float = 1e-5,
) -> bool:
    """Run ``student_fn`` and ``reference_fn`` on ``trials`` random inputs; print the verdict."""
    name = getattr(student_fn, "__name__", "your function")
    for trial in range(trials):
        inputs = make_inputs(torch.Generator().manual_seed(trial))
        expected = reference_fn(*inputs)
        try:
            got = student_fn(*inputs)
        except NotImplementedError:
            print(f"not implemented yet: {name} raises NotImplementedError")
            return False
        except Exception as error:  # the student's bug, reported instead of a traceback
            print(f"error: {name} raised {type(error).__name__}: {error}")
            return False
        hint = _first_difference(got, expected, inputs, mistakes, atol)
        if hint:
            print(f"hint: {hint}")
            return False
    print(f"pass: {name} matches the reference on {trials} random inputs")
    return True


def _first_difference(got, expected: torch.Tensor, inputs: Inputs, mistakes, atol: float):
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
    for mistake, hint in mistakes:
        wrong = mistake(*inputs)
        if wrong.shape == got.shape and torch.allclose(got, wrong, atol=atol):
            return hint
    position = tuple(torch.nonzero(~torch.isclose(got, expected, atol=atol))[0].tolist())
    return (
        f"values differ first at position {position}: expected "
        f"{expected[position].item():.4f}, got {got[position].item():.4f}"
    )


def named_like(fn: Callable, like: Callable) -> Callable:
    fn.__name__ = getattr(like, "__name__", "your function")
    return fn
