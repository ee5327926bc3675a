"""The docs' "adding a method" example, ``norms`` (simpe/methods/norms.py), in the loop on the demo model."""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.methods.base import base_parameters
from simpe.model import load_model
from simpe.rundir.reader import read_jsonl

SOURCE = "Choose Format - Cells."
REFERENCE = "Wählen Sie Zorglub - Blubberzellen."  # an unlikely post-edit: adaptation must show


def test_norms_adapts_only_the_normalisation_layers_in_the_loop(tmp_path: Path, one_torch_thread: None):
    (tmp_path / "s.en").write_text((SOURCE + "\n") * 3, encoding="utf-8")
    (tmp_path / "s.de").write_text((REFERENCE + "\n") * 3, encoding="utf-8")
    cfg = load_config("norms", ["data.name=text", f"data.params.source={tmp_path / 's.en'}",
                                f"data.params.reference={tmp_path / 's.de'}", f"runs_dir={tmp_path / 'runs'}", "device=cpu"])
    loop = Loop(cfg, progress=False)
    path = loop.run()
    records = read_jsonl(path / "segments.jsonl")
    assert len(records) == 3 and all(r["update"]["skipped"] is None for r in records)
    assert records[0]["update"]["repetitions"] >= 1
    assert records[-1]["update"]["ppl_before"] < records[0]["update"]["ppl_before"]  # it learnt the post-edit
    base = base_parameters(load_model(None, "cpu").model)
    adapted = base_parameters(loop.model)
    moved = {name for name, p in adapted.items() if not torch.equal(p.detach(), base[name])}
    norms = {name for name in adapted if "layer_norm" in name or "layernorm" in name}
    # the demo model's 21 LayerNorms (2 in each of 6 encoder layers, 3 in each of 3 decoder layers), weight and bias of
    # 256 values each: they move, nothing else does
    assert len(norms) == 42 and sum(adapted[n].numel() for n in norms) == 10_752
    assert moved and moved <= norms
    assert {n for n in norms if n.endswith(".weight")} <= moved  # every scale got a step
    store = load_file(path / "store.safetensors")
    assert set(store) == norms and all(torch.equal(store[n], adapted[n].detach()) for n in norms)
