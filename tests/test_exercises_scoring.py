"""The attention-scoring checkers (sec-attention-scoring) pass correct answers, name the typical
mistakes, and fail solutions hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import math

import pytest
import torch

from companion.exercises.scoring import check_masked_softmax, check_scaled_dot_product


def masked(X, valid_lens, axis=-1, fill=-1e6, per_query=True, after=False):
    """A masked softmax written as a student would, with knobs for the usual mistakes."""
    lens = valid_lens
    if lens.dim() == 2 and not per_query:
        lens = lens[:, 0]  # one length per batch row: the per-query lengths are lost
    lens = lens[:, None] if lens.dim() == 1 else lens
    keep = torch.arange(X.shape[-1]) < lens[..., None]  # (batch, queries or 1, keys)
    if after:
        return torch.softmax(X, dim=axis) * keep
    if fill is not None:
        X = X.masked_fill(~keep, fill)
    return torch.softmax(X, dim=axis)


def d2l_style(X, valid_lens):
    """d2l's formulation: flatten, repeat the lengths per query, fill in place with -1e6."""
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    X[torch.arange(shape[-1])[None, :] >= valid_lens[:, None]] = -1e6
    return torch.softmax(X.reshape(shape), dim=-1)


def attend(queries, keys, values, valid_lens, scale=None, axis=-1, fill=-1e6):
    scale = math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = queries @ keys.transpose(1, 2) / scale
    return masked(scores, valid_lens, axis=axis, fill=fill) @ values


@pytest.mark.parametrize("answer", [masked, d2l_style], ids=["mask-then-softmax", "d2l"])
def test_masked_softmax_pass(answer, capsys):
    assert check_masked_softmax(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda X, v: masked(X, v, axis=1), "softmax over the wrong axis"),
        (lambda X, v: torch.softmax(X, dim=1), "softmax over the wrong axis"),
        (lambda X, v: torch.softmax(X, dim=-1), "padding not masked"),
        (lambda X, v: masked(X, v, fill=0.0), "masked scores were set to 0"),
        (lambda X, v: masked(X, v, after=True), "the mask was applied after the softmax"),
        (lambda X, v: masked(X, v, per_query=False), "valid_lens per query ignored"),
        (lambda X, v: masked(X, v).transpose(1, 2), "shape: expected"),
    ],
)
def test_masked_softmax_hints(wrong, hint, capsys):
    assert not check_masked_softmax(wrong, seed=0)
    assert hint in capsys.readouterr().out


def test_masked_softmax_tests_both_kinds_of_valid_lens(capsys):
    def one_d_only(X, valid_lens):
        if valid_lens.dim() == 2:
            raise ValueError("valid_lens must be 1-D")
        return masked(X, valid_lens)

    for seed in range(2):  # trials alternate the shape of valid_lens, from either seed
        assert not check_masked_softmax(one_d_only, seed=seed)
        out = capsys.readouterr().out
        assert "error: one_d_only raised ValueError: valid_lens must be 1-D" in out


def test_in_place_answer_does_not_confuse_the_hints(capsys):
    def fills_with_zero_in_place(X, valid_lens):
        keep = torch.arange(X.shape[-1]) < valid_lens.reshape(X.shape[0], -1)[..., None]
        X.masked_fill_(~keep, 0.0)  # had the checker passed its own X, the unmasked
        return torch.softmax(X, dim=-1)  # mistake would now match and name the wrong hint

    assert not check_masked_softmax(fills_with_zero_in_place, seed=0)
    assert "masked scores were set to 0" in capsys.readouterr().out


def test_scaled_dot_product_pass(capsys):
    assert check_scaled_dot_product(attend, seed=0)
    assert capsys.readouterr().out.startswith("pass: attend matches the reference")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda q, k, v, lens: attend(q, k, v, lens, scale=1.0), "missing scale"),
        (
            lambda q, k, v, lens: attend(q, k, v, lens, scale=q.shape[-1]),
            "divided by d instead of sqrt(d)",
        ),
        (
            lambda q, k, v, lens: attend(q, k, v, lens, scale=math.sqrt(v.shape[-1])),
            "the scale uses the wrong size",
        ),
        (lambda q, k, v, lens: attend(q, k, v, lens, axis=1), "softmax over the wrong axis"),
        (lambda q, k, v, lens: attend(q, k, v, lens, fill=None), "mask missing"),
        (lambda q, k, v, lens: attend(q, k, v, lens, fill=0.0), "masked scores were set to 0"),
        (lambda q, k, v, lens: attend(q, k, v, lens).transpose(1, 2), "shape: expected"),
    ],
)
def test_scaled_dot_product_hints(wrong, hint, capsys):
    assert not check_scaled_dot_product(wrong, seed=0)
    assert hint in capsys.readouterr().out


def test_the_sizes_vary_all_differ_and_are_never_the_chapters(capsys):
    seen = set()

    def record(queries, keys, values, valid_lens):
        (batch, n_q, d), n_k, v = queries.shape, keys.shape[1], values.shape[-1]
        seen.add((batch, n_q, n_k, d, v))
        return attend(queries, keys, values, valid_lens)

    for seed in range(4):
        assert check_scaled_dot_product(record, seed=seed)
    assert len(seen) > 4
    for sizes in seen:
        assert len(set(sizes)) == 5, sizes
        assert sizes[0] not in (1, 2, 4) and sizes[3] not in (2, 4, 8, 20, 64, 256), sizes


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The chapter's exercise variables: Q (2, 5, 8), K (2, 7, 8), V (2, 7, 3), and its X."""
    generator = torch.Generator().manual_seed(2)
    Q, K = torch.randn(2, 5, 8, generator=generator), torch.randn(2, 7, 8, generator=generator)
    V = torch.randn(2, 7, 3, generator=generator)
    X = torch.rand(2, 2, 4)

    def scaled_dot_product(queries, keys, values, valid_lens):
        scores = queries @ keys.transpose(1, 2) / math.sqrt(Q.shape[-1])  # the chapter's d
        return masked(scores, valid_lens) @ values

    def attend_to_the_chapters_keys(queries, keys, values, valid_lens):
        return attend(queries, K, V, valid_lens)

    def masked_softmax_by_hand(scores, valid_lens):
        keep = torch.arange(X.shape[-1]) < valid_lens.reshape(len(valid_lens), -1)[..., None]
        return torch.softmax(scores.masked_fill(~keep, -1e6), dim=-1)  # the chapter's X keys

    for seed in range(3):
        assert not check_scaled_dot_product(scaled_dot_product, seed=seed)
        assert "hint:" in capsys.readouterr().out
        assert not check_scaled_dot_product(attend_to_the_chapters_keys, seed=seed)
        assert "error: attend_to_the_chapters_keys raised" in capsys.readouterr().out
        assert not check_masked_softmax(masked_softmax_by_hand, seed=seed)
        assert "error: masked_softmax_by_hand raised RuntimeError" in capsys.readouterr().out


def test_a_seed_repeats_a_run(capsys):
    seen = []

    def record(X, valid_lens):
        seen.append((tuple(X.shape), tuple(valid_lens.shape)))
        return masked(X, valid_lens)

    assert check_masked_softmax(record, seed=11) and check_masked_softmax(record, seed=11)
    assert seen[:5] == seen[5:]
    assert {len(lens) for _, lens in seen} == {1, 2}  # both shapes of valid_lens are tried
