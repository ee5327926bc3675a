"""The segment record (simpe.rundir.record): the loop's records round-trip key for key, runs written before the
schema version read, a newer schema and a mistyped value are refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.errors import RunDirError
from simpe.rundir.reader import load_run
from simpe.rundir.record import SCHEMA_KEY, SCHEMA_VERSION, SegmentRecord
from simpe.rundir.writer import RunDir

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize("name", ["lasso", "fixed"])
def test_the_golden_records_round_trip_in_their_key_order(name: str) -> None:
    for logged in json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))["segments"]:
        record = SegmentRecord.from_dict(logged)
        assert record.extra == {} and record.index == logged["index"]
        written = record.to_dict()
        if "seconds" not in logged:  # the golden files leave out the timings (tests/integration/test_golden.py)
            assert written.pop("seconds") is None
        assert list(written.items()) == list(logged.items())


def test_optional_keys_are_written_only_when_set() -> None:
    record = SegmentRecord(3, "src", "ref", "hyp", mt="raw", examples=2, truncated=["source"], reset=False)
    keys = list(record.to_dict())
    assert keys == ["index", "doc_id", "seg_id", "source", "reference", "hypothesis", "mt", "examples", "hyp_score",
                    "hyp_tokens", "ref_tokens", "metrics", "stats", "cumulative", "update", "seconds", "truncated", "reset"]
    assert "mt" not in SegmentRecord(3, "src", "ref", "hyp").to_dict()
    assert SegmentRecord.from_dict({**record.to_dict(), "later": 1}).extra == {"later": 1}  # kept, written last


def _old_run(tmp_path: Path, env: dict) -> Path:
    """A run folder as simpe wrote it before the record had a schema version (env.json without it)."""
    run = tmp_path / "libreoffice-stream--demo-en-de--1seg" / "baseline"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("adapter: baseline\nmethod:\n  name: baseline\n  params: {}\n", encoding="utf-8")
    record = {"index": 0, "doc_id": None, "seg_id": "s0", "source": "Click OK.", "reference": "Klicken Sie auf OK.",
              "hypothesis": "Klicken Sie OK.", "hyp_score": -1.5, "hyp_tokens": "Klicken Sie OK .",
              "ref_tokens": "Klicken Sie auf OK .", "metrics": {"sbleu": 40.0}, "stats": {}, "cumulative": {"sbleu": 40.0},
              "update": {"skipped": None}, "seconds": {"translate": 0.1}}
    (run / "segments.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    (run / "summary.json").write_text(json.dumps({"segments": 1, "method": "baseline"}), encoding="utf-8")
    (run / "env.json").write_text(json.dumps(env), encoding="utf-8")
    (run / "DONE").write_text("complete\n", encoding="utf-8")
    return run


def test_a_run_written_before_the_schema_version_reads(tmp_path: Path) -> None:
    run = load_run(_old_run(tmp_path, {"device": "cpu"}))
    assert run.segments[0]["hypothesis"] == "Klicken Sie OK." and SCHEMA_KEY not in run.env


def test_a_newer_schema_and_a_mistyped_value_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=f"holds segment records of schema {SCHEMA_VERSION + 1}; this simpe reads schema"):
        load_run(_old_run(tmp_path / "a", {SCHEMA_KEY: SCHEMA_VERSION + 1}))
    run = _old_run(tmp_path / "b", {})
    (run / "segments.jsonl").write_text(json.dumps({"index": 0, "source": "s", "reference": "r", "hypothesis": 3}) + "\n")
    with pytest.raises(RunDirError, match="record 0: 'hypothesis' should be a string, got '3'"):
        load_run(run)
    with pytest.raises(RunDirError, match="lacks reference"):
        SegmentRecord.from_dict({"index": 0, "source": "s", "hypothesis": "h"})


def test_the_writer_names_the_schema_in_env_json(tmp_path: Path) -> None:
    with RunDir(tmp_path / "run") as run:
        run.open(resume=False, overwrite=False)
        run.write_env({"device": "cpu"})
        assert json.loads((run.path / "env.json").read_text())[SCHEMA_KEY] == SCHEMA_VERSION
