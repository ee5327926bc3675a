"""Adaptation methods, one module each; importing this package registers every module in it (``METHODS.names()``
lists them: the registry is the only list)."""
from simpe.methods.base import METHODS, Method
from simpe.registry import import_all

import_all(__name__, __path__)

__all__ = ["METHODS", "Method"]
