"""The online loop on the shipped demo model: order, resume, locking, completeness."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from messages import raises_naming

from simpe.config.files import defaults, load_config
from simpe.decoders import DECODERS
from simpe.errors import ConfigError, RunDirError
from simpe.loop.run import Loop
from simpe.loop.update import update
from simpe.methods import METHODS
from simpe.rundir.reader import read_jsonl
from simpe.rundir.writer import RunDir

REPO = Path(__file__).resolve().parents[2]
SOURCE = "Choose Format - Cells."
REFERENCE = "Wählen Sie Zorglub - Blubberzellen."  # an unlikely post-edit: adaptation must show


def _stream(tmp_path: Path, n: int = 3) -> list[str]:
    (tmp_path / "s.en").write_text((SOURCE + "\n") * n, encoding="utf-8")
    (tmp_path / "s.de").write_text((REFERENCE + "\n") * n, encoding="utf-8")
    return ["data.name=text", f"data.params.source={tmp_path / 's.en'}", f"data.params.reference={tmp_path / 's.de'}",
            f"runs_dir={tmp_path / 'runs'}", "device=cpu"]


def _translate(model, tokenizer, text: str) -> str:
    ids = tokenizer(text, return_tensors="pt")["input_ids"]  # (1, src_len)
    with torch.inference_mode():
        result = DECODERS.build("beam", beam_size=5).decode(model, ids)
    return tokenizer.decode(list(result.hypotheses[0].tokens), skip_special_tokens=True)


def test_hypothesis_i_is_made_before_reference_i_is_seen(tmp_path: Path):
    """Hypothesis i must equal the translation by the model updated on references 0..i-1 only."""
    overrides = _stream(tmp_path) + ["update.lr=0.05"]
    path = Loop(load_config("full", overrides), progress=False).run()
    records = read_jsonl(path / "segments.jsonl")
    # replay the updates by hand, translating before each one
    from simpe.model import load_model

    loaded = load_model(None, "cpu")
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.05)
    method.attach(loaded.model, loaded.path, cfg)
    pair = loaded.family.encode_pair(loaded.tokenizer, SOURCE, REFERENCE, loaded.device)
    expected = []
    for _ in range(3):
        expected.append(_translate(loaded.model, loaded.tokenizer, SOURCE))
        update(loaded.model, method, pair, cfg)
    after_all = _translate(loaded.model, loaded.tokenizer, SOURCE)
    assert [r["hypothesis"] for r in records] == expected
    # the updates do change the output, so a loop that updated first would fail the line above
    assert expected[0] != expected[1] or expected[1] != after_all
    assert records[0]["update"]["repetitions"] >= 1


def test_a_method_that_changes_nothing_takes_its_snapshot_once_and_repeats_it(tmp_path: Path, one_torch_thread: None):
    """baseline's model never changes: its later snapshots repeat the first one's figures (``repeats``), which are
    what taking the snapshot again gives, bit for bit but for the clock, in an uninterrupted run and a resumed one;
    every other method adapts."""
    snapshots = ["snapshots.every=2", "snapshots.probe=stream", "snapshots.probe_size=2", "ranking.k=2",
                 "ranking.samples=4", "ranking.max_len_b=4", "ranking.max_len_cap=4"]
    loop = Loop(load_config("baseline", _stream(tmp_path, 4) + snapshots), progress=False)
    loop.run()
    first, second = read_jsonl(loop.path / "snapshots.jsonl")
    assert (first["segment"], second["segment"], "repeats" in first, second["repeats"]) == (2, 4, False, 2)
    # the snapshots are their own phase of the run: summary.json sums each snapshot's wall time
    summary = json.loads((loop.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["seconds"]["snapshot"] == pytest.approx(first["snapshot.seconds"] + second["snapshot.seconds"])
    assert first["snapshot.seconds"] > second["snapshot.seconds"] > 0  # the repeated one costs no search
    assert {k: v for k, v in second.items() if k not in ("segment", "repeats", "snapshot.seconds")} == \
        {k: v for k, v in first.items() if k not in ("segment", "snapshot.seconds")}
    loop.probes.repeat = None  # taken again, with the model as it is after the stream
    again = loop.snapshot(4)
    clock = {k for k in again if k.endswith("seconds")}  # the observer adds snapshot.seconds to the records
    assert clock == {"seconds", "top.seconds", "mc.seconds"}
    assert {k: v for k, v in again.items() if k not in clock} == \
        {k: v for k, v in second.items() if k not in clock | {"repeats", "snapshot.seconds"}}
    assert not loop.method.adapts()
    # a run cut short after its checkpoint at 2, then resumed, repeats the snapshot its first part took
    (tmp_path / "cut").mkdir()
    cut = Loop(load_config("baseline", _stream(tmp_path / "cut", 4) + snapshots + ["checkpoint_every=2"]), progress=False)
    cut.run(stop_after=3)
    Loop(cut.cfg, progress=False).run(resume=True)
    resumed = read_jsonl(cut.path / "snapshots.jsonl")
    assert [s.get("repeats") for s in resumed] == [None, 2]
    assert {k: v for k, v in resumed[1].items() if k not in clock | {"snapshot.seconds"}} == \
        {k: v for k, v in second.items() if k not in clock | {"snapshot.seconds"}}
    for name in ("full", "bias", "fixed", "top", "lasso", "lora", "knn", "icl"):
        method = METHODS.build(name)
        method._trainable = {}  # the hook alone: knn and icl adapt without a trainable tensor
        assert method.adapts() == (name in ("knn", "icl")), name


def _strip_seconds(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


# lasso's state (base copy, offsets, budget) in make test; lora's and knn's only under make test-slow: their state
# round trips are covered by test_lora/test_knn (test_*_state_dict_round_trips), the kill and resume by lasso's case
@pytest.mark.parametrize("method", ["lasso", pytest.param("lora", marks=pytest.mark.slow), pytest.param("knn", marks=pytest.mark.slow)])
def test_resume_after_a_kill_gives_exactly_the_uninterrupted_records(tmp_path: Path, method: str):
    src = REPO / "data" / "libreoffice" / "stream.en"
    overrides = [f"runs_dir={tmp_path / 'a'}", "data.segments=8", "checkpoint_every=3", "device=cpu"]
    whole = Loop(load_config(method, overrides), progress=False).run()
    # the same run in a subprocess, killed (SIGKILL) once 4 segments are logged, then resumed
    killed_dir = tmp_path / "b"
    cmd = [sys.executable, "-m", "simpe", "simulate", "--preset", method, "--segments", "8", "--device", "cpu",
           "--runs-dir", str(killed_dir), "--set", "checkpoint_every=3", "--no-progress"]
    # same thread count as this process: CPU float reductions, hence records, depend on it
    env = {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = killed_dir / whole.relative_to(tmp_path / "a")
    deadline = time.time() + 240
    while time.time() < deadline and len(read_jsonl(run / "segments.jsonl", tolerate_torn_tail=True)) < 4:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    logged = len(read_jsonl(run / "segments.jsonl", tolerate_torn_tail=True))
    assert 4 <= logged < 8 and not (run / "DONE").exists()
    with pytest.raises(RunDirError, match="incomplete run; pass --resume"):
        Loop(load_config(method, [*overrides[1:], f"runs_dir={killed_dir}"]), progress=False).run()
    Loop(load_config(method, [*overrides[1:], f"runs_dir={killed_dir}"]), progress=False).run(resume=True)
    assert _strip_seconds(read_jsonl(run / "segments.jsonl")) == _strip_seconds(read_jsonl(whole / "segments.jsonl"))
    assert (run / "DONE").exists() and not (run / "state").exists()
    a, b = json.loads((whole / "summary.json").read_text()), json.loads((run / "summary.json").read_text())
    assert a["corpus"] == b["corpus"] and a["adapted_parameters"] == b["adapted_parameters"] and a["store_bytes"] == b["store_bytes"]
    assert src.exists()


def test_run_directory_contents_lock_and_overwrite(tmp_path: Path):
    overrides = [f"runs_dir={tmp_path}", "data.segments=3", "device=cpu"]
    path = Loop(load_config("bias", overrides), progress=False).run()
    names = {p.name for p in path.iterdir()}
    assert {"config.yaml", "env.json", "log.txt", "segments.jsonl", "summary.json", "hyp.tok.de", "ref.tok.de", "DONE"} <= names
    summary = json.loads((path / "summary.json").read_text())
    records = read_jsonl(path / "segments.jsonl")
    assert summary["segments"] == 3 and summary["adapted_parameters"] == 8000 and summary["store_bytes"] == 32000
    assert summary["corpus"]["bleu"] == pytest.approx(records[-1]["cumulative"]["bleu"])
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in summary["signatures"]["bleu"]
    assert (path / "hyp.tok.de").read_text().splitlines() == [r["hyp_tokens"] for r in records]
    env = json.loads((path / "env.json").read_text())
    assert env["packages"]["torch"].startswith("2.13.0") and env["device"] == "cpu"
    # the group: the readable name, then the digest of the stream as loaded, the model's files and no memory, worked
    # out here from the files (sha256, as simpe.rundir.layout.group_digest states it)
    stream = hashlib.sha256()
    for source, reference in list(zip((REPO / "data/libreoffice/stream.en").read_text(encoding="utf-8").splitlines(),
                                      (REPO / "data/libreoffice/stream.de").read_text(encoding="utf-8").splitlines()))[:3]:
        stream.update(source.encode() + b"\x00" + reference.encode() + b"\x01")
    model_dir = REPO / "models/demo-en-de"
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(model_dir.iterdir())
             if p.is_file() and p.name not in ("README.md", "model_card.json") and not p.name.startswith("fixed-selection")}
    model = hashlib.sha256("".join(f"{n} {files[n]}\n" for n in sorted(files)).encode()).hexdigest()[:16]
    digest = hashlib.sha256(f"stream {stream.hexdigest()[:16]}\nmodel {model}\nmemory -\n".encode()).hexdigest()[:8]
    assert path.parent.name == f"libreoffice-stream--demo-en-de--3seg--{digest}"
    assert env["group"] == {"digest": digest, "stream": stream.hexdigest()[:16], "model": model, "memory": None,
                            "glossary": None, "languages": None}  # en -> de: no languages in the digest
    with pytest.raises(RunDirError, match="complete run; pass --overwrite"):
        Loop(load_config("bias", overrides), progress=False).run()
    with RunDir(path) as holder:
        holder._lock()  # another writer holds the lock
        with pytest.raises(RunDirError, match="is being written by pid"):
            RunDir(path).open(resume=False, overwrite=True)
    Loop(load_config("bias", overrides), progress=False).run(overwrite=True)
    assert (path / "DONE").exists()


def test_resume_refuses_changed_settings(tmp_path: Path):
    overrides = [f"runs_dir={tmp_path}", "data.segments=4", "device=cpu"]
    Loop(load_config("bias", overrides), progress=False).run(stop_after=2)
    with raises_naming(RunDirError, "update.lr", "1.0", "0.5", "config.yaml"):
        Loop(load_config("bias", overrides + ["update.lr=0.5"]), progress=False).run(resume=True)
    # where the runs folder is spelled (trailing slash, ./ segments) and the device do not matter
    respelled = [f"runs_dir={tmp_path}/./", "data.segments=4", "device=auto"]
    path = Loop(load_config("bias", respelled), progress=False).run(resume=True)
    assert len(read_jsonl(path / "segments.jsonl")) == 4 and (path / "DONE").exists()


@pytest.mark.parametrize("decoder, params", [
    ("greedy", {}), ("beam", {"beam_size": 2}), ("heap_beam", {"beam_size": 2}), ("sampling", {"samples": 4}),
    ("topk", {"k": 2, "max_expansions": 500}), ("topk_dfs", {"k": 2, "max_expansions": 500}),
    ("mbr", {"samples": 4, "utility": "chrf"}), ("constrained_beam", {"beam_size": 2}),
])
def test_every_registered_decoder_runs_in_the_loop(decoder: str, params: dict, tmp_path: Path, one_torch_thread: None):
    """The loop builds, binds and decodes with every decoder of the registry; the hypothesis is its first. A decoder
    that places a glossary's terms gets the dataset's glossary (it is refused without one)."""
    assert decoder in DECODERS
    overrides = [f"runs_dir={tmp_path}", "data.segments=2", "device=cpu", f"decoder.name={decoder}",
                 f"decoder.params={json.dumps(params)}"]
    if DECODERS.build(decoder, **params).takes_glossary:
        overrides.append("data.glossary=dataset")
    path = Loop(load_config("baseline", overrides), progress=False).run()
    records = read_jsonl(path / "segments.jsonl")
    assert len(records) == 2 and all(r["hypothesis"] and r["hyp_score"] < 0 for r in records)


def test_every_registered_decoder_is_covered():
    covered = {"greedy", "beam", "heap_beam", "sampling", "topk", "topk_dfs", "mbr", "constrained_beam"}
    assert set(DECODERS.names()) == covered, "add the new decoder to test_every_registered_decoder_runs_in_the_loop"


def test_a_decoder_that_cannot_run_is_refused_before_the_model_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import simpe.loop.run

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(simpe.loop.run, "load_model", no_model)
    for overrides, message in ((["decoder.name=mbr", "decoder.params={utility: comet}"], "needs a COMET model"),
                               (["decoder.name=beam", "decoder.params={width: 3}"], "unknown parameter 'width' of decoder 'beam'"),
                               (["snapshots.every=2", "ranking.quality=comet"], "needs a COMET model")):
        with pytest.raises(ConfigError, match=message):
            Loop(load_config("baseline", [f"runs_dir={tmp_path}", "data.segments=2", *overrides]), progress=False)


def test_resume_without_a_checkpoint_drops_a_torn_first_record(tmp_path: Path):
    """Killed while writing the first record: --resume starts the logs again, with no fragment left in them."""
    overrides = [f"runs_dir={tmp_path}", "data.segments=2", "device=cpu"]
    path = Loop(load_config("baseline", overrides), progress=False).run(stop_after=1)
    whole = (path / "segments.jsonl").read_text(encoding="utf-8")
    (path / "segments.jsonl").write_text(whole[: len(whole) // 2], encoding="utf-8")  # a torn first line
    Loop(load_config("baseline", overrides), progress=False).run(resume=True)
    records = read_jsonl(path / "segments.jsonl")  # strict: every line valid JSON
    assert [r["index"] for r in records] == [0, 1] and (path / "DONE").exists()


def test_a_run_written_when_the_presets_lived_in_presets_resumes_and_reports(tmp_path: Path):
    """Runs save the preset by name and content, not by folder: a run begun under the old presets/ folder
    resumes with the presets in adapters/, and the group reports."""
    import shutil

    from simpe.report.html import write_report
    from simpe.rundir.reader import load_group

    old = tmp_path / "presets"  # the folder's name from the vocabulary change until adapters/ came back
    shutil.copytree(REPO / "adapters", old)
    overrides = [f"runs_dir={tmp_path / 'runs'}", "data.segments=3", "device=cpu"]
    base = Loop(load_config("baseline", overrides, presets_dir=old), progress=False).run()
    path = Loop(load_config("bias", overrides, presets_dir=old), progress=False).run(stop_after=2)
    saved = (path / "config.yaml").read_text(encoding="utf-8")
    assert "adapter: bias" in saved and "presets" not in saved and "adapters" not in saved
    Loop(load_config("bias", overrides), progress=False).run(resume=True)
    assert [r["index"] for r in read_jsonl(path / "segments.jsonl")] == [0, 1, 2] and (path / "DONE").exists()
    page = write_report(load_group([path.parent]), num_resamples=20)
    assert page.is_file() and {base.name, path.name} == {"baseline", "bias"}
