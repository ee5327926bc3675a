"""Which runs may go through the stream in lockstep (``simpe.loop.group``), decided from their configs alone.

A group shares one model (folder, dtype, family settings, device), one stream, one beam search with its length rule
and the post-edit protocol (``lockstep_key``); its methods' update is the shared one on the pair alone
(``why_alone`` says why a run cannot join: docs/lockstep.md).
"""
from __future__ import annotations

import json
from typing import Any

from simpe.config.tree import RunConfig

LOCKSTEP_METHODS = ("baseline", "full", "bias", "fixed", "top", "norms", "lasso")  # the update on the pair alone
LOCKSTEP_MODIFIERS = ("ewc",)  # a penalty's gradient added to the run's own: still the pair alone
LOCKSTEP_DECODERS = ("beam", "heap_beam")


def why_alone(cfg: RunConfig) -> str | None:
    """Why the run ``cfg`` cannot go in a lockstep group (one line), or None."""
    if cfg.method.name not in LOCKSTEP_METHODS:
        return f"method {cfg.method.name} (lockstep: {', '.join(LOCKSTEP_METHODS)})"
    extra = [m["name"] for m in cfg.method.modifiers if m["name"] not in LOCKSTEP_MODIFIERS]
    if extra:
        return f"modifier {extra[0]} (lockstep: {', '.join(LOCKSTEP_MODIFIERS)})"
    if cfg.decoder.name not in LOCKSTEP_DECODERS:
        return f"decoder {cfg.decoder.name} (lockstep: {', '.join(LOCKSTEP_DECODERS)})"
    if cfg.protocol.name != "post-edit":
        return f"protocol {cfg.protocol.name}"
    if cfg.update.dropout > 0:
        return "update.dropout > 0 (each run would draw its own dropout masks)"
    if cfg.update.checkpointing:
        return "update.checkpointing"
    if cfg.data.glossary_prompt:
        return "data.glossary_prompt"
    return None


def lockstep_key(cfg: RunConfig, identity: dict[str, Any]) -> str:
    """What the runs of a group share: the model and how it is held, the stream, the decoder and its length rule."""
    return json.dumps([identity["stream"], identity["model"], cfg.model.path, cfg.model.dtype, cfg.model.family,
                       cfg.model.family_settings(), cfg.device, cfg.decoder.name, cfg.decoder.params, cfg.protocol.name,
                       cfg.data.segments], sort_keys=True, default=str)


def group_bytes(estimates: list[Any]) -> int:
    """Bytes a lockstep group of these runs (``simpe.loop.dryrun.Estimate``s) holds (``simpe.loop.group``): each run's own model, gradients and method
    state, and the stacked copies: every run's weights once more on the run axis (``simpe.models.stacked``), the
    stacked gradients of the adapted tensors, and the batched passes' activations, beside one runtime."""
    own = sum(est.weights + est.gradients + est.state for est in estimates)
    stacked = sum(est.weights + est.gradients + est.activations for est in estimates)
    return own + stacked + max(est.runtime for est in estimates)


def group_parts(estimates: list[Any], budget: int) -> int:
    """Into how many groups (of sizes as equal as may be) a lockstep group must split to fit ``budget`` bytes."""
    for parts in range(1, len(estimates) + 1):
        size = -(-len(estimates) // parts)
        if all(group_bytes(estimates[i:i + size]) <= budget for i in range(0, len(estimates), size)):
            return parts
    return len(estimates)
