"""The Bahdanau-attention checkers (sec-bahdanau) pass correct answers, name the typical mistakes,
and fail solutions hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import pytest
import torch

from companion.exercises.bahdanau import (
    _bahdanau_context,
    _context_inputs,
    check_bahdanau_context,
    check_length_normalized_scores,
    check_luong_step,
    make_luong_parts,
)
from companion.exercises.core import seeded_generator
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


def with_layer(enc_outputs, query, valid_lens, W_q, W_k, w_v):
    """companion's additive attention, loaded with the exercise's matrices."""
    layer = AdditiveAttention(W_q.shape[1], dropout=0.0)
    keys = enc_outputs.permute(1, 0, 2)  # (batch, T, H_enc)
    layer(query[:, None], keys, keys, valid_lens)  # materialise the lazy layers
    with torch.no_grad():
        layer.W_q.weight.copy_(W_q.T)
        layer.W_k.weight.copy_(W_k.T)
        layer.w_v.weight.copy_(w_v[None])
        return layer(query[:, None], keys, keys, valid_lens).squeeze(1)


def test_bahdanau_context_reference_is_companions_layer():
    """The checker's reference computes what companion's additive attention computes."""
    for seed in range(3):
        inputs = _context_inputs(seeded_generator(seed))
        torch.testing.assert_close(_bahdanau_context(*inputs), with_layer(*inputs))


def test_bahdanau_context_refuses_companions_attention(capsys):
    """The exercise computes the context by hand: calling companion's layer, or its
    masked_softmax, breaks its rule, though the numbers are right."""

    def with_masked_softmax(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        from companion import masked_softmax

        keys = enc_outputs.permute(1, 0, 2)
        scores = torch.tanh((query @ W_q)[:, None] + keys @ W_k) @ w_v  # (batch, T)
        weights = masked_softmax(scores[:, None], valid_lens)[:, 0]
        return torch.einsum("bt,bth->bh", weights, keys)

    for answer in (with_layer, with_masked_softmax):
        inputs = _context_inputs(seeded_generator(0))
        torch.testing.assert_close(answer(*inputs), _bahdanau_context(*inputs))
        assert not check_bahdanau_context(answer, seed=0)
        assert "hint: the answer calls companion's attention" in capsys.readouterr().out


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
    return log_probs.masked_fill(~kept, 0.0).sum(dim=1) / lengths.float() ** alpha


def scores_where(log_probs, lengths, alpha):
    kept = torch.arange(log_probs.shape[1]) < lengths[:, None]
    return torch.where(kept, log_probs, 0.0).sum(dim=1) / lengths.float() ** alpha


@pytest.mark.parametrize("answer", [scores, scores_where])
def test_length_normalized_scores_pass(answer, capsys):
    assert check_length_normalized_scores(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def test_length_normalized_scores_hints(capsys):
    def unmasked(log_probs, lengths, alpha):
        return log_probs.sum(dim=1) / lengths.float() ** alpha

    def no_power(log_probs, lengths, alpha):
        return scores(log_probs, lengths, 1.0)

    def by_columns(log_probs, lengths, alpha):
        kept = torch.arange(log_probs.shape[1]) < lengths[:, None]
        return log_probs.masked_fill(~kept, 0.0).sum(dim=1) / log_probs.shape[1] ** alpha

    def multiplied(log_probs, lengths, alpha):  # 0 * -inf is NaN
        kept = torch.arange(log_probs.shape[1]) < lengths[:, None]
        return (log_probs * kept).sum(dim=1) / lengths.float() ** alpha

    cases = [
        (unmasked, "the positions after a hypothesis's length were summed too"),
        (multiplied, "NaN where the junk is -inf"),
        (no_power, "alpha is ignored"),
        (by_columns, "divided by the number of columns"),
        (lambda log_probs, lengths, alpha: log_probs.mean(dim=1), "that is the mean"),
        (lambda log_probs, lengths, alpha: scores(log_probs, lengths, alpha)[None], "shape"),
    ]
    for wrong, hint in cases:
        assert not check_length_normalized_scores(wrong, seed=0)
        assert hint in capsys.readouterr().out


def luong(
    parts,
    tokens,
    enc_outputs,
    hidden_state,
    valid_lens,
    *,
    query="new",
    query_layer=-1,
    transpose=False,
    mask=True,
    axis=-1,
    context_first=True,
    attentional=True,
    carry_state=True,
):
    """Luong's step as a student writes it, with knobs for the usual mistakes."""
    output, new_state = parts.rnn(
        parts.embedding(tokens)[None], hidden_state if carry_state else None
    )
    s = (new_state if query == "new" else hidden_state)[query_layer]  # (batch, H)
    W_a = parts.W_a.T if transpose else parts.W_a
    scores = torch.einsum("bh,bth->bt", s @ W_a, enc_outputs)  # (batch, T)
    if mask:
        padding = torch.arange(enc_outputs.shape[1]) >= valid_lens[:, None]
        scores = scores.masked_fill(padding, -1e9)
    context = torch.einsum("bt,bth->bh", torch.softmax(scores, dim=axis), enc_outputs)
    pair = (context, output[0]) if context_first else (output[0], context)
    attended = torch.tanh(torch.cat(pair, dim=-1) @ parts.W_c) if attentional else output[0]
    return parts.dense(attended), new_state


def luong_with_companion(parts, tokens, enc_outputs, hidden_state, valid_lens):
    """The right numbers, but through companion's dot-product attention: against the rule."""
    from companion.layers.attention import DotProductAttention

    output, new_state = parts.rnn(parts.embedding(tokens)[None], hidden_state)
    query = (output[0] @ parts.W_a)[:, None] * enc_outputs.shape[-1] ** 0.5  # undo the scale
    context = DotProductAttention(dropout=0.0)(query, enc_outputs, enc_outputs, valid_lens)
    attended = torch.tanh(torch.cat((context[:, 0], output[0]), dim=-1) @ parts.W_c)
    return parts.dense(attended), new_state


def test_luong_step_pass(capsys):
    with torch.no_grad():
        assert check_luong_step(luong, seed=0)
    assert capsys.readouterr().out.startswith("pass: luong matches")


@pytest.mark.parametrize(
    "flags, hint",
    [
        ({"query": "previous"}, "as in Bahdanau's decoder"),
        ({"query_layer": 0}, "the query is the bottom layer's state"),
        ({"transpose": True}, "W_a is transposed"),
        ({"mask": False}, "padding got attention"),
        ({"axis": 0}, "softmax over the wrong axis"),
        ({"context_first": False}, "it reads [c; s], the context first"),
        ({"attentional": False}, "the logits come straight from s_{t'}"),
        ({"carry_state": False}, "the GRU started from zeros"),
    ],
)
def test_luong_step_hints(flags, hint, capsys):
    assert not check_luong_step(lambda *inputs: luong(*inputs, **flags), seed=0)
    assert hint in capsys.readouterr().out


def test_luong_step_refuses_companions_attention(capsys):
    """The answer through companion's layer computes the right numbers (checked outside the
    checker), and the checker refuses it."""
    from companion.exercises.bahdanau import _luong_inputs, _luong_step

    inputs = _luong_inputs(seeded_generator(0))
    with torch.no_grad():
        for got, expected in zip(luong_with_companion(*inputs), _luong_step(*inputs)):
            torch.testing.assert_close(got, expected)
    assert not check_luong_step(luong_with_companion, seed=0)
    assert "hint: the answer calls companion's attention" in capsys.readouterr().out


def luong_with_torch(parts, tokens, enc_outputs, hidden_state, valid_lens, *, ops=False):
    """The right numbers through torch's fused attention: the query scaled up by sqrt(d) so
    that its 1/sqrt(d) cancels, the mask as attn_mask. Against the rule as well."""
    import torch.nn.functional as F

    output, new_state = parts.rnn(parts.embedding(tokens)[None], hidden_state)
    query = (output[0] @ parts.W_a)[:, None] * enc_outputs.shape[-1] ** 0.5
    keep = (torch.arange(enc_outputs.shape[1]) < valid_lens[:, None])[:, None]  # (b, 1, T)
    fused = torch.ops.aten.scaled_dot_product_attention if ops else F.scaled_dot_product_attention
    context = fused(query, enc_outputs, enc_outputs, attn_mask=keep)[:, 0]
    attended = torch.tanh(torch.cat((context, output[0]), dim=-1) @ parts.W_c)
    return parts.dense(attended), new_state


@pytest.mark.parametrize("ops", [False, True], ids=["F", "torch.ops.aten"])
def test_luong_step_refuses_torchs_fused_attention(ops, capsys):
    from companion.exercises.bahdanau import _luong_inputs, _luong_step

    def answer(*inputs):
        return luong_with_torch(*inputs, ops=ops)

    inputs = _luong_inputs(seeded_generator(0))
    with torch.no_grad():
        for got, expected in zip(answer(*inputs), _luong_step(*inputs)):
            torch.testing.assert_close(got, expected)
    assert not check_luong_step(answer, seed=0)
    assert "hint: the answer calls torch's fused attention" in capsys.readouterr().out


def test_bahdanau_context_refuses_torchs_fused_attention(capsys):
    """Additive scores cannot go through the fused kernel, but its mask and softmax can:
    scores as a float mask over identity values give the weights."""
    import torch.nn.functional as F

    def weights_through_fused(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        keys = enc_outputs.permute(1, 0, 2)  # (batch, T, H)
        scores = torch.tanh((query @ W_q)[:, None] + keys @ W_k) @ w_v  # (batch, T)
        padding = torch.arange(keys.shape[1]) >= valid_lens[:, None]
        bias = scores.masked_fill(padding, float("-inf"))[:, None]  # (batch, 1, T)
        zeros = torch.zeros(keys.shape[0], 1, 1)
        steps = torch.eye(keys.shape[1]).expand(keys.shape[0], -1, -1)  # identity values
        ones = torch.zeros(keys.shape[0], keys.shape[1], 1)
        weights = F.scaled_dot_product_attention(zeros, ones, steps, attn_mask=bias)[:, 0]
        return torch.einsum("bt,bth->bh", weights, keys)

    inputs = _context_inputs(seeded_generator(0))
    torch.testing.assert_close(weights_through_fused(*inputs), _bahdanau_context(*inputs))
    assert not check_bahdanau_context(weights_through_fused, seed=0)
    assert "hint: the answer calls torch's fused attention" in capsys.readouterr().out


def test_luong_step_names_the_output_that_differs(capsys):
    cases = [
        (lambda *inputs: luong(*inputs)[0], "expected a tuple of 2 outputs, got Tensor"),
        (lambda *inputs: (luong(*inputs)[0], inputs[3]), "new hidden state: values differ"),
        (lambda *inputs: (luong(*inputs)[0][:, None], luong(*inputs)[1]), "logits: shape"),
    ]
    for wrong, hint in cases:
        assert not check_luong_step(wrong, seed=0)
        assert hint in capsys.readouterr().out


def test_luong_step_leaves_the_global_random_state_alone(capsys):
    before = torch.get_rng_state()
    assert check_luong_step(luong, seed=0)
    assert torch.equal(torch.get_rng_state(), before)


def test_make_luong_parts_repeats_with_its_seed():
    one, two = make_luong_parts(9, 4, 6, 2, seed=3), make_luong_parts(9, 4, 6, 2, seed=3)
    torch.testing.assert_close(one.W_c, two.W_c)
    torch.testing.assert_close(one.rnn.weight_hh_l1, two.rnn.weight_hh_l1)
    assert one.rnn.num_layers == 2 and one.W_c.shape == (12, 6) and one.dense.out_features == 9


def test_solutions_hard_wired_to_the_chapter_fail(capsys):
    """The chapter's sizes: 64 hidden units, 4 examples of 11 source steps; 6 hypotheses."""
    chapter_keys = torch.randn(4, 11, 64)  # as the chapter's keys (batch, T, h)
    chapter_lengths = torch.tensor([5, 7, 9, 11])

    def bahdanau_context(enc_outputs, query, valid_lens, W_q, W_k, w_v):
        return context(chapter_keys.permute(1, 0, 2), query, valid_lens, W_q, W_k, w_v)

    def luong_step(parts, tokens, enc_outputs, hidden_state, valid_lens):
        return luong(parts, tokens, enc_outputs, hidden_state, chapter_lengths)

    def length_normalized_scores(log_probs, lengths, alpha):
        return scores(log_probs, lengths, 1.0)  # the chapter's alpha = 1

    for seed in range(3):
        assert not check_bahdanau_context(bahdanau_context, seed=seed)
        assert "error: bahdanau_context raised" in capsys.readouterr().out
        assert not check_luong_step(luong_step, seed=seed)
        assert "error: luong_step raised" in capsys.readouterr().out
        assert not check_length_normalized_scores(length_normalized_scores, seed=seed)
        assert "alpha is ignored" in capsys.readouterr().out


def test_the_sizes_vary_and_are_never_the_chapters(capsys):
    seen = set()

    def record(parts, tokens, enc_outputs, hidden_state, valid_lens):
        seen.add((*hidden_state.shape, enc_outputs.shape[1], parts.dense.out_features))
        return luong(parts, tokens, enc_outputs, hidden_state, valid_lens)

    for seed in range(3):
        assert check_luong_step(record, seed=seed)
    assert len(seen) > 3
    for layers, batch, hiddens, steps, vocab in seen:
        assert layers > 1 and hiddens != 64 and steps not in (11, 30)
        assert batch not in (3, 4) and vocab not in (14, 15, 63)
