"""``norms``: adapt only the normalisation layers' scales and shifts (LayerNorm, RMSNorm).

A few thousand values that rescale every layer's activations (10,752 of the demo model's 9.9M, 0.1%): a cheap,
small per-user store between ``bias`` (the output only) and ``top`` (two whole layers), in the spirit
of adapting only the LayerNorm parameters (Zhao et al. 2024, "Tuning LayerNorm in attention").
It is also the example of docs/methods.md, "Adding a method": a method is ``select``, and the shared
update (gradients, clipping, plain SGD, repetitions, undoing a bad step) does the rest.
"""
from __future__ import annotations

from typing import Any

import torch

from simpe.methods.base import METHODS, Method, base_parameters

NORM_CLASSES = ("LayerNorm", "RMSNorm")  # torch's LayerNorm, T5LayerNorm, LlamaRMSNorm, Qwen2RMSNorm, ...


def is_norm(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.LayerNorm) or type(module).__name__.endswith(NORM_CLASSES)


@METHODS.add("norms")
class NormsMethod(Method):
    """The weights and biases of every normalisation layer; everything else frozen."""

    def select(self, model: Any) -> dict[str, torch.nn.Parameter]:
        norms = {id(p) for module in model.modules() if is_norm(module) for p in module.parameters(recurse=False)}
        return {name: p for name, p in base_parameters(model).items() if id(p) in norms}
