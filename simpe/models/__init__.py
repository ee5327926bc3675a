"""Model families: marian, mbart, m2m100, t5, causal (one module each); importing this package registers
every module in it. ``family_of(model)`` is the one way code finds a model's family."""
from simpe.models.base import FAMILIES, ModelFamily, Pair, family_for_type, family_of
from simpe.registry import import_all

import_all(__name__, __path__)

__all__ = ["FAMILIES", "ModelFamily", "Pair", "family_for_type", "family_of"]
