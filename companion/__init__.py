"""companion: the tested layers and tools that the book "Attention and the Transformer" imports.

Names and signatures follow the PyTorch edition of Dive into Deep Learning (d2l), so code moves
between the two. The layers, models and tools the chapters use are importable from here
(``from companion import MultiHeadAttention``); a chapter's own helpers come from their module
(``companion.data.tasks.language``, ``companion.training.train``, ``companion.source``, ...). A few
d2l names that no chapter uses are kept so that d2l code runs unchanged; ``__all__`` lists them
last, under "d2l compatibility".

The package, from the bottom up. A module imports only modules of its own group or of a lower
one, and no modules import each other in a circle (``tests/test_layout.py`` keeps it so):

- ``_validate``, ``modes``, ``device``, ``repro``, ``claims``, ``source``, ``measure``: argument
  checks, ``eval_mode``, and what a chapter needs besides layers;
- ``layers/``: attention, the key-value cache, positions, norms, feed-forward networks, the
  Transformer blocks, the sequence loss, pooling, efficient attention;
- ``generation/``: greedy and beam search, and sampling, the loops the models' ``decode`` and
  ``generate`` run;
- ``models/``: seq2seq, the Transformer, the decoder-only language model (GPT and Llama-style),
  BERT, the ViT and its CNN baseline;
- ``tokenizer``, ``data/``: byte-level BPE; the tasks, vocabularies and batches, corpora;
- ``training/``: the training loop (it knows no task), metrics, BERT's pretraining;
- ``experiments/``: each chapter's measurement, the time-to-quality recipes and the committed
  results the chapters read;
- ``figures/``: every plot and diagram. The plotting names here are imported on first use, so
  ``import companion`` does not import matplotlib's pyplot;
- ``exercises/``: one checker module per chapter; ``bench/``: ``python -m companion.bench``.
"""

from typing import TYPE_CHECKING

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
from companion.layers.feedforward import PositionWiseFFN, SwiGLU, ViTMLP
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
from companion.models.vit import PatchEmbedding, ViT, ViTBlock
from companion.repro import reproducible
from companion.tokenizer import Tokenizer
from companion.training.metrics import bleu, corpus_bleu, exact_match
from companion.training.train import train_seq2seq

if TYPE_CHECKING:  # for type checkers and editors; at run time, __getattr__ below
    from companion.figures.explorer import show_attention
    from companion.figures.plot import (
        plot,
        plot_attention,
        plot_history,
        plot_kernel_regression,
        show_heatmaps,
    )

__version__ = "0.1.0"

# The plotting names import matplotlib.pyplot, which a script that only trains never needs:
# they are imported on first use (PEP 562), ``from companion import plot_attention`` included.
# Each name maps to its module in companion.figures (the explorer's needs no matplotlib).
_FIGURES = {
    **dict.fromkeys(
        ("plot", "plot_attention", "plot_history", "plot_kernel_regression", "show_heatmaps"),
        "plot",
    ),
    "show_attention": "explorer",
}


def __getattr__(name: str) -> object:
    if name in _FIGURES:
        import importlib

        value = getattr(importlib.import_module(f"companion.figures.{_FIGURES[name]}"), name)
        globals()[name] = value  # the next lookup finds it without calling __getattr__
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FIGURES})


__all__ = [
    # attention and its layers
    "AdditiveAttention",
    "DotProductAttention",
    "LinearAttention",
    "MultiHeadAttention",
    "NWKernelRegression",
    "PositionalEncoding",
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
    "show_attention",
    "show_heatmaps",
    # d2l compatibility: no chapter uses these; they keep d2l code running unchanged
    "Seq2Seq",
    "init_seq2seq",
    "load_parallel_corpus",
    "preprocess_nmt",
    "sequence_loss",
    "tokenize_nmt",
]
