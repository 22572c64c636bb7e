"""The multi-head attention checkers (sec-multihead-attention) pass correct answers and name
typical mistakes. Every call is seeded."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion import DotProductAttention, MultiHeadAttention
from companion.exercises.multihead import (
    _multihead,
    _multihead_inputs,
    check_head_ablation,
    check_merge_heads,
    check_multihead_attention,
    check_split_heads,
)


def split_heads(X, num_heads):
    batch, n, d = X.shape
    return X.reshape(batch, n, num_heads, d // num_heads).transpose(1, 2)


def merge_heads(H):
    batch, h, n, p = H.shape
    return H.transpose(1, 2).reshape(batch, n, h * p)


def test_split_heads_pass(capsys):
    assert check_split_heads(split_heads, seed=0)
    assert capsys.readouterr().out.startswith("pass: split_heads matches the reference")


def test_split_heads_other_correct_spellings_pass(capsys):
    def unflatten(X, num_heads):
        return X.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)

    def by_loop(X, num_heads):
        return torch.stack(X.chunk(num_heads, dim=-1), dim=1)  # one block of features per head

    for fn in (unflatten, by_loop):
        assert check_split_heads(fn, seed=0)
        assert capsys.readouterr().out.startswith("pass")


def test_split_heads_hints(capsys):
    cases = [
        (lambda X, h: X.reshape(X.shape[0], h, X.shape[1], -1), "reshaped without transposing"),
        (
            lambda X, h: X.reshape(X.shape[0], X.shape[1], -1, h).permute(0, 3, 1, 2),
            "the features are interleaved: head i owns the contiguous block",
        ),
        (
            lambda X, h: X.reshape(X.shape[0], X.shape[1], h, -1),
            "heads and positions swapped",
        ),
        (
            lambda X, h: split_heads(X, h).reshape(-1, X.shape[1], X.shape[2] // h),
            "that is d2l's layout (batch*heads, n, d/heads)",
        ),
        (lambda X, h: split_heads(X, h)[..., :-1], "shape: expected"),
        (lambda X, h: split_heads(X, h) + 0.1, "values differ first at position (0, 0, 0, 0)"),
        (lambda X, h: split_heads(X, h).tolist(), "expected a torch.Tensor, got list"),
    ]
    for wrong, hint in cases:
        assert not check_split_heads(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_merge_heads_pass(capsys):
    assert check_merge_heads(merge_heads, seed=0)
    assert capsys.readouterr().out.startswith("pass: merge_heads matches the reference")

    def by_cat(H):
        return torch.cat(H.unbind(dim=1), dim=-1)  # heads side by side

    assert check_merge_heads(by_cat, seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_merge_heads_hints(capsys):
    cases = [
        (
            lambda H: H.reshape(H.shape[0], H.shape[2], -1),
            "reshaped without transposing back",
        ),
        (
            lambda H: H.permute(0, 2, 3, 1).reshape(H.shape[0], H.shape[2], -1),
            "the features are interleaved: the output of head i",
        ),
        (lambda H: H.transpose(1, 2), "the heads are not concatenated yet"),
        (
            lambda H: H.reshape(H.shape[0], H.shape[1], -1),
            "each head's positions were flattened together",
        ),
        (lambda H: H, "shape: expected"),
        (lambda H: merge_heads(H) * 2, "values differ first at position (0, 0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_merge_heads(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_reference_split_and_merge_are_what_companion_runs():
    """Split, attend per head, merge: the same numbers as companion's MultiHeadAttention."""
    torch.manual_seed(0)
    layer = MultiHeadAttention(num_hiddens=12, num_heads=3, dropout=0.0)
    X = torch.randn(2, 5, 12)
    expected = layer(X, X, X)
    Q, K, V = (split_heads(W(X), 3) for W in (layer.W_q, layer.W_k, layer.W_v))
    weights = torch.softmax(Q @ K.transpose(-2, -1) / 2.0, dim=-1)  # sqrt(p) = sqrt(4)
    torch.testing.assert_close(layer.W_o(merge_heads(weights @ V)), expected)
    torch.testing.assert_close(merge_heads(split_heads(X, 3)), X)


# ----------------------------------------------------------------------------- the chapter's
# variables: a walkthrough passed the old checkers with code that ignores its arguments.

batch, steps, d, h = 2, 5, 12, 3  # the chapter's split
p = d // h


def test_a_split_hard_wired_to_the_chapter_fails(capsys):
    def split_heads(X, num_heads):
        return X.reshape(batch, steps, h, p).transpose(1, 2)

    for seed in range(3):  # other shapes for every seed: it fails every time
        assert not check_split_heads(split_heads, seed=seed)
        assert "pass" not in capsys.readouterr().out


def test_a_merge_hard_wired_to_the_chapter_fails(capsys):
    def merge_heads(H):
        return H.transpose(1, 2).reshape(batch, steps, d)

    for seed in range(3):
        assert not check_merge_heads(merge_heads, seed=seed)
        assert "pass" not in capsys.readouterr().out


def test_shapes_vary_and_are_never_the_chapters():
    calls = []

    def spy(X, num_heads):
        calls[-1].append((*X.shape, num_heads))
        return split_heads(X, num_heads)

    for seed in range(0, 20, 5):  # seeds 5 apart: no two calls share a trial
        calls.append([])
        assert check_split_heads(spy, seed=seed)
    trials = [tuple(shapes) for shapes in calls]  # the 5 trials of each call
    assert len(set(trials)) == len(trials)  # no call repeats another's inputs
    for batch_size, num_steps, width, num_heads in sum(calls, []):
        assert batch_size != batch and num_steps != steps and num_heads != h and width != d


# ----------------------------------------------------------------------------- ablation


def ablate_head(W_o, head, num_heads):
    p = W_o.shape[1] // num_heads
    W_o = W_o.clone()
    W_o[:, head * p : (head + 1) * p] = 0
    return W_o


def test_head_ablation_pass(capsys):
    assert check_head_ablation(ablate_head, seed=0)
    assert capsys.readouterr().out.startswith("pass: ablate_head matches the reference")

    def in_place(W_o, head, num_heads):  # changing the argument is allowed
        W_o.unflatten(1, (num_heads, -1))[:, head] = 0
        return W_o

    assert check_head_ablation(in_place, seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_head_ablation_removes_the_head_from_the_layer():
    """The reference is right: the layer's output no longer depends on that head's values."""
    torch.manual_seed(0)
    layer = MultiHeadAttention(num_hiddens=12, num_heads=3, dropout=0.0)
    X = torch.randn(2, 5, 12)
    _ = layer(X, X, X)
    with torch.no_grad():
        layer.W_o.weight.copy_(ablate_head(layer.W_o.weight, 1, 3))
        changed = X.clone()
        before = layer(X, X, X)
        layer.W_v.weight[4:8] += 1.0  # head 1's values only
        torch.testing.assert_close(layer(changed, changed, changed), before)
        layer.W_v.weight[0:4] += 1.0  # head 0's values do matter
        assert not torch.allclose(layer(changed, changed, changed), before)


def test_head_ablation_hints(capsys):
    def rows(W_o, head, num_heads):
        p = W_o.shape[0] // num_heads
        W_o = W_o.clone()
        W_o[head * p : (head + 1) * p] = 0
        return W_o

    def interleaved(W_o, head, num_heads):
        W_o = W_o.clone()
        W_o[:, head::num_heads] = 0
        return W_o

    def kept(W_o, head, num_heads):
        return W_o - ablate_head(W_o, head, num_heads)

    def counted_from_one(W_o, head, num_heads):
        return ablate_head(W_o, (head - 1) % num_heads, num_heads)

    cases = [
        (rows, "you zeroed rows of W_o.weight"),
        (interleaved, "you zeroed every heads-th column"),
        (kept, "you kept only that head"),
        (counted_from_one, "the columns of a neighbouring head"),
        (lambda W, i, h: W, "nothing was zeroed"),
        (lambda W, i, h: ablate_head(W, i, h)[:, :-1], "shape: expected"),
        (lambda W, i, h: ablate_head(W, i, h) * 2, "values differ first at position"),
    ]
    for wrong, hint in cases:
        assert not check_head_ablation(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_head_ablation_hard_wired_to_the_chapter_fails(capsys):
    p_task = 32 // 2  # the chapter's digit model: width 32, two heads

    def ablate_head(W_o, head, num_heads):
        W_o = W_o.clone()
        W_o[:, head * p_task : (head + 1) * p_task] = 0
        return W_o

    for seed in range(3):
        assert not check_head_ablation(ablate_head, seed=seed)
        assert "pass" not in capsys.readouterr().out


def multihead(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
    q, k, v = (
        split_heads(X @ W, num_heads) for X, W in ((queries, W_q), (keys, W_k), (values, W_v))
    )
    p = q.shape[-1]
    weights = torch.softmax(q @ k.transpose(-2, -1) / p**0.5, dim=-1)
    return merge_heads(weights @ v) @ W_o


def test_multihead_attention_pass(capsys):
    assert check_multihead_attention(multihead, seed=0)
    assert capsys.readouterr().out.startswith("pass: multihead matches the reference")


def with_companion(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
    """The chapter's layer, companion's MultiHeadAttention, with the four matrices copied in."""
    layer = MultiHeadAttention(queries.shape[-1], num_heads, dropout=0.0)
    layer(queries, keys, values)  # size the lazy projections
    with torch.no_grad():
        for linear, W in zip((layer.W_q, layer.W_k, layer.W_v, layer.W_o), (W_q, W_k, W_v, W_o)):
            linear.weight.copy_(W.T)  # nn.Linear stores (out, in)
        return layer(queries, keys, values)


def test_multihead_attention_reference_is_companions_layer():
    """The reference computes what the chapter's layer computes."""
    inputs = _multihead_inputs(torch.Generator().manual_seed(0))
    torch.testing.assert_close(with_companion(*inputs), _multihead(*inputs), atol=1e-5, rtol=0)


def test_multihead_attention_that_calls_a_layer_fails(capsys):
    """Right numbers, but the exercise is to build the layer: an answer that calls companion's
    layer, DotProductAttention, or PyTorch's attention fails with a hint that says so."""

    def with_dot_product(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        q, k, v = (
            split_heads(X @ W, num_heads) for X, W in zip((queries, keys, values), (W_q, W_k, W_v))
        )
        return merge_heads(DotProductAttention(dropout=0.0)(q, k, v)) @ W_o

    def with_sdpa(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        q, k, v = (
            split_heads(X @ W, num_heads) for X, W in zip((queries, keys, values), (W_q, W_k, W_v))
        )
        return merge_heads(F.scaled_dot_product_attention(q, k, v)) @ W_o

    def with_torch_layer(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        layer = nn.MultiheadAttention(queries.shape[-1], num_heads, bias=False, batch_first=True)
        with torch.no_grad():
            layer.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))
            layer.out_proj.weight.copy_(W_o.T)
            return layer(queries, keys, values, need_weights=False)[0]

    cases = [
        (with_companion, "calls companion's attention"),
        (with_dot_product, "calls companion's attention"),
        (with_sdpa, "calls torch's scaled_dot_product_attention"),
        (with_torch_layer, "calls torch's nn.MultiheadAttention"),
    ]
    for answer, hint in cases:
        assert answer(*_multihead_inputs(torch.Generator().manual_seed(1))).shape  # it runs
        assert not check_multihead_attention(answer, seed=0)
        out = capsys.readouterr().out
        assert hint in out and "build the layer yourself" in out, out


def test_multihead_attention_through_torch_ops_fails(capsys):
    """torch's fused attention reached through the dispatcher, or one of its CPU backends, is
    still torch's attention."""
    ops = torch.ops.aten

    def through(kernel):
        def answer(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (
                split_heads(X @ W, num_heads)
                for X, W in zip((queries, keys, values), (W_q, W_k, W_v))
            )
            out = kernel(q, k, v)
            return merge_heads(out[0] if isinstance(out, tuple) else out) @ W_o

        return answer

    for kernel in (
        ops.scaled_dot_product_attention,
        ops.scaled_dot_product_attention.default,
        ops._scaled_dot_product_flash_attention_for_cpu,
    ):
        answer = through(kernel)
        inputs = _multihead_inputs(torch.Generator().manual_seed(0))
        torch.testing.assert_close(answer(*inputs), _multihead(*inputs), atol=1e-5, rtol=0)
        assert not check_multihead_attention(answer, seed=0)
        out = capsys.readouterr().out
        assert "calls torch's scaled_dot_product_attention" in out, out


def test_answers_that_call_the_checkers_references_fail(capsys):
    """The checker module's own references give the right numbers; calling them is not doing
    the exercise, by any route."""
    from companion.exercises import multihead as module

    cases = [
        (check_split_heads, lambda X, h: module._split_heads(X, h)),
        (check_merge_heads, lambda H: module._merge_heads(H)),
        (check_multihead_attention, lambda *inputs: module._multihead(*inputs)),
        (check_multihead_attention, _multihead),
        (check_head_ablation, lambda W, i, h: module._ablate(W, i, h)),
    ]
    for checker, answer in cases:
        assert not checker(answer, seed=0)
        out = capsys.readouterr().out
        assert "calls the checker's own code" in out, out


def test_split_and_merge_that_call_companion_fail(capsys):
    def split_by_companion(X, num_heads):
        return MultiHeadAttention(X.shape[-1], num_heads, dropout=0.0).split_heads(X)

    def merge_by_companion(H):
        layer = MultiHeadAttention(H.shape[1] * H.shape[3], H.shape[1], dropout=0.0)
        return layer.merge_heads(H)

    for checker, answer in (
        (check_split_heads, split_by_companion),
        (check_merge_heads, merge_by_companion),
    ):
        assert not checker(answer, seed=0)
        out = capsys.readouterr().out
        assert "calls companion's multi-head attention" in out, out


def test_multihead_attention_hints(capsys):
    def scaled(scale_of):  # the right layer with another scale
        def fn(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (
                split_heads(X @ W, num_heads)
                for X, W in ((queries, W_q), (keys, W_k), (values, W_v))
            )
            weights = torch.softmax(q @ k.transpose(-2, -1) / scale_of(queries, q), dim=-1)
            return merge_heads(weights @ v) @ W_o

        return fn

    def no_transpose(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        def split(X):
            return X.reshape(X.shape[0], num_heads, X.shape[1], -1)

        q, k, v = split(queries @ W_q), split(keys @ W_k), split(values @ W_v)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        out = weights @ v
        return out.reshape(out.shape[0], out.shape[2], -1) @ W_o

    def interleaved(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        def split(X):
            return X.reshape(X.shape[0], X.shape[1], -1, num_heads).permute(0, 3, 1, 2)

        q, k, v = split(queries @ W_q), split(keys @ W_k), split(values @ W_v)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        out = weights @ v  # (batch, heads, n, p)
        return out.permute(0, 2, 3, 1).reshape(out.shape[0], out.shape[2], -1) @ W_o

    def softmax_queries(queries, keys, values, W_q, W_k, W_v, W_o, num_heads):
        q, k, v = (
            split_heads(X @ W, num_heads) for X, W in ((queries, W_q), (keys, W_k), (values, W_v))
        )
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-2)
        return merge_heads(weights @ v) @ W_o

    cases = [
        (scaled(lambda X, q: X.shape[-1] ** 0.5), "divided by sqrt(d), the model's width"),
        (scaled(lambda X, q: 1.0), "the scores are not scaled"),
        (lambda *a: multihead(*a[:6], torch.eye(a[0].shape[-1]), a[7]), "W_o is missing"),
        (no_transpose, "heads and positions are mixed"),
        (interleaved, "the features are interleaved"),
        (lambda *a: multihead(*a[:7], 1), "one head over the whole width"),
        (softmax_queries, "softmax over the wrong axis"),
        (lambda *a: multihead(*a)[:, :-1], "shape: expected"),
    ]
    for wrong, hint in cases:
        assert not check_multihead_attention(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out
