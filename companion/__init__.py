"""companion: the tested layers and tools that the book "Attention and the Transformer" imports.

Names and signatures follow the PyTorch edition of Dive into Deep Learning (d2l), so code moves
between the two. Everything a chapter uses is importable from here.
"""

from companion.attention import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    masked_softmax,
    record_attention,
)
from companion.data import KernelRegressionData, kernel_regression_data, kernel_regression_target
from companion.decoding import Decoded, beam_search, decode, greedy_decode
from companion.device import get_device
from companion.efficient import LinearAttention
from companion.metrics import bleu, corpus_bleu, exact_match
from companion.plot import (
    plot,
    plot_attention,
    plot_history,
    plot_kernel_regression,
    show_heatmaps,
)
from companion.pooling import NWKernelRegression, leave_one_out, nadaraya_watson
from companion.positional import PositionalEncoding
from companion.repro import reproducible
from companion.seq2seq import (
    EncoderDecoder,
    Seq2Seq,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    init_seq2seq,
)
from companion.tasks import Splits, copy_task, date_task, reverse_task, translation_task
from companion.text import (
    ParallelCorpus,
    TranslationArrays,
    Vocab,
    batches,
    build_arrays,
    load_parallel_corpus,
    preprocess_nmt,
    tokenize_nmt,
)
from companion.train import sequence_loss, train_seq2seq
from companion.transformer import (
    AddNorm,
    PositionWiseFFN,
    TransformerDecoder,
    TransformerDecoderBlock,
    TransformerEncoder,
    TransformerEncoderBlock,
)

__version__ = "0.1.0"

__all__ = [
    "AddNorm",
    "AdditiveAttention",
    "Decoded",
    "DotProductAttention",
    "EncoderDecoder",
    "KernelRegressionData",
    "LinearAttention",
    "MultiHeadAttention",
    "NWKernelRegression",
    "ParallelCorpus",
    "PositionWiseFFN",
    "PositionalEncoding",
    "Seq2Seq",
    "Seq2SeqAttentionDecoder",
    "Seq2SeqDecoder",
    "Seq2SeqEncoder",
    "Splits",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "TranslationArrays",
    "Vocab",
    "batches",
    "beam_search",
    "bleu",
    "build_arrays",
    "copy_task",
    "corpus_bleu",
    "date_task",
    "decode",
    "exact_match",
    "get_device",
    "greedy_decode",
    "init_seq2seq",
    "kernel_regression_data",
    "kernel_regression_target",
    "leave_one_out",
    "load_parallel_corpus",
    "masked_softmax",
    "nadaraya_watson",
    "plot",
    "plot_attention",
    "plot_history",
    "plot_kernel_regression",
    "preprocess_nmt",
    "record_attention",
    "reproducible",
    "reverse_task",
    "sequence_loss",
    "show_heatmaps",
    "tokenize_nmt",
    "train_seq2seq",
    "translation_task",
]
