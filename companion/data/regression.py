"""The regression data of sec-attention-pooling, generated in code: deterministic given a seed,
nothing is downloaded."""

from __future__ import annotations

from typing import NamedTuple

import torch

from companion._validate import check_integer, check_number, check_seed, check_type


class KernelRegressionData(NamedTuple):
    """A noisy 1-D regression problem: training pairs, test inputs and the noise-free truth."""

    x_train: torch.Tensor  # (n_train,), sorted
    y_train: torch.Tensor  # (n_train,)
    x_test: torch.Tensor  # (n_test,), evenly spaced
    y_truth: torch.Tensor  # (n_test,), f(x_test) without noise


def kernel_regression_target(x: torch.Tensor) -> torch.Tensor:
    """The function sec-attention-pooling tries to recover: ``f(x) = 2 sin(x) + x^0.8``, of a
    tensor ``x``."""
    check_type("x", x, torch.Tensor, "a tensor")
    return 2 * torch.sin(x) + x**0.8


def kernel_regression_data(
    n_train: int = 50, noise: float = 0.5, seed: int = 0
) -> KernelRegressionData:
    """Sample ``n_train`` points of :func:`kernel_regression_target` on [0, 5) with Gaussian noise.

    This is the data set of d2l's Nadaraya-Watson section. It uses its own generator, so the
    data do not depend on what else has drawn random numbers before. ``n_train`` is a positive
    integer, ``noise`` (a standard deviation) a number >= 0, ``seed`` an integer.
    """
    n_train = check_integer("n_train", n_train)
    check_number("noise", noise, at_least=0)
    check_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=generator) * 5)
    y_train = kernel_regression_target(x_train) + noise * torch.randn(n_train, generator=generator)
    x_test = torch.arange(0, 5, 0.1)
    return KernelRegressionData(x_train, y_train, x_test, kernel_regression_target(x_test))
