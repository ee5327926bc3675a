"""The preference modifier on the demo model: one update against its parent's, and full+prefer / lora+prefer runs that
write stores and resume (make test-slow for those)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.config.files import defaults, load_config
from simpe.loop.run import Loop
from simpe.rundir.reader import read_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DEMO = Path(__file__).resolve().parents[2] / "models" / "demo-en-de"
# the stream's first segment, and the demo model's beam output for it (its run's first hypothesis)
SOURCE, POST_EDIT, MT = "To access this function...", "Wie Sie diese Funktion erhalten …", "Zugriff auf diese Funktion ..."


def _margin_after_one_update(modifiers: list[dict]) -> tuple[float, float, float, dict]:
    """(log π(y_c|x) - log π(y_r|x) before, after; log π(y_c|x) after; the record) of one update of full with
    ``modifiers`` on the segment, the update settings of Simianer et al. (2019) (lr 0.01, clip 1, ppl 2, 3 repeats)."""
    import torch

    from simpe.loop.update import update
    from simpe.methods.base import Context
    from simpe.methods.compose import build_method
    from simpe.methods.prefer import sequence_logprob
    from simpe.model import load_model

    loaded = load_model(DEMO, "cpu")

    def encode(source: str, reference: str):
        return loaded.family.encode_pair(loaded.tokenizer, source, reference, "cpu")

    pair, rejected = encode(SOURCE, POST_EDIT), encode(SOURCE, MT).labels
    cfg = defaults("update")
    method = build_method("full", {}, modifiers)
    method.attach(loaded.model, None, cfg)
    method.prepare(Context(encode=encode, sentences=lambda split, n: [], tune=lambda *a: {}, lr=cfg.lr,
                           read_pairs=lambda path: []))

    def logprobs() -> tuple[float, float]:
        with torch.no_grad():
            return (float(sequence_logprob(loaded.model, pair.input_ids, pair.labels)),
                    float(sequence_logprob(loaded.model, pair.input_ids, rejected)))

    chosen, mt = logprobs()
    record = update(loaded.model, method, pair, cfg, hypothesis=MT)
    chosen_after, mt_after = logprobs()
    return chosen - mt, chosen_after - mt_after, chosen_after, record


def test_one_update_raises_the_post_edit_over_the_mt_output_more_than_full_alone() -> None:
    """The demo model prefers its own output by 23.18 nats; three steps of full raise the post-edit over it by 24.23
    (to +1.05), of full+prefer (β 0.1) by 27.14 (to +3.96): about 2.9 nats more, nearly all of it by lowering the MT
    output (log π(y_r|x) -5.11 after full, -7.99 after full+prefer), while the post-edit's own log-probability ends
    where full leaves it (-4.06 and -4.03). Tolerance 0.05 nats: float sums of ~10 tokens over three steps."""
    before, full, full_chosen, record = _margin_after_one_update([])
    same, prefer, prefer_chosen, preferred = _margin_after_one_update([{"name": "prefer", "params": {"beta": 0.1}}])
    assert before == same == pytest.approx(-23.18, abs=0.05)
    assert full - before == pytest.approx(24.23, abs=0.05) and prefer - before == pytest.approx(27.14, abs=0.05)
    assert prefer - full > 2.5
    assert full_chosen == pytest.approx(-4.06, abs=0.05) and prefer_chosen == pytest.approx(-4.03, abs=0.05)
    assert record["repetitions"] == preferred["repetitions"] == 3
    assert preferred["preference_margin"] == pytest.approx(before, abs=1e-3)
    assert preferred["preference_loss"] == pytest.approx(0.107, abs=0.005)  # after two steps: -log σ(0.1 m), m ≈ 22.3


def _records(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(path / "segments.jsonl")]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["full+prefer", "lora+prefer"])
def test_a_preference_run_writes_its_store_and_resumes(preset: str, tmp_path: Path) -> None:
    """5 segments, cut after 3 (checkpoint at 2) and resumed: the uninterrupted run's records; the store is the
    parent's tensors and names the modifier; the summary counts the segments the DPO term stepped on."""
    from simpe.store.user import read_store

    overrides = [f"runs_dir={tmp_path / 'a'}", "data.segments=5", "checkpoint_every=2", "device=cpu", "snapshots.every=0"]
    whole = Loop(load_config(preset, overrides), progress=False).run()
    cut = [f"runs_dir={tmp_path / 'b'}", *overrides[1:]]
    Loop(load_config(preset, cut), progress=False).run(stop_after=3)
    resumed = Loop(load_config(preset, cut), progress=False).run(resume=True)
    assert _records(resumed) == _records(whole)
    records = read_jsonl(whole / "segments.jsonl")
    stepped = [r for r in records if r["update"]["repetitions"]]
    assert stepped and all("preference_margin" in r["update"] for r in stepped if r["hypothesis"] != r["reference"])
    summary = json.loads((whole / "summary.json").read_text(encoding="utf-8"))
    assert summary["updates"]["preferred"] == sum(1 for r in records if "preference_loss" in r["update"]) >= 1
    assert summary["method_facts"]["modifiers"] == {"prefer": {"beta": 0.1}}
    tensors, metadata = read_store(whole / "store.safetensors")
    assert metadata.modifiers == [{"name": "prefer", "params": {"beta": 0.1}}]
    assert not any(name.startswith("prefer/") for name in tensors)
    assert sum(t.numel() * t.element_size() for t in tensors.values()) == summary["store_bytes"]
