"""The attention-scoring checkers (sec-attention-scoring) pass correct answers, name the typical
mistakes, refuse answers that call the layers they are to build, and fail solutions hard-wired
to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import math
import sys

import pytest
import torch
import torch.nn.functional as F

from companion import DotProductAttention, masked_softmax
from companion.exercises.scoring import check_masked_softmax, check_scaled_dot_product


def masked(
    X,
    valid_lens,
    causal=False,
    axis=-1,
    fill=-1e6,
    per_query=True,
    after=False,
    zero_empty=True,
    diagonal=0,
):
    """A masked softmax written as a student would, with knobs for the usual mistakes:
    ``diagonal=-1`` hides key i from query i too, ``zero_empty=False`` leaves the row of a
    query with no key as the softmax made it."""
    lens = valid_lens
    if lens.dim() == 2 and not per_query:
        lens = lens[:, 0]  # one length per batch row: the per-query lengths are lost
    lens = lens[:, None] if lens.dim() == 1 else lens
    keep = torch.arange(X.shape[-1]) < lens[..., None]  # (batch, queries or 1, keys)
    if causal:
        keep = keep & torch.ones(X.shape[-2:], dtype=torch.bool).tril(diagonal)
    if after:
        return torch.softmax(X, dim=axis) * keep
    if fill is not None:
        X = X.masked_fill(~keep, fill)
    weights = torch.softmax(X, dim=axis)
    return weights * keep.any(dim=-1, keepdim=True) if zero_empty else weights


def d2l_style(X, valid_lens, causal=False):
    """d2l's formulation (flatten, repeat the lengths per query, fill in place with -1e6),
    with the causal mask and the rows of no key set to 0."""
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    lens = valid_lens.reshape(shape[0], shape[1], 1)
    if causal:  # query i sees at most i + 1 keys
        lens = torch.minimum(lens, torch.arange(1, shape[1] + 1).reshape(1, -1, 1))
    X = X.reshape(-1, shape[-1])
    X[torch.arange(shape[-1])[None, :] >= lens.reshape(-1, 1)] = -1e6
    return torch.softmax(X.reshape(shape), dim=-1) * (lens > 0)


def attend(queries, keys, values, valid_lens, scale=None, axis=-1, fill=-1e6):
    scale = math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = queries @ keys.transpose(1, 2) / scale
    return masked(scores, valid_lens, axis=axis, fill=fill) @ values


@pytest.mark.parametrize("answer", [masked, d2l_style], ids=["mask-then-softmax", "d2l"])
def test_masked_softmax_pass(answer, capsys):
    for seed in range(4):  # the four cases: each shape of valid_lens, with and without causal
        assert check_masked_softmax(answer, seed=seed)
        assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda X, v, c: masked(X, v, c, axis=1), "softmax over the wrong axis"),
        (lambda X, v, c: torch.softmax(X, dim=1), "softmax over the wrong axis"),
        (lambda X, v, c: torch.softmax(X, dim=-1), "padding not masked"),
        (lambda X, v, c: masked(X, v, c, fill=0.0), "masked scores were set to 0"),
        (lambda X, v, c: masked(X, v, c, fill=0.0, zero_empty=False), "set to 0"),
        (lambda X, v, c: masked(X, v, c, after=True), "the mask was applied after the softmax"),
        (lambda X, v, c: masked(X, v, c, per_query=False), "valid_lens per query ignored"),
        (lambda X, v, c: masked(X, v, c, zero_empty=False), "has no key to attend to"),
        (lambda X, v, c: masked(X, v, c, fill=-math.inf, zero_empty=False), "NaN for a query"),
        (lambda X, v, c: masked(X, v), "causal=True ignored"),
        (lambda X, v, c: masked(X, v, zero_empty=False), "causal=True ignored"),
        (lambda X, v, c: masked(X, v, c, diagonal=-1), "causal mask off by one"),
        (lambda X, v, c: masked(X, v, c).transpose(1, 2), "shape: expected"),
    ],
)
def test_masked_softmax_hints(wrong, hint, capsys):
    # seed 1 starts the cycle at (batch, queries) lengths without causal, seed 2 at causal
    seed = 2 if "causal" in hint else 1
    assert not check_masked_softmax(wrong, seed=seed)
    assert hint in capsys.readouterr().out


def test_masked_softmax_tests_every_case(capsys):
    def one_d_only(X, valid_lens, causal):
        if valid_lens.dim() == 2:
            raise ValueError("valid_lens must be 1-D")
        return masked(X, valid_lens, causal)

    def transposed_triangle(X, valid_lens, causal):
        keep = masked(torch.zeros_like(X), valid_lens) > 0
        if causal:
            keep = keep & torch.ones(X.shape[-2:], dtype=torch.bool).triu()
        weights = torch.softmax(X.masked_fill(~keep, -1e6), dim=-1)
        return weights * keep.any(dim=-1, keepdim=True)

    for seed in range(4):  # trials cycle through the four cases, from any seed
        assert not check_masked_softmax(one_d_only, seed=seed)
        assert "raised ValueError: valid_lens must be 1-D" in capsys.readouterr().out
        assert not check_masked_softmax(transposed_triangle, seed=seed)
        assert "causal mask transposed" in capsys.readouterr().out


def test_in_place_answer_does_not_confuse_the_hints(capsys):
    def fills_with_zero_in_place(X, valid_lens, causal):
        keep = torch.arange(X.shape[-1]) < valid_lens.reshape(X.shape[0], -1)[..., None]
        X.masked_fill_(~keep, 0.0)  # had the checker passed its own X, the unmasked
        return torch.softmax(X, dim=-1)  # mistake would now match and name the wrong hint

    assert not check_masked_softmax(fills_with_zero_in_place, seed=1)
    assert "masked scores were set to 0" in capsys.readouterr().out


def test_answers_that_call_the_layer_they_build_are_refused(capsys):
    """Right numbers, but the exercises are to build them: companion's masked softmax (by any
    name), DotProductAttention or PyTorch's fused kernel break the rules."""

    def calls_masked_softmax(X, valid_lens, causal):
        return masked_softmax(X, valid_lens, causal=causal)

    def calls_the_layer(queries, keys, values, valid_lens):
        return DotProductAttention(dropout=0.0)(queries, keys, values, valid_lens)

    def calls_torch(queries, keys, values, valid_lens):
        keep = torch.arange(keys.shape[1]) < valid_lens[:, None, None]
        return F.scaled_dot_product_attention(queries, keys, values, attn_mask=keep)

    def uses_masked_softmax(queries, keys, values, valid_lens):  # allowed in this exercise
        scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
        return masked_softmax(scores, valid_lens) @ values

    assert not check_masked_softmax(calls_masked_softmax, seed=0)
    assert "calls companion's attention code" in capsys.readouterr().out
    for answer in (calls_the_layer, calls_torch):
        assert not check_scaled_dot_product(answer, seed=0)
        assert "calls a finished attention layer" in capsys.readouterr().out
    assert check_scaled_dot_product(uses_masked_softmax, seed=0)
    assert capsys.readouterr().out.startswith("pass")
    assert sys.getprofile() is None  # the rule check leaves no profiler behind


def fused_under_another_name(queries, keys, values, valid_lens):
    """torch's fused kernel, called through the dispatcher instead of F."""
    keep = torch.arange(keys.shape[1]) < valid_lens[:, None, None]
    return torch.ops.aten.scaled_dot_product_attention(queries, keys, values, attn_mask=keep)


def fused_overload(queries, keys, values, valid_lens):
    keep = torch.arange(keys.shape[1]) < valid_lens[:, None, None]
    return torch.ops.aten.scaled_dot_product_attention.default(
        queries, keys, values, attn_mask=keep
    )


def fused_math_backend(queries, keys, values, valid_lens):
    """One of the kernels behind it; it takes the mask as numbers to add to the scores."""
    keep = torch.arange(keys.shape[1]) < valid_lens[:, None, None]
    bias = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
    return torch.ops.aten._scaled_dot_product_attention_math(queries, keys, values, attn_mask=bias)[
        0
    ]


@pytest.mark.parametrize("answer", [fused_under_another_name, fused_overload, fused_math_backend])
def test_fused_attention_is_refused_under_any_name(answer, capsys):
    """The numbers are right (the dispatcher runs the same kernel), and the rule still holds."""
    inputs = (torch.randn(2, 3, 5), torch.randn(2, 4, 5), torch.randn(2, 4, 6))
    inputs += (torch.tensor([2, 4]),)
    torch.testing.assert_close(answer(*inputs), attend(*inputs))
    assert not check_scaled_dot_product(answer, seed=0)
    assert "calls a finished attention layer" in capsys.readouterr().out


def softmax_through_fused_attention(X, valid_lens, causal=False):
    """The fused kernel returns its weights when the values are the identity: a masked softmax
    that writes no mask-and-fill of its own. A row that keeps no key comes out NaN, so zero it."""
    keep = torch.arange(X.shape[-1]) < valid_lens.reshape(X.shape[0], -1)[..., None]
    if causal:
        keep = keep & torch.ones(X.shape[-2:], dtype=torch.bool).tril()
    eye = torch.eye(X.shape[-1]).expand(X.shape[0], -1, -1)
    weights = F.scaled_dot_product_attention(X * math.sqrt(X.shape[-1]), eye, eye, attn_mask=keep)
    return torch.nan_to_num(weights) * keep.any(dim=-1, keepdim=True)


def softmax_through_the_dispatcher(X, valid_lens, causal=False):
    keep = torch.arange(X.shape[-1]) < valid_lens.reshape(X.shape[0], -1)[..., None]
    if causal:
        keep = keep & torch.ones(X.shape[-2:], dtype=torch.bool).tril()
    eye = torch.eye(X.shape[-1]).expand(X.shape[0], -1, -1)
    weights = torch.ops.aten.scaled_dot_product_attention(
        X * math.sqrt(X.shape[-1]), eye, eye, attn_mask=keep
    )
    return torch.nan_to_num(weights) * keep.any(dim=-1, keepdim=True)


def torch_masked_softmax(X, valid_lens, causal=False):
    keep = torch.arange(X.shape[-1]) < valid_lens.reshape(X.shape[0], -1)[..., None]
    if causal:
        keep = keep & torch.ones(X.shape[-2:], dtype=torch.bool).tril()
    keep = keep.expand(X.shape)
    return torch.nan_to_num(torch._masked_softmax(X, ~keep, -1, 0)) * keep.any(-1, keepdim=True)


@pytest.mark.parametrize(
    "answer",
    [softmax_through_fused_attention, softmax_through_the_dispatcher, torch_masked_softmax],
)
def test_masked_softmax_refuses_torchs_shortcuts(answer, capsys):
    """Each shortcut gives companion's numbers, so only the rule can turn it down."""
    X, lens = torch.randn(2, 4, 4), torch.tensor([[0, 2, 3, 4], [1, 1, 4, 2]])
    torch.testing.assert_close(answer(X, lens, True), masked_softmax(X, lens, causal=True))
    assert not check_masked_softmax(answer, seed=0)
    assert "torch's own masked softmax or fused attention" in capsys.readouterr().out


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

    def masked_softmax_by_hand(scores, valid_lens, causal):
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

    def record(X, valid_lens, causal):
        seen.append((tuple(X.shape), tuple(valid_lens.shape), causal))
        return masked(X, valid_lens, causal)

    assert check_masked_softmax(record, seed=11) and check_masked_softmax(record, seed=11)
    assert seen[:6] == seen[6:]  # the rule check's run, then five trials, twice
    assert {len(lens) for _, lens, _ in seen} == {1, 2}  # both shapes of valid_lens are tried
    assert {causal for _, _, causal in seen} == {False, True}
