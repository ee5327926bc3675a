"""``fixed``: adapt a fixed tensor subset chosen beforehand on held-out in-domain data.

Following Wuebker et al. (2018) as described in Simianer et al. (2019): ``select_fixed`` adapts the
whole model online over the dev split with the paper's update, then keeps the
non-embedding tensors that moved most relative to their size (the RMS change per
parameter, ||θ - θ0||₂ / sqrt(|θ|)), greedily, within a budget (a fraction of the model's
parameter count). Tensors that did not move are never chosen. (The change relative to
the tensor's own norm, ||θ - θ0|| / ||θ0||, was tried first: it picks the near-zero
initialised bias vectors almost exclusively, including ones with zero gradient.) The selection is written next to the model (``fixed-selection.json``); the
``fixed`` method refuses to run without one, naming the command that makes it.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from simpe.errors import ConfigError
from simpe.methods.base import METHODS, Method, base_parameters
from simpe.ties import rank

logger = logging.getLogger(__name__)
SELECTION_FILE = "fixed-selection.json"


def selection_path(model_dir: Path | None, selection: str | None) -> Path:
    if selection:
        return Path(selection)
    if model_dir is None:
        raise ConfigError("method 'fixed' needs method.params.selection=PATH for a model loaded from the hub")
    return Path(model_dir) / SELECTION_FILE


def choose_tensors(base: dict[str, torch.Tensor], adapted: dict[str, torch.Tensor], budget: int,
                   embeddings: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Greedy: non-embedding tensors by descending RMS change, while the budget allows (changes that
    agree to rounding noise, ``simpe.ties``, by name). ``embeddings``: the names never chosen
    (``simpe.methods.base.embedding_names`` of the model)."""
    scored = []
    for name, before in base.items():
        if name in embeddings:
            continue
        change = float((adapted[name] - before).norm()) / before.numel() ** 0.5
        if change > 0:
            scored.append((change, name, before.numel()))
    # the largest change first; changes tied to rounding noise (simpe.ties) by name
    order = rank([t[0] for t in scored], key=[t[1] for t in scored])
    chosen, used = [], 0
    for change, name, size in (scored[i] for i in order):
        if used + size <= budget:
            chosen.append({"name": name, "parameters": size, "rms_change": round(change, 8)})
            used += size
    return chosen


@METHODS.add("fixed")
class FixedMethod(Method):
    """The tensors of a selection file made by ``simpe select-fixed``."""

    def __init__(self, selection: str | None = None) -> None:
        self.selection = selection

    def select(self, model):
        path = selection_path(self.model_dir, self.selection)
        if not path.is_file():
            target = self.model_dir if self.model_dir is not None else "MODEL"
            raise ConfigError(f"method 'fixed' needs a tensor selection for this model, and {path} does not exist; "
                              f"make it with `simpe select-fixed --model {target}` (or `make select-fixed`)")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            names = [t["name"] for t in data["tensors"]]
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"{path} is not a fixed selection made by `simpe select-fixed` ({type(err).__name__}: {err}); "
                              "make it again with `simpe select-fixed`") from None
        if not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{path} is not a fixed selection made by `simpe select-fixed` (tensor names are not strings)")
        params = base_parameters(model)
        unknown = [t["name"] for t in data["tensors"] if t["name"] not in params]
        if unknown:
            raise ConfigError(f"{path} names tensors this model lacks ({unknown[0]}); was it made for another model?")
        self.selection_file = str(path)
        return {t["name"]: params[t["name"]] for t in data["tensors"]}

    def can_select(self, model_dir: Path | None) -> bool:
        """Only with a selection file: the one named, or the one next to the model (none for a hub id)."""
        return self.selection is not None or model_dir is not None

    def describe(self):
        return {**super().describe(), "selection": self.selection_file}
