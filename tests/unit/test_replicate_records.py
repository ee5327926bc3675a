"""The replication's provenance: code fingerprints (simpe.fingerprint), the records' columns and what they give back
(simpe.replicate.records), the calls, and the stale rows ``--status`` lists (simpe.replicate.provenance).

The byte-for-byte rebuild of the page from records of a real run is tests/integration/test_replicate.py's
test_report_only_rebuilds_the_page_byte_for_byte_from_the_records.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simpe.fingerprint import changed_files, fingerprint, model_table, run_code, source_files
from simpe.paths import REPO_ROOT
from simpe.replicate import records as rec
from simpe.rundir.reader import Run


def _config(method: str, decoder: str = "beam") -> dict:
    return {"method": {"name": method, "params": {}}, "decoder": {"name": decoder, "params": {}},
            "data": {"name": "libreoffice"}, "model": {"path": None, "family": "auto"}}


def test_a_runs_code_counts_the_loop_its_variants_and_the_models_files_not_the_other_variants():
    lasso, baseline = run_code(_config("lasso")), run_code(_config("baseline"))
    for code in (lasso, baseline):
        files = code["files"]
        assert {"simpe/loop/run.py", "simpe/loop/update.py", "simpe/metrics/recall.py", "simpe/decoders/beam.py",
                "simpe/datasets/libreoffice.py", "simpe/models/marian.py", "models/demo-en-de/model.safetensors",
                "models/demo-en-de/truecase.de.model", "models/demo-en-de/fixed-selection.json"} <= set(files)
        assert "models/demo-en-de/README.md" not in files and "simpe/models/mbart.py" not in files
        assert "simpe/datasets/autodesk.py" not in files and "simpe/decoders/mbr.py" not in files
        assert "simpe/replicate/claims.py" not in files and not any(f.startswith("simpe/cli/") for f in files)
    assert "simpe/methods/lasso.py" in lasso["files"] and "simpe/methods/norms.py" not in lasso["files"]
    assert "simpe/methods/lasso.py" not in baseline["files"] and "simpe/methods/baseline.py" in baseline["files"]
    assert lasso["fingerprint"] != baseline["fingerprint"] == run_code(_config("baseline"))["fingerprint"]
    assert changed_files(baseline["files"], lasso["files"]) == sorted(set(baseline["files"]) ^ set(lasso["files"]))
    assert run_code(_config("baseline", "heap_beam"))["fingerprint"] != baseline["fingerprint"]


def test_a_compositions_code_counts_its_modifiers():
    """full+prefer and full+ewc count their modifier's module (a change to prefer.py makes the prefer runs stale), full
    alone neither; a companion beside the method counts its own module; an unknown modifier the whole family."""
    def composed(*names: str) -> dict:
        return run_code({**_config("full"), "method": {"name": "full", "params": {}, "modifiers": [{"name": n} for n in names]}})

    full = set(run_code(_config("full"))["files"])
    assert "simpe/methods/prefer.py" not in full and "simpe/methods/ewc.py" not in full
    assert set(composed("prefer")["files"]) - full == {"simpe/methods/prefer.py"}
    assert set(composed("ewc", "knn")["files"]) - full >= {"simpe/methods/ewc.py", "simpe/methods/knn.py"}
    assert "simpe/methods/lasso.py" in composed("nonesuch")["files"]


def test_an_unknown_variant_counts_its_whole_family():
    files = run_code({"method": {"name": "nonesuch"}, "model": {"path": "/nonexistent/model"}})["files"]
    assert {"simpe/methods/lasso.py", "simpe/methods/full.py", "simpe/models/mbart.py", "simpe/models/marian.py"} <= set(files)
    assert files["model:/nonexistent/model"] == "hub"  # not a local folder: its name is all there is


def test_the_import_walk_follows_imports_inside_functions_and_fingerprints_follow_file_contents(tmp_path: Path):
    files = {p.relative_to(REPO_ROOT).as_posix() for p in source_files(["simpe.replicate.run"])}
    assert {"simpe/sweep/executor.py", "simpe/replicate/studies.py", "simpe/measure/sensitivity.py"} <= files  # imported lazily
    assert fingerprint({"a": "1", "b": "2"}) == fingerprint({"b": "2", "a": "1"}) != fingerprint({"a": "1", "b": "3"})
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("about")
    before = model_table(model)
    (model / "config.json").write_text('{"d_model": 2}')
    assert set(before) == {"m/config.json"} and changed_files(before, model_table(model)) == ["m/config.json"]


def _run(segments: list[dict], name: str = "x", method: str = "baseline") -> Run:
    return Run(path=Path("group") / name, name=name, method=method, config={}, summary={"stream_sha256": "s"}, segments=segments,
               env={"code": {"fingerprint": "f" * 16, "files": {"simpe/loop/run.py": "0" * 16}}, "argv": ["ray"]})


def _segment(i: int, bleu: list[int], r0: list[int], r1: list[int], hyp: str = "Die Datei", ref: str = "Die Tabelle") -> dict:
    return {"index": i, "hypothesis": hyp, "hyp_tokens": hyp, "ref_tokens": ref, "stats": {"bleu": bleu},
            "metrics": {"r0": r0, "r1": r1, "r0+1": [r0[0] + r1[0], r0[1] + r1[1]]}}


def test_a_record_leaves_out_what_follows_and_gives_back_every_statistic(tmp_path: Path):
    from simpe.report.compare import segment_stats

    run = _run([_segment(0, [1, 0, 0, 0, 2, 1, 0, 0, 2, 2], [0, 1], [0, 0]),
                _segment(1, [2, 1, 0, 0, 3, 2, 1, 0, 3, 2], [1, 1], [0, 1])])
    path = rec.export_run(tmp_path, "scalc", 0, run, call="2026-01-01T00:00:00Z")
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert set(data["columns"]) == {"bleu.m1", "bleu.m2", "bleu.m3", "bleu.m4", "bleu.hyp_len", "bleu.ref_len", "r0.matched",
                                    "r0.types", "r1.matched", "r1.types", "repeated.again", "repeated.shown"}
    assert '  "bleu.m1": [1,2],\n' in text  # one column a line
    assert "Die Datei" not in text and "argv" not in data["environment"] and data["code"] == "f" * 16
    assert json.loads((tmp_path / "code.json").read_text())["f" * 16] == {"simpe/loop/run.py": "0" * 16}
    back = rec.read_records(tmp_path).runs["scalc"][0]
    assert back.call == "2026-01-01T00:00:00Z" and back.position == 0 and back.run.name == "x"
    for key in ("bleu", "r0", "r1", "r0+1"):
        assert (segment_stats(back.run, key, 2) == segment_stats(run, key, 2)).all()
    assert back.run.segments[1]["cumulative"]["r0"] == 0.5 and back.run.segments[1]["repeated"] == [1, 1]


def test_a_record_keeps_ter_and_the_document_ids_and_derives_sentence_bleu(tmp_path: Path):
    """TER's [edits, ref_words] per segment and the segments' documents (run-length encoded) are kept; SBLEU is not a
    column: BLEU+1 of the segment's BLEU statistics gives it back exactly (m = [1, 0, 0, 0], t = [2, 1, 0, 0], hyp 2,
    ref 2: order min(4, 2) = 2, (1/2 * 1/2) ** (1/2) = 0.5, brevity exp(1 - 3 / 2) = 0.6065: 30.33)."""
    from simpe.metrics.sacre import nakov_bleu_plus_one
    from simpe.report.compare import segment_stats

    segments = []
    for i, doc in enumerate(("a", "a", "b")):
        seg = _segment(i, [1, 0, 0, 0, 2, 1, 0, 0, 2, 2], [0, 1], [0, 0])
        seg["doc_id"], seg["stats"]["ter"] = doc, [1.0, 2.0]
        seg["metrics"]["sbleu"] = nakov_bleu_plus_one(seg["stats"]["bleu"])
        segments.append(seg)
    run = _run(segments)
    data = json.loads(rec.export_run(tmp_path, "scalc", 0, run, call=None).read_text(encoding="utf-8"))
    assert data["documents"] == [["a", 2], ["b", 1]] and data["columns"]["ter.edits"] == [1, 1, 1]
    assert not any(name.startswith("sbleu") for name in data["columns"])
    back = rec.read_records(tmp_path).runs["scalc"][0].run
    assert [s["doc_id"] for s in back.segments] == ["a", "a", "b"]
    assert segment_stats(back, "sbleu", 3)[0, 0] == pytest.approx(30.33, abs=0.01)
    assert (segment_stats(back, "sbleu", 3) == segment_stats(run, "sbleu", 3)).all()
    assert (segment_stats(back, "ter", 3) == np.array([[1, 2]] * 3)).all()


def test_a_column_that_does_not_follow_is_kept(tmp_path: Path):
    """BLEU totals that are not the hypothesis length's n-gram counts, an R0+1 that is not R0 plus R1: kept as logged."""
    from simpe.report.compare import segment_stats

    odd = _segment(0, [1, 0, 0, 0, 5, 1, 0, 0, 2, 2], [0, 1], [0, 0])
    odd["metrics"]["r0+1"] = [0, 2]
    run = _run([odd])
    data = json.loads(rec.export_run(tmp_path, "scalc", 0, run, call=None).read_text(encoding="utf-8"))
    assert data["columns"]["bleu.t1"] == [5] and "bleu.t2" not in data["columns"] and data["columns"]["r0+1.types"] == [2]
    back = rec.read_records(tmp_path).runs["scalc"][0].run
    assert (segment_stats(back, "r0+1", 1) == np.array([[0, 2]])).all() and segment_stats(back, "bleu", 1)[0, 4] == 5


def test_an_experiment_is_written_whole_or_not_at_all(tmp_path: Path):
    folder = tmp_path / "records"
    (folder / "scalc").mkdir(parents=True)
    (folder / "scalc" / "old.json").write_text("kept")
    message = rec.export_experiment(folder, "scalc", [tmp_path / "runs" / "g" / "baseline"], [])
    assert "not every run is complete" in message and (folder / "scalc" / "old.json").read_text() == "kept"


def test_a_run_belongs_to_the_call_that_was_running_when_it_finished(tmp_path: Path):
    calls = [{"id": "2026-01-01T00:00:00Z"}, {"id": "2026-01-02T00:00:00Z"}]
    at = rec._seconds("2026-01-01T12:00:00Z")
    assert rec.call_at(calls, at) == "2026-01-01T00:00:00Z" and rec.call_at(calls, at + 86400) == "2026-01-02T00:00:00Z"
    assert rec.call_at(calls, at - 86400) is None and rec.call_at(calls, None) is None
    first = rec.start_call(tmp_path, "simpe replicate", ["scalc"])
    second = rec.start_call(tmp_path, "simpe replicate --only studies", ["studies"])
    rec.finish_call(tmp_path, first, 3600.0)
    saved = {c["id"]: c for c in rec.read_calls(tmp_path)}
    assert first != second and saved[first]["wall_seconds"] == 3600.0 and saved[second]["wall_seconds"] is None
    from simpe.replicate.page import describe_call

    assert "cut off before it finished" in describe_call(saved[second])
    assert describe_call(saved[first]).startswith("`simpe replicate` at commit ") and "1.00 h of wall time" in describe_call(saved[first])


def test_a_bad_records_folder_is_one_error(tmp_path: Path):
    (tmp_path / "scalc").mkdir()
    (tmp_path / "scalc" / "x.json").write_text('{"record": 99}')
    with pytest.raises(rec.RecordError, match="is not a run record of version 1"):
        rec.read_records(tmp_path)
    (tmp_path / "scalc" / "x.json").write_text("{")
    with pytest.raises(rec.RecordError, match="is not valid JSON"):
        rec.read_records(tmp_path)
    assert rec.read_records(tmp_path / "absent").runs == {}


def test_status_on_a_page_older_than_its_records_and_fingerprints(tmp_path: Path):
    from simpe.replicate.provenance import status

    page = tmp_path / "replication.md"
    assert status(page).endswith("is missing or not JSON: `simpe replicate --report-only` writes it from the records")
    page.with_suffix(".json").write_text(json.dumps({"rows": {"a": {}, "b": {}}}), encoding="utf-8")
    assert status(page).splitlines() == [
        "a: stale: the page predates code fingerprints and records: `simpe replicate` (make replicate)",
        "b: stale: the page predates code fingerprints and records: `simpe replicate` (make replicate)",
        "2 of 2 rows stale against the code as it is now"]
    page.with_suffix(".json").write_text(json.dumps({"rows": {}, "code": {}}), encoding="utf-8")
    assert status(page).startswith(f"no records folder {tmp_path / 'replication' / 'records'}")


def test_a_large_file_is_hashed_by_its_size_and_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import simpe.filehash as fp

    monkeypatch.setattr(fp, "LARGE_FILE", 64)
    monkeypatch.setattr(fp, "SAMPLE", 16)
    path = tmp_path / "weights"
    path.write_bytes(bytes(100))
    first = fp.file_hash(path)
    path.write_bytes(bytes(99) + b"\x01")  # the last byte
    fp._file_hash.cache_clear()  # (the cache keys on the modification time, which a coarse clock may not move)
    assert fp.file_hash(path) != first
    path.write_bytes(bytes(101))  # the size
    assert fp.file_hash(path) != first


def test_a_calls_commit_is_marked_changed_by_code_not_by_the_replications_own_outputs(tmp_path: Path,
                                                                                        monkeypatch: pytest.MonkeyPatch):
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       check=True, capture_output=True)

    for name in ("docs/replication/records/calls.json", "docs/replication.md", "docs/replication.json",
                 "docs/replicate.md", "simpe/loop/update.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "c")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    monkeypatch.setattr(rec, "REPO_ROOT", tmp_path)
    folder = tmp_path / "docs/replication/records"
    for name in ("docs/replication/records/calls.json", "docs/replication.md", "docs/replication.json"):
        (tmp_path / name).write_text("b\n")  # what a call cut off leaves: its records and page
    (tmp_path / "docs/replication/figure2.png").write_text("new\n")  # untracked: never a change
    assert rec.commit(folder) == head
    assert rec.commit() == head + "+changes"  # without the folder, every tracked change counts
    (tmp_path / "docs/replicate.md").write_text("b\n")  # a neighbour's name is not the page's
    assert rec.commit(folder) == head + "+changes"
    git("checkout", "docs/replicate.md")
    (tmp_path / "simpe/loop/update.py").write_text("b\n")
    assert rec.commit(folder) == head + "+changes"
    assert rec.commit(tmp_path.parent / "elsewhere") == head + "+changes"
