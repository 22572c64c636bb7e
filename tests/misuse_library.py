"""What a student does wrong with companion's losses, decoding, sampling, masking, layers and
measurements, and the error each gets: the rows that ``tests/test_misuse.py`` appends to its
``MISUSES`` table.

Each row is ``(what a student does, a zero-argument call, the exception, a regex its message
must match)``. Every message names the argument and what it got. A number of the wrong type or
out of range is a ``ValueError``; an object of the wrong kind a ``TypeError``. Each call raises
where the argument is received, before anything is computed with it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

import companion as C
from companion.data.tasks.language import invented_sentences
from companion.data.tasks.pretraining import bert_arrays, bert_vocab
from companion.experiments.complexity import (
    conv1d_flops,
    count_flops,
    peak_memory,
    self_attention_flops,
    time_call,
)
from companion.experiments.decoding import cache_bytes, decode_cost
from companion.generation.decoding import beam_search, decode, greedy_decode
from companion.generation.sampling import generate_tokens, sample_next, top_k_filter
from companion.layers.efficient import LinearAttention, RecurrentState, feature_map
from companion.layers.losses import sequence_loss
from companion.layers.norms import make_norm
from companion.layers.pooling import NWKernelRegression, leave_one_out, nadaraya_watson
from companion.models.bert import mask_tokens
from companion.modes import eval_mode
from companion.training.pretrain import bert_model, mlm_batches, pretrain

VOCAB = 11
LOGITS = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))  # (batch, steps, vocab)
LABELS = torch.tensor([[1, 2, 0], [3, 0, 0]])  # 0 is padding
POINTS = torch.linspace(0, 1, 4), torch.linspace(0, 1, 5), torch.linspace(1, 2, 5)  # q, k, v
X8 = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))


def ids(*shape: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, shape, generator=torch.Generator().manual_seed(0))


@functools.cache
def transformer() -> C.EncoderDecoder:
    torch.manual_seed(0)
    encoder = C.TransformerEncoder(VOCAB, 8, 16, 2, 2, 0.0)
    return C.EncoderDecoder(encoder, C.TransformerDecoder(VOCAB, 8, 16, 2, 2, 0.0)).eval()


@functools.cache
def gpt() -> C.GPT:
    torch.manual_seed(0)
    return C.GPT(VOCAB, 8, 16, 2, 2, max_len=10).eval()


def decoding(
    search: Callable[..., object], *args: object, **options: object
) -> Callable[[], object]:
    """``search(transformer(), src, None, bos=1, eos=2, num_steps=4, *args, **options)``, with
    the keyword ``src`` or ``src_valid_len`` in ``options`` replacing those arguments."""
    src = options.pop("src", ids(2, 3))
    src_valid_len = options.pop("src_valid_len", None)
    return lambda: search(transformer(), src, src_valid_len, 1, 2, 4, *args, **options)


@functools.cache
def bert_data() -> tuple:
    """The BERT vocabulary and arrays of four sentences."""
    words = bert_vocab()
    return words, bert_arrays(invented_sentences(4, seed=0), words, 14)


def masking(**options: object) -> Callable[[], object]:
    """``mask_tokens`` of two rows, with ``options`` changed."""
    arguments: dict[str, object] = dict(
        vocab_size=VOCAB, mask_id=3, special_ids=[1, 2], generator=torch.Generator()
    )
    arguments.update(options)
    return lambda: mask_tokens(ids(2, 6), torch.tensor([6, 4]), **arguments)  # type: ignore[arg-type]


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # the loss of every sequence model
    (
        "sequence_loss(..., pad_index=-1): no label would be ignored, padding averaged in",
        lambda: sequence_loss(LOGITS, LABELS, -1),
        ValueError,
        r"pad_index must be an integer in \[0, 4\]; got -1",
    ),
    (
        "sequence_loss with a pad_index outside the vocabulary",
        lambda: sequence_loss(LOGITS, LABELS, 5),
        ValueError,
        r"pad_index must be an integer in \[0, 4\]; got 5",
    ),
    (
        "sequence_loss with float labels",
        lambda: sequence_loss(LOGITS, LABELS.float(), 0),
        ValueError,
        r"labels must hold integer labels \(torch.long\); got torch.float32",
    ),
    (
        "sequence_loss with labels outside the vocabulary of the logits",
        lambda: sequence_loss(LOGITS, LABELS + 4, 4),
        ValueError,
        r"labels holds labels from 4 to 7, outside the vocabulary \[0, 5\)",
    ),
    (
        "sequence_loss(..., label_smoothing=1.5)",
        lambda: sequence_loss(LOGITS, LABELS, 0, 1.5),
        ValueError,
        r"label_smoothing must be a fraction in \[0, 1\); got 1.5",
    ),
    (
        "sequence_loss of labels that are all padding: the mean over none is NaN",
        lambda: sequence_loss(LOGITS, torch.zeros_like(LABELS), 0),
        ValueError,
        r"labels hold no position that is not padding \(pad_index=0\): the mean over none is "
        r"NaN",
    ),
    (
        "sequence_loss of 2-D logits",
        lambda: sequence_loss(LOGITS[0], LABELS[0], 0),
        ValueError,
        r"logits must be 3-D \(batch, steps, vocab\) with vocab >= 1; got shape \(3, 5\)",
    ),
    (
        "sequence_loss of logits as a list",
        lambda: sequence_loss(LOGITS.tolist(), LABELS, 0),
        TypeError,
        r"logits must be a floating-point torch.Tensor; got list",
    ),
    # a model's mode
    (
        "eval_mode(5): something not a model",
        lambda: eval_mode(5),
        TypeError,
        r"model must be a torch.nn.Module; got 5 \(int\)",
    ),
    # decoding an encoder-decoder
    (
        "decode(..., strategy='sample')",
        decoding(decode, strategy="sample"),
        ValueError,
        r"unknown decoding strategy 'sample'; expected 'greedy' or 'beam'",
    ),
    (
        "decode(..., beam_size=0), greedy or not",
        decoding(decode, beam_size=0),
        ValueError,
        r"beam_size must be a positive integer; got 0",
    ),
    (
        "decode(..., length_penalty=0.6) with greedy decoding, which has no beams to rank",
        decoding(decode, length_penalty=0.6),
        ValueError,
        r"length_penalty=0.6 ranks the beams of beam search; greedy decoding has none",
    ),
    (
        "decode(..., strategy='beam', length_penalty='0.6')",
        decoding(decode, strategy="beam", length_penalty="0.6"),
        ValueError,
        r"length_penalty must be a number >= 0; got '0.6'",
    ),
    (
        "beam_search(..., length_penalty=inf)",
        decoding(beam_search, 2, length_penalty=float("inf")),
        ValueError,
        r"length_penalty must be a number >= 0; got inf",
    ),
    (
        "greedy_decode(..., save_attention_weights='no'): a str is true",
        decoding(greedy_decode, save_attention_weights="no"),
        TypeError,
        r"save_attention_weights must be True or False; got the str 'no'",
    ),
    (
        "greedy_decode of a model that is not an encoder-decoder",
        lambda: greedy_decode(torch.nn.Linear(2, 2), ids(2, 3), None, 1, 2, 4),
        TypeError,
        r"model must have an encoder and a decoder, as d2l's EncoderDecoder has; got a Linear",
    ),
    (
        "greedy_decode of something not a model",
        lambda: greedy_decode(None, ids(2, 3), None, 1, 2, 4),
        TypeError,
        r"model must be an encoder-decoder torch.nn.Module; got None \(NoneType\)",
    ),
    (
        "greedy_decode of an empty source",
        decoding(greedy_decode, src=ids(2, 0)),
        ValueError,
        r"src must hold at least one step; got shape \(2, 0\)",
    ),
    (
        "src_valid_len longer than the source",
        decoding(greedy_decode, src_valid_len=torch.tensor([3, 5])),
        ValueError,
        r"src_valid_len must hold lengths in \[0, 3\], the steps of src; got lengths from 3 to 5",
    ),
    (
        "src_valid_len of floats",
        decoding(beam_search, 2, src_valid_len=torch.tensor([3.0, 2.0])),
        ValueError,
        r"src_valid_len must hold integer lengths \(torch.long\); got torch.float32",
    ),
    (
        "a negative bos_id",
        lambda: greedy_decode(transformer(), ids(2, 3), None, -1, 2, 4),
        ValueError,
        r"bos_id must be an integer >= 0; got -1",
    ),
    # sampling
    (
        "sample_next given a seed where its generator is meant",
        lambda: sample_next(torch.zeros(2, 4), generator=0),
        TypeError,
        r"generator must be a torch.Generator, such as torch.Generator\(\).manual_seed\(0\), or "
        r"None; got 0 \(int\)",
    ),
    (
        "sample_next of logits over no token",
        lambda: sample_next(torch.zeros(2, 0)),
        ValueError,
        r"logits must hold a score for at least one token in each row; got shape \(2, 0\)",
    ),
    (
        "top_k_filter of logits over no token",
        lambda: top_k_filter(torch.zeros(2, 0), 1),
        ValueError,
        r"logits must hold a score for at least one token in each row",
    ),
    (
        "generate_tokens(..., max_new_tokens=-1): would return the prompt",
        lambda: generate_tokens(gpt(), ids(1, 2), -1, None),
        ValueError,
        r"max_new_tokens must be a positive integer; got -1",
    ),
    (
        "generate_tokens(..., top_k=0)",
        lambda: generate_tokens(gpt(), ids(1, 2), 2, None, top_k=0),
        ValueError,
        r"top_k must be an integer >= 1; got 0",
    ),
    (
        "generate_tokens of something not a model",
        lambda: generate_tokens("gpt", ids(1, 2), 2, None),
        TypeError,
        r"model must be a torch.nn.Module, a decoder-only language model; got the str 'gpt'",
    ),
    (
        "GPT.generate given a seed where its generator is meant",
        lambda: gpt().generate(ids(1, 2), 2, generator=0),
        TypeError,
        r"generator must be a torch.Generator",
    ),
    # BERT's masking
    (
        "mlm_batches(..., mask_prob=1.5): checked at the call, not at the first batch",
        lambda: mlm_batches(bert_data()[1], bert_data()[0], 2, torch.Generator(), mask_prob=1.5),
        ValueError,
        r"mask_prob must be in \(0, 1\); got 1.5",
    ),
    (
        "mlm_batches(..., rule=(0.8, 0.1)): checked at the call",
        lambda: mlm_batches(bert_data()[1], bert_data()[0], 2, torch.Generator(), rule=(0.8, 0.1)),
        ValueError,
        r"rule must be three fractions \(mask, random, keep\) that sum to 1, such as "
        r"\(0.8, 0.1, 0.1\); got \(0.8, 0.1\)",
    ),
    (
        "pretrain(..., mask_prob=0): checked at the call, not when fit draws the first epoch",
        lambda: pretrain(
            bert_model(len(bert_data()[0]), seed=0), *bert_data()[::-1], num_epochs=1, mask_prob=0
        ),
        ValueError,
        r"mask_prob must be in \(0, 1\); got 0",
    ),
    (
        "mask_tokens(..., mask_prob='0.15')",
        masking(mask_prob="0.15"),
        ValueError,
        r"mask_prob must be in \(0, 1\); got '0.15'",
    ),
    (
        "mask_tokens(..., rule='811'): a str",
        masking(rule="811"),
        TypeError,
        r"rule must be three fractions \(mask, random, keep\) that sum to 1.*; got the str '811'",
    ),
    (
        "mask_tokens(..., rule=(nan, 0.1, 0.1))",
        masking(rule=(float("nan"), 0.1, 0.1)),
        ValueError,
        r"rule must be three fractions .*; got \(nan, 0.1, 0.1\)",
    ),
    (
        "mask_tokens given a seed where its generator is meant",
        masking(generator=0),
        TypeError,
        r"generator must be a torch.Generator\(\).manual_seed\(seed\); got 0 \(int\)",
    ),
    (
        "mask_tokens(..., special_ids=1): one id, not a list",
        masking(special_ids=1),
        TypeError,
        r"special_ids must be a list of token ids, such as \[cls_id, sep_id\]; got 1 \(int\)",
    ),
    (
        "mask_tokens(..., mask_id='3')",
        masking(mask_id="3"),
        ValueError,
        r"mask_id must be an integer; got '3'",
    ),
    # attention pooling
    (
        "nadaraya_watson(..., bandwidth='1')",
        lambda: nadaraya_watson(*POINTS, bandwidth="1"),
        ValueError,
        r"bandwidth must be a number; got '1'",
    ),
    (
        "nadaraya_watson with no keys: every prediction would be 0",
        lambda: nadaraya_watson(POINTS[0], POINTS[1][:0], POINTS[2][:0]),
        ValueError,
        r"keys must hold at least one key: a prediction is an average of the values of the "
        r"keys; got shape \(0,\)",
    ),
    (
        "nadaraya_watson of bool tensors",
        lambda: nadaraya_watson(*(t > 0 for t in POINTS)),
        ValueError,
        r"queries must hold real numbers \(integer or floating point\); got torch.bool",
    ),
    (
        "nadaraya_watson of a list of queries",
        lambda: nadaraya_watson(POINTS[0].tolist(), *POINTS[1:]),
        TypeError,
        r"queries must be a torch.Tensor of numbers; got \[",
    ),
    (
        "NWKernelRegression(w='2'): float('2') would take it",
        lambda: NWKernelRegression("2"),
        ValueError,
        r"w must be a number; got '2'",
    ),
    (
        "NWKernelRegression on another device than its inputs",
        lambda: NWKernelRegression().to("meta")(*POINTS),
        ValueError,
        r"queries is on cpu but the layer's weights are on meta",
    ),
    (
        "leave_one_out of lists",
        lambda: leave_one_out([1.0, 2.0], [1.0, 2.0]),
        TypeError,
        r"x_train must be a 1-D torch.Tensor; got \[1.0, 2.0\] \(list\)",
    ),
    # linear attention
    (
        "LinearAttention(need_weights='no'): a str is true",
        lambda: LinearAttention(need_weights="no"),
        TypeError,
        r"need_weights must be True or False; got the str 'no'",
    ),
    (
        "LinearAttention(...)(..., causal='no')",
        lambda: LinearAttention()(X8, X8, X8, causal="no"),
        TypeError,
        r"causal must be True or False; got the str 'no'",
    ),
    (
        "LinearAttention.step of integer vectors",
        lambda: LinearAttention().step(*(X8[:, 0].long(),) * 3),
        ValueError,
        r"query must be floating point, like the layer; got torch.int64",
    ),
    (
        "LinearAttention.step of a float64 query with float32 keys",
        lambda: LinearAttention().step(X8[:, 0].double(), X8[:, 0], X8[:, 0]),
        ValueError,
        r"query, key and value must have one dtype and one device; got query torch.float64",
    ),
    (
        "LinearAttention.step with a tuple as its state",
        lambda: LinearAttention().step(*(X8[:, 0],) * 3, (torch.zeros(2, 8, 8), torch.zeros(2, 8))),
        TypeError,
        r"state must be the RecurrentState that the last step returned, or None; got a tuple",
    ),
    (
        "LinearAttention.step with a float64 state",
        lambda: LinearAttention().step(
            *(X8[:, 0],) * 3, RecurrentState(torch.zeros(2, 8, 8).double(), torch.zeros(2, 8))
        ),
        ValueError,
        r"query, state.S and state.z must have one dtype and one device; got query "
        r"torch.float32 on cpu, state.S torch.float64",
    ),
    (
        "feature_map of a list",
        lambda: feature_map([1.0, -1.0]),
        TypeError,
        r"x must be a floating-point torch.Tensor; got list",
    ),
    # feed-forward networks and norms
    (
        "PositionWiseFFN(..., num_inputs=0)",
        lambda: C.PositionWiseFFN(16, 8, num_inputs=0),
        ValueError,
        r"num_inputs must be a positive integer; got 0",
    ),
    (
        "a 0-D tensor to the position-wise FFN",
        lambda: C.PositionWiseFFN(16, 8, num_inputs=8)(torch.tensor(1.0)),
        ValueError,
        r"X must have a last axis of features; got a 0-D tensor",
    ),
    (
        "ViTMLP(..., dropout='0.1')",
        lambda: C.ViTMLP(16, 8, "0.1"),
        ValueError,
        r"dropout must be in \[0, 1\); got '0.1'",
    ),
    (
        "SwiGLU(..., bias='no'): a str is true",
        lambda: C.SwiGLU(8, 16, bias="no"),
        TypeError,
        r"bias must be True or False; got the str 'no'",
    ),
    (
        "a list of vectors to SwiGLU",
        lambda: C.SwiGLU(8, 16)(X8.tolist()),
        TypeError,
        r"X must be a floating-point torch.Tensor; got list",
    ),
    (
        "RMSNorm(8, eps=inf): every output 0",
        lambda: C.RMSNorm(8, eps=float("inf")),
        ValueError,
        r"eps must be a number > 0 \(it keeps a zero vector finite\); got inf",
    ),
    (
        "a list of vectors to RMSNorm",
        lambda: C.RMSNorm(8)(X8.tolist()),
        TypeError,
        r"X must be a floating-point torch.Tensor; got list",
    ),
    (
        "make_norm('layer', 0)",
        lambda: make_norm("layer", 0),
        ValueError,
        r"norm_shape must be a positive integer; got 0",
    ),
    (
        "make_norm('layer', '8')",
        lambda: make_norm("layer", "8"),
        ValueError,
        r"norm_shape must be a positive integer or a non-empty list of them, the sizes of the "
        r"last axes; got '8'",
    ),
    (
        "make_norm('layer', 8, eps=-1)",
        lambda: make_norm("layer", 8, eps=-1),
        ValueError,
        r"eps must be a number > 0 \(it keeps a zero vector finite\); got -1",
    ),
    # rotary positions
    (
        "RotaryEmbedding(8, base='10000')",
        lambda: C.RotaryEmbedding(8, "10000"),
        ValueError,
        r"base must be a number > 1; got '10000'",
    ),
    (
        "RotaryEmbedding(8, base=inf): every pair but the first unrotated",
        lambda: C.RotaryEmbedding(8, float("inf")),
        ValueError,
        r"base must be a number > 1; got inf",
    ),
    (
        "RoPE at offset 1.5: positions between tokens",
        lambda: C.RotaryEmbedding(4)(torch.randn(1, 1, 2, 4), offset=1.5),
        ValueError,
        r"offset must be an integer >= 0; got 1.5",
    ),
    (
        "RotaryEmbedding.angles(2.5)",
        lambda: C.RotaryEmbedding(4).angles(2.5),
        ValueError,
        r"num_steps must be an integer >= 0; got 2.5",
    ),
    (
        "RotaryEmbedding.angles(2, offset=-3)",
        lambda: C.RotaryEmbedding(4).angles(2, -3),
        ValueError,
        r"offset must be an integer >= 0; got -3",
    ),
    # measurements
    (
        "conv1d_flops('3', 2, 1): a str times an int is a longer str",
        lambda: conv1d_flops("3", 2, 1),
        ValueError,
        r"n must be a positive integer; got '3'",
    ),
    (
        "self_attention_flops(128, 64.0)",
        lambda: self_attention_flops(128, 64.0),
        ValueError,
        r"d must be a positive integer; got 64.0",
    ),
    (
        "count_flops of a result, not a function",
        lambda: count_flops(5),
        TypeError,
        r"fn must be a function of no arguments, such as lambda: layer\(X\); got 5 \(int\)",
    ),
    (
        "time_call(..., repeats=0): the best of no call is inf",
        lambda: time_call(lambda: None, repeats=0),
        ValueError,
        r"repeats must be a positive integer; got 0",
    ),
    (
        "peak_memory('linear'): a str, one name per letter",
        lambda: peak_memory("linear"),
        TypeError,
        r"implementations must be a list of names from \('explicit', 'fused', 'linear'\); got "
        r"the str 'linear'",
    ),
    (
        "peak_memory with a length of 0",
        lambda: peak_memory(["linear"], [0]),
        ValueError,
        r"lengths\[0\] must be a positive integer; got 0",
    ),
    (
        "peak_memory of no implementation",
        lambda: peak_memory([]),
        ValueError,
        r"implementations and lengths must name at least one each; got \[\]",
    ),
    (
        "cache_bytes of something not caches",
        lambda: cache_bytes(5),
        TypeError,
        r"caches must be KVCaches, such as model.new_caches\(\); got 5 \(int\)",
    ),
    (
        "decode_cost(..., prompt_len=16): a setting it does not have",
        lambda: decode_cost(device="cpu", prompt_len=16),
        ValueError,
        r"decode_cost has no setting 'prompt_len'; the settings are batch, prompt, new_tokens",
    ),
    (
        "decode_cost(..., repeats=0)",
        lambda: decode_cost(repeats=0, device="cpu"),
        ValueError,
        r"repeats must be a positive integer; got 0",
    ),
    (
        "decode_cost with 3 key-value heads for 8 query heads",
        lambda: decode_cost({"GQA": 3}, device="cpu"),
        ValueError,
        r"kinds\['GQA'\] = 3 key-value heads must divide num_heads = 8",
    ),
    (
        "decode_cost with no kind",
        lambda: decode_cost({}, device="cpu"),
        ValueError,
        r"kinds must name at least one kind of attention",
    ),
    (
        "decode_cost(..., seed=None)",
        lambda: decode_cost(device="cpu", seed=None),
        ValueError,
        r"seed must be an integer; got None",
    ),
]
