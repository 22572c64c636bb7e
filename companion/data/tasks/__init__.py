"""Sequence-to-sequence tasks generated in code: deterministic given a seed, nothing downloaded.

Every task returns :class:`Splits`, three :class:`~companion.data.text.ParallelCorpus` (train, val,
test) whose source sequences are all different, so no test source is ever seen in training::

    splits = date_task(20_000, seed=0)
    src_vocab, tgt_vocab = Vocab(splits.train.source), Vocab(splits.train.target)
    arrays = build_arrays(*splits.train, src_vocab, tgt_vocab, num_steps=32)

* :func:`date_task`: dates written in many ways to ISO 8601, characters (Bahdanau chapter).
* :func:`translation_task`: English to an invented, reordering language (Transformer chapter).
* :func:`copy_task`, :func:`reverse_task`: symbol sequences, for quick checks.

Modules: :mod:`~companion.data.tasks.splits` (cutting examples into splits),
:mod:`~companion.data.tasks.dates`, :mod:`~companion.data.tasks.language` (the invented language and
its grammar) and :mod:`~companion.data.tasks.symbols`.
"""

from companion.data.tasks.dates import date_task, format_date
from companion.data.tasks.language import translation_task
from companion.data.tasks.splits import Splits
from companion.data.tasks.symbols import copy_task, reverse_task

__all__ = ["Splits", "copy_task", "date_task", "format_date", "reverse_task", "translation_task"]
