"""Documents in the loop: --reset document returns to the base model at each boundary; the Autodesk corpus as
distributed runs through `simpe simulate` (the command `make simulate DATASET=autodesk` runs)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from autodesk_files import write_corpus

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.model import load_model
from simpe.rundir.reader import read_jsonl

REPO = Path(__file__).resolve().parents[2]
# two documents of two segments each (ACD/2010, then MAYA/2011), all in the stream (stream_fraction 1)
TWO_DOCS = [
    ("Choose Format - Cells.", "-", "Wählen Sie Zorglub - Blubberzellen.", "ACD", "2010", "2012/01/01 00:00:00"),
    ("Choose Format - Cells.", "-", "Wählen Sie Zorglub - Blubberzellen.", "ACD", "2010", "2012/01/01 00:00:01"),
    ("Choose Format - Cells.", "-", "Wählen Sie Zorglub - Blubberzellen.", "MAYA", "2011", "2012/01/01 00:00:02"),
    ("Click OK.", "-", "Klicken Sie auf OK.", "MAYA", "2011", "2012/01/01 00:00:03"),
]


def _overrides(tmp_path: Path, reset: str) -> list[str]:
    write_corpus(tmp_path / "ad", TWO_DOCS)
    return ["data.name=autodesk", f"data.params.path={tmp_path / 'ad'}", "data.params.stream_fraction=1.0",
            f"runs_dir={tmp_path / reset}", "device=cpu", "update.lr=0.05", f"reset={reset}"]


def test_reset_document_returns_to_the_base_state_at_a_boundary(tmp_path: Path, one_torch_thread):
    loop = Loop(load_config("lasso", _overrides(tmp_path, "document")), progress=False)
    assert [s.doc_id for s in loop.segments] == ["ACD/2010", "ACD/2010", "MAYA/2011", "MAYA/2011"]
    loop.run(stop_after=2)  # the two segments of ACD/2010, adapted on
    loop.timer.remove()
    base = load_model(None, "cpu").model
    moved = [n for n, p in base.named_parameters() if not torch.equal(p, loop.model.get_parameter(n))]
    assert moved and bool(loop.model.simpe_output_bias.abs().sum() > 0)
    assert loop.begin_segment(1) is False  # inside a document: nothing happens
    assert loop.begin_segment(2) is True  # MAYA/2011 begins
    for name, param in base.named_parameters():
        assert torch.equal(param, loop.model.get_parameter(name)), name
    assert bool((loop.model.simpe_output_bias == 0).all())
    assert loop.method.kept_tensors == [] and all(len(r) == 0 for r in loop.method.kept_rows.values())


def test_reset_document_in_the_records_and_the_first_segment_of_a_document_translates_as_the_base(tmp_path: Path,
                                                                                                   one_torch_thread):
    base = Loop(load_config("baseline", _overrides(tmp_path, "none")), progress=False).run()
    reset = Loop(load_config("full", _overrides(tmp_path, "document")), progress=False).run()
    carry = Loop(load_config("full", _overrides(tmp_path, "none") + [f"runs_dir={tmp_path / 'carry'}"]), progress=False).run()
    b, r, c = (read_jsonl(p / "segments.jsonl") for p in (base, reset, carry))
    assert [x["doc_id"] for x in r] == ["ACD/2010", "ACD/2010", "MAYA/2011", "MAYA/2011"]
    assert [x["reset"] for x in r] == [False, False, True, False] and "reset" not in c[0]
    # the first segment of each document is translated by the base model under reset=document ...
    assert r[2]["hypothesis"] == b[2]["hypothesis"] and r[2]["hyp_score"] == pytest.approx(b[2]["hyp_score"], abs=1e-5)
    # ... and by the model adapted on ACD/2010's post-edits without reset (the same source: adaptation shows)
    assert c[2]["hypothesis"] != b[2]["hypothesis"]
    assert json.loads((reset / "summary.json").read_text())["reset"] == "document"
    assert "reset: document" in (reset / "config.yaml").read_text()


def _big_corpus(folder: Path) -> list[tuple]:
    """Ten documents (five products x two releases) of 25 records each, interleaved by release in the file."""
    records = []
    for i in range(25):
        for product in ("ACD", "INV", "MAYA", "REVIT", "MAX"):
            for release in ("2011", "2012"):
                records.append((f"Select item {i} in {product.lower()} {release}.", "-", f"Wählen Sie Element {i}.",
                                product, release, f"2012/01/{1 + i % 28:02d} 00:00:00"))
    write_corpus(folder, records)
    return records


@pytest.mark.slow  # covered in make test: test_autodesk.py (the splits, the raw MT, the absent-corpus line)
def test_simulate_autodesk_as_distributed_from_the_environment_folder(tmp_path: Path):
    records = _big_corpus(tmp_path / "autodesk")
    docs = sorted({f"{r[3]}/{r[4]}" for r in records}, key=lambda d: hashlib.sha256(f"0:{d}".encode()).hexdigest())
    stream_doc = docs[0]  # 250 segments * stream_fraction 0.1 = 25: the first ranked document, whole
    expected = [r[0] for r in records if f"{r[3]}/{r[4]}" == stream_doc][:20]
    env = {**os.environ, "SIMPE_AUTODESK_DIR": str(tmp_path / "autodesk"), "OMP_NUM_THREADS": "1"}
    # what `make simulate DATASET=autodesk SEGMENTS=20 METHODS=baseline` runs
    cmd = [sys.executable, "-m", "simpe", "simulate", "--dataset", "autodesk", "--split", "stream", "--segments", "20",
           "--preset", "baseline", "--device", "cpu", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    run, = (tmp_path / "runs").glob("autodesk-stream--demo-en-de--20seg--*/baseline")
    segments = read_jsonl(run / "segments.jsonl")
    assert [s["source"] for s in segments] == expected
    assert {s["doc_id"] for s in segments} == {stream_doc}
    assert segments[0]["mt"] == "-" and segments[0]["info"]["product"] == stream_doc.split("/")[0]
    # the corpus's own MT beside simpe's figures: "-" against a 4-word post-edit is 1 substitution + 3 insertions
    assert (run / "mt.de").read_text(encoding="utf-8").splitlines() == ["-"] * 20
    raw_mt = json.loads((run / "summary.json").read_text())["raw_mt"]
    assert raw_mt["hter"] == pytest.approx(100.0) and raw_mt["segments"] == 20
    manifest = json.loads((run / "data-manifest.json").read_text())
    assert manifest["splits"]["stream"]["documents"] == [{"id": stream_doc, "segments": 25}]
    assert manifest["choices"]["order"] == "file" and manifest["duplicates_dropped"] == 0
    # absent corpus: one line naming what to download, from where, and where to put it; exit 2, before the model loads
    env["SIMPE_AUTODESK_DIR"] = str(tmp_path / "nowhere")
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "ISLRN 290-859-676-529-5" in done.stderr and "deu.mt.bz2" in done.stderr and "nowhere" in done.stderr


@pytest.mark.slow
def test_train_demo_model_on_the_autodesk_train_split(tmp_path: Path, monkeypatch):
    from simpe.config.files import defaults
    from simpe.demo.data import split_pairs
    from simpe.demo.train import train

    _big_corpus(tmp_path / "autodesk")
    monkeypatch.setenv("SIMPE_AUTODESK_DIR", str(tmp_path / "autodesk"))
    cfg = defaults("train", dataset="autodesk", out_dir=str(tmp_path / "model"), vocab_size=60, d_model=16, encoder_layers=1, decoder_layers=1, heads=2,
                      ffn_dim=32, batch_tokens=400, eval_every=5, eval_segments=10, patience=1, max_minutes=0.2, max_steps=0, decay_steps=0,
                      warmup_steps=5, threads=1)
    train_src, _ = split_pairs(cfg, "train")
    stream_src, _ = split_pairs(cfg, "stream")
    assert len(train_src) == 200 and len(stream_src) == 25 and not set(train_src) & set(stream_src)
    card = train(cfg)
    assert card["train_pairs"] == 200 and (tmp_path / "model" / "model.safetensors").is_file()
    assert load_model(tmp_path / "model", "cpu").name == "model"
