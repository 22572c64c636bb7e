"""What a student does wrong with each public class gets a ValueError that names the argument and
what it saw: never NaN, a silently wrong answer, or torch's own cryptic error. And a model that
raises while it evaluates is left in the mode it had."""

from __future__ import annotations

from collections.abc import Callable

import misuse_figures
import misuse_library
import misuse_text
import misuse_training
import pytest
import torch
from torch import nn

import companion as C
from companion.data.tasks.digits import ImageSet
from companion.data.tasks.language import cross_entropy_per_token
from companion.experiments.recipes.vit import classification_accuracy
from companion.generation.sampling import sample_next
from companion.layers.blocks import DecoderCache
from companion.layers.kv_cache import KVCache
from companion.models.bert import BERTClassifier, mask_tokens
from companion.models.decoder import DecoderConfig, DecoderLM, llama_config
from companion.training.pretrain import accuracy
from companion.training.train import fit

VOCAB = 11


def gpt() -> C.GPT:
    torch.manual_seed(0)
    return C.GPT(VOCAB, 8, 16, 2, 2, max_len=10).eval()


def ids(*shape: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, shape, generator=torch.Generator().manual_seed(0))


def transformer() -> C.EncoderDecoder:
    torch.manual_seed(0)
    encoder = C.TransformerEncoder(VOCAB, 8, 16, 2, 2, 0.0)
    return C.EncoderDecoder(encoder, C.TransformerDecoder(VOCAB, 8, 16, 2, 2, 0.0)).eval()


def bert() -> C.BERTModel:
    torch.manual_seed(0)
    return C.BERTModel(VOCAB, 8, 16, 2, 1, 0.0, max_len=6)


def mha() -> C.MultiHeadAttention:
    return C.MultiHeadAttention(8, 2, 0.0, query_size=8, key_size=8, value_size=8)


def vit() -> C.ViT:
    return C.ViT(8, 2, 8, 16, 2, 1, 0.0, 0.0, in_channels=1)


def gpt_caches_of_another_batch() -> None:
    model = gpt()
    caches = model.new_caches()
    with torch.no_grad():
        model(ids(3, 3), caches)
        model(ids(2, 1), caches)


def windowed(window: int | None = 3) -> C.MultiHeadAttention:
    return C.MultiHeadAttention(8, 2, 0.0, window=window, query_size=8, key_size=8, value_size=8)


def attend(layer: C.MultiHeadAttention, cache: KVCache, *, causal: bool = True) -> None:
    with torch.no_grad():
        layer(X8, X8, X8, causal=causal, cache=cache)


def shared_decoder_caches() -> None:
    model, src = transformer(), ids(2, 3)
    caches = [DecoderCache(KVCache(), KVCache(static=True))] * 2
    with torch.no_grad():
        model.decoder(ids(2, 1), [model.encoder(src), None, caches])


def mha_cache_of_another_batch() -> None:
    layer, cache = mha(), KVCache()
    with torch.no_grad():
        for batch in (2, 3):
            X = torch.randn(batch, 1, 8)
            layer(X, X, X, cache=cache)


def decoder_config(**fields: object) -> Callable[[], object]:
    return lambda: DecoderConfig(VOCAB, **fields)


def dot_attention(queries, keys, values, **kwargs) -> Callable[[], object]:
    return lambda: C.DotProductAttention(0.0)(queries, keys, values, **kwargs)


def mean_pooling(valid_lens: torch.Tensor) -> Callable[[], object]:
    classifier = BERTClassifier(bert(), pooling="mean")
    tokens, segments = ids(2, 4), torch.zeros(2, 4, dtype=torch.long)
    return lambda: classifier(tokens, segments, valid_lens)


X8 = torch.randn(2, 3, 8)

# (what a student does, the call, the exception, what its message must say)
MISUSES = [
    # GPT and its caches
    (
        "[KVCache()] * num_blks: a list in place of new_caches()",
        lambda: gpt()(ids(2, 3), [KVCache()] * 2),
        TypeError,
        r"caches must be what new_caches\(\) returns, one KVCache per block \(2\); got list",
    ),
    (
        "the caches of a model with more blocks",
        lambda: gpt()(ids(2, 3), C.DecoderLM(C.gpt2_config(VOCAB, num_blks=3)).new_caches()),
        TypeError,
        r"one KVCache per block \(2\); got ModelCaches of 3",
    ),
    (
        "a GPT cache reused for another batch size",
        gpt_caches_of_another_batch,
        ValueError,
        r"this KVCache holds a batch of 3 rows; the queries have 2",
    ),
    (
        "an empty prompt",
        lambda: gpt().generate(torch.zeros(2, 0, dtype=torch.long), 3),
        ValueError,
        r"prompt must hold at least one step; got shape \(2, 0\)",
    ),
    (
        "an empty input to GPT",
        lambda: gpt()(torch.zeros(2, 0, dtype=torch.long)),
        ValueError,
        r"X must hold at least one step",
    ),
    (
        "a prompt longer than the context",
        lambda: gpt().generate(ids(1, 11), 1),
        ValueError,
        r"prompt of shape \(1, 11\) after 0 cached steps needs 11 positions; learned positions "
        r"stop at max_len=10",
    ),
    (
        "a prompt that leaves no room for the new tokens",
        lambda: gpt().generate(ids(1, 8), 4),
        ValueError,
        r"a prompt of 8 steps and max_new_tokens=4 need 11 positions; max_len is 10",
    ),
    (
        "top_k=0",
        lambda: gpt().generate(ids(1, 2), 2, top_k=0),
        ValueError,
        r"top_k must be an integer >= 1; got 0",
    ),
    (
        "top_p=0",
        lambda: gpt().generate(ids(1, 2), 2, top_p=0),
        ValueError,
        r"top_p must be a number in \(0, 1\]; got 0",
    ),
    (
        "top_p=1.5",
        lambda: gpt().generate(ids(1, 2), 2, top_p=1.5),
        ValueError,
        r"top_p must be a number in \(0, 1\]; got 1.5",
    ),
    (
        "a temperature given as a string",
        lambda: gpt().generate(ids(1, 2), 2, temperature="1"),
        ValueError,
        r"temperature must be a number; got '1'",
    ),
    (
        "a negative temperature",
        lambda: gpt().generate(ids(1, 2), 2, temperature=-1.0),
        ValueError,
        r"temperature must be finite and >= 0; got -1.0",
    ),
    (
        "NaN logits",
        lambda: sample_next(torch.tensor([[float("nan"), 1.0]])),
        ValueError,
        r"logits must be finite in each row.*row 0 holds \[nan, 1.0\]",
    ),
    (
        "a row of logits all -inf",
        lambda: sample_next(torch.full((1, 3), float("-inf"))),
        ValueError,
        r"logits must be finite in each row",
    ),
    # attention layers
    (
        "num_heads=2.0",
        lambda: C.MultiHeadAttention(8, 2.0, 0.0),
        ValueError,
        r"num_heads must be a positive integer; got 2.0",
    ),
    (
        "num_hiddens=0",
        lambda: C.MultiHeadAttention(0, 2, 0.0),
        ValueError,
        r"num_hiddens must be a positive integer; got 0",
    ),
    (
        "float64 inputs to a float32 layer",
        lambda: mha()(*(X8.double(),) * 3),
        ValueError,
        r"queries must have the layer's dtype torch.float32; got torch.float64",
    ),
    (
        "integer inputs to an attention layer",
        lambda: mha()(*(X8.long(),) * 3),
        ValueError,
        r"queries must be floating point, like the layer; got torch.int64",
    ),
    (
        "inputs on another device than the weights",
        lambda: mha().to("meta")(X8, X8, X8),
        ValueError,
        r"queries is on cpu but the layer's weights are on meta",
    ),
    (
        "queries and keys of different dtypes",
        lambda: C.DotProductAttention(0.0)(X8.double(), X8, X8),
        ValueError,
        r"one dtype and one device; got queries torch.float64 on cpu, keys torch.float32",
    ),
    (
        "no queries",
        lambda: mha()(X8[:, :0], X8, X8),
        ValueError,
        r"queries and keys must hold at least one step each; got queries \(2, 0, 8\)",
    ),
    (
        "no keys",
        lambda: mha()(X8, X8[:, :0], X8[:, :0]),
        ValueError,
        r"queries and keys must hold at least one step each",
    ),
    (
        "a cache reused for another batch size",
        mha_cache_of_another_batch,
        ValueError,
        r"this KVCache holds a batch of 2 rows; the queries have 3",
    ),
    (
        "a rolling cache shorter than the layer's window",
        lambda: attend(windowed(3), KVCache(window=2)),
        ValueError,
        r"a rolling KVCache\(window=2\) keeps the last 2 steps, but this layer's queries see "
        r"the last 3 steps \(window=3\)",
    ),
    (
        "a rolling cache for a layer without a window",
        lambda: attend(windowed(None), KVCache(window=4)),
        ValueError,
        r"this layer's queries see every earlier step \(window=None\)",
    ),
    (
        "a static (cross-attention) cache given to causal self-attention",
        lambda: attend(mha(), KVCache(static=True)),
        ValueError,
        r"a static KVCache \(cross-attention: keys projected once, then frozen\) cannot serve "
        r"causal self-attention",
    ),
    (
        "a list as the cache",
        lambda: attend(mha(), []),
        TypeError,
        r"cache must be a KVCache or None; got list",
    ),
    (
        "a window without causal=True",
        lambda: attend(windowed(3), None, causal=False),
        ValueError,
        r"a window \(3\) and ALiBi \(False\) mask by position and are causal",
    ),
    (
        "keys with 3 heads for 4 query heads",
        dot_attention(torch.randn(2, 4, 3, 8), *(torch.randn(2, 3, 5, 8),) * 2),
        ValueError,
        r"keys and values must have as many heads as the queries, or a number of heads that "
        r"divides theirs",
    ),
    (
        "a mask and valid_lens together",
        dot_attention(X8, X8, X8, valid_lens=torch.tensor([3, 2]), mask=torch.ones(1, 3, 3) > 0),
        ValueError,
        r"give valid_lens or mask, not both: the mask replaces valid_lens",
    ),
    (
        "integer scores to masked_softmax",
        lambda: C.masked_softmax(torch.zeros(1, 2, 3, dtype=torch.long)),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    (
        "a list of vectors to an attention layer",
        lambda: mha()(X8.tolist(), X8, X8),
        TypeError,
        r"queries must be a floating-point torch.Tensor; got list",
    ),
    # the other layers take floats of their own dtype, as the attention layers do
    (
        "float64 inputs to the positional encoding",
        lambda: C.PositionalEncoding(8, 0.0)(X8.double()),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.float64",
    ),
    (
        "token ids to the positional encoding",
        lambda: C.PositionalEncoding(8, 0.0)(X8.long()),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    (
        "integer queries to RoPE",
        lambda: C.RotaryEmbedding(4)(torch.zeros(1, 2, 3, 4, dtype=torch.long)),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    (
        "bfloat16 inputs to a float32 RMSNorm",
        lambda: C.RMSNorm(8)(X8.bfloat16()),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.bfloat16",
    ),
    (
        "uint8 inputs to SwiGLU",
        lambda: C.SwiGLU(8, 16)(X8.to(torch.uint8)),
        ValueError,
        r"X must be floating point, like the layer; got torch.uint8",
    ),
    (
        "integer inputs to the position-wise FFN",
        lambda: C.PositionWiseFFN(16, 8, num_inputs=8)(X8.long()),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    (
        "float64 inputs to the ViT's MLP",
        lambda: C.ViTMLP(16, 8, num_inputs=8)(X8.double()),
        ValueError,
        r"x must have the layer's dtype torch.float32; got torch.float64",
    ),
    (
        "float64 inputs to AddNorm",
        lambda: C.AddNorm(8, 0.0)(X8.double(), X8.double()),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.float64",
    ),
    (
        "bfloat16 inputs to a float32 pre-norm block",
        lambda: C.PreNormBlock(8, 8, 16, 2, 0.0)(X8.bfloat16()),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.bfloat16",
    ),
    (
        "integer encoder outputs to a decoder block",
        lambda: C.TransformerDecoderBlock(8, 16, 2, 0.0, 0)(X8, X8.long()),
        ValueError,
        r"enc_outputs must be floating point, like the layer; got torch.int64",
    ),
    (
        "float64 encoder outputs to the masked-LM head",
        lambda: C.MaskLM(VOCAB, 8, num_inputs=8)(X8.double(), torch.zeros(2, 1, dtype=torch.long)),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.float64",
    ),
    (
        "integer inputs to the next-sentence head",
        lambda: C.NextSentencePred(num_inputs=8)(torch.zeros(2, 8, dtype=torch.long)),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    # token ids
    (
        "float token ids",
        lambda: gpt()(torch.zeros(2, 3)),
        ValueError,
        r"X must hold integer token ids \(torch.long\); got torch.float32",
    ),
    (
        "bool token ids",
        lambda: gpt()(torch.zeros(2, 3, dtype=torch.bool)),
        ValueError,
        r"X must hold integer token ids \(torch.long\); got torch.bool",
    ),
    (
        "token ids as a list",
        lambda: gpt()([[1, 2, 3]]),
        TypeError,
        r"X must be a tensor of token ids; got list",
    ),
    (
        "uint8 token ids outside the vocabulary",
        lambda: gpt()(torch.full((2, 3), 200, dtype=torch.uint8)),
        ValueError,
        r"X holds token ids from 200 to 200, outside the vocabulary \[0, 11\)",
    ),
    (
        "float source ids to greedy decoding",
        lambda: C.greedy_decode(transformer(), torch.ones(2, 3), None, 1, 2, 4),
        ValueError,
        r"src must hold integer token ids \(torch.long\); got torch.float32",
    ),
    # configurations whose fields contradict each other
    (
        "llama_config with an odd head count",
        lambda: llama_config(VOCAB, num_heads=3, num_hiddens=48),
        ValueError,
        r"llama_config shares each key-value head between two query heads, so num_heads must be "
        r"even; got num_heads=3. Pass num_kv_heads too",
    ),
    (
        "a decoder whose heads do not divide its width",
        decoder_config(num_hiddens=10, num_heads=4),
        ValueError,
        r"num_hiddens \(10\) must be divisible by num_heads \(4\)",
    ),
    (
        "num_kv_heads that does not divide num_heads",
        decoder_config(num_heads=4, num_kv_heads=3),
        ValueError,
        r"num_heads \(4\) must be divisible by num_kv_heads \(3\)",
    ),
    (
        "a window of 0",
        decoder_config(window=0),
        ValueError,
        r"window must be a positive integer; got 0",
    ),
    (
        "RoPE on heads of an odd size",
        decoder_config(num_hiddens=12, num_heads=4, positions="rope"),
        ValueError,
        r"positions='rope' rotates pairs of features: each head's num_hiddens / num_heads = "
        r"12 / 4 = 3 features must be even",
    ),
    (
        "a window in a model that is not causal",
        decoder_config(window=3, causal=False),
        ValueError,
        r"a window \(3\) and ALiBi \(positions='learned'\) mask by position and are causal",
    ),
    (
        "rope_base=1",
        decoder_config(rope_base=1.0),
        ValueError,
        r"rope_base must be a number > 1; got 1.0",
    ),
    (
        "bias='yes'",
        decoder_config(bias="yes"),
        TypeError,
        r"bias must be True or False; got the str 'yes'",
    ),
    (
        "a Transformer whose heads do not divide its width",
        lambda: C.TransformerEncoder(VOCAB, 10, 16, 4, 2, 0.0),
        ValueError,
        r"num_hiddens \(10\) must be divisible by num_heads \(4\)",
    ),
    (
        "a Transformer with an empty vocabulary",
        lambda: C.TransformerDecoder(0, 8, 16, 2, 2, 0.0),
        ValueError,
        r"vocab_size must be a positive integer; got 0",
    ),
    (
        "a BERT with no hidden units in its FFN",
        lambda: C.BERTModel(VOCAB, 8, 0, 2, 1, 0.0),
        ValueError,
        r"ffn_num_hiddens must be a positive integer; got 0",
    ),
    (
        "a ViT whose patches do not tile the image",
        lambda: C.ViT(8, 3, 8, 16, 2, 1, 0.0, 0.0),
        ValueError,
        r"img_size \(8, 8\) must be divisible by patch_size \(3, 3\)",
    ),
    (
        "a ViT whose heads do not divide its width",
        lambda: C.ViT(8, 2, 10, 16, 4, 1, 0.0, 0.0),
        ValueError,
        r"num_hiddens \(10\) must be divisible by num_heads \(4\)",
    ),
    (
        "a ViT with an MLP of no hidden units",
        lambda: C.ViT(8, 2, 8, 0, 2, 1, 0.0, 0.0),
        ValueError,
        r"mlp_num_hiddens must be a positive integer; got 0",
    ),
    (
        "a positional offset of 1.5",
        lambda: C.PositionalEncoding(8, 0.0)(X8, offset=1.5),
        ValueError,
        r"offset must be an int, the first step's position; got 1.5",
    ),
    (
        "PositionalEncoding(8.0, ...)",
        lambda: C.PositionalEncoding(8.0, 0.0),
        ValueError,
        r"num_hiddens must be a positive integer; got 8.0",
    ),
    # the Transformer and decoding
    (
        "[DecoderCache(...)] * num_blks in a decoder state",
        shared_decoder_caches,
        ValueError,
        r"state's caches must be distinct, one DecoderCache per block",
    ),
    (
        "src_valid_len as a list",
        lambda: C.greedy_decode(transformer(), ids(2, 3), [3, 2], 1, 2, 4),
        ValueError,
        r"src_valid_len must be a tensor of shape \(batch,\) = \(2,\); got a list",
    ),
    (
        "src_valid_len of the wrong shape",
        lambda: C.greedy_decode(transformer(), ids(2, 3), torch.tensor([3]), 1, 2, 4),
        ValueError,
        r"src_valid_len must be a tensor of shape \(batch,\) = \(2,\); got shape \(1,\)",
    ),
    (
        "bos_id outside the vocabulary",
        lambda: C.greedy_decode(transformer(), ids(2, 3), None, 50, 2, 4),
        ValueError,
        r"bos_id 50 is outside the vocabulary \[0, 11\)",
    ),
    (
        "eos_id outside the vocabulary, beam search",
        lambda: C.beam_search(transformer(), ids(2, 3), None, 1, 11, 4, 2),
        ValueError,
        r"eos_id 11 is outside the vocabulary \[0, 11\)",
    ),
    # BERT
    (
        "mean pooling over a row of length 0",
        mean_pooling(torch.tensor([0, 3])),
        ValueError,
        r"valid_lens must be >= 1 with pooling='mean'.*got \[0, 3\]",
    ),
    (
        "segments of 2",
        lambda: bert()(ids(2, 4), torch.full((2, 4), 2)),
        ValueError,
        r"segments holds segment ids from 2 to 2, outside the segments \[0, 2\)",
    ),
    (
        "pred_positions past the sequence",
        lambda: C.MaskLM(VOCAB, 8, num_inputs=8)(torch.randn(2, 6, 8), torch.tensor([[1, 7]] * 2)),
        ValueError,
        r"pred_positions holds positions from 1 to 7, outside the sequence \[0, 6\)",
    ),
    (
        "mask_tokens with valid_lens longer than the rows",
        lambda: mask_tokens(
            ids(2, 6),
            torch.tensor([7, 3]),
            vocab_size=VOCAB,
            mask_id=3,
            special_ids=[1, 2],
            generator=torch.Generator(),
        ),
        ValueError,
        r"valid_lens must be <= the number of steps \(6\); got 7",
    ),
    (
        "BERT tokens on another device",
        lambda: bert().to("meta")(ids(2, 4), torch.zeros(2, 4, dtype=torch.long)),
        ValueError,
        r"tokens is on cpu but the layer's weights are on meta",
    ),
    # ViT
    (
        "integer images",
        lambda: vit()(torch.ones(2, 1, 8, 8, dtype=torch.long)),
        ValueError,
        r"X must be floating point, like the layer; got torch.int64",
    ),
    (
        "float64 images",
        lambda: vit()(torch.ones(2, 1, 8, 8, dtype=torch.float64)),
        ValueError,
        r"X must have the layer's dtype torch.float32; got torch.float64",
    ),
    # data and tools
    (
        "batch_size=2.0",
        lambda: list(C.batches((torch.ones(3, 2),), 2.0)),
        ValueError,
        r"batch_size must be a positive integer; got 2.0",
    ),
    (
        "record_attention on something not a model",
        lambda: C.record_attention(5).__enter__(),
        TypeError,
        r"model must be a torch.nn.Module; got int",
    ),
    # training
    (
        "num_epochs=1.5",
        lambda: fit(
            nn.Linear(2, 2),
            lambda: [(torch.ones(1, 2),)],
            lambda m, b: m(b[0]).sum(),
            num_epochs=1.5,
            device=torch.device("cpu"),
        ),
        ValueError,
        r"num_epochs must be a positive integer; got 1.5",
    ),
] + misuse_text.MISUSES
MISUSES += misuse_training.MISUSES
MISUSES += misuse_figures.MISUSES
MISUSES += misuse_library.MISUSES


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [pytest.param(call, error, message, id=what) for what, call, error, message in MISUSES],
)
def test_a_misuse_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def misuse_list() -> str:
    """The misuses and the message each now gets, for the record (``python -m`` this file)."""
    lines = []
    for what, call, _, _ in MISUSES:
        try:
            call()
            got = "no error"
        except Exception as error:  # noqa: BLE001 - the point is to print it
            got = " ".join(f"{type(error).__name__}: {error}".split())
        lines.append(f"- {what} -> {got}")
    return "\n".join(lines)


# ------------------------------------------------------------------- right answers, not errors


def test_a_tiny_temperature_is_greedy_not_nan():
    logits = torch.tensor([[0.5, 2.0, -1.0], [3.0, 3.0 - 1e-3, 0.0]])
    for temperature in (1e-45, 1e-30):
        tokens = sample_next(logits, temperature, generator=torch.Generator().manual_seed(0))
        assert tokens.tolist() == logits.argmax(dim=-1).tolist()
    model = gpt()
    assert torch.equal(
        model.generate(ids(2, 2), 3, temperature=1e-45), model.generate(ids(2, 2), 3, 0.0)
    )


def test_a_backward_pass_through_the_cache_gives_the_gradients_of_the_whole_sequence():
    X = ids(2, 5)
    whole = gpt()
    whole(X).sum().backward()
    cached = gpt()
    caches = cached.new_caches()
    logits = [cached(X[:, :3], caches), cached(X[:, 3:4], caches), cached(X[:, 4:], caches)]
    torch.cat(logits, dim=1).sum().backward()
    for (name, a), b in zip(whole.named_parameters(), cached.parameters()):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-5, rtol=1e-5, msg=name)


@pytest.mark.parametrize(
    "as_ids",
    [
        pytest.param(lambda X: X.to(torch.uint8), id="uint8"),
        pytest.param(lambda X: X.to(torch.int32), id="int32"),
        pytest.param(lambda X: X.numpy(), id="numpy"),
    ],
)
def test_token_ids_of_every_integer_type_are_read_as_long(as_ids):
    X = ids(2, 4)
    model, bert_model = gpt(), bert().eval()
    torch.testing.assert_close(model(as_ids(X)), model(X))
    torch.testing.assert_close(model.generate(as_ids(X), 2, 0.0), model.generate(X, 2, 0.0))
    segments = torch.zeros(2, 4, dtype=torch.long)
    torch.testing.assert_close(
        bert_model(as_ids(X), as_ids(segments))[0], bert_model(X, segments)[0]
    )
    ours, theirs = transformer(), transformer()
    assert C.greedy_decode(ours, as_ids(X), None, 1, 2, 4) == C.greedy_decode(
        theirs, X, None, 1, 2, 4
    )


def test_a_batch_of_zero_rows_gives_zero_rows_back():
    """Forward passes, generation and decoding: an empty batch is an empty result of the right
    shape, as torch's own layers give, not an error from deep inside a reshape."""
    none = ids(0, 3)
    with torch.no_grad():
        assert gpt()(none).shape == (0, 3, VOCAB)
        assert gpt().generate(none, 2).shape == (0, 5)
        assert mha()(X8[:0], X8[:0], X8[:0], causal=True).shape == (0, 3, 8)
        assert transformer()(none, none, none[:, 0]).shape == (0, 3, VOCAB)
        assert bert()(none, none)[0].shape == (0, 3, 8)
        assert vit()(torch.zeros(0, 1, 8, 8)).shape == (0, 10)
    for search in (C.greedy_decode, lambda *args: C.beam_search(*args, beam_size=2)):
        decoded = search(transformer(), none, None, 1, 2, 4)
        assert decoded.tokens == [] and decoded.scores == []


def test_keys_ignored_by_a_filled_static_cache_are_documented():
    assert "ignores the keys and values" in KVCache.__doc__


# ------------------------------------------------------------- the mode a model had is kept


def raises_inside(model: nn.Module) -> nn.Module:
    """``model`` whose forward raises, after evaluation mode was switched on."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a step failed")

    model.forward = broken  # type: ignore[method-assign]
    return model


@pytest.mark.parametrize(
    "evaluate",
    [
        pytest.param(lambda m: m.generate(ids(1, 2), 2), id="GPT.generate"),
        pytest.param(
            lambda m: cross_entropy_per_token(m, (ids(2, 3), ids(2, 3))),
            id="cross_entropy_per_token",
        ),
        pytest.param(lambda m: accuracy(m, (ids(2, 3),), torch.zeros(2)), id="pretrain.accuracy"),
        pytest.param(
            lambda m: classification_accuracy(
                m, ImageSet(torch.zeros(2, 1, 8, 8), torch.zeros(2, dtype=torch.long))
            ),
            id="classification_accuracy",
        ),
    ],
)
def test_a_model_that_raises_keeps_its_mode(evaluate):
    model = raises_inside(gpt().train())
    with pytest.raises(RuntimeError, match="a step failed"):
        evaluate(model)
    assert model.training


def test_the_modern_decoder_that_raises_keeps_its_mode():
    """DecoderLM.generate shares GPT.generate's loop
    (companion.generation.sampling.generate_tokens)."""
    torch.manual_seed(0)
    model = raises_inside(DecoderLM(llama_config(VOCAB, max_len=10)).train())
    with pytest.raises(RuntimeError, match="a step failed"):
        model.generate(ids(1, 2), 2)
    assert model.training


def test_decoding_that_raises_keeps_the_mode():
    model = transformer().train()
    with pytest.raises(ValueError, match="src must be a 2-D"):
        C.greedy_decode(model, ids(2), None, 1, 2, 4)
    raises_inside(model.decoder)
    with pytest.raises(RuntimeError, match="a step failed"):
        C.greedy_decode(model, ids(2, 3), None, 1, 2, 4)
    assert model.training and model.decoder.training


if __name__ == "__main__":
    print(misuse_list())
