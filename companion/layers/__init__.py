"""The layers the models are built from: attention (scoring; one multi-head class, with the
options of modern decoders: grouped-query, rotary, sliding window, ALiBi), the key-value cache
(growing, static or rolling), positions (sinusoidal, ALiBi, rotary), normalization,
feed-forward networks, the Transformer blocks, attention pooling and efficient (linear)
attention.

A layer imports only other layers and companion's argument checks; the models of
:mod:`companion.models` stack them. Import a layer from ``companion`` or from its module here.
"""
