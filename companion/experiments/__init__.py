"""One chapter's experiment or measurement each: the modern decoder's ablation (``ablation``) and
length extrapolation (``extrapolation``), the scaling measurement (``scaling``) and the published
numbers it is read against (``published``), the Transformer against a GRU model
(``rnn_comparison``), attention's cost in time and memory (``complexity``), the fixed-context
decoder on dates (``fixed_context_dates``, for an exercise of sec-bahdanau), and the
time-to-quality recipes (``recipes``).

``python -m companion.bench`` runs the long ones and writes ``results/``, the committed JSON
files the chapters read, which ship with companion as package data;
``python -m companion.experiments.fixed_context_dates`` writes its own. An experiment uses the
models, the data and the training loop; nothing below imports it.
"""
