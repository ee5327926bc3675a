"""``simpe select-fixed``: choose the tensor subset of the ``fixed`` method on held-out data.

Adapts a copy of the model with ``full`` and the paper's update over the dev split (no
translation, updates only), then keeps the non-embedding tensors with the largest
relative change within the budget (``simpe.methods.fixed.choose_tensors``) and writes
the selection next to the model. The update settings are the runs' (``update`` in
adapters/defaults.yaml) unless given. It does not run the online loop.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from simpe.config.files import defaults
from simpe.config.tree import UpdateConfig
from simpe.datasets import DATASETS, stream_hash
from simpe.errors import ConfigError
from simpe.loop.update import update
from simpe.methods import METHODS
from simpe.methods.base import base_parameters, embedding_names
from simpe.methods.fixed import SELECTION_FILE, choose_tensors
from simpe.model import load_model, model_family

logger = logging.getLogger(__name__)


def select_fixed(model_id: str | None, dataset: str, split: str, budget: float, segments: int | None, device: str,
                 out: Path | None = None, update_cfg: UpdateConfig | None = None, progress: bool = True,
                 model_cfg: Any = None) -> dict[str, Any]:
    """Adapt fully over ``split`` and write the ``fixed`` selection; return it.

    dataset, split, budget, segments, device: no defaults here; ``simpe select-fixed``'s flags own them.

    update_cfg: the update settings (default: the ``update`` section of adapters/defaults.yaml);
    model_cfg: the model's family and settings (a ``ModelConfig``; default: the ``model`` section there).
    """
    if not 0 < budget <= 1:
        raise ConfigError(f"budget must be a fraction of the model size in (0, 1], got {budget}")
    if segments is not None and segments < 1:
        raise ConfigError(f"--segments must be >= 1 (or left out for the whole split), got {segments}; "
                          "a selection from no segments would leave 'fixed' nothing to train")
    data = DATASETS.build(dataset).load(split)[:segments]
    model_cfg = model_cfg or defaults("model")
    family = model_family(model_id, model_cfg.family, model_cfg.family_settings())
    loaded = load_model(model_id, device, family, model_cfg.dtype)
    if out is None:
        if loaded.path is None:
            raise ConfigError("the model came from the hub: give --out PATH for the selection file")
        out = loaded.path / SELECTION_FILE
    model, tokenizer = loaded.model, loaded.tokenizer
    cfg = update_cfg or defaults("update")
    method = METHODS.build("full")
    method.attach(model, loaded.path, cfg)
    base = {n: p.detach().clone() for n, p in base_parameters(model).items()}
    total = sum(p.numel() for p in base.values())
    started = time.time()
    iterator = data
    if progress:
        from tqdm import tqdm

        iterator = tqdm(data, desc="select-fixed", unit="seg")
    for seg in iterator:
        update(model, method, loaded.family.encode_pair(tokenizer, seg.source, seg.reference, loaded.device), cfg)
    adapted = {n: p.detach() for n, p in base_parameters(model).items()}
    chosen = choose_tensors(base, adapted, int(budget * total), embedding_names(model))
    selection = {
        "model": loaded.name, "dataset": dataset, "split": split, "segments": len(data),
        "data_sha256": stream_hash(data), "budget_fraction": budget, "budget_parameters": int(budget * total),
        "model_parameters": total, "selected_parameters": sum(t["parameters"] for t in chosen),
        "update": vars(cfg), "seconds": round(time.time() - started, 1),
        "model_sha256": hashlib.sha256(b"".join(p.cpu().numpy().tobytes() for p in base.values())).hexdigest()[:16],
        "tensors": chosen,
    }
    Path(out).write_text(json.dumps(selection, indent=1) + "\n")
    logger.info("selected %d tensors (%d of %d parameters) -> %s", len(chosen), selection["selected_parameters"], total, out)
    return selection
