"""The rule that an answer calls none of the checkers' own code (``rules.CHECKER_CODE``): a
checker module holds the reference answer, so importing it is no way to do an exercise. The
checkers' wrappers, which stand for the answer, do not count as the answer's calls."""

from __future__ import annotations

import torch

from companion.exercises.adapters import on_copies
from companion.exercises.multihead import _merge_heads, _split_heads
from companion.exercises.rules import CHECKER_CODE, calls_made, forbidden_call

HINT = CHECKER_CODE["companion.exercises"]
X = torch.randn(2, 3, 8)


def own_split(X, num_heads):
    return X.unflatten(-1, (num_heads, -1)).transpose(1, 2)


def test_an_answer_of_its_own_passes_the_rule():
    assert forbidden_call(own_split, (X, 2), CHECKER_CODE) is None


def test_a_reference_handed_over_as_the_answer_fails():
    assert forbidden_call(_split_heads, (X, 2), CHECKER_CODE) == HINT


def test_an_answer_that_calls_a_reference_fails():
    def answer(X, num_heads):
        return _split_heads(X, num_heads)

    assert forbidden_call(answer, (X, 2), CHECKER_CODE) == HINT
    assert forbidden_call(lambda H: _merge_heads(H), (own_split(X, 2),), CHECKER_CODE) == HINT


def test_a_reference_through_a_checkers_wrapper_still_fails():
    assert forbidden_call(on_copies(_split_heads), (X, 2), CHECKER_CODE) == HINT


def test_the_checkers_wrappers_are_not_the_answers_calls():
    """on_copies (companion.exercises.adapters) calls the answer: neither it nor what the
    answer calls outside the checkers counts."""
    seen = calls_made(on_copies(own_split), X, 2)
    assert not any(name.startswith("companion.exercises") for name in seen), seen
    assert forbidden_call(on_copies(own_split), (X, 2), CHECKER_CODE) is None


def test_a_references_own_helpers_are_not_recorded():
    """_multihead calls _split_heads itself: only the answer's own call of _multihead is."""
    from companion.exercises.multihead import _multihead, _multihead_inputs

    inputs = _multihead_inputs(torch.Generator().manual_seed(0))
    seen = calls_made(lambda *a: _multihead(*a), *inputs)
    checkers = {name for name in seen if name.startswith("companion.exercises")}
    assert checkers == {"companion.exercises.multihead._multihead"}, checkers


def test_the_rule_joins_a_chapters_rules():
    rules = {"torch.nn.functional.softmax": "softmax is forbidden here"} | CHECKER_CODE

    def answer(X, num_heads):
        return torch.nn.functional.softmax(_split_heads(X, num_heads), dim=-1)

    assert forbidden_call(answer, (X, 2), rules) == "softmax is forbidden here"
