"""Nadaraya-Watson attention pooling (chapter 1)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from companion import NWKernelRegression, kernel_regression_data, leave_one_out, nadaraya_watson

floats = st.floats(-5, 5, allow_nan=False, width=32)
vectors = st.lists(floats, min_size=1, max_size=12).map(lambda xs: torch.tensor(xs))


def brute_force(queries, keys, values, bandwidth):
    """The estimator written as the textbook sum, one query at a time, in float64."""
    out = []
    for q in queries.double().tolist():
        kernel = [math.exp(-(((q - k) / bandwidth) ** 2) / 2) for k in keys.double().tolist()]
        out.append(sum(w * v for w, v in zip(kernel, values.double().tolist())) / sum(kernel))
    return torch.tensor(out, dtype=torch.float64)


def test_matches_the_textbook_sum():
    data = kernel_regression_data(n_train=20, seed=3)
    for bandwidth in (0.3, 1.0, 2.5):
        predictions, _ = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth)
        expected = brute_force(data.x_test, data.x_train, data.y_train, bandwidth)
        torch.testing.assert_close(predictions.double(), expected, atol=1e-5, rtol=1e-5)


@given(vectors, vectors)
def test_weights_are_a_distribution_over_keys(queries, keys):
    _, weights = nadaraya_watson(queries, keys, torch.zeros_like(keys), bandwidth=0.7)
    assert weights.shape == (len(queries), len(keys))
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(len(queries)))


@given(vectors, vectors, floats)
def test_pooling_a_constant_returns_it(queries, keys, constant):
    predictions, _ = nadaraya_watson(queries, keys, torch.full_like(keys, constant))
    torch.testing.assert_close(
        predictions, torch.full_like(queries, constant), atol=1e-5, rtol=1e-5
    )


def test_bandwidth_limits_are_nearest_neighbour_and_average():
    keys, values = torch.tensor([0.0, 1.0, 3.0]), torch.tensor([10.0, 20.0, 30.0])
    queries = torch.tensor([0.1, 1.2, 2.9])
    narrow, _ = nadaraya_watson(queries, keys, values, bandwidth=0.01)
    wide, _ = nadaraya_watson(queries, keys, values, bandwidth=1e4)
    torch.testing.assert_close(narrow, values)
    torch.testing.assert_close(wide, torch.full((3,), 20.0))


def test_per_query_keys_equal_shared_keys():
    data = kernel_regression_data(n_train=10)
    shared, _ = nadaraya_watson(data.x_test, data.x_train, data.y_train)
    rows = data.x_train.expand(len(data.x_test), -1)
    per_query, _ = nadaraya_watson(data.x_test, rows, data.y_train.expand_as(rows))
    torch.testing.assert_close(shared, per_query)


def test_learnable_model_equals_the_function_with_bandwidth_one_over_w():
    data = kernel_regression_data(n_train=15)
    model = NWKernelRegression(w=2.5)
    with torch.no_grad():
        predictions = model(data.x_test, data.x_train, data.y_train)
    expected, weights = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=0.4)
    torch.testing.assert_close(predictions, expected)
    torch.testing.assert_close(model.attention_weights, weights)
    assert [name for name, _ in model.named_parameters()] == ["w"]


def test_leave_one_out_drops_exactly_the_query():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    keys, values = leave_one_out(x, 10 * x)
    assert keys.tolist() == [[2, 3, 4], [1, 3, 4], [1, 2, 4], [1, 2, 3]]
    torch.testing.assert_close(values, 10 * keys)


def test_training_with_leave_one_out_finds_a_finite_bandwidth():
    data = kernel_regression_data()
    keys, values = leave_one_out(data.x_train, data.y_train)
    model = NWKernelRegression()
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
    for _ in range(40):
        optimizer.zero_grad()
        loss = ((model(data.x_train, keys, values) - data.y_train) ** 2).mean()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        test_error = ((model(data.x_test, data.x_train, data.y_train) - data.y_truth) ** 2).mean()
        untrained, _ = nadaraya_watson(data.x_test, data.x_train, data.y_train)
    assert 2 < model.w.item() < 6
    assert test_error < 0.5 * ((untrained - data.y_truth) ** 2).mean()


@pytest.mark.parametrize(
    "queries, keys, values, message",
    [
        (
            torch.zeros(2, 1),
            torch.zeros(3),
            torch.zeros(3),
            r"queries must be 1-D .* got shape \(2, 1\)",
        ),
        (
            torch.zeros(2),
            torch.zeros(3, 2, 1),
            torch.zeros(3, 2, 1),
            r"keys must be 1-D .* got shape \(3, 2, 1\)",
        ),
        (
            torch.zeros(2),
            torch.zeros(3, 4),
            torch.zeros(3, 4),
            r"keys of shape \(3, 4\) must have one row per query",
        ),
        (
            torch.zeros(2),
            torch.zeros(3),
            torch.zeros(4),
            r"values must have the shape of keys \(3,\); got \(4,\)",
        ),
    ],
)
def test_bad_shapes_are_named(queries, keys, values, message):
    with pytest.raises(ValueError, match=message):
        nadaraya_watson(queries, keys, values)


def test_bad_bandwidth_and_leave_one_out_inputs():
    with pytest.raises(ValueError, match="bandwidth must be positive; got 0"):
        nadaraya_watson(torch.zeros(1), torch.zeros(1), torch.zeros(1), bandwidth=0)
    with pytest.raises(ValueError, match=r"same length; got shapes \(3,\) and \(2,\)"):
        leave_one_out(torch.zeros(3), torch.zeros(2))
    with pytest.raises(ValueError, match="at least 2 training points; got 1"):
        leave_one_out(torch.zeros(1), torch.zeros(1))


def test_gradient_of_w_matches_finite_differences():
    data = kernel_regression_data(n_train=8)
    keys, values = leave_one_out(data.x_train.double(), data.y_train.double())
    model = NWKernelRegression(w=1.3).double()

    def loss(w):
        predictions = torch.func.functional_call(
            model, {"w": w}, (data.x_train.double(), keys, values)
        )
        return ((predictions - data.y_train.double()) ** 2).mean()

    assert torch.autograd.gradcheck(
        loss, (torch.tensor([1.3], dtype=torch.float64, requires_grad=True),)
    )
