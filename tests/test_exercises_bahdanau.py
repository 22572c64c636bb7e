"""The Bahdanau-attention checkers (sec-bahdanau) pass correct answers, name the typical mistakes,
and fail solutions hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import pytest
import torch

from companion.exercises.bahdanau import (
    check_bahdanau_context,
    check_bahdanau_step,
    check_length_normalized_scores,
)
from companion.layers.attention import AdditiveAttention


def context(enc_outputs, query, valid_lens, W_q, W_k, w_v, axis=-1, mask=True, permute=True):
    keys = enc_outputs.permute(1, 0, 2) if permute else enc_outputs  # (batch, T, H)
    scores = torch.tanh((query @ W_q)[:, None] + keys @ W_k) @ w_v  # (batch, T)
    if mask:
        padding = torch.arange(keys.shape[1]) >= valid_lens[:, None]
        scores = scores.masked_fill(padding, -1e9)  # a large negative number works as well
    return torch.einsum("bt,bth->bh", torch.softmax(scores, dim=axis), keys)


def test_bahdanau_context_pass(capsys):
    assert check_bahdanau_context(context, seed=0)
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

    assert check_bahdanau_context(with_layer, seed=0)
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
        assert not check_bahdanau_context(wrong, seed=0)
        assert hint in capsys.readouterr().out


def scores(log_probs, lengths, alpha):
    kept = torch.arange(log_probs.shape[1]) < lengths[:, None]  # (k, max_steps)
    return (log_probs * kept).sum(dim=1) / lengths.float() ** alpha


def test_length_normalized_scores_pass(capsys):
    assert check_length_normalized_scores(scores, seed=0)
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
        assert not check_length_normalized_scores(wrong, seed=0)
        assert hint in capsys.readouterr().out


def step(
    decoder,
    tokens,
    enc_outputs,
    hidden_state,
    valid_lens,
    *,
    context_first=True,
    query_layer=-1,
    mask=True,
    carry_state=True,
    new_logits=True,
):
    """One decoder step as a student writes it, with knobs for the usual mistakes."""
    query = hidden_state[query_layer].unsqueeze(1)  # (batch, 1, H)
    lens = valid_lens if mask else None
    context = decoder.attention(query, enc_outputs, enc_outputs, lens).squeeze(1)  # (batch, H)
    embedded = decoder.embedding(tokens)  # (batch, embed_size)
    x = torch.cat((context, embedded) if context_first else (embedded, context), dim=-1)
    output, new_state = decoder.rnn(x[None], hidden_state if carry_state else None)
    return decoder.dense(output[0] if new_logits else hidden_state[-1]), new_state


def step_by_hand(decoder, tokens, enc_outputs, hidden_state, valid_lens):
    """The attention computed from the raw weights, the GRU called layer by layer: no
    companion layer involved beyond the decoder's parameters."""
    att = decoder.attention
    features = torch.tanh(att.W_q(hidden_state[-1])[:, None] + att.W_k(enc_outputs))
    scores = att.w_v(features).squeeze(-1)  # (batch, T)
    padding = torch.arange(enc_outputs.shape[1]) >= valid_lens[:, None]
    weights = torch.softmax(scores.masked_fill(padding, float("-inf")), dim=-1)
    context = (weights[..., None] * enc_outputs).sum(1)  # (batch, H)
    x = torch.cat((context, decoder.embedding(tokens)), dim=-1)
    new_state = []
    for layer in range(decoder.rnn.num_layers):
        cell = torch.nn.GRUCell(x.shape[-1], decoder.rnn.hidden_size)
        cell.weight_ih, cell.weight_hh = (
            getattr(decoder.rnn, f"weight_{w}_l{layer}") for w in ("ih", "hh")
        )
        cell.bias_ih, cell.bias_hh = (
            getattr(decoder.rnn, f"bias_{w}_l{layer}") for w in ("ih", "hh")
        )
        x = cell(x, hidden_state[layer])
        new_state.append(x)
    return decoder.dense(x), torch.stack(new_state)


@pytest.mark.parametrize("answer", [step, step_by_hand])
def test_bahdanau_step_pass(answer, capsys):
    assert check_bahdanau_step(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


@pytest.mark.parametrize(
    "flags, hint",
    [
        ({"context_first": False}, "the GRU input is in the wrong order"),
        ({"query_layer": 0}, "the query is the bottom layer's state"),
        ({"mask": False}, "padding got attention"),
        ({"carry_state": False}, "the GRU started from zeros"),
        ({"new_logits": False}, "the logits come from the previous state"),
    ],
)
def test_bahdanau_step_hints(flags, hint, capsys):
    assert not check_bahdanau_step(lambda *inputs: step(*inputs, **flags), seed=0)
    assert hint in capsys.readouterr().out


def test_bahdanau_step_names_the_output_that_differs(capsys):
    cases = [
        (lambda *inputs: step(*inputs)[0], "expected a tuple of 2 outputs, got Tensor"),
        (lambda *inputs: (step(*inputs)[0], inputs[3]), "new hidden state: values differ"),
        (lambda *inputs: (step(*inputs)[0][:, None], step(*inputs)[1]), "logits: shape"),
    ]
    for wrong, hint in cases:
        assert not check_bahdanau_step(wrong, seed=0)
        assert hint in capsys.readouterr().out


def test_bahdanau_step_leaves_the_global_random_state_alone(capsys):
    before = torch.get_rng_state()
    assert check_bahdanau_step(step, seed=0)
    assert torch.equal(torch.get_rng_state(), before)


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The chapter's sizes: 64 hidden units, 4 examples of 11 source steps; 6 hypotheses."""
    chapter_keys = torch.randn(4, 11, 64)  # as the chapter's keys (batch, T, h)
    chapter_lengths = torch.tensor([5, 7, 9, 11])

    def bahdanau_context(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        return context(chapter_keys.permute(1, 0, 2), query, valid_lens, W_q, W_k, w_v)

    def bahdanau_step(decoder, tokens, enc_outputs, hidden_state, valid_lens):
        return step(decoder, tokens, enc_outputs, hidden_state, chapter_lengths)

    def length_normalized_scores(log_probs, lengths, alpha):
        return scores(log_probs, lengths, 1.0)  # the chapter's alpha = 1

    for seed in range(3):
        assert not check_bahdanau_context(bahdanau_context, seed=seed)
        assert "error: bahdanau_context raised" in capsys.readouterr().out
        assert not check_bahdanau_step(bahdanau_step, seed=seed)
        assert "error: bahdanau_step raised" in capsys.readouterr().out
        assert not check_length_normalized_scores(length_normalized_scores, seed=seed)
        assert "alpha is ignored" in capsys.readouterr().out


def test_the_sizes_vary_and_are_never_the_chapters(capsys):
    seen = set()

    def record(decoder, tokens, enc_outputs, hidden_state, valid_lens):
        seen.add((*hidden_state.shape, enc_outputs.shape[1], decoder.dense.out_features))
        return step(decoder, tokens, enc_outputs, hidden_state, valid_lens)

    for seed in range(3):
        assert check_bahdanau_step(record, seed=seed)
    assert len(seen) > 3
    for layers, batch, hiddens, steps, vocab in seen:
        assert layers > 1 and hiddens != 64 and steps not in (11, 30)
        assert batch not in (3, 4) and vocab not in (14, 15, 63)
