"""The models the chapters train, each stacking the layers of :mod:`companion.layers`: the RNN
encoder-decoder with Bahdanau attention (``seq2seq``), the 2017 encoder-decoder Transformer
(``transformer``), the decoder-only language model in its GPT-2 and Llama configurations
(``decoder``), BERT (``bert``), the Vision Transformer (``vit``) and the CNN it is compared
with (``cnn``).

A model imports layers and the decoding loops of :mod:`companion.generation`, never data,
training or figures. Import a model from ``companion`` or from its module here.
"""
