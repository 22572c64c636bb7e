"""The loops that turn a model's scores into sequences: greedy and beam search for an
encoder-decoder (``decoding``, sec-bahdanau), and temperature, top-k and top-p sampling for a
decoder-only language model (``sampling``, sec-language-models).

The models' own ``decode``, ``predict_step`` and ``generate`` run these loops, so they sit below
:mod:`companion.models` and know a model only by its protocol (``decoder(X, state)``,
``model(inputs, caches)``), never by its class.
"""
