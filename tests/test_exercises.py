"""The machinery every checker shares (companion/exercises/core.py): one line for an unfinished
or crashing answer, mistakes told apart on extra inputs, shape hints, and seeds. With
``seed=None`` a checker draws other inputs on every call; with an integer it repeats them."""

from __future__ import annotations

import pytest
import torch

import companion.exercises
from companion.exercises import check_gaussian_weights, check_laplace_pooling
from companion.exercises.core import check

CHECKERS = [name for name in companion.exercises.__all__ if name != "check"]


# ----------------------------------------------------------------------------- the student's
# function is not written yet, or crashes: each checker goes through core.run_student, and
# tools/tests/test_student.py runs every checker on a stub. One test per verdict here.


def test_a_stub_that_raises_is_not_implemented_yet(capsys):
    def stub(queries, keys, values, bandwidth):
        raise NotImplementedError()

    assert not check_laplace_pooling(stub, seed=0)
    assert capsys.readouterr().out == "not implemented yet: stub raises NotImplementedError\n"


def test_a_function_without_return_is_not_implemented_yet(capsys):
    def laplace_pooling(queries, keys, values, bandwidth):
        queries - keys[:, None]  # noqa: B018 (the student forgot the return)

    assert not check_laplace_pooling(laplace_pooling, seed=0)
    expected = "not implemented yet: laplace_pooling returns None (is a `return` missing?)\n"
    assert capsys.readouterr().out == expected


def test_a_crash_is_reported_in_one_line(capsys):
    # queries and keys never have the same length, so q @ k always raises
    assert not check_laplace_pooling(lambda q, k, v, b: q @ k, seed=0)
    out = capsys.readouterr().out
    assert out.startswith("error: <lambda> raised RuntimeError: ") and out.count("\n") == 1


# ----------------------------------------------------------------------------- hints


def test_mistakes_that_agree_on_one_input_are_told_apart_on_fresh_ones(capsys):
    """On all-positive inputs, clamping at 0 and taking the absolute value agree. The first
    trial draws such an input, the fresh ones do not: the hint names the mistake made."""

    def make_inputs(generator):
        values = torch.rand(6, generator=generator) + 0.1
        if make_inputs.calls:
            values[::2] *= -1  # mixed signs from the second draw on
        make_inputs.calls += 1
        return (values,)

    make_inputs.calls = 0
    mistakes = [
        (lambda x: x.clamp(min=0), "clamped at 0"),
        (lambda x: x.abs(), "took the absolute value"),
    ]
    assert not check(torch.abs, lambda x: 2 * x, make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: took the absolute value\n"
    make_inputs.calls = 0
    assert not check(lambda x: x.clamp(min=0), lambda x: 2 * x, make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: clamped at 0\n"


def test_a_known_wrong_shape_gets_its_own_hint(capsys):
    def make_inputs(generator):
        return (torch.randn(3, 5, generator=generator),)

    shape_hints = [(lambda x: tuple(reversed(x.shape)), "transposed")]
    assert not check(lambda x: x.T, lambda x: x, make_inputs, seed=0, shape_hints=shape_hints)
    assert capsys.readouterr().out == "hint: transposed\n"
    assert not check(lambda x: x[:1], lambda x: x, make_inputs, seed=0, shape_hints=shape_hints)
    assert capsys.readouterr().out == "hint: shape: expected (3, 5), got (1, 5)\n"


def test_a_mistake_is_named_even_when_its_shape_is_wrong(capsys):
    """Which hint is printed depends on what the student returned, not on the wording of the
    generic message (core.check once branched on it)."""

    def make_inputs(generator):
        return (torch.randn(4, generator=generator),)

    mistakes = [(lambda x: x[:-1], "the last one is dropped")]
    assert not check(lambda x: x[:-1], lambda x: x, make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: the last one is dropped\n"


# ----------------------------------------------------------------------------- seeds


def snapshot(value):
    """A comparable copy of what a checker handed the student's function."""
    if isinstance(value, torch.Tensor):
        return (str(value.dtype), tuple(value.shape), tuple(value.flatten().tolist()))
    if isinstance(value, torch.nn.Module):
        return tuple((name, snapshot(t)) for name, t in value.state_dict().items())
    if isinstance(value, torch.Generator):
        return snapshot(value.get_state())
    if isinstance(value, list | tuple):
        return tuple(snapshot(v) for v in value)
    if isinstance(value, dict):  # e.g. check_decoder_block's weights, by name
        return tuple((key, snapshot(v)) for key, v in value.items())
    return value


def inputs_seen(checker, seed):
    """Every set of arguments the checker passes to a stub before it gives up on it."""
    seen = []

    def stub(*args):
        seen.append(snapshot(args))
        raise NotImplementedError

    assert not getattr(companion.exercises, checker)(stub, seed=seed)
    return seen


@pytest.mark.parametrize("checker", CHECKERS)
def test_a_seed_repeats_the_inputs_and_other_seeds_draw_others(checker, capsys):
    first = inputs_seen(checker, seed=3)
    assert first and inputs_seen(checker, seed=3) == first
    others = [inputs_seen(checker, seed) for seed in range(10)]
    assert any(seen != first for seen in others)


def test_a_seed_repeats_every_trial(capsys):
    shapes = []

    def record(queries, keys, bandwidth):
        shapes.append((len(queries), len(keys), round(float(queries[0]), 6)))
        return torch.softmax(-(((queries[:, None] - keys) / bandwidth) ** 2) / 2, dim=-1)

    assert check_gaussian_weights(record, seed=7) and check_gaussian_weights(record, seed=7)
    # each call: the rule check's run on the first trial's inputs, then the five trials
    assert len(shapes) == 12 and shapes[:6] == shapes[6:] and shapes[0] == shapes[1]


def test_without_a_seed_every_call_draws_other_inputs(capsys):
    """What a student gets. Robust without a seed: the two calls see the same first inputs only
    if the operating system hands out the same 62-bit seed twice (odds 2**-62)."""
    firsts = [inputs_seen("check_gaussian_weights", seed=None)[0] for _ in range(2)]
    assert firsts[0] != firsts[1]


def test_a_seed_that_is_not_an_integer_is_refused():
    with pytest.raises(TypeError, match="seed must be an int or None; got '3'"):
        check_gaussian_weights(lambda q, k, b: None, seed="3")


def test_a_mistake_that_gives_nan_is_still_named(capsys):
    """A mask that hides every key of a query gives NaN; the mistake that does so is named."""

    def make_inputs(generator):
        return (torch.randn(3, 4, generator=generator),)

    def hide_row_0(x):
        return x.masked_fill(torch.arange(3)[:, None] == 0, float("-inf")).softmax(dim=-1)

    mistakes = [(hide_row_0, "row 0 is hidden")]
    assert not check(hide_row_0, lambda x: x.softmax(dim=-1), make_inputs, mistakes, seed=0)
    assert capsys.readouterr().out == "hint: row 0 is hidden\n"
