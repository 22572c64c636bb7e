"""Checkers for the book's coding exercises, one module per chapter.

A checker runs the student's function on fresh random inputs against the reference and prints
``pass``, or a hint that names the first thing that differs (a shape, a NaN, a known mistake
such as a wrong softmax axis, or the first differing position). It returns ``True`` on a pass.
"""

from companion.exercises.core import check
from companion.exercises.pooling import check_gaussian_weights, check_laplace_pooling

__all__ = ["check", "check_gaussian_weights", "check_laplace_pooling"]
