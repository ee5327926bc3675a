"""Every registry in one place, for ``simpe list``."""
from __future__ import annotations


def all_registries() -> dict[str, list[str]]:
    from simpe.config import known_adapters
    from simpe.datasets import DATASETS
    from simpe.decoders import DECODERS
    from simpe.methods import METHODS

    out = {"datasets": DATASETS.names(), "methods": METHODS.names(), "adapters": known_adapters(), "decoders": DECODERS.names()}
    try:
        from simpe.metrics.base import METRICS

        out["metrics"] = METRICS.names()
    except ImportError:
        pass
    return out
