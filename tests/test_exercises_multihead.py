"""The chapter 6 checkers pass correct answers and name typical mistakes."""

from __future__ import annotations

import torch

from companion import MultiHeadAttention
from companion.exercises.multihead import check_merge_heads, check_split_heads


def split_heads(X, num_heads):
    batch, n, d = X.shape
    return X.reshape(batch, n, num_heads, d // num_heads).transpose(1, 2)


def merge_heads(H):
    batch, h, n, p = H.shape
    return H.transpose(1, 2).reshape(batch, n, h * p)


def test_split_heads_pass(capsys):
    assert check_split_heads(split_heads)
    assert capsys.readouterr().out.startswith("pass: split_heads matches the reference")


def test_split_heads_other_correct_spellings_pass(capsys):
    def unflatten(X, num_heads):
        return X.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)

    def by_loop(X, num_heads):
        return torch.stack(X.chunk(num_heads, dim=-1), dim=1)  # one block of features per head

    for fn in (unflatten, by_loop):
        assert check_split_heads(fn)
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
        (
            lambda X, h: split_heads(X, h)[..., :-1],
            "shape: expected (2, 3, 5, 4), got (2, 3, 5, 3)",
        ),
        (lambda X, h: split_heads(X, h) + 0.1, "values differ first at position (0, 0, 0, 0)"),
        (lambda X, h: split_heads(X, h).tolist(), "expected a torch.Tensor, got list"),
    ]
    for wrong, hint in cases:
        assert not check_split_heads(wrong)
        out = capsys.readouterr().out
        assert hint in out, out


def test_split_heads_stub_and_crash(capsys):
    def stub(X, num_heads):
        raise NotImplementedError()

    assert not check_split_heads(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")
    assert not check_split_heads(lambda X, h: X.reshape(7, -1, h))
    assert "error: <lambda> raised RuntimeError" in capsys.readouterr().out


def test_merge_heads_pass(capsys):
    assert check_merge_heads(merge_heads)
    assert capsys.readouterr().out.startswith("pass: merge_heads matches the reference")

    def by_cat(H):
        return torch.cat(H.unbind(dim=1), dim=-1)  # heads side by side

    assert check_merge_heads(by_cat)
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
        (lambda H: H, "shape: expected (2, 5, 12), got (2, 3, 5, 4)"),
        (lambda H: merge_heads(H) * 2, "values differ first at position (0, 0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_merge_heads(wrong)
        out = capsys.readouterr().out
        assert hint in out, out


def test_merge_heads_stub(capsys):
    def stub(H):
        raise NotImplementedError()

    assert not check_merge_heads(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")


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
