"""BERT (sec-pretraining): the layers against d2l 1.0.3, the 80/10/10 masking against d2l's
``_get_mlm_data_from_tokens``, and the errors."""

from __future__ import annotations

import math
import random

import pytest
import torch

from companion.models.bert import (
    CLS,
    MASK,
    SEP,
    BERTClassifier,
    BERTEncoder,
    BERTModel,
    MaskLM,
    NextSentencePred,
    get_tokens_and_segments,
    mask_tokens,
    mlm_loss,
)
from tests.test_transformer import close, matched

VOCAB, HIDDENS, FFN, HEADS, BLKS, MAX_LEN = 30, 16, 24, 4, 2, 20


@pytest.fixture(autouse=True)
def seeded():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        yield


@pytest.fixture(params=[torch.float64, torch.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


def bert_inputs(batch=3, steps=9):
    tokens = torch.randint(0, VOCAB, (batch, steps))
    segments = torch.randint(0, 2, (batch, steps))
    valid_lens = torch.tensor([steps, 3, 5])[:batch]
    pred_positions = torch.randint(0, steps, (batch, 4))
    return tokens, segments, valid_lens, pred_positions


# --- Same numbers as d2l ------------------------------------------------------------------------


def test_encoder_matches_d2l(d2l, dtype):
    tokens, segments, valid_lens, _ = bert_inputs()
    reference = d2l.BERTEncoder(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.2, max_len=MAX_LEN)
    reference(tokens, segments, valid_lens)  # materialise the lazy layers
    ours = BERTEncoder(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.2, max_len=MAX_LEN)
    ours, reference = matched(reference, ours, dtype)
    ours.eval(), reference.eval()
    close(ours(tokens, segments, valid_lens), reference(tokens, segments, valid_lens))


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "sized"])
def test_mask_lm_matches_d2l(d2l, dtype, lazy):
    X = torch.randn(3, 7, HIDDENS)
    pred_positions = torch.tensor([[0, 6, 2], [1, 1, 5], [3, 4, 0]])
    reference = d2l.MaskLM(VOCAB, HIDDENS)
    reference(X, pred_positions)
    ours = MaskLM(VOCAB, HIDDENS, num_inputs=None if lazy else HIDDENS)
    if lazy:
        ours(X, pred_positions)
    ours, reference = matched(reference, ours, dtype)
    X = X.to(dtype)
    close(ours(X, pred_positions), reference(X, pred_positions))


def test_next_sentence_pred_matches_d2l(d2l, dtype):
    X = torch.randn(5, HIDDENS)
    reference = d2l.NextSentencePred()
    reference(X)
    ours, reference = matched(reference, NextSentencePred(num_inputs=HIDDENS), dtype)
    close(ours(X.to(dtype)), reference(X.to(dtype)))


def test_model_matches_d2l(d2l, dtype):
    tokens, segments, valid_lens, pred_positions = bert_inputs()
    reference = d2l.BERTModel(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.2, max_len=MAX_LEN)
    reference(tokens, segments, valid_lens, pred_positions)
    ours = BERTModel(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.2, max_len=MAX_LEN)
    ours, reference = matched(reference, ours, dtype)
    ours.eval(), reference.eval()
    expected = reference(tokens, segments, valid_lens, pred_positions)
    got = ours(tokens, segments, valid_lens, pred_positions)
    for actual, wanted in zip(got, expected):
        close(actual, wanted)
    encoded, mlm_Y_hat, nsp_Y_hat = got
    assert encoded.shape == (3, 9, HIDDENS)
    assert mlm_Y_hat.shape == (3, 4, VOCAB) and nsp_Y_hat.shape == (3, 2)
    _, no_mlm, nsp_again = ours(tokens, segments, valid_lens)
    assert no_mlm is None
    close(nsp_again, nsp_Y_hat)


def test_get_tokens_and_segments_matches_d2l(d2l):
    for pair in ((["a", "b"], None), (["a"], ["b", "c", "d"]), ([], [])):
        assert get_tokens_and_segments(*pair) == d2l.get_tokens_and_segments(*pair)
    assert get_tokens_and_segments(["x"], ["y"]) == (
        [CLS, "x", SEP, "y", SEP],
        [0, 0, 0, 1, 1],
    )


# --- The layers' own properties -----------------------------------------------------------------


def test_padding_does_not_change_real_positions():
    model = BERTModel(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.0, max_len=MAX_LEN).eval()
    tokens, segments, valid_lens, _ = bert_inputs()
    changed = tokens.clone()
    changed[1, 3:] = (changed[1, 3:] + 1) % VOCAB  # row 1 has 3 real tokens
    with torch.no_grad():
        close(
            model.encoder(changed, segments, valid_lens)[1, :3],
            model.encoder(tokens, segments, valid_lens)[1, :3],
        )


def test_mask_lm_reads_the_given_positions():
    head = MaskLM(VOCAB, HIDDENS, num_inputs=HIDDENS)
    X = torch.randn(2, 6, HIDDENS)
    positions = torch.tensor([[5, 0], [2, 2]])
    by_hand = torch.stack([X[0, [5, 0]], X[1, [2, 2]]])  # (2, 2, HIDDENS)
    close(head(X, positions), head.mlp(by_hand))


def test_classifier_shares_the_pretrained_modules():
    bert = BERTModel(VOCAB, HIDDENS, FFN, HEADS, BLKS, 0.0, max_len=MAX_LEN).eval()
    classifier = BERTClassifier(bert, num_classes=3).eval()
    assert classifier.encoder is bert.encoder and classifier.hidden is bert.hidden
    tokens, segments, valid_lens, _ = bert_inputs()
    logits = classifier(tokens, segments, valid_lens)
    assert logits.shape == (3, 3)
    cls = bert(tokens, segments, valid_lens)[0][:, 0]
    close(logits, classifier.output(bert.hidden(cls)))


def test_mlm_loss_ignores_padding():
    logits = torch.randn(2, 3, VOCAB)
    labels = torch.tensor([[1, 2, 0], [4, 0, 0]])
    weights = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    expected = torch.nn.functional.cross_entropy(logits[weights > 0], labels[weights > 0])
    close(mlm_loss(logits, labels, weights), expected)
    labels[0, 2], labels[1, 1] = 7, 9  # labels under weight 0 do not matter
    close(mlm_loss(logits, labels, weights), expected)


# --- Masking: d2l's behaviour, BERT's 80/10/10 --------------------------------------------------

SMALL_VOCAB = 10  # small, so that a random replacement that draws the same token is frequent
CLS_ID, SEP_ID, MASK_ID = 1, 2, 3


def sentence_batch(lengths, steps, generator):
    """<cls> words <sep> padding, for each length (which counts <cls> and <sep>)."""
    tokens = torch.randint(4, SMALL_VOCAB, (len(lengths), steps), generator=generator)
    for row, length in enumerate(lengths):
        tokens[row, 0], tokens[row, length - 1], tokens[row, length:] = CLS_ID, SEP_ID, 0
    return tokens, torch.tensor(lengths)


def masked(tokens, valid_lens, seed, **options):
    return mask_tokens(
        tokens,
        valid_lens,
        vocab_size=SMALL_VOCAB,
        mask_id=MASK_ID,
        special_ids=[CLS_ID, SEP_ID],
        generator=torch.Generator().manual_seed(seed),
        **options,
    )


def test_number_of_predictions_matches_d2l(d2l):
    """d2l predicts max(1, round(0.15 * len(tokens))) tokens, <cls> and <sep> counted."""
    vocab = d2l.Vocab([f"w{i}" for i in range(20)], reserved_tokens=["<pad>", CLS, SEP, MASK])
    lengths = list(range(2, 41))
    tokens, valid_lens = sentence_batch(lengths, 40, torch.Generator().manual_seed(0))
    result = masked(tokens, valid_lens, seed=0)
    state = random.getstate()
    for row, length in enumerate(lengths):
        words = [f"w{i % 20}" for i in range(length - 2)]
        _, positions, _ = d2l._get_mlm_data_from_tokens([CLS, *words, SEP], vocab)
        assert int(result.weights[row].sum()) == len(positions), f"length {length}"
        assert len(positions) == (0 if length == 2 else max(1, round(0.15 * length)))
    random.setstate(state)


def test_predictions_are_sorted_real_tokens_with_their_labels():
    lengths = [2, 3, 5, 8, 13, 20, 20, 7]
    tokens, valid_lens = sentence_batch(lengths, 20, torch.Generator().manual_seed(1))
    for seed in range(50):
        result = masked(tokens, valid_lens, seed)
        assert result.pred_positions.shape == (len(lengths), 3)  # round(0.15 * 20) = 3
        for row, length in enumerate(lengths):
            real = result.weights[row] > 0
            positions = result.pred_positions[row][real]
            assert (positions[1:] > positions[:-1]).all()  # ascending, no repeats
            assert ((positions > 0) & (positions < length - 1)).all()  # never <cls>, <sep>, pad
            assert torch.equal(result.labels[row][real], tokens[row, positions])
            assert (result.pred_positions[row][~real] == 0).all()
            assert (result.labels[row][~real] == 0).all()
            untouched = torch.ones(tokens.shape[1], dtype=torch.bool)
            untouched[positions] = False
            assert torch.equal(result.tokens[row, untouched], tokens[row, untouched])


def test_masking_follows_the_generator():
    tokens, valid_lens = sentence_batch([12, 9, 15], 16, torch.Generator().manual_seed(2))
    first, again, other = (masked(tokens, valid_lens, seed) for seed in (7, 7, 8))
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    assert not all(torch.equal(a, b) for a, b in zip(first, other))


def outcome_counts(result, tokens):
    """How the predicted tokens were replaced: <mask>, kept, another token."""
    rows, cols = torch.nonzero(result.weights > 0, as_tuple=True)
    positions = result.pred_positions[rows, cols]
    new, old = result.tokens[rows, positions], tokens[rows, positions]
    is_mask = new == MASK_ID
    kept = (new == old) & ~is_mask
    return int(is_mask.sum()), int(kept.sum()), int((~is_mask & ~kept).sum())


def within_five_sigma(count, total, p):
    """A binomial count within 5 standard deviations of its mean: a correct rule fails this
    with probability below 1e-6, and the draws are seeded, so the test is deterministic."""
    return abs(count - total * p) <= 5 * math.sqrt(total * p * (1 - p))


@pytest.mark.parametrize("rule", [(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.5, 0.25, 0.25)])
def test_replacement_frequencies(rule):
    """Masked with probability rule[0]; a random token with rule[1], which is the token itself
    with probability 1/V; kept with rule[2]. So 'kept' is seen with rule[2] + rule[1] / V."""
    tokens, valid_lens = sentence_batch([20] * 500, 20, torch.Generator().manual_seed(3))
    counts, total = [0, 0, 0], 0
    for seed in range(20):
        result = masked(tokens, valid_lens, seed, rule=rule)
        for i, count in enumerate(outcome_counts(result, tokens)):
            counts[i] += count
        total += int(result.weights.sum())
    assert total == 20 * 500 * 3
    p_mask = rule[0]
    # MASK_ID is never in the sentences, so a random draw of it counts as a <mask>
    p_mask += rule[1] / SMALL_VOCAB
    p_kept = rule[2] + rule[1] / SMALL_VOCAB
    p_other = 1 - p_mask - p_kept
    for count, p in zip(counts, (p_mask, p_kept, p_other)):
        if p in (0.0, 1.0):
            assert count == total * p
        else:
            assert within_five_sigma(count, total, p), (counts, total, p)


def test_d2l_has_the_same_frequencies(d2l):
    """d2l's own masking, run as often, lands in the same 5-sigma bands."""
    words = [f"w{i}" for i in range(SMALL_VOCAB - 4)]
    vocab = d2l.Vocab(words, reserved_tokens=["<pad>", CLS, SEP, MASK])
    state = random.getstate()
    random.seed(0)
    counts, total = {"mask": 0, "kept": 0, "other": 0}, 0
    for _ in range(5000):
        sentence = [random.choice(words) for _ in range(18)]
        ids, positions, labels = d2l._get_mlm_data_from_tokens([CLS, *sentence, SEP], vocab)
        for position, label in zip(positions, labels):
            new = ids[position]
            key = "mask" if new == vocab[MASK] else "kept" if new == label else "other"
            counts[key] += 1
            total += 1
    random.setstate(state)
    V = len(vocab)  # d2l draws the random token from its whole vocabulary
    assert within_five_sigma(counts["mask"], total, 0.8 + 0.1 / V)
    assert within_five_sigma(counts["kept"], total, 0.1 + 0.1 / V)


def test_every_candidate_is_equally_likely():
    """Row length 12: 10 candidates, round(1.8) = 2 predictions, so each candidate is predicted
    with probability 1/5."""
    tokens, valid_lens = sentence_batch([12] * 1000, 12, torch.Generator().manual_seed(4))
    hits = torch.zeros(12)
    for seed in range(5):
        result = masked(tokens, valid_lens, seed)
        hits += torch.bincount(result.pred_positions.reshape(-1), minlength=12)
    assert hits[0] == 0 and hits[11] == 0
    for position in range(1, 11):
        assert within_five_sigma(int(hits[position]), 5000, 0.2), hits


def test_no_candidate_gives_no_prediction():
    tokens, valid_lens = sentence_batch([2, 2], 4, torch.Generator().manual_seed(5))
    result = masked(tokens, valid_lens, seed=0)
    assert result.pred_positions.shape == (2, 0)
    assert torch.equal(result.tokens, tokens)


# --- Errors ---------------------------------------------------------------------------------------


def test_bad_encoder_inputs():
    encoder = BERTEncoder(VOCAB, HIDDENS, FFN, HEADS, 1, 0.0, max_len=8)
    tokens = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"segments must have the shape of tokens \(2, 5\)"):
        encoder(tokens, torch.zeros(2, 4, dtype=torch.long), None)
    with pytest.raises(ValueError, match=r"segment ids from 0 to 2, outside the segments \[0, 2"):
        encoder(tokens, torch.tensor([[0, 1, 2, 0, 0]] * 2), None)
    with pytest.raises(ValueError, match="tokens holds token ids from 30 to 30"):
        encoder(tokens + VOCAB, tokens, None)
    with pytest.raises(ValueError, match="tokens must be 2-D"):
        encoder(tokens[0], tokens[0], None)
    with pytest.raises(ValueError, match="9 steps, more than max_len=8"):
        long = torch.zeros(1, 9, dtype=torch.long)
        encoder(long, long, None)
    with pytest.raises(ValueError, match="num_blks"):
        BERTEncoder(VOCAB, HIDDENS, FFN, HEADS, 0, 0.0)
    with pytest.raises(ValueError, match="dropout"):
        BERTModel(VOCAB, HIDDENS, FFN, HEADS, 1, 1.0)


def test_bad_head_inputs():
    head = MaskLM(VOCAB, HIDDENS, num_inputs=HIDDENS)
    X = torch.randn(2, 5, HIDDENS)
    with pytest.raises(ValueError, match=r"positions from 0 to 5, outside the sequence \[0, 5"):
        head(X, torch.tensor([[0, 5], [1, 2]]))
    with pytest.raises(ValueError, match=r"pred_positions must be \(batch=2, num_preds\)"):
        head(X, torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="X must be 3-D"):
        head(X[0], torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="X must be 2-D"):
        NextSentencePred(num_inputs=HIDDENS)(X)
    with pytest.raises(ValueError, match="num_classes"):
        BERTClassifier(BERTModel(VOCAB, HIDDENS, FFN, HEADS, 1, 0.0), num_classes=0)
    with pytest.raises(ValueError, match=r"mlm_Y_hat .* disagree"):
        mlm_loss(torch.randn(2, 3, VOCAB), torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 4))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(mask_prob=0.0), r"mask_prob must be in \(0, 1\)"),
        (dict(mask_prob=1.0), r"mask_prob must be in \(0, 1\)"),
        (dict(rule=(0.8, 0.1)), "rule must be three fractions"),
        (dict(rule=(0.8, 0.2, 0.1)), "rule must be three fractions"),
        (dict(rule=(1.1, -0.1, 0.0)), "rule must be three fractions"),
    ],
)
def test_bad_masking_options(options, message):
    tokens, valid_lens = sentence_batch([5, 4], 6, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=message):
        masked(tokens, valid_lens, seed=0, **options)


def test_bad_masking_inputs():
    tokens, valid_lens = sentence_batch([5, 4], 6, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="valid_lens must be <= the number of steps"):
        masked(tokens, torch.tensor([5, 7]), seed=0)
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(batch,\)"):
        masked(tokens, torch.tensor([5]), seed=0)
    with pytest.raises(ValueError, match="tokens holds token ids from"):
        masked(tokens + SMALL_VOCAB, valid_lens, seed=0)
    with pytest.raises(ValueError, match=r"mask_id must be in \[0, vocab_size=10\)"):
        mask_tokens(
            tokens,
            valid_lens,
            vocab_size=SMALL_VOCAB,
            mask_id=SMALL_VOCAB,
            special_ids=[],
            generator=torch.Generator(),
        )
