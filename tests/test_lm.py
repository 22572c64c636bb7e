"""GPT: causal, cached generation equal to uncached, shapes and errors, data and loss."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from companion.data.tasks.language import (
    PAD_INDEX,
    cross_entropy_per_token,
    invented_sentences,
    invented_words,
    language_model_vocab,
    lm_arrays,
    next_token_loss,
    to_sentences,
)
from companion.models.decoder import GPT
from companion.models.vit import ViTBlock

VOCAB, HIDDENS, MAX_LEN = 29, 16, 12
TIGHT = {"atol": 1e-5, "rtol": 1e-5}


def make_gpt(seed: int = 0, **options) -> GPT:
    torch.manual_seed(seed)
    settings = dict(
        num_hiddens=HIDDENS,
        mlp_num_hiddens=24,
        num_heads=4,
        num_blks=2,
        max_len=MAX_LEN,
        dropout=0.1,
    )
    settings.update(options)
    return GPT(VOCAB, **settings).eval()


def tokens(batch: int, steps: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, steps), generator=torch.Generator().manual_seed(seed))


def count_positions(model: GPT) -> list[int]:
    """A list that grows by the number of positions each forward pass embeds."""
    counts: list[int] = []
    model.pos_embedding.register_forward_hook(lambda m, inputs, out: counts.append(out.shape[0]))
    return counts


# ----------------------------------------------------------------------------- the model


def test_gpt_is_a_stack_of_vit_blocks_and_returns_logits_per_position():
    model = make_gpt()
    assert all(isinstance(blk, ViTBlock) for blk in model.blks) and len(model.blks) == 2
    assert model(tokens(3, 7)).shape == (3, 7, VOCAB)


@given(st.integers(1, MAX_LEN - 1), st.integers(0, VOCAB - 1), st.integers(0, 1000))
def test_changing_a_later_token_never_changes_earlier_logits(position, new_token, seed):
    model = make_gpt()
    X = tokens(2, MAX_LEN, seed)
    changed = X.clone()
    changed[:, position] = new_token
    before, after = model(X), model(changed)
    torch.testing.assert_close(after[:, :position], before[:, :position], atol=1e-6, rtol=0)


def test_the_mask_matters_a_later_token_does_change_later_logits():
    model = make_gpt()
    X = tokens(1, 6)
    changed = X.clone()
    changed[0, 2] = (X[0, 2] + 1) % VOCAB
    assert not torch.allclose(model(X)[:, 2:], model(changed)[:, 2:], atol=1e-3)


@pytest.mark.parametrize("prompt_len", [1, 4])
def test_step_by_step_logits_with_the_cache_equal_whole_sequence_logits(prompt_len):
    model = make_gpt()
    X = tokens(3, MAX_LEN, seed=5)
    whole = model(X)  # (batch, steps, vocab)
    caches = model.new_caches()
    pieces = [model(X[:, :prompt_len], caches)]
    for t in range(prompt_len, MAX_LEN):
        pieces.append(model(X[:, t : t + 1], caches))
        assert len(caches[0]) == t + 1
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, **TIGHT)


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": 0.0},
        {"temperature": 1.0},
        {"temperature": 0.7, "top_k": 5},
        {"temperature": 1.3, "top_p": 0.8},
    ],
)
def test_generate_with_and_without_the_cache_gives_identical_tokens(options):
    model = make_gpt(tie_weights=False)
    prompt = tokens(4, 3, seed=2)
    results = []
    for use_cache in (True, False):
        generator = torch.Generator().manual_seed(11)
        results.append(
            model.generate(prompt, 8, generator=generator, use_cache=use_cache, **options)
        )
    assert results[0].shape == (4, 11)
    assert torch.equal(results[0][:, :3], prompt)
    assert torch.equal(results[0], results[1])
    if options["temperature"] == 0:  # greedy: each new token is the argmax of the model's logits
        full = results[0]
        logits = model(full[:, :-1])[:, 2:]  # (batch, new tokens, vocab)
        assert torch.equal(logits.argmax(-1), full[:, 3:])


def test_cache_processes_each_position_once():
    model = make_gpt()
    prompt, new = tokens(2, 4), 7
    counts = count_positions(model)
    model.generate(prompt, new, temperature=0.0)
    assert counts == [4] + [1] * (new - 1)  # the prompt once, then one position per token
    counts.clear()
    model.generate(prompt, new, temperature=0.0, use_cache=False)
    assert counts == [4 + t for t in range(new)]  # the whole prefix, again and again
    assert sum(counts) == new * 4 + new * (new - 1) // 2


def test_generate_restores_training_mode_and_samples_differently_per_seed():
    model = make_gpt().train()
    prompt = tokens(8, 1)
    a = model.generate(prompt, 6, generator=torch.Generator().manual_seed(0))
    b = model.generate(prompt, 6, generator=torch.Generator().manual_seed(1))
    assert model.training and not torch.equal(a, b)


def test_tied_embeddings_share_the_token_matrix():
    tied, untied = make_gpt(), make_gpt(tie_weights=False)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(untied) - count(tied) == VOCAB * HIDDENS
    assert tied.head is None
    X = tokens(1, 3)
    with torch.no_grad():
        tied.token_embedding.weight[5] += 1.0  # token 5's output score moves with its input row
        logits = tied(X)
        torch.testing.assert_close(
            logits[..., 5],
            tied.ln.forward(_final_hidden(tied, X)) @ tied.token_embedding.weight[5],
        )


def _final_hidden(model: GPT, X: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(X.shape[1])
    H = model.token_embedding(X) + model.pos_embedding(positions)
    for blk in model.blks:
        H = blk(H, causal=True)
    return H


def test_bad_inputs_raise_value_errors():
    model = make_gpt()
    with pytest.raises(ValueError, match=r"X must be 2-D \(batch, num_steps\); got shape \(5,\)"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match=rf"outside the vocabulary \[0, {VOCAB}\)"):
        model(torch.full((1, 3), VOCAB))
    with pytest.raises(ValueError, match=r"X of shape \(1, 13\) after 0 cached steps needs 13"):
        model(tokens(1, MAX_LEN + 1))
    caches = model.new_caches()
    model(tokens(1, 10), caches)
    with pytest.raises(ValueError, match="after 10 cached steps needs 13 positions; learned"):
        model(tokens(1, 3), caches)
    with pytest.raises(TypeError, match=r"caches must be what new_caches\(\) returns"):
        model(tokens(1, 3), [caches[0]])
    with pytest.raises(ValueError, match="max_new_tokens must be a positive integer; got 0"):
        model.generate(tokens(1, 2), 0)
    with pytest.raises(ValueError, match="prompt of 5 steps and max_new_tokens=9 need 13 pos"):
        model.generate(tokens(1, 5), 9)
    with pytest.raises(ValueError, match="prompt must hold integer token ids"):
        model.generate(torch.zeros(1, 2), 3)
    with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
        model.generate(tokens(1, 2), 3, top_k=0)
    model.generate(tokens(1, 5), 8)  # exactly max_len positions: allowed


# ----------------------------------------------------------------------------- data and loss


def test_lm_arrays_shift_by_one_with_bos_eos_and_padding():
    vocab = language_model_vocab()
    assert len(vocab) == 4 + len(invented_words())
    words = invented_words()  # articles, ne, nouns...
    sentences = [[words[1], words[9]], [words[0], words[10], words[8]]]
    inputs, labels = lm_arrays(sentences, vocab, num_steps=5)
    ids = vocab[[*sentences[0], *sentences[1]]]
    assert vocab.unk not in ids
    assert inputs.tolist() == [
        [vocab.bos, ids[0], ids[1], PAD_INDEX, PAD_INDEX],
        [vocab.bos, ids[2], ids[3], ids[4], PAD_INDEX],
    ]
    assert labels.tolist() == [
        [ids[0], ids[1], vocab.eos, PAD_INDEX, PAD_INDEX],
        [ids[2], ids[3], ids[4], vocab.eos, PAD_INDEX],
    ]
    assert vocab.pad == PAD_INDEX
    with pytest.raises(ValueError, match="a sentence of 3 words needs num_steps >= 4; got num_st"):
        lm_arrays(sentences, vocab, num_steps=3)
    inputs, _ = lm_arrays(invented_sentences(300, seed=0), vocab)  # the default fits them all
    assert (inputs != vocab.unk).all()


def test_cross_entropy_per_token_weighs_every_token_once():
    vocab = language_model_vocab()
    arrays = lm_arrays(invented_sentences(50, seed=0), vocab)
    torch.manual_seed(0)
    model = GPT(len(vocab), 16, 32, 2, 1, 13).eval()
    by_batches = cross_entropy_per_token(model, arrays, batch_size=7)  # uneven batches
    logits = model(arrays[0])
    labels = arrays[1]
    keep = labels != PAD_INDEX
    per_token = torch.nn.functional.cross_entropy(logits[keep], labels[keep])
    assert by_batches == pytest.approx(per_token.item(), rel=1e-5)
    # The mean loss of fit is the same quantity, on one batch
    assert next_token_loss(model, arrays).item() == pytest.approx(per_token.item(), rel=1e-5)
    # Untrained, with small embeddings: close to the uniform guess over the vocabulary
    assert abs(by_batches - math.log(len(vocab))) < 0.1


def test_to_sentences_cuts_at_the_first_eos():
    vocab = language_model_vocab()
    words = invented_words()
    ids = vocab[words[:3]]
    rows = torch.tensor(
        [
            [vocab.bos, *ids, vocab.eos, ids[0]],
            [vocab.bos, ids[0], vocab.eos, vocab.eos, ids[1], ids[2]],
            [vocab.bos, *ids, ids[0], ids[1]],
        ]
    )
    assert to_sentences(rows, vocab) == [words[:3], words[:1], [*words[:3], *words[:2]]]
    assert to_sentences(rows[:, 1:], vocab)[1] == words[:1]  # no <bos> to drop


def test_time_to_quality_reports_its_recipe(monkeypatch):
    from companion.experiments.recipes import TimeToQuality, gpt

    monkeypatch.setattr(gpt, "RECIPE_SENTENCES", 256)
    monkeypatch.setattr(gpt, "RECIPE_EPOCHS", 2)
    monkeypatch.setattr(gpt, "TARGET_GAP", 100.0)  # met after the first epoch
    result = gpt.time_to_quality(seed=1, device=torch.device("cpu"))
    assert isinstance(result, TimeToQuality)
    assert result.reached is True and result.epochs == 1
    assert "100.0" in result.target and result.seconds > 0
    # an untrained-ish model sits above the floor, by less than the uniform guess
    assert 0 < result.score < math.log(len(language_model_vocab()))
    monkeypatch.setattr(gpt, "TARGET_GAP", 1e-6)  # never met: both epochs run
    result = gpt.time_to_quality(seed=1, device=torch.device("cpu"))
    assert result.reached is False and result.epochs == 2


def test_show_masks_draws_every_mask_on_the_same_0_to_1_scale(tmp_path):
    import matplotlib.pyplot as plt

    from companion.figures.lm import show_masks

    everything = torch.ones(4, 4, dtype=torch.bool)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    show_masks(
        torch.stack([everything, causal]),
        ["all", "causal"],
        list("abcd"),
        path=tmp_path / "masks.png",
    )
    fig = plt.gcf()
    images = [ax.images[0] for ax in fig.axes]
    assert [image.get_clim() for image in images] == [(0, 1), (0, 1)]
    assert images[0].get_array().min() == 1  # all True: drawn dark, not rescaled
    assert [ax.get_title() for ax in fig.axes] == ["all", "causal"]
    assert (tmp_path / "masks.png").stat().st_size > 0
    plt.close(fig)
    with pytest.raises(ValueError, match=r"len\(titles\)=3.*\(2, 4, 4\)"):
        show_masks(torch.stack([everything, causal]), ["a", "b", "c"])
