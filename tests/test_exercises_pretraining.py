"""The pretraining chapter's checkers (sec-pretraining) pass correct answers, name the typical
mistakes, and fail an answer hard-wired to the chapter's variables. Every call is seeded."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from companion.exercises.pretraining import (
    check_bert_input,
    check_gather_positions,
    check_lora_forward,
    check_mask_sentence,
    check_mlm_loss,
)
from companion.models.bert import mask_tokens

# ----------------------------------------------------------------------------- input


def bert_input(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
    cls, sep = torch.tensor([cls_id]), torch.tensor([sep_id])
    tokens = torch.cat([cls, tokens_a, sep, tokens_b, sep])  # <cls> A <sep> B <sep>
    segments = torch.cat(
        [
            torch.zeros(len(tokens_a) + 2, dtype=torch.long),
            torch.ones(len(tokens_b) + 1, dtype=torch.long),
        ]
    )
    return E_token[tokens] + E_segment[segments] + P[: len(tokens)]


def bert_input_with_embeddings(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
    """Another correct route: F.embedding, a segment mask and a batch axis dropped."""
    tokens = torch.tensor([[cls_id, *tokens_a.tolist(), sep_id, *tokens_b.tolist(), sep_id]])
    steps = torch.arange(tokens.shape[1])
    segments = (steps > len(tokens_a) + 1).long()[None]
    H = F.embedding(tokens, E_token) + F.embedding(segments, E_segment) + P[None, : len(steps)]
    return H[0]


@pytest.mark.parametrize("answer", [bert_input, bert_input_with_embeddings])
def test_bert_input_pass(answer, capsys):
    for seed in range(3):
        assert check_bert_input(answer, seed=seed)
        assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


def bert_input_slip(slip):
    """The student's answer with one slip, written here independently of the checker."""

    def answer(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
        a, b = tokens_a.tolist(), tokens_b.tolist()
        cls, sep = (sep_id, cls_id) if slip == "ids_swapped" else (cls_id, sep_id)
        if slip == "no_cls":
            ids, segments = [*a, sep, *b, sep], [0] * (len(a) + 1) + [1] * (len(b) + 1)
        elif slip == "one_sep":
            ids, segments = [cls, *a, sep, *b], [0] * (len(a) + 2) + [1] * len(b)
        else:
            ids, segments = [cls, *a, sep, *b, sep], [0] * (len(a) + 2) + [1] * (len(b) + 1)
        if slip == "sep_a_in_b":
            segments = [0] * (len(a) + 1) + [1] * (len(b) + 2)
        if slip == "last_sep_in_a":
            segments = [0] * (len(a) + 2) + [1] * len(b) + [0]
        if slip == "all_segment_0":
            segments = [0] * len(ids)
        if slip == "segments_swapped":
            segments = [1] * (len(a) + 2) + [0] * (len(b) + 1)
        n = len(ids)
        positions = torch.arange(n)
        if slip == "positions_from_1":
            positions = positions + 1
        if slip == "positions_per_sentence":
            positions = torch.cat([torch.arange(len(a) + 2), torch.arange(len(b) + 1)])
        H = E_token[torch.tensor(ids)]
        if slip != "no_segment":
            H = H + E_segment[torch.tensor(segments)]
        if slip != "no_position":
            H = H + P[positions]
        return H[None] if slip == "batch_axis" else H

    return answer


@pytest.mark.parametrize(
    "slip, hint",
    [
        ("sep_a_in_b", "the <sep> after A is in segment 1"),
        ("last_sep_in_a", "the last <sep> is in segment 0"),
        ("all_segment_0", "every position has segment 0"),
        ("segments_swapped", "the segments are swapped"),
        ("no_segment", "the segment embedding is missing"),
        ("no_position", "the position embedding is missing"),
        ("positions_from_1", "the positions start at 1"),
        ("positions_per_sentence", "the positions restart at B"),
        ("no_cls", "<cls> is missing"),
        ("one_sep", "a <sep> is missing"),
        ("ids_swapped", "<cls> and <sep> are swapped"),
        ("batch_axis", "drop the batch axis"),
    ],
)
def test_bert_input_hints(slip, hint, capsys):
    assert not check_bert_input(bert_input_slip(slip), seed=0)
    out = capsys.readouterr().out
    assert out.startswith("hint: ") and hint in out, out


def test_bert_input_leaves_the_global_random_state_alone(capsys):
    state = torch.random.get_rng_state()
    assert check_bert_input(bert_input, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_bert_input_hard_wired_to_the_chapter_fails(capsys):
    """The chapter's vocabulary has <cls> 4 and <sep> 5; an answer that uses those instead of
    its arguments fails on the checker's other ids."""

    def hard_wired(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
        return bert_input(tokens_a, tokens_b, 4, 5, E_token, E_segment, P)

    for seed in range(3):
        assert not check_bert_input(hard_wired, seed=seed)
        assert "pass" not in capsys.readouterr().out


def test_answers_that_call_the_checkers_references_fail(capsys):
    """The checkers' module holds the references; an answer that imports one is refused."""
    from companion.exercises.pretraining import _bert_input_written, _gather, _lora, _mlm_loss

    cases = [
        (check_bert_input, _bert_input_written),
        (check_gather_positions, _gather),
        (check_mlm_loss, _mlm_loss),
        (check_lora_forward, _lora),
    ]
    for checker, answer in cases:
        assert not checker(answer, seed=0)
        out = capsys.readouterr().out
        assert "the checker's own code" in out and "pass" not in out, out


# ----------------------------------------------------------------------------- gather


def gather_with_arange(X, pred_positions):
    return X[torch.arange(X.shape[0])[:, None], pred_positions]


def gather_with_gather(X, pred_positions):
    index = pred_positions[..., None].expand(-1, -1, X.shape[-1])
    return X.gather(1, index)


def gather_like_d2l(X, pred_positions):
    batch, preds = pred_positions.shape
    rows = torch.repeat_interleave(torch.arange(batch), preds)
    return X[rows, pred_positions.reshape(-1)].reshape(batch, preds, -1)


@pytest.mark.parametrize("answer", [gather_with_arange, gather_with_gather, gather_like_d2l])
def test_gather_pass(answer, capsys):
    assert check_gather_positions(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def gather_cycled(X, pred_positions):
    batch, preds = pred_positions.shape
    rows = torch.arange(batch).repeat(preds)
    return X[rows, pred_positions.reshape(-1)].reshape(batch, preds, -1)


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda X, p: X[:, p], "reads every row's positions from every row"),
        (gather_cycled, "the rows and the positions are paired wrongly"),
        (lambda X, p: gather_with_arange(X, p).transpose(0, 1), "shape: expected"),
        (lambda X, p: X[:, : p.shape[1]], "values differ first at"),
        (lambda X, p: gather_with_arange(X, p).tolist(), "expected a torch.Tensor"),
    ],
)
def test_gather_hints(wrong, hint, capsys):
    assert not check_gather_positions(wrong, seed=0)
    assert hint in capsys.readouterr().out


def test_gather_hard_wired_to_the_chapter_fails(capsys):
    """An answer that ignores its arguments' sizes (the chapter's batch of 8 rows) fails."""

    def hard_wired(X, pred_positions):
        return X[torch.arange(8)[:, None], pred_positions[:8]]

    for seed in range(3):
        assert not check_gather_positions(hard_wired, seed=seed)
        assert "pass" not in capsys.readouterr().out


# ----------------------------------------------------------------------------- loss


def loss_flat(logits, labels, weights):
    losses = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none"
    )
    return (losses * weights.reshape(-1)).sum() / weights.sum()


def loss_by_selection(logits, labels, weights):
    real = weights > 0
    return F.cross_entropy(logits[real], labels[real])


@pytest.mark.parametrize("answer", [loss_flat, loss_by_selection])
def test_loss_pass(answer, capsys):
    assert check_mlm_loss(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches the reference")


def loss_of_rows(logits, labels, weights):
    losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    return ((losses * weights).sum(1) / weights.sum(1)).mean()


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda z, y, w: F.cross_entropy(z.transpose(1, 2), y), "the padding slots"),
        (lambda z, y, w: loss_flat(z, y, w) * w.sum() / w.numel(), "divided by the number"),
        (loss_of_rows, "a mean of per-sentence means"),
        (lambda z, y, w: loss_flat(z, y, w) * w.sum(), "values differ first at"),
    ],
)
def test_loss_hints(wrong, hint, capsys):
    assert not check_mlm_loss(wrong, seed=0)
    assert hint in capsys.readouterr().out


# ----------------------------------------------------------------------------- masking


def mask_with_companion(tokens, special_ids, mask_id, vocab_size, generator):
    result = mask_tokens(
        tokens[None],
        torch.tensor([len(tokens)]),
        vocab_size=vocab_size,
        mask_id=mask_id,
        special_ids=special_ids,
        generator=generator,
    )
    k = int(result.weights.sum())
    return result.tokens[0], result.pred_positions[0, :k], result.labels[0, :k]


def masked(
    tokens,
    special_ids,
    mask_id,
    vocab_size,
    generator,
    rule=(0.8, 0.1, 0.1),
    count=None,
    first=False,
    specials_allowed=False,
    labels_from_input=False,
    unsorted=False,
    vocab_range=None,
):
    """A configurable answer: the reference, or one typical mistake at a time."""
    n = len(tokens)
    candidates = [
        i for i, t in enumerate(tokens.tolist()) if specials_allowed or t not in special_ids
    ]
    k = min(len(candidates), count(n) if count else max(1, round(0.15 * n)))
    order = (
        torch.arange(len(candidates))
        if first
        else torch.randperm(len(candidates), generator=generator)
    )
    positions = sorted(candidates[i] for i in order[:k].tolist())
    if unsorted:
        positions = positions[::-1]
    positions = torch.tensor(positions, dtype=torch.long)
    u = torch.rand(k, generator=generator)
    low, high = vocab_range or (0, vocab_size)
    random_ids = torch.randint(low, high, (k,), generator=generator)
    inputs = tokens.clone()
    inputs[positions] = torch.where(
        u < rule[0], mask_id, torch.where(u < rule[0] + rule[1], random_ids, tokens[positions])
    )
    return inputs, positions, (inputs if labels_from_input else tokens)[positions]


def named(fn, name):
    fn.__name__ = name
    return fn


@pytest.mark.parametrize(
    "answer",
    [
        named(lambda *a: masked(*a), "reference_like"),
        # drawing the random token among ordinary words only is as good as BERT's rule
        named(lambda t, s, m, v, g: masked(t, s, m, v, g, vocab_range=(8, v)), "words_only"),
    ],
)
def test_mask_pass(answer, capsys):
    assert check_mask_sentence(answer, seed=0)
    assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} follows BERT's rule")


def test_companions_masking_follows_the_checkers_rule(monkeypatch, capsys):
    """companion's mask_tokens, the chapter's own, meets every check but the rule that a
    student may not call it."""
    import companion.exercises.pretraining as checkers

    monkeypatch.setattr(checkers, "forbidden_call", lambda *args: None)
    assert check_mask_sentence(named(mask_with_companion, "mask_with_companion"), seed=0)
    assert capsys.readouterr().out.startswith("pass: mask_with_companion follows BERT's rule")


@pytest.mark.parametrize(
    "options, hint",
    [
        (dict(rule=(1.0, 0.0, 0.0)), "every chosen token became the mask"),
        (dict(rule=(0.8, 0.2, 0.0)), "no chosen token was left as it was"),
        (dict(rule=(0.8, 0.0, 0.2)), "no chosen token was replaced by a random token"),
        (dict(rule=(0.6, 0.2, 0.2)), "BERT's rule gives about 0.8/0.1/0.1"),
        (dict(count=lambda n: max(1, int(0.15 * n))), "needs"),
        (dict(count=lambda n: round(0.15 * (n - 2)) or 1), "needs"),
        (dict(first=True), "the chosen positions are the first candidates"),
        (dict(specials_allowed=True), "a <cls> or <sep> was chosen"),
        (dict(labels_from_input=True), "the labels are the corrupted inputs"),
        (dict(unsorted=True), "sort pred_positions in ascending order"),
    ],
)
def test_mask_hints(options, hint, capsys):
    def answer(tokens, special_ids, mask_id, vocab_size, generator):
        return masked(tokens, special_ids, mask_id, vocab_size, generator, **options)

    assert not check_mask_sentence(answer, seed=0)
    assert hint in capsys.readouterr().out


def test_mask_structural_hints(capsys):
    def global_random(tokens, special_ids, mask_id, vocab_size, generator):
        return masked(
            tokens,
            special_ids,
            mask_id,
            vocab_size,
            torch.Generator().manual_seed(int(torch.randint(1 << 30, (1,)))),
        )

    def changes_others(tokens, special_ids, mask_id, vocab_size, generator):
        inputs, positions, labels = masked(tokens, special_ids, mask_id, vocab_size, generator)
        inputs[0] = mask_id  # <cls> replaced too
        return inputs, positions, labels

    cases = [
        (global_random, "draw every random number from `generator`"),
        (changes_others, "a token that was not chosen for prediction changed"),
        (lambda *a: masked(*a)[:2], "return a tuple (inputs, pred_positions, labels)"),
        (lambda *a: tuple(x.tolist() for x in masked(*a)), "must each be a torch.Tensor"),
        (lambda *a: (masked(*a)[0][1:], *masked(*a)[1:]), "inputs must have the shape"),
    ]
    for wrong, hint in cases:
        assert not check_mask_sentence(wrong, seed=0)
        assert hint in capsys.readouterr().out


def test_mask_hard_wired_to_the_chapter_fails(capsys):
    """The chapter's vocabulary has <cls> 4, <sep> 5, <mask> 6; an answer that uses those
    instead of its arguments fails on the checker's other ids."""

    def hard_wired(tokens, special_ids, mask_id, vocab_size, generator):
        return masked(tokens, [4, 5], 6, 530, generator)

    assert not check_mask_sentence(hard_wired, seed=0)
    assert "pass" not in capsys.readouterr().out


# ----------------------------------------------------------------------------- the rules


def test_answers_that_call_the_chapters_own_code_fail(capsys):
    """Each exercise asks for code the chapter's BERT already has; calling it gives the right
    numbers without doing the exercise, and the checker says so."""
    from companion.models.bert import (
        BERTEncoder,
        MaskLM,
        get_tokens_and_segments,
        mask_tokens,
        mlm_loss,
    )

    def with_bert_encoder(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
        encoder = BERTEncoder(len(E_token), E_token.shape[1], 1, 1, 1, 0.0, max_len=len(P))
        encoder(tokens_a[None], torch.zeros_like(tokens_a)[None], None)  # called, result unused
        return bert_input(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P)

    def with_layout(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P):
        get_tokens_and_segments(tokens_a.tolist(), tokens_b.tolist())  # the chapter's layout
        return bert_input(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P)

    def with_mask_lm(X, pred_positions):
        head = MaskLM(5, X.shape[-1], num_inputs=X.shape[-1])
        head(X, pred_positions)  # the gather happens inside
        return X[torch.arange(len(X))[:, None], pred_positions]

    def with_mask_tokens(tokens, special_ids, mask_id, vocab_size, generator):
        masked = mask_tokens(
            tokens[None],
            torch.tensor([len(tokens)]),
            vocab_size=vocab_size,
            mask_id=mask_id,
            special_ids=special_ids,
            generator=generator,
        )
        real = masked.weights[0] > 0
        return masked.tokens[0], masked.pred_positions[0][real], masked.labels[0][real]

    cases = [
        (check_bert_input, with_bert_encoder),
        (check_bert_input, with_layout),
        (check_gather_positions, with_mask_lm),
        (check_mlm_loss, mlm_loss),
        (check_mask_sentence, with_mask_tokens),
    ]
    for checker, answer in cases:
        assert not checker(answer, seed=0)
        out = capsys.readouterr().out
        assert "the chapter's own BERT code" in out and "pass" not in out, out


# ----------------------------------------------------------------------------- LoRA


def lora_forward(X, W, A, B, alpha):
    return X @ W.T + (alpha / A.shape[0]) * (X @ A.T) @ B.T


def lora_merged(X, W, A, B, alpha):
    """Another correct route: the update merged into the weight first."""
    return X @ (W + (alpha / A.shape[0]) * B @ A).T


@pytest.mark.parametrize("answer", [lora_forward, lora_merged])
def test_lora_pass(answer, capsys):
    for seed in range(3):
        assert check_lora_forward(answer, seed=seed)
        assert capsys.readouterr().out.startswith(f"pass: {answer.__name__} matches")


def test_lora_hints(capsys):
    cases = [
        (lambda X, W, A, B, alpha: X @ W.T + X @ A.T @ B.T, "the update is not scaled"),
        (lambda X, W, A, B, alpha: X @ W.T + alpha * X @ A.T @ B.T, "divide it by the rank"),
        (
            lambda X, W, A, B, alpha: X @ W.T + (A.shape[0] / alpha) * X @ A.T @ B.T,
            "upside down",
        ),
        (lambda X, W, A, B, alpha: (alpha / A.shape[0]) * X @ A.T @ B.T, "frozen weight"),
        (lambda X, W, A, B, alpha: X @ W.T, "the update is missing"),
        (lambda X, W, A, B, alpha: X @ W, "shape"),
    ]
    for wrong, hint in cases:
        assert not check_lora_forward(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out
