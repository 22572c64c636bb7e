"""The layers the models are built from: attention (scoring, multi-head, grouped-query), the
key-value cache, positions (sinusoidal, rotary), normalization, feed-forward networks, the
Transformer blocks, attention pooling and efficient (linear) attention.

A layer imports only other layers and companion's argument checks; the models of
:mod:`companion.models` stack them. Import a layer from ``companion`` or from its module here.
"""
