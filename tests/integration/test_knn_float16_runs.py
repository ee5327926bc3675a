"""knn with float16 keys (adapters/knn-fp16.yaml) in the loop on the demo model: records close to float32's, and a resume
that restores the float16 datastore.

Tolerance, on the first 20 segments of the stream: at least 18 of 20 translations identical to float32's knn and corpus
BLEU and chrF within 1.0 point (measured: all 20 identical, BLEU 44.23 both). The neighbours differ only where two
distances agree within float16's rounding (tests/unit/test_knn_float16.py), which moves a translation rarely.
The faster tests of tests/unit/test_knn_float16.py cover the store's and the state's round trip.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.rundir import layout
from simpe.store.user import read_store

SEGMENTS = 20


def _records(path: Path) -> tuple[list[dict], dict]:
    rows = [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]
    return rows, json.loads((path / "summary.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # four runs of the demo model, 65 segments (about 40 s on 2 busy cores)
def test_float16_keys_give_records_close_to_float32s_and_resume_at_float16(tmp_path: Path, one_torch_thread) -> None:
    def run(preset: str, folder: str, **kwargs) -> Path:
        overrides = [f"runs_dir={tmp_path / folder}", f"data.segments={SEGMENTS}", "snapshots.every=0", "device=cpu",
                     "checkpoint_every=10"]
        return Loop(load_config(preset, overrides), progress=False).run(**kwargs)

    rows32, summary32 = _records(run("knn", "float32"))
    path16 = run("knn-fp16", "float16")
    rows16, summary16 = _records(path16)
    same = sum(a["hypothesis"] == b["hypothesis"] for a, b in zip(rows32, rows16))
    print(f"identical translations {same} of {SEGMENTS}; BLEU {summary32['corpus']['bleu']:.2f} (float32) "
          f"{summary16['corpus']['bleu']:.2f} (float16); store bytes {summary32['store_bytes']} {summary16['store_bytes']}")
    assert same >= SEGMENTS - 2
    for metric in ("bleu", "chrf"):
        assert abs(summary32["corpus"][metric] - summary16["corpus"][metric]) <= 1.0, metric
    entries = summary16["method_facts"]["datastore_entries"]
    assert summary16["method_facts"]["key_dtype"] == "float16" and summary32["method_facts"]["key_dtype"] == "float32"
    assert summary32["store_bytes"] == entries * (256 * 4 + 4) and summary16["store_bytes"] == entries * (256 * 2 + 4)
    keys16 = read_store(path16 / "store.safetensors")[0]["__knn_keys__"]
    assert keys16.dtype == torch.float16 and keys16.shape == (entries, 256)

    # stopped after 15 segments (its checkpoint after 10), resumed: the same records and the same float16 store
    stopped = run("knn-fp16", "resumed", stop_after=15)
    checkpoint = torch.load(stopped / layout.STATE_DIR / layout.CHECKPOINT_FILE, weights_only=True)
    assert checkpoint["method"]["__knn_keys__"].dtype == torch.float16
    resumed = run("knn-fp16", "resumed", resume=True)
    rows, _ = _records(resumed)
    assert [r["hypothesis"] for r in rows] == [r["hypothesis"] for r in rows16]
    assert torch.equal(read_store(resumed / "store.safetensors")[0]["__knn_keys__"], keys16)
