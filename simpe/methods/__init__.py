"""Adaptation methods: baseline, full, bias, top, fixed, lasso (one module each)."""
from simpe.methods import baseline, bias, fixed, full, lasso, top  # noqa: F401  (registers them)
from simpe.methods.base import METHODS, Method

__all__ = ["METHODS", "Method"]
