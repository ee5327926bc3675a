"""``bias``: a second, trainable output-layer bias (one value per target vocabulary entry).

Marian's and mBART's own ``final_logits_bias`` is a fixed buffer, and M2M100, NLLB, T5 and
causal LMs have no output bias at all; this adds a new zero-initialised parameter to the
logits through a forward hook on the family's output projection, so every decoder and the
update see it, and freezes everything else (Michel and Neubig 2018).
"""
from __future__ import annotations

from typing import Any

import torch

from simpe.methods.base import METHODS, Method
from simpe.models import family_of

OUTPUT_BIAS = "simpe_output_bias"


def attach_output_bias(model: Any) -> torch.nn.Parameter:
    """Add (once) the second output bias to ``model`` and return it."""
    if hasattr(model, OUTPUT_BIAS):
        return getattr(model, OUTPUT_BIAS)
    projection = family_of(model).output_projection(model)
    vocab = projection.out_features
    bias = torch.nn.Parameter(torch.zeros(vocab, device=projection.weight.device, dtype=projection.weight.dtype))  # (vocab,)
    model.register_parameter(OUTPUT_BIAS, bias)
    projection.register_forward_hook(lambda module, inputs, output: output + bias)
    return bias


@METHODS.add("bias")
class BiasMethod(Method):
    """A second, trainable output bias; everything else frozen."""
    store_markers = (OUTPUT_BIAS,)

    def select(self, model):
        return {OUTPUT_BIAS: attach_output_bias(model)}

    def load_store(self, model, tensors):
        attach_output_bias(model)
        super().load_store(model, tensors)
