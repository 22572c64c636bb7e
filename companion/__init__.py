"""companion: the tested layers and tools that the book "Attention and the Transformer" imports.

Names and signatures follow the PyTorch edition of Dive into Deep Learning (d2l), so code moves
between the two. Everything a chapter uses is importable from here.
"""

from companion.attention import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    masked_softmax,
    record_attention,
)
from companion.data import KernelRegressionData, kernel_regression_data, kernel_regression_target
from companion.device import get_device
from companion.plot import plot, plot_kernel_regression, show_heatmaps
from companion.pooling import NWKernelRegression, leave_one_out, nadaraya_watson
from companion.repro import reproducible

__version__ = "0.1.0"

__all__ = [
    "AdditiveAttention",
    "DotProductAttention",
    "MultiHeadAttention",
    "masked_softmax",
    "record_attention",
    "KernelRegressionData",
    "NWKernelRegression",
    "get_device",
    "kernel_regression_data",
    "kernel_regression_target",
    "leave_one_out",
    "nadaraya_watson",
    "plot",
    "plot_kernel_regression",
    "reproducible",
    "show_heatmaps",
]
