"""The key-value cache: decoding one step at a time with it gives exactly what recomputing
everything gives, for every decoder, and beam search keeps the encoder's part once per example.

The reference here is the slow obvious way: a decoder that keeps only the tokens so far and, at
every step, runs the whole prefix through the real decoder with a fresh state."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from companion import _validate
from companion.generation.decoding import EOS_CHECK_EVERY, beam_search, decode_steps, greedy_decode
from companion.layers.attention import record_attention
from companion.layers.kv_cache import KVCache
from companion.layers.losses import sequence_loss
from companion.models.decoder import GPT, DecoderLM, llama_config
from companion.models.seq2seq import (
    EncoderDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from companion.models.transformer import (
    BlockInputCacheDecoder,
    NoCacheDecoder,
    TransformerDecoder,
    TransformerEncoder,
)
from companion.training.train import weight_decay_groups

VOCAB, BOS, EOS = 11, 0, 1


def transformer(seed: int) -> EncoderDecoder:
    torch.manual_seed(seed)
    return EncoderDecoder(
        TransformerEncoder(VOCAB, 16, 32, 4, 2, 0.0), TransformerDecoder(VOCAB, 16, 32, 4, 2, 0.0)
    ).eval()


def bahdanau(seed: int) -> EncoderDecoder:
    torch.manual_seed(seed)
    return EncoderDecoder(
        Seq2SeqEncoder(VOCAB, 8, 16, 2), Seq2SeqAttentionDecoder(VOCAB, 8, 16, 2)
    ).eval()


def fixed_context(seed: int) -> EncoderDecoder:
    torch.manual_seed(seed)
    return EncoderDecoder(Seq2SeqEncoder(VOCAB, 8, 16, 2), Seq2SeqDecoder(VOCAB, 8, 16, 2)).eval()


MODELS = [transformer, bahdanau, fixed_context]


def source(batch: int, steps: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(2, VOCAB, (batch, steps), generator=generator)
    return src, torch.randint(1, steps + 1, (batch,), generator=generator)


def index_rows(value, index: torch.Tensor, batch_axis: int):
    if isinstance(value, torch.Tensor):
        return value.index_select(batch_axis, index)
    if isinstance(value, (tuple, list)):
        return type(value)(index_rows(v, index, batch_axis) for v in value)
    return value


class Recompute(nn.Module):
    """A decoder with no cache at all: each step re-runs the whole prefix from a fresh state.
    Its state is the encoder's output, repeated per row in beam search, and the prefix."""

    def __init__(self, decoder: nn.Module, encoder_batch_axis: int) -> None:
        super().__init__()
        self.inner, self.axis = decoder, encoder_batch_axis

    def init_state(self, enc_all_outputs, enc_valid_lens):
        return [enc_all_outputs, enc_valid_lens, None]

    def forward(self, X, state):
        enc_all_outputs, enc_valid_lens, prefix = state
        prefix = X if prefix is None else torch.cat((prefix, X), dim=1)
        fresh = self.inner.init_state(enc_all_outputs, enc_valid_lens)
        logits, _ = self.inner(prefix, fresh)  # (rows, prefix steps, vocab)
        return logits[:, -X.shape[1] :], [enc_all_outputs, enc_valid_lens, prefix]

    def reorder_state(self, state, index):
        enc_all_outputs, enc_valid_lens, prefix = state
        return [
            index_rows(enc_all_outputs, index, self.axis),
            None if enc_valid_lens is None else enc_valid_lens[index],
            None if prefix is None else prefix[index],
        ]


def recomputing(model: EncoderDecoder) -> EncoderDecoder:
    time_major = not isinstance(model.decoder, TransformerDecoder)  # GRU outputs: (T, batch, H)
    return EncoderDecoder(model.encoder, Recompute(model.decoder, 1 if time_major else 0)).eval()


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("seed", [0, 1])
def test_step_by_step_with_the_cache_equals_teacher_forcing(make, seed):
    model = make(seed)
    src, valid_len = source(3, seed=seed)
    tgt = torch.randint(0, VOCAB, (3, 7), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        enc_all_outputs = model.encoder(src, valid_len)
        whole, _ = model.decoder(tgt, model.decoder.init_state(enc_all_outputs, valid_len))
        state = model.decoder.init_state(enc_all_outputs, valid_len)
        steps = []
        for t in range(tgt.shape[1]):
            logits, state = model.decoder(tgt[:, t : t + 1], state)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, atol=1e-5, rtol=1e-5)


def test_the_transformer_cache_holds_projected_keys_and_values_per_head():
    model = transformer(0)
    src, valid_len = source(3)
    tgt = torch.randint(0, VOCAB, (3, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        enc_outputs = model.encoder(src, valid_len)
        state = model.decoder.init_state(enc_outputs, valid_len)
        for t in range(5):
            _, state = model.decoder(tgt[:, t : t + 1], state)
    for block, cache in zip(model.decoder.blks, state[2]):
        assert isinstance(cache.self_attention, KVCache) and len(cache.self_attention) == 5
        assert cache.self_attention.keys.shape == (3, 4, 5, 4)  # (batch, heads, steps, head_dim)
        assert cache.cross_attention.keys.shape == (3, 4, 6, 4)  # source steps, projected once
        expected = block.attention2.split_heads(block.attention2.W_v(enc_outputs))
        torch.testing.assert_close(cache.cross_attention.values, expected)


def test_the_cache_writes_each_step_into_room_and_copies_only_when_it_grows():
    """update() returns what concatenating every step gives, in room that is reused until it
    is full (one allocation for many steps), and select() keeps rows before further steps."""
    generator = torch.Generator().manual_seed(0)
    steps = [torch.randn(2, 3, n, 4, generator=generator) for n in (2, 1, 1, 1, 3, 1)]
    cache, rooms = KVCache(), set()
    for t, new in enumerate(steps):
        keys, values = cache.update(new, 2 * new)
        expected = torch.cat(steps[: t + 1], dim=-2)  # (2, 3, steps so far, 4)
        assert torch.equal(keys, expected) and torch.equal(values, 2 * expected)
        assert len(cache) == expected.shape[-2] and cache.keys is keys
        rooms.add(keys.untyped_storage().data_ptr())
    assert len(rooms) == 2, "room for 4 steps at the first call, then for 10 at the fourth"
    cache.select(torch.tensor([1, 1]))
    selected = cache.keys.untyped_storage().data_ptr()
    keys, _ = cache.update(steps[1], steps[1])  # the 10th step: still within the room
    torch.testing.assert_close(keys, torch.cat((expected[[1, 1]], steps[1]), dim=-2))
    assert keys.untyped_storage().data_ptr() == selected, "select kept the room: no new one"


@pytest.mark.parametrize("under_autograd", [(), (1, 3), tuple(range(8))])
def test_a_rolling_cache_returns_every_key_the_new_steps_see_with_its_position(under_autograd):
    """update() returns at least the keys the new steps' window reaches (the last `window`
    positions before the first new step, then the new ones), each with its position, in place
    or, under autograd and for chunks that wrap around the ring, out of place."""
    window, chunks = 4, [3, 1, 1, 5, 1, 2, 1, 1]
    steps = torch.randn(2, 3, sum(chunks), 5, generator=torch.Generator().manual_seed(0))
    cache, seen = KVCache(window=window), 0
    for i, n in enumerate(chunks):
        new = steps[..., seen : seen + n, :].clone().requires_grad_(i in under_autograd)
        with torch.set_grad_enabled(i in under_autograd):
            keys, values = cache.update(new, 2 * new)
        positions = cache.positions.tolist()
        needed = set(range(max(0, seen + 1 - window), seen + n))  # what the window reaches
        assert needed <= set(positions) and max(positions) < seen + n and min(positions) >= 0
        torch.testing.assert_close(keys, steps[..., positions, :])
        torch.testing.assert_close(values, 2 * steps[..., positions, :])
        seen += n
        assert cache.seen == seen and len(cache) == min(seen, window)
    cache.select(torch.tensor([1, 1, 0]))  # beams: the ring keeps its slots
    keys, _ = cache.update(steps[[1, 1, 0], :, -1:, :], steps[[1, 1, 0], :, -1:, :])
    assert keys.shape == (3, 3, window, 5) and cache.seen == seen + 1


def test_the_cross_attention_projects_the_encoder_outputs_once():
    model = transformer(0)
    calls = []
    for block in model.decoder.blks:
        block.attention2.W_k.register_forward_hook(lambda m, i, o: calls.append(i[0].shape))
    src, valid_len = source(2)
    greedy_decode(model, src, valid_len, BOS, EOS, num_steps=6)
    assert calls == [(2, 6, 16)] * 2, "one projection of the encoder outputs per block"


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_tokens_equal_recomputing_everything(make, seed):
    model = make(seed)
    src, valid_len = source(4, seed=seed)
    ours = greedy_decode(model, src, valid_len, BOS, EOS, num_steps=8)
    reference = greedy_decode(recomputing(model), src, valid_len, BOS, EOS, num_steps=8)
    assert ours.tokens == reference.tokens
    assert ours.scores == pytest.approx(reference.scores, abs=1e-4)


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_tokens_equal_recomputing_everything(make, seed):
    model = make(seed)
    src, valid_len = source(4, seed=seed)
    ours = beam_search(model, src, valid_len, BOS, EOS, num_steps=8, beam_size=3)
    reference = beam_search(recomputing(model), src, valid_len, BOS, EOS, 8, beam_size=3)
    assert ours.tokens == reference.tokens
    assert ours.scores == pytest.approx(reference.scores, abs=1e-4)


@pytest.mark.parametrize("make", MODELS)
def test_beam_search_keeps_the_encoder_state_once_per_example(make):
    model = make(0)
    seen = []

    def record(module, args):
        X, state = args
        seen.append((X.shape[0], state[0].shape))  # the encoder outputs in the state

    model.decoder.register_forward_pre_hook(record)
    src, valid_len = source(2)
    beam_search(model, src, valid_len, BOS, EOS, num_steps=5, beam_size=3)
    batch_axis = 1 if isinstance(model.decoder, Seq2SeqDecoder) else 0  # time-major there
    assert seen and all(rows == 6 for rows, _ in seen), "3 beams for each of 2 examples"
    assert all(shape[batch_axis] == 2 for _, shape in seen), "the encoder's part: 2 rows"


# --- No host syncs ----------------------------------------------------------------------------
# A GPU runs kernels asynchronously; reading a value back (`.item()`, `bool(t)`, `.tolist()`)
# makes the host wait. PyTorch's meta device has shapes but no values, so any such read raises
# there: a step that runs on meta tensors reads nothing back, and would not stall a GPU either.


def meta_batch():
    src = torch.randint(2, VOCAB, (3, 6)).to("meta")
    return src, torch.tensor([6, 3, 2]).to("meta")


@pytest.mark.parametrize("make", MODELS)
def test_a_decoding_step_reads_no_value_from_the_device(make):
    model = make(0).to("meta")
    src, valid_len = meta_batch()
    bos = torch.zeros(3, dtype=torch.long, device="meta")
    steps = EOS_CHECK_EVERY - 1  # the loop's own end-of-sequence check is not reached
    tokens, log_probs, _ = decode_steps(model, src, valid_len, bos, steps, EOS, None, False)
    assert tokens.shape == log_probs.shape == (3, steps)


@pytest.mark.parametrize("make", MODELS)
def test_a_training_step_reads_no_value_from_the_device(make):
    model = make(0).to("meta").train()
    optimizer = torch.optim.AdamW(weight_decay_groups(model, 0.01), lr=1e-3)
    src, valid_len = meta_batch()
    loss = sequence_loss(model(src, src, valid_len), src, pad_index=0, label_smoothing=0.1)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    assert loss.device.type == "meta"


@pytest.mark.parametrize("use_cache", [True, False])
def test_gpt_generation_reads_no_value_from_the_device(use_cache):
    """GPT.generate's checks (token ids, caches, sampling arguments, finite logits) read no
    value on an accelerator either: greedy, as meta has no random draws."""
    model = GPT(VOCAB, 8, 16, 2, 2, max_len=10).to("meta")
    prompt = torch.zeros(3, 2, dtype=torch.long, device="meta")
    tokens = model.generate(prompt, 4, temperature=0.0, use_cache=use_cache)
    assert tokens.shape == (3, 6) and tokens.device.type == "meta"


def test_value_checks_run_on_the_device_only_when_asked(monkeypatch):
    """The control: with the debug switch on, the checks read values, which meta cannot give."""
    monkeypatch.setattr(_validate, "CHECK_VALUES_EVERYWHERE", True)
    model = transformer(0).to("meta")
    src, valid_len = meta_batch()
    with pytest.raises(RuntimeError, match="meta"):
        model(src, src, valid_len)
    monkeypatch.setattr(_validate, "CHECK_VALUES_EVERYWHERE", False)
    with pytest.raises(ValueError, match="outside the vocabulary"):  # on the CPU: checked
        transformer(0)(torch.tensor([[VOCAB]]), torch.tensor([[1]]), torch.tensor([1]))


def test_the_benchmark_baselines_decode_the_same_tokens():
    """`python -m companion.bench decode` compares the KV cache with the design it replaced (block
    inputs cached, projected again at every step) and with no cache: all three must agree."""
    model = transformer(3)
    src, valid_len = source(4, seed=3)
    bos = torch.zeros(4, dtype=torch.long)
    expected, _, _ = decode_steps(model, src, valid_len, bos, 9, None, None, False)
    for baseline in (BlockInputCacheDecoder, NoCacheDecoder):
        other = EncoderDecoder(model.encoder, baseline(model.decoder)).eval()
        tokens, _, _ = decode_steps(other, src, valid_len, bos, 9, None, None, False)
        assert torch.equal(tokens, expected), baseline.__name__


# --- No copies of the cache -------------------------------------------------------------------
# A decoding step must read the cached keys and values where they are: copying them (as
# `repeat_interleave` for shared heads did, even with one query head per key-value head) costs
# O(t) per step, what the cache exists to avoid. Two witnesses, both on the CPU: the keys the
# attention reads are views of the cache's own storage, and no operation of the step creates a
# tensor as large as the cached keys of one layer (every operation is seen by a dispatch mode).


class NewTensors(TorchDispatchMode):
    """Records the size of every tensor an operation creates, views of and writes into its
    inputs left out."""

    def __init__(self) -> None:
        super().__init__()
        self.created: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        output = func(*args, **(kwargs or {}))
        inputs = {
            t.untyped_storage().data_ptr()
            for t in tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor)
        }
        for t in tree_leaves(output):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs:
                self.created.append((str(func), t.nbytes))
        return output


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
@pytest.mark.parametrize("window", [None, 16], ids=["growing", "rolling"])
@pytest.mark.parametrize("explicit", [False, True], ids=["fused", "explicit"])
def test_a_decoding_step_copies_nothing_of_the_cache(num_kv_heads, window, explicit):
    config = llama_config(VOCAB, num_hiddens=64, num_heads=4, num_kv_heads=num_kv_heads)
    model = DecoderLM(config.replace(window=window, max_len=128)).eval()
    read = []  # the keys and values each block's attention reads, (batch, kv_heads, keys, d)
    for blk in model.blks:
        blk.attention.attention.register_forward_pre_hook(lambda m, args: read.append(args[1:3]))
    caches = model.new_caches()
    tokens = torch.randint(0, VOCAB, (2, 48), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), record_attention(model) if explicit else nullcontext():
        model(tokens[:, :40], caches)  # the prompt; room for 80 steps, or the ring of 16
        storage = [cache.keys.untyped_storage().data_ptr() for cache in caches]
        for t in range(40, 48):
            read.clear()
            with NewTensors() as step:
                model(tokens[:, t : t + 1], caches)
            for cache, (keys, values) in zip(caches, read):
                assert keys.untyped_storage().data_ptr() == cache.keys.untyped_storage().data_ptr()
                assert (
                    values.untyped_storage().data_ptr() == cache.values.untyped_storage().data_ptr()
                )
            largest = max(step.created, key=lambda created: created[1])
            assert largest[1] < caches[0].keys.nbytes, f"step {t}: {largest} copies the cache"
    assert [cache.keys.untyped_storage().data_ptr() for cache in caches] == storage
