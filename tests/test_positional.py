"""Sinusoidal positional encoding (chapter 5)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from companion.layers.positional import PositionalEncoding


@pytest.mark.parametrize("num_hiddens, max_len", [(2, 10), (32, 60), (24, 1000)])
def test_matches_d2l(d2l, num_hiddens, max_len):
    reference = d2l.PositionalEncoding(num_hiddens, 0.5, max_len).eval()
    ours = PositionalEncoding(num_hiddens, 0.5, max_len).eval()
    ours.load_state_dict(reference.state_dict(), strict=True)  # both empty: P is not saved
    torch.testing.assert_close(ours.P, reference.P, atol=0, rtol=0)
    X = torch.randn(3, max_len // 2, num_hiddens)
    torch.testing.assert_close(ours(X), reference(X), atol=1e-6, rtol=0)


def test_P_is_a_buffer_that_is_not_saved():
    encoding = PositionalEncoding(8, 0.0, max_len=20)
    assert "P" in dict(encoding.named_buffers())
    assert "P" not in encoding.state_dict()
    assert encoding.to(torch.float64).P.dtype == torch.float64  # moves with .to(...)


@pytest.mark.parametrize("num_hiddens", [1, 5, 7, 33])
def test_odd_widths_follow_the_formula(d2l, num_hiddens):
    if num_hiddens > 1:
        with pytest.raises(RuntimeError):  # d2l cannot build them: one cosine column too many
            d2l.PositionalEncoding(num_hiddens, 0.0, 50)
    P = PositionalEncoding(num_hiddens, 0.0, max_len=50).P[0].double()
    for i in (0, 1, 17, 49):
        for k in range(num_hiddens):
            angle = i / 10000 ** (2 * (k // 2) / num_hiddens)
            expected = math.sin(angle) if k % 2 == 0 else math.cos(angle)
            assert abs(P[i, k].item() - expected) < 1e-5


def test_offset_starts_at_a_later_position():
    encoding = PositionalEncoding(6, 0.0, max_len=30)
    X = torch.randn(2, 4, 6)
    torch.testing.assert_close(encoding(X, offset=9), X + encoding.P[:, 9:13])
    torch.testing.assert_close(encoding(X), X + encoding.P[:, :4])


def rotation(delta: int, num_hiddens: int) -> torch.Tensor:
    """Block-diagonal R with (sin, cos)(w (i + delta)) = R_pair (sin, cos)(w i), per frequency."""
    blocks = []
    for j in range(num_hiddens // 2):
        angle = delta / 10000 ** (2 * j / num_hiddens)
        c, s = math.cos(angle), math.sin(angle)
        blocks.append(torch.tensor([[c, s], [-s, c]], dtype=torch.float64))
    return torch.block_diag(*blocks)


ENCODINGS = {d: PositionalEncoding(d, 0.0, max_len=300).P[0].double() for d in (2, 8, 32, 64)}


@given(
    st.sampled_from(sorted(ENCODINGS)),
    st.integers(0, 150),
    st.lists(st.integers(0, 149), min_size=1, max_size=20),
)
def test_a_shift_is_a_fixed_rotation(num_hiddens, delta, positions):
    P, R = ENCODINGS[num_hiddens], rotation(delta, num_hiddens)
    i = torch.tensor(positions)
    # P[i + delta] = R_delta P[i] for every i: the same matrix, whatever the position.
    torch.testing.assert_close(P[i + delta], P[i] @ R.T, atol=2e-4, rtol=0)


def test_too_long_input_names_the_lengths():
    encoding = PositionalEncoding(4, 0.0, max_len=10)
    with pytest.raises(ValueError, match=r"11 steps from offset 0.*max_len=10"):
        encoding(torch.zeros(1, 11, 4))
    with pytest.raises(ValueError, match=r"positions 8\.\.10, but max_len=10"):
        encoding(torch.zeros(1, 3, 4), offset=8)
    encoding(torch.zeros(1, 10, 4))  # exactly max_len fits


@pytest.mark.parametrize("shape", [(10, 4), (1, 3, 5), (1, 3, 1), (1, 1, 3, 4)])
def test_wrong_shape_is_a_value_error(shape):
    with pytest.raises(ValueError, match="num_hiddens=4"):
        PositionalEncoding(4, 0.0)(torch.zeros(shape))


@pytest.mark.parametrize("kwargs", [{"dropout": 1.0}, {"dropout": -0.1}, {"num_hiddens": 0}])
def test_bad_arguments_are_value_errors(kwargs):
    with pytest.raises(ValueError):
        PositionalEncoding(**{"num_hiddens": 4, "dropout": 0.0, **kwargs})
