"""Training: the one loop of the book (``train``: :func:`~companion.training.train.fit`, which
knows no task and plots nothing), the scores of translations (``metrics``: BLEU, exact match),
and BERT's pretraining and fine-tuning (``pretrain``).

A task brings its batches and its loss; the caller plots the history ``fit`` returns with
``plot_history``.
"""
