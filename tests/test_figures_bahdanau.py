"""show_alignment (companion.figures.bahdanau): what it decodes and draws, and the clear errors
for what it cannot."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from companion import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder, Vocab
from companion.figures.bahdanau import show_alignment

SOURCES = [list("ab c"), list("cab")]
TARGETS = [list("xy"), list("yx")]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def model_and_vocabs() -> tuple[EncoderDecoder, Vocab, Vocab]:
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(SOURCES), Vocab(TARGETS)
    encoder = Seq2SeqEncoder(len(src_vocab), 8, 8, num_layers=1)
    decoder = Seq2SeqAttentionDecoder(len(tgt_vocab), 8, 8, num_layers=1)
    return EncoderDecoder(encoder, decoder).eval(), src_vocab, tgt_vocab


def test_show_alignment_returns_the_output_and_one_row_of_weights_per_step(capsys):
    model, src_vocab, tgt_vocab = model_and_vocabs()
    with torch.no_grad():
        output, weights = show_alignment(model, SOURCES[0], src_vocab, tgt_vocab, 6, 3)
    assert isinstance(output, str) and len(output) <= 3
    assert weights.shape[1] == 6 and weights.shape[0] in (len(output), len(output) + 1)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[0]))
    assert (weights[:, len(SOURCES[0]) + 1 :] == 0).all()  # the padding gets no weight
    assert capsys.readouterr().out == f"ab c -> {output}\n"
    ax = plt.gcf().axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["a", "b", "␣", "c", "<eos>"]  # a space shown as ␣


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"source": "ab c"}, TypeError, r"source must be a list of source tokens; got"),
        ({"num_steps": 0}, ValueError, r"num_steps"),
        ({"tgt_num_steps": 1.5}, ValueError, r"tgt_num_steps"),
    ],
)
def test_show_alignment_names_a_wrong_argument(kwargs, error, message):
    model, src_vocab, tgt_vocab = model_and_vocabs()
    arguments = {"source": SOURCES[0], "num_steps": 6, "tgt_num_steps": 3, **kwargs}
    with pytest.raises(error, match=message):
        show_alignment(model, src_vocab=src_vocab, tgt_vocab=tgt_vocab, **arguments)
