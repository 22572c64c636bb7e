"""companion: the tested layers and tools that the book "Attention and the Transformer" imports.

Names and signatures follow the PyTorch edition of Dive into Deep Learning (d2l), so code moves
between the two. The layers, models and tools the chapters use are importable from here; a
chapter's own helpers come from their module (``companion.data.tasks.language``,
``companion.training.train``, ``companion.source``, ...). A few d2l names that no chapter uses are
kept so that d2l code runs unchanged; ``__all__`` lists them last, under "d2l compatibility".
"""

from companion.claims import claim
from companion.data import corpus as corpus  # `from companion import corpus` (not in __all__)
from companion.data.regression import kernel_regression_data
from companion.data.tasks import copy_task, date_task, translation_task
from companion.data.text import (
    ParallelCorpus,
    Vocab,
    batches,
    build_arrays,
    load_parallel_corpus,
    preprocess_nmt,
    tokenize_nmt,
)
from companion.device import get_device
from companion.generation.decoding import beam_search, decode, greedy_decode
from companion.layers.attention import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    masked_softmax,
    record_attention,
)
from companion.layers.blocks import (
    AddNorm,
    PreNormBlock,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from companion.layers.efficient import LinearAttention
from companion.layers.feedforward import PositionWiseFFN, SwiGLU
from companion.layers.gqa import GroupedQueryAttention, RollingKVCache
from companion.layers.losses import sequence_loss
from companion.layers.norms import RMSNorm
from companion.layers.pooling import NWKernelRegression, leave_one_out, nadaraya_watson
from companion.layers.positional import PositionalEncoding
from companion.layers.rotary import RotaryEmbedding
from companion.models.bert import (
    BERTEncoder,
    BERTModel,
    MaskLM,
    NextSentencePred,
    get_tokens_and_segments,
)
from companion.models.decoder import GPT, DecoderConfig, DecoderLM, gpt2_config, llama_config
from companion.models.seq2seq import (
    EncoderDecoder,
    Seq2Seq,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    init_seq2seq,
)
from companion.models.transformer import TransformerDecoder, TransformerEncoder
from companion.models.vit import PatchEmbedding, ViT, ViTBlock, ViTMLP
from companion.plot import (
    plot,
    plot_attention,
    plot_history,
    plot_kernel_regression,
    show_heatmaps,
)
from companion.repro import reproducible
from companion.tokenizer import Tokenizer
from companion.training.metrics import bleu, corpus_bleu, exact_match
from companion.training.train import train_seq2seq

__version__ = "0.1.0"

__all__ = [
    # attention and its layers
    "AdditiveAttention",
    "DotProductAttention",
    "GroupedQueryAttention",
    "LinearAttention",
    "MultiHeadAttention",
    "NWKernelRegression",
    "PositionalEncoding",
    "RollingKVCache",
    "RotaryEmbedding",
    "masked_softmax",
    "record_attention",
    # models: sequence to sequence, the Transformer, BERT, GPT, ViT
    "AddNorm",
    "BERTEncoder",
    "BERTModel",
    "EncoderDecoder",
    "DecoderConfig",
    "DecoderLM",
    "GPT",
    "MaskLM",
    "NextSentencePred",
    "PatchEmbedding",
    "PositionWiseFFN",
    "PreNormBlock",
    "Seq2SeqAttentionDecoder",
    "Seq2SeqDecoder",
    "Seq2SeqEncoder",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "ViT",
    "ViTBlock",
    "ViTMLP",
    "RMSNorm",
    "SwiGLU",
    "gpt2_config",
    "llama_config",
    "get_tokens_and_segments",
    # data, text and tasks
    "ParallelCorpus",
    "Tokenizer",
    "Vocab",
    "batches",
    "build_arrays",
    "copy_task",
    "date_task",
    "kernel_regression_data",
    "translation_task",
    # pooling, training, decoding and metrics
    "beam_search",
    "bleu",
    "corpus_bleu",
    "decode",
    "exact_match",
    "greedy_decode",
    "leave_one_out",
    "nadaraya_watson",
    "train_seq2seq",
    # plots, device and reproducibility
    "claim",
    "get_device",
    "plot",
    "plot_attention",
    "plot_history",
    "plot_kernel_regression",
    "reproducible",
    "show_heatmaps",
    # d2l compatibility: no chapter uses these; they keep d2l code running unchanged
    "Seq2Seq",
    "init_seq2seq",
    "load_parallel_corpus",
    "preprocess_nmt",
    "sequence_loss",
    "tokenize_nmt",
]
