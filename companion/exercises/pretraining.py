"""Checkers for the pretraining chapter (sec-pretraining).

- ``check_bert_input``: build it yourself, BERT's input representation of a sentence pair,
  ``<cls> A <sep> B <sep>``: the sum of token, segment and position embeddings that
  ``BERTEncoder`` computes before its blocks, compared with that encoder given the same
  weights; it names the usual slips (segments of the two ``<sep>``, positions restarted or
  shifted, a term or a special token missing).
- ``check_gather_positions``: the masked-LM head's first step, the encoder outputs at the
  predicted positions, ``(batch, num_preds, d)``.
- ``check_mlm_loss``: cross-entropy averaged over the real predictions only.
- ``check_mask_sentence``: build it yourself, BERT's 80/10/10 masking of one sentence. The
  answer is random, so this checker calls it on a few thousand random sentences and checks
  what must always hold (how many positions, which ones, the labels, nothing else changed, the
  same draws from the same generator) and then the frequencies of ``<mask>``, a random token
  and the kept token, each within 5 standard deviations of BERT's rule.

- ``check_lora_forward``: a linear layer with a low-rank update, ``X W^T + (alpha / r) X A^T
  B^T`` (LoRA), which names a missing or wrong scale and the factors in the wrong order.

Every call draws new sizes, vocabularies and special-token ids (``seed=`` repeats a run, for tests),
so an answer that uses the chapter's own variables instead of its arguments fails. An answer
must compute what it is asked for: one that calls the chapter's own code for it (``MaskLM``,
``mlm_loss``, ``mask_tokens``, ``BERTEncoder`` and ``get_tokens_and_segments`` of
:mod:`companion.models.bert`, or the training helpers of :mod:`companion.training.pretrain`) is
told so, though its numbers are right (:func:`companion.exercises.rules.forbidden_call`), and
so is one that calls this module's references.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from companion.exercises.core import Inputs, check, first_seed, run_student, seeded_generator
from companion.exercises.rules import CHECKER_CODE, forbidden_call
from companion.exercises.sizes import draw

OWN_CODE = {
    "companion.models.bert": (
        "the answer calls the chapter's own BERT code (BERTEncoder, MaskLM, mlm_loss, "
        "mask_tokens ...): the exercise is to write it yourself, with torch operations"
    ),
    "companion.training.pretrain": (
        "the answer calls the chapter's training helpers: the exercise is to write it "
        "yourself, with torch operations"
    ),
}


RULES = OWN_CODE | CHECKER_CODE  # nor the checkers' own code, which holds the references


def _breaks_a_rule(student_fn: Callable, inputs: Inputs) -> bool:
    """Print the hint and return True when ``student_fn(*inputs)`` calls the chapter's own
    code or the checkers' (:data:`RULES`)."""
    hint = forbidden_call(student_fn, inputs, RULES)
    if hint:
        print(f"hint: {hint}")
    return hint is not None


# ----------------------------------------------------------------------------- input

BERT_INPUT_MISTAKES = {
    "sep_a_in_b": (
        "the <sep> after A is in segment 1: it closes the first sentence, so <cls> A <sep> "
        "take segment 0 and only B and the last <sep> take segment 1"
    ),
    "last_sep_in_a": (
        "the last <sep> is in segment 0: it closes B, so it takes segment 1 with B's tokens"
    ),
    "all_segment_0": (
        "every position has segment 0: B and the last <sep> take segment 1, E_segment[1]"
    ),
    "segments_swapped": (
        "the segments are swapped: <cls> A <sep> take segment 0, B <sep> segment 1"
    ),
    "no_segment": "the segment embedding is missing: add E_segment[segments]",
    "no_position": "the position embedding is missing: add P[:steps], one row per position",
    "positions_from_1": (
        "the positions start at 1: <cls> is at position 0, so add P[:steps], not P[1:steps + 1]"
    ),
    "positions_per_sentence": (
        "the positions restart at B: BERT numbers the whole input 0, 1, ..., steps - 1; the "
        "segments, not the positions, tell the sentences apart"
    ),
    "no_cls": "<cls> is missing: the input starts with <cls>, then A, <sep>, B, <sep>",
    "one_sep": "a <sep> is missing: one closes A and another closes B, <cls> A <sep> B <sep>",
    "ids_swapped": "<cls> and <sep> are swapped: cls_id goes first, sep_id after each sentence",
}


def _bert_input_written(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P, *, how=""):
    """BERT's input representation written out; ``how`` names one mistake of
    :data:`BERT_INPUT_MISTAKES` (none by default)."""
    cls, sep = (cls_id, sep_id) if how != "ids_swapped" else (sep_id, cls_id)
    first = [] if how == "no_cls" else [cls]
    last = [] if how == "one_sep" else [sep]
    ids = [*first, *tokens_a.tolist(), sep, *tokens_b.tolist(), *last]
    len_first, len_second = len(first) + len(tokens_a) + 1, len(tokens_b) + len(last)
    segments = [0] * len_first + [1] * len_second
    if how == "sep_a_in_b":
        segments[len_first - 1] = 1
    if how == "last_sep_in_a":
        segments[-1] = 0
    if how == "all_segment_0":
        segments = [0] * len(ids)
    if how == "segments_swapped":
        segments = [1 - s for s in segments]
    steps = len(ids)
    positions = list(range(steps))
    if how == "positions_from_1":
        positions = list(range(1, steps + 1))
    if how == "positions_per_sentence":
        positions = list(range(len_first)) + list(range(len_second))
    H = E_token[torch.tensor(ids)]
    if how != "no_segment":
        H = H + E_segment[torch.tensor(segments)]
    if how != "no_position":
        H = H + P[torch.tensor(positions)]
    return H  # (steps, d)


def _bert_input(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P) -> torch.Tensor:
    """The reference: companion's own layout (``get_tokens_and_segments``) and the sum that
    ``BERTEncoder`` computes before its first block, with these weights."""
    from companion.models.bert import CLS, SEP, BERTEncoder, get_tokens_and_segments

    words, segments = get_tokens_and_segments(tokens_a.tolist(), tokens_b.tolist())
    ids = [cls_id if w == CLS else sep_id if w == SEP else w for w in words]
    vocab_size, d = E_token.shape
    with torch.random.fork_rng():  # its initial weights leave the notebook's random state alone
        encoder = BERTEncoder(vocab_size, d, 1, 1, 1, 0.0, max_len=P.shape[0]).eval()
    encoder.blks = torch.nn.Sequential()  # no block: the encoder returns its input sum, H_0
    with torch.no_grad():
        encoder.token_embedding.weight.copy_(E_token)
        encoder.segment_embedding.weight.copy_(E_segment)
        encoder.pos_embedding.copy_(P[None])
        return encoder(torch.tensor([ids]), torch.tensor([segments]), None)[0]  # (steps, d)


def _bert_input_inputs(generator: torch.Generator) -> Inputs:
    vocab_size, d = draw(generator, 12, 40), draw(generator, 3, 7)  # never the chapter's 8, 64
    cls_id = draw(generator, 0, vocab_size - 1, avoid=[4])  # never the chapter's <cls> 4
    sep_id = draw(generator, 0, vocab_size - 1, avoid=[5, cls_id])  # nor its <sep> 5
    words = torch.tensor([w for w in range(vocab_size) if w not in (cls_id, sep_id)])
    len_a, len_b = draw(generator, 1, 6), draw(generator, 1, 6)
    drawn = torch.randint(len(words), (len_a + len_b,), generator=generator)
    tokens_a, tokens_b = words[drawn[:len_a]], words[drawn[len_a:]]
    max_len = len_a + len_b + 3 + draw(generator, 1, 4)  # more rows than the input needs
    E_token = torch.randn(vocab_size, d, generator=generator)
    E_segment = torch.randn(2, d, generator=generator)
    P = torch.randn(max_len, d, generator=generator)
    return tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P


def check_bert_input(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """Build it yourself: ``student_fn(tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment,
    P)`` returns BERT's input representation of the pair ``<cls> A <sep> B <sep>``, ``(steps,
    d)`` with ``steps = len(A) + len(B) + 3``: row ``i`` is ``E_token[token_i] +
    E_segment[segment_i] + P[i]``, with segment 0 for ``<cls>``, A and the first ``<sep>``, and
    1 for B and the last ``<sep>``. ``tokens_a`` and ``tokens_b`` are 1-D tensors of ids;
    ``E_token`` is ``(vocab_size, d)``, ``E_segment`` ``(2, d)`` and ``P`` ``(max_len, d)``,
    ``max_len >= steps``. It must not call companion's BERT code."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _bert_input_inputs(seeded_generator(start))):
        return False

    def wrong(how: str) -> Callable[..., torch.Tensor]:
        return lambda *inputs: _bert_input_written(*inputs, how=how)

    return check(
        student_fn,
        _bert_input,
        _bert_input_inputs,
        mistakes=[(wrong(how), hint) for how, hint in BERT_INPUT_MISTAKES.items()],
        seed=start,
        atol=1e-5,
        shape_hints=[
            (
                lambda tokens_a, tokens_b, cls_id, sep_id, E_token, E_segment, P: (
                    1,
                    len(tokens_a) + len(tokens_b) + 3,
                    E_token.shape[1],
                ),
                "one pair gives a (steps, d) matrix: drop the batch axis",
            ),
        ],
    )


# ----------------------------------------------------------------------------- gather


def _gather(X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
    """``out[b, j] = X[b, pred_positions[b, j]]``: ``(batch, num_preds, d)``."""
    rows = torch.arange(X.shape[0])[:, None]  # (batch, 1), broadcast against (batch, preds)
    return X[rows, pred_positions]


def _gather_cycled_rows(X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
    """The batch index built with ``repeat`` instead of ``repeat_interleave``."""
    batch, preds = pred_positions.shape
    rows = torch.arange(batch).repeat(preds)  # 0 1 2 0 1 2 ...: rows and positions mismatched
    return X[rows, pred_positions.reshape(-1)].reshape(batch, preds, -1)


def _gather_inputs(generator: torch.Generator) -> Inputs:
    batch = draw(generator, 2, 5)
    # num_preds != batch, so an answer with the two axes swapped has the wrong shape
    preds, d = batch + draw(generator, 1, 3), draw(generator, 3, 9)
    steps = draw(generator, preds + 2, 14)
    X = torch.randn(batch, steps, d, generator=generator)
    return X, torch.randint(0, steps, (batch, preds), generator=generator)


def check_gather_positions(
    student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], *, seed: int | None = None
) -> bool:
    """``student_fn(X, pred_positions)`` with ``X`` ``(batch, steps, d)`` and ``pred_positions``
    ``(batch, num_preds)`` returns ``(batch, num_preds, d)``: row ``b``'s outputs at its own
    positions ``pred_positions[b]``."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _gather_inputs(seeded_generator(start))):
        return False
    return check(
        student_fn,
        _gather,
        _gather_inputs,
        mistakes=[
            (
                _gather_cycled_rows,
                "the rows and the positions are paired wrongly: the row index must repeat each "
                "row num_preds times (0 0 1 1 ..., repeat_interleave), not cycle (0 1 0 1 ...)",
            ),
        ],
        seed=start,
        shape_hints=[
            (
                lambda X, positions: (X.shape[0], *positions.shape, X.shape[-1]),
                "X[:, pred_positions] reads every row's positions from every row, shape "
                "(batch, batch, num_preds, d): pair row b with pred_positions[b] (index the batch "
                "axis with a (batch, 1) column of row numbers)",
            ),
        ],
    )


# ----------------------------------------------------------------------------- loss


def _mlm_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")  # (batch, preds)
    return (losses * weights).sum() / weights.sum()


def _mlm_loss_unweighted(logits, labels, weights):
    return F.cross_entropy(logits.transpose(1, 2), labels)


def _mlm_loss_row_means(logits, labels, weights):
    losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    return ((losses * weights).sum(dim=1) / weights.sum(dim=1)).mean()


def _mlm_loss_over_all_slots(logits, labels, weights):
    losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    return (losses * weights).mean()


def _loss_inputs(generator: torch.Generator) -> Inputs:
    batch, preds = draw(generator, 3, 7), draw(generator, 3, 6)
    vocab = draw(generator, 5, 20)
    logits = 2 * torch.randn(batch, preds, vocab, generator=generator)
    labels = torch.randint(0, vocab, (batch, preds), generator=generator)
    counts = torch.randint(1, preds + 1, (batch,), generator=generator)  # >= 1 real per row
    counts[0], counts[1] = 1, preds  # rows of 1 and of all predictions: row means then differ
    weights = (torch.arange(preds) < counts[:, None]).float()  # (batch, preds)
    return logits, labels, weights


def check_mlm_loss(
    student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    seed: int | None = None,
) -> bool:
    """``student_fn(logits, labels, weights)`` with logits ``(batch, num_preds, vocab)`` and
    labels and weights ``(batch, num_preds)`` returns the scalar mean cross-entropy over the
    predictions of weight 1 (weight 0 marks padding)."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _loss_inputs(seeded_generator(start))):
        return False
    return check(
        student_fn,
        _mlm_loss,
        _loss_inputs,
        mistakes=[
            (
                _mlm_loss_unweighted,
                "the padding slots (weight 0) are averaged in: multiply each loss by its weight "
                "and divide by the sum of the weights",
            ),
            (
                _mlm_loss_over_all_slots,
                "divided by the number of slots, padding included: divide by weights.sum(), "
                "the number of real predictions",
            ),
            (
                _mlm_loss_row_means,
                "a mean of per-sentence means: every prediction should count the same, so sum "
                "over the whole batch and divide by weights.sum() once",
            ),
        ],
        seed=start,
    )


# ----------------------------------------------------------------------------- masking

MASK_RULE = (0.8, 0.1, 0.1)  # <mask>, a random token, kept


class _Sentence:
    """One random input of the masking checker, with its reference facts."""

    def __init__(self, generator: torch.Generator) -> None:
        def randint(low: int, high: int) -> int:
            return draw(generator, low, high)

        self.vocab_size = randint(20, 60)
        cls, sep, mask = torch.randperm(8, generator=generator)[:3].tolist()  # new ids each time
        self.special_ids, self.mask_id = [cls, sep], mask
        words = [w for w in range(self.vocab_size) if w not in (cls, sep, mask)]
        length_a = randint(1, 25)
        pair = randint(0, 1) == 1  # sentence pairs have a second <sep> inside
        length_b = randint(1, 10) if pair else 0
        drawn = torch.randint(len(words), (length_a + length_b,), generator=generator)
        body = [words[i] for i in drawn.tolist()]
        tokens = [cls, *body[:length_a], sep] + ([*body[length_a:], sep] if pair else [])
        self.tokens = torch.tensor(tokens)
        self.candidates = [i for i, t in enumerate(tokens) if t not in (cls, sep)]
        self.num_preds = min(len(self.candidates), max(1, round(0.15 * len(tokens))))


def _arguments(sentence: _Sentence, seed: int) -> tuple:
    """What the student's function is called with: tokens, special ids, mask id, vocabulary
    size and a generator seeded with ``seed``."""
    return (
        sentence.tokens.clone(),
        list(sentence.special_ids),
        sentence.mask_id,
        sentence.vocab_size,
        seeded_generator(seed),
    )


def _problem(result, sentence: _Sentence) -> str | None:
    """What is wrong with one answer, whatever the random draws; ``None`` if nothing is."""
    if not (isinstance(result, tuple | list) and len(result) == 3):
        return "return a tuple (inputs, pred_positions, labels)"
    if not all(isinstance(r, torch.Tensor) for r in result):
        return "inputs, pred_positions and labels must each be a torch.Tensor"
    inputs, positions, labels = (r.detach().cpu().long() for r in result)
    tokens, n = sentence.tokens, len(sentence.tokens)
    if inputs.shape != tokens.shape:
        return (
            f"inputs must have the shape of tokens {tuple(tokens.shape)}; got {tuple(inputs.shape)}"
        )
    if positions.dim() != 1 or labels.shape != positions.shape:
        return (
            "pred_positions and labels must be 1-D and of the same length; got "
            f"{tuple(positions.shape)} and {tuple(labels.shape)}"
        )
    if len(positions) != sentence.num_preds:
        return (
            f"a sentence of {n} tokens ({len(sentence.candidates)} of them not special) needs "
            f"{sentence.num_preds} predictions, max(1, round(0.15 * {n})) with <cls> and <sep> "
            f"counted, as BERT and d2l do; got {len(positions)}"
        )
    if len(positions) and (positions.min() < 0 or positions.max() >= n):
        return f"pred_positions must lie in [0, {n}); got {positions.tolist()}"
    if any(tokens[p] in sentence.special_ids for p in positions.tolist()):
        return "a <cls> or <sep> was chosen for prediction: only the other tokens are candidates"
    if len(set(positions.tolist())) < len(positions):
        return f"a position was chosen twice: draw without replacement; got {positions.tolist()}"
    if (positions[1:] < positions[:-1]).any():
        return f"sort pred_positions in ascending order, as d2l does; got {positions.tolist()}"
    if not torch.equal(labels, tokens[positions]):
        if torch.equal(labels, inputs[positions]):
            return "the labels are the corrupted inputs: a label is the original token"
        return "the labels must be the original tokens at pred_positions"
    others = torch.ones(n, dtype=torch.bool)
    others[positions] = False
    if not torch.equal(inputs[others], tokens[others]):
        return "a token that was not chosen for prediction changed: only pred_positions change"
    return None


def _five_sigma(count: float, expected: float, variance: float) -> bool:
    return abs(count - expected) <= 5 * math.sqrt(variance)


def check_mask_sentence(
    student_fn: Callable, *, trials: int = 800, seed: int | None = None
) -> bool:
    """Build it yourself: ``student_fn(tokens, special_ids, mask_id, vocab_size, generator)``
    masks one sentence for a masked language model, with BERT's 80/10/10 rule.

    ``tokens`` is a 1-D tensor (``<cls> ... <sep>``, or a pair with two ``<sep>``);
    ``special_ids`` holds the ids of ``<cls>`` and ``<sep>``. Choose ``max(1, round(0.15 *
    len(tokens)))`` of the other positions at random (all of them if fewer), and replace each
    chosen token by ``mask_id`` with probability 0.8, by a random id in ``[0, vocab_size)`` with
    probability 0.1, and leave it with probability 0.1. Draw only from ``generator``. Return
    ``(inputs, pred_positions, labels)``: the corrupted copy of ``tokens``, the chosen positions
    in ascending order and the original tokens there.
    """
    name = getattr(student_fn, "__name__", "your function")
    start = first_seed(seed)
    with torch.random.fork_rng():
        if _breaks_a_rule(student_fn, _arguments(_Sentence(seeded_generator(start)), start)):
            return False
    counts = {"mask": 0.0, "kept": 0.0, "other": 0.0}
    expected = dict(counts)
    variance = dict(counts)
    first_positions, samples, early_half = 0, 0, 0
    with torch.random.fork_rng():  # the notebook's global random state is left alone
        for trial in range(trials):
            sentence = _Sentence(seeded_generator(start + trial))
            result, verdict = run_student(student_fn, *_arguments(sentence, start + trial))
            if trial < 5 and not verdict:  # the same generator state must give the same answer
                again, verdict = run_student(student_fn, *_arguments(sentence, start + trial))
            if verdict:
                print(verdict)
                return False
            problem = _problem(result, sentence)
            if problem:
                print(f"hint: {problem}")
                return False
            inputs, positions, _ = (r.detach().cpu().long() for r in result)
            if trial < 5 and not all(torch.equal(a.cpu(), b) for a, b in zip(again, result)):
                print(
                    "hint: two calls with generators in the same state gave different masks: "
                    "draw every random number from `generator` (torch.rand(..., "
                    "generator=generator)), not from torch's global generator"
                )
                return False
            _tally(sentence, inputs, positions, counts, expected, variance)
            k, candidates = len(positions), sentence.candidates
            if len(candidates) >= 3 * k:  # a first-k rule would show here
                samples += 1
                first_positions += positions.tolist() == candidates[:k]
                middle = candidates[len(candidates) // 2]
                early_half += sum(p < middle for p in positions.tolist()) / k
    hint = _frequency_hint(counts, expected, variance)
    if hint is None and samples and first_positions > samples / 2:
        hint = (
            "the chosen positions are the first candidates: choose them uniformly at random "
            "(for example with torch.randperm(..., generator=generator))"
        )
    if hint is None and samples and not _five_sigma(early_half, samples / 2, samples / 4):
        hint = (
            f"the chosen positions fall in the first half of the candidates "
            f"{early_half / samples:.0%} of the time, not about half: choose them uniformly"
        )
    if hint:
        print(f"hint: {hint}")
        return False
    print(f"pass: {name} follows BERT's rule on {trials} random sentences")
    return True


def _tally(sentence, inputs, positions, counts, expected, variance) -> None:
    """Add one sentence's outcomes and their expectation under the 80/10/10 rule. A random
    draw of the mask id counts as ``<mask>``, a draw of the token itself as kept."""
    p_mask, p_random, p_keep = MASK_RULE
    V = sentence.vocab_size
    probabilities = {
        "mask": p_mask + p_random / V,
        "kept": p_keep + p_random / V,
        "other": p_random * (V - 2) / V,
    }
    for position in positions.tolist():
        new, old = int(inputs[position]), int(sentence.tokens[position])
        outcome = "mask" if new == sentence.mask_id else "kept" if new == old else "other"
        counts[outcome] += 1
        for key, p in probabilities.items():
            expected[key] += p
            variance[key] += p * (1 - p)


def _frequency_hint(counts, expected, variance) -> str | None:
    total = sum(counts.values())
    share = {k: counts[k] / total for k in counts}
    if all(_five_sigma(counts[k], expected[k], variance[k]) for k in counts):
        return None
    if share["mask"] > 0.97:
        return (
            "every chosen token became the mask: BERT replaces only 80% by the mask, 10% by a "
            "random token and keeps 10%, so that the model also learns about tokens it can see"
        )
    if share["other"] < 0.02:
        return "no chosen token was replaced by a random token: 10% should be"
    if share["kept"] < 0.05:
        return "no chosen token was left as it was: 10% should be"
    return (
        f"<mask>/kept/random shares are {share['mask']:.3f}/{share['kept']:.3f}/"
        f"{share['other']:.3f}; BERT's rule gives about 0.8/0.1/0.1"
    )


# ----------------------------------------------------------------------------- LoRA


def _lora(X, W, A, B, alpha, *, scale: str = "alpha/r") -> torch.Tensor:
    """``X W^T + (alpha / r) X A^T B^T``, right by default; each keyword reproduces one typical
    mistake. ``W`` is ``(d_out, d_in)``, ``A`` ``(r, d_in)``, ``B`` ``(d_out, r)``."""
    r = A.shape[0]
    factor = {"alpha/r": alpha / r, "none": 1.0, "alpha": alpha, "r/alpha": r / alpha}[scale]
    update = X @ A.T @ B.T  # (batch, r), then (batch, d_out)
    return X @ W.T + factor * update


def _lora_inputs(generator: torch.Generator) -> Inputs:
    batch, d_in = draw(generator, 2, 5), draw(generator, 4, 12)
    d_out = draw(generator, 3, 11, avoid=[d_in])  # not square: a transposed W shows
    r = draw(generator, 1, 3)
    X = torch.randn(batch, d_in, generator=generator)
    W = torch.randn(d_out, d_in, generator=generator) / d_in**0.5
    A = torch.randn(r, d_in, generator=generator)
    B = torch.randn(d_out, r, generator=generator)  # not zero, so the update shows
    alpha = float(draw(generator, 2, 16, avoid=[r]))
    return X, W, A, B, alpha


def check_lora_forward(student_fn: Callable[..., torch.Tensor], *, seed: int | None = None) -> bool:
    """sec-pretraining: ``student_fn(X, W, A, B, alpha)`` is a frozen linear layer with LoRA's
    low-rank update (Hu et al., 2022): ``X W^T + (alpha / r) X A^T B^T`` for ``X`` ``(batch,
    d_in)``, ``W`` ``(d_out, d_in)``, ``A`` ``(r, d_in)`` and ``B`` ``(d_out, r)``; returns
    ``(batch, d_out)``."""
    start = first_seed(seed)
    if _breaks_a_rule(student_fn, _lora_inputs(seeded_generator(start))):
        return False
    return check(
        student_fn,
        _lora,
        _lora_inputs,
        mistakes=[
            (
                lambda *inputs: _lora(*inputs, scale="none"),
                "the update is not scaled: multiply B A x by alpha / r (r = A.shape[0])",
            ),
            (
                lambda *inputs: _lora(*inputs, scale="alpha"),
                "the update is scaled by alpha: divide it by the rank too, alpha / r",
            ),
            (
                lambda *inputs: _lora(*inputs, scale="r/alpha"),
                "the scale is upside down: alpha / r, not r / alpha",
            ),
            (
                lambda X, W, A, B, alpha: (alpha / A.shape[0]) * X @ A.T @ B.T,
                "the frozen weight is missing: LoRA adds the update to X W^T, it does not "
                "replace it",
            ),
            (
                lambda X, W, A, B, alpha: X @ W.T,
                "the update is missing: add (alpha / r) X A^T B^T to X W^T",
            ),
        ],
        seed=start,
        atol=1e-4,
    )
