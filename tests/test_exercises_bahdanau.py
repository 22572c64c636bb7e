"""The chapter 3 checkers pass correct answers and name the typical mistakes."""

from __future__ import annotations

import torch

from companion.attention import AdditiveAttention
from companion.exercises.bahdanau import check_bahdanau_context, check_length_normalized_scores


def context(enc_outputs, query, valid_lens, W_q, W_k, w_v, axis=-1, mask=True, permute=True):
    keys = enc_outputs.permute(1, 0, 2) if permute else enc_outputs  # (batch, T, H)
    scores = torch.tanh((query @ W_q)[:, None] + keys @ W_k) @ w_v  # (batch, T)
    if mask:
        padding = torch.arange(keys.shape[1]) >= valid_lens[:, None]
        scores = scores.masked_fill(padding, -1e9)  # a large negative number works as well
    return torch.einsum("bt,bth->bh", torch.softmax(scores, dim=axis), keys)


def test_bahdanau_context_pass(capsys):
    assert check_bahdanau_context(context)
    assert capsys.readouterr().out.startswith("pass: context matches the reference")


def test_bahdanau_context_agrees_with_companions_layer(capsys):
    """The checker's reference is the additive attention of companion, with its weights."""

    def with_layer(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        layer = AdditiveAttention(W_q.shape[1], dropout=0.0)
        keys = enc_outputs.permute(1, 0, 2)  # (batch, T, H_enc)
        layer(query[:, None], keys, keys, valid_lens)  # materialise the lazy layers
        with torch.no_grad():
            layer.W_q.weight.copy_(W_q.T)
            layer.W_k.weight.copy_(W_k.T)
            layer.w_v.weight.copy_(w_v[None])
            return layer(query[:, None], keys, keys, valid_lens).squeeze(1)

    assert check_bahdanau_context(with_layer)
    assert capsys.readouterr().out.startswith("pass")


def test_bahdanau_context_hints(capsys):
    def no_tanh(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        keys = enc_outputs.permute(1, 0, 2)
        scores = ((query @ W_q)[:, None] + keys @ W_k) @ w_v
        scores = scores.masked_fill(torch.arange(keys.shape[1]) >= valid_lens[:, None], -1e9)
        return torch.einsum("bt,bth->bh", torch.softmax(scores, dim=-1), keys)

    cases = [
        (lambda *a: context(*a, mask=False), "padding got attention"),
        (lambda *a: context(*a, axis=0), "softmax over the wrong axis"),
        (lambda *a: context(*a, permute=False), "time and batch are mixed up"),
        (lambda *a: context(*a, permute=False, mask=False), "and the padding is not masked"),
        (no_tanh, "the tanh is missing"),
        (lambda *a: context(*a)[:, None], "shape: expected"),
        (lambda *a: context(*a) + 0.1, "values differ first at position (0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_bahdanau_context(wrong)
        assert hint in capsys.readouterr().out


def scores(log_probs, lengths, alpha):
    kept = torch.arange(log_probs.shape[1]) < lengths[:, None]  # (k, max_steps)
    return (log_probs * kept).sum(dim=1) / lengths.float() ** alpha


def test_length_normalized_scores_pass(capsys):
    assert check_length_normalized_scores(scores)
    assert capsys.readouterr().out.startswith("pass: scores matches the reference")


def test_length_normalized_scores_hints(capsys):
    def unmasked(log_probs, lengths, alpha):
        return log_probs.sum(dim=1) / lengths.float() ** alpha

    def no_power(log_probs, lengths, alpha):
        return scores(log_probs, lengths, 1.0)

    def by_columns(log_probs, lengths, alpha):
        kept = torch.arange(log_probs.shape[1]) < lengths[:, None]
        return (log_probs * kept).sum(dim=1) / log_probs.shape[1] ** alpha

    cases = [
        (unmasked, "the positions after a hypothesis's length were summed too"),
        (no_power, "alpha is ignored"),
        (by_columns, "divided by the number of columns"),
        (lambda log_probs, lengths, alpha: log_probs.mean(dim=1), "that is the mean"),
        (lambda log_probs, lengths, alpha: scores(log_probs, lengths, alpha)[None], "shape"),
    ]
    for wrong, hint in cases:
        assert not check_length_normalized_scores(wrong)
        assert hint in capsys.readouterr().out


def test_unfinished_and_crashing_answers(capsys):
    def stub(*inputs):
        raise NotImplementedError

    assert not check_bahdanau_context(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")
    assert not check_length_normalized_scores(stub)
    assert capsys.readouterr().out.startswith("not implemented yet: stub")
    assert not check_bahdanau_context(lambda enc, query, *rest: torch.cat((enc, query)))
    assert "error: <lambda> raised RuntimeError" in capsys.readouterr().out
