"""Composed methods, tune-retrieve and the warm start in the loop, on the demo model (make test-slow)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.rundir.reader import read_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

REPO = Path(__file__).resolve().parents[2]
# the shipped dev split stands for the train split here (train is rebuilt by make corpus, not shipped)
BOTH = ("method.modifiers=[{name: replay, params: {k: 1}}, {name: ewc, params: {split: dev, sentences: 4}}, "
        "{name: tune-retrieve, params: {}}]")


def _records(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} | {"update": {k: v for k, v in r["update"].items() if k != "tune"}}
            for r in read_jsonl(path / "segments.jsonl")]


def test_a_composed_run_resumes_with_its_modifiers_state(tmp_path: Path) -> None:
    """full + replay + ewc + tune-retrieve: cut after 3 segments (checkpoint at 2), resumed: the uninterrupted records,
    the replay buffer and its draws, the Fisher and the tune-retrieve memory restored from the checkpoint."""
    overrides = [f"runs_dir={tmp_path / 'a'}", "data.segments=5", "checkpoint_every=2", "device=cpu", "snapshots.every=0", BOTH]
    whole = Loop(load_config("full", overrides), progress=False).run()
    cut = [f"runs_dir={tmp_path / 'b'}", *overrides[1:]]
    Loop(load_config("full", cut), progress=False).run(stop_after=3)
    resumed = Loop(load_config("full", cut), progress=False).run(resume=True)
    assert _records(resumed) == _records(whole)
    records = read_jsonl(whole / "segments.jsonl")
    assert all("penalty" in r["update"] for r in records[1:] if r["update"]["repetitions"])
    assert [r["update"].get("replayed", 0) for r in records][:2] == [0, 1]
    summary = json.loads((whole / "summary.json").read_text())
    assert set(summary["method_facts"]["modifiers"]) == {"replay", "ewc", "tune-retrieve"}


def _memory_pairs(split: str) -> tuple[list[str], list[str]]:
    """16 TM-like pairs, never the stream: the train split's UI strings (its ``ui/`` ids, LibreOffice's translated
    interface messages, as a translator's memory holds them), or the shipped dev split's first pairs."""
    folder = REPO / "data" / "libreoffice"
    en, de = (folder / f"{split}.en").read_text(encoding="utf-8").splitlines(), (folder / f"{split}.de").read_text(encoding="utf-8").splitlines()
    if split == "dev":
        return en[:16], de[:16]
    ids = (folder / "train.ids").read_text(encoding="utf-8").splitlines()
    keep = [i for i, line in enumerate(ids) if line.startswith("ui/")][:16]
    return [en[i] for i in keep], [de[i] for i in keep]


# the train split is built by `make corpus` (from Debian's packages), not shipped: CI has only the dev split
@pytest.mark.parametrize("split", [
    pytest.param("train", marks=pytest.mark.skipif(not (REPO / "data/libreoffice/train.ids").is_file(),
                                                   reason="the train split is built by make corpus, not shipped")),
    "dev"])
def test_a_warm_started_baseline_is_the_warm_started_model_and_its_store_says_so(split: str, tmp_path: Path) -> None:
    """A memory of 16 pairs that are not the stream (the train split's UI strings, or the shipped dev split's): the
    baseline warm-started by full translates the stream with that model and no online update; its store, applied by
    simpe translate, gives the same translations."""
    from simpe.store.translate import translate_file

    memory = tmp_path / "memory.tsv"
    en, de = _memory_pairs(split)
    stream = set((REPO / "data/libreoffice/stream.en").read_text(encoding="utf-8").splitlines())
    assert len(en) == 16
    if split == "train":  # none of them a stream segment (of the dev split's 16, one is)
        assert not stream & set(en)
    memory.write_text("".join(f"{s}\t{t}\n" for s, t in zip(en, de)), encoding="utf-8")
    overrides = [f"runs_dir={tmp_path}", "data.segments=3", "device=cpu", "snapshots.every=0", f"warm_start.path={memory}",
                 "warm_start.epochs=1", "warm_start.batch_size=8"]
    base = Loop(load_config("baseline", [*overrides, "warm_start.method=full"]), progress=False).run()
    assert re.fullmatch(r".*--warm-memory--[0-9a-f]{8}", base.parent.name)
    summary = json.loads((base / "summary.json").read_text())
    assert summary["warm_start"]["pairs"] == 16 and summary["warm_start"]["steps"] == 2
    hypotheses = [r["hypothesis"] for r in read_jsonl(base / "segments.jsonl")]
    sources = tmp_path / "src.en"
    sources.write_text("".join(r["source"] + "\n" for r in read_jsonl(base / "segments.jsonl")), encoding="utf-8")
    assert translate_file(None, sources, store=base / "store.safetensors", device="cpu") == hypotheses
