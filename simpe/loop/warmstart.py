"""Warm start: adapting on the translator's translation memory before the stream (``warm_start`` settings).

Checked before the model loads (``check_warm_start``: the memory's pairs, and for a baseline run the method and update
settings of the preset that warm-starts it), run once the model is loaded (``warm_start``).
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time
from typing import Any

from simpe.config.files import load_config
from simpe.config.tree import RunConfig, UpdateConfig
from simpe.errors import ConfigError
from simpe.loop.update import set_dropout, update
from simpe.methods.compose import build_method

logger = logging.getLogger(__name__)


def check_warm_start(cfg: RunConfig, languages: tuple[str, str]) -> tuple[list[tuple[str, str]], Any, UpdateConfig | None]:
    """The memory's pairs (in ``languages``: source, target), and for a baseline run the method and update settings of
    the preset that warm-starts it (``warm_start.method``), read and checked before the model loads."""
    warm = cfg.warm_start
    if warm.method is not None and cfg.method.name != "baseline":
        raise ConfigError(f"warm_start.method is for a baseline run (the warm-started model without online updates); "
                          f"method {cfg.method.name!r} warm-starts with its own update: leave it null")
    if warm.path is None:
        return [], None, None
    from simpe.datasets.parallel import read_memory

    pairs = read_memory(warm.path, *languages)
    if cfg.method.name != "baseline":
        return pairs, None, None
    if warm.method is None:
        raise ConfigError("a baseline run learns nothing from --warm-start by itself; name the preset whose update "
                          "warm-starts it, e.g. --set warm_start.method=full (the comparison's baseline)")
    preset = load_config(warm.method)
    method = build_method(preset.method.name, preset.method.params, preset.method.modifiers)
    return pairs, method, preset.update


def warm_start(cfg: RunConfig, model: Any, loaded: Any, method: Any, pairs: list[tuple[str, str]], warm_method: Any,
               warm_update: UpdateConfig | None) -> dict[str, Any]:
    """Adapt ``model`` (``loaded``: its ``simpe.model.LoadedModel``) on the translator's memory before the stream:
    ``warm_start.epochs`` passes, in an order shuffled with the run's seed, one step of the method's own update (its
    trainable set and step, the update's clipping, and the mean loss of the batch) per ``warm_start.batch_size``
    pairs; then the method sees each pair once, as after a segment (knn's datastore, tune-retrieve's memory and
    replay's buffer take the memory). A baseline run is warm-started by ``warm_method`` (of ``warm_start.method``,
    with ``warm_update``) and then frozen. Returns the facts the run's summary keeps."""
    warm, start = cfg.warm_start, time.perf_counter()
    update_cfg = cfg.update
    if warm_method is not None:
        method, update_cfg = warm_method, warm_update
        method.attach(model, loaded.path, update_cfg)
    family, device = loaded.family, loaded.device
    encoded = [family.encode_pair(loaded.tokenizer, s, r, device) for s, r in pairs]
    one_step = dataclasses.replace(update_cfg, max_repeats=1, ppl_threshold=1.0)  # exactly one step a batch
    losses, steps = [], 0
    for epoch in range(warm.epochs):
        order = list(range(len(encoded)))
        random.Random(cfg.seed + epoch).shuffle(order)
        for first in range(0, len(order), warm.batch_size):
            batch = [encoded[i] for i in order[first:first + warm.batch_size]]
            record = update(model, method, batch[0], one_step, batch=batch[1:], measure_after=False)
            steps += record["repetitions"]
            losses.append(record["loss_before"])
    for pair in encoded:
        method.after_segment(pair)
    if warm_method is not None:
        model.requires_grad_(False)  # the baseline adapts nothing from here on
        set_dropout(model, cfg.update.dropout)
    facts = {"path": str(warm.path), "pairs": len(encoded), "epochs": warm.epochs, "batch_size": warm.batch_size,
             "method": method.name if warm_method is None else warm.method, "steps": steps,
             "loss_first_batch": losses[0] if losses else None, "loss_last_batch": losses[-1] if losses else None,
             "seconds": time.perf_counter() - start}
    logger.info("warm start on %s: %d pairs, %d epochs of batches of %d, %d steps of %s in %.1f s",
                warm.path, len(encoded), warm.epochs, warm.batch_size, steps, facts["method"], facts["seconds"])
    return facts


def warm_preset(cfg: RunConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The method parameters and modifiers of the preset that warm-started a baseline run (its store's metadata)."""
    preset = load_config(cfg.warm_start.method)
    return dict(preset.method.params), [dict(m) for m in preset.method.modifiers]
