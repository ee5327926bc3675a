"""The run writer: strict JSON records, rewinding to the last valid record, DONE only for valid logs, no folder before the first record."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.errors import RunDirError
from simpe.rundir.record import SegmentRecord
from simpe.rundir.writer import RunDir, strict_json


def test_strict_json_writes_non_finite_numbers_as_null_and_flags_them() -> None:
    record = {"index": 3, "update": {"loss_after": float("nan"), "ppl_after": float("inf")}, "scores": [1.5, -math.inf],
              "hyp_score": -2.0}
    line = strict_json(record)
    assert line == ('{"index": 3, "update": {"loss_after": null, "ppl_after": null}, "scores": [1.5, null], "hyp_score": -2.0, '
                    '"non_finite": ["update.loss_after", "update.ppl_after", "scores.1"]}')
    assert json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in strict JSON"))["scores"] == [1.5, None]
    assert strict_json({"a": 1.0}) == '{"a": 1.0}'  # no flag when every number is finite


def test_rewind_keeps_the_valid_records_and_cuts_the_rest(tmp_path: Path) -> None:
    with RunDir(tmp_path / "run") as run:
        run.open(resume=False, overwrite=False)
        written = [run.append_segment(SegmentRecord(index, "s", "r", "h", hyp_score=index / 3)) for index in range(3)]
        with open(run.segments_file, "ab") as handle:
            handle.write(b'{"index": 3, "hyp_score": 0.')  # torn
        assert [r["index"] for r in run.rewind(2)] == [0, 1]
        assert run.segments_file.read_text(encoding="utf-8") == "".join(json.dumps(r) + "\n" for r in written[:2])
        with pytest.raises(RunDirError, match="has 2 valid records but the checkpoint says 3"):
            run.rewind(3)


def test_done_is_written_only_when_every_record_reads_back(tmp_path: Path) -> None:
    record = SegmentRecord(0, "s", "b", "a", hyp_tokens="a", ref_tokens="b")
    records = [record.to_dict()]
    with RunDir(tmp_path / "run") as run:
        run.open(resume=False, overwrite=False)
        run.append_segment(record)
        with open(run.segments_file, "ab") as handle:
            handle.write(b'{"index": 1, "hyp')  # a fragment no record in memory accounts for
        with pytest.raises(RunDirError, match="line 2 is not valid JSON"):
            run.finish({"segments": 1}, records, "de")
        assert not run.is_complete()
        run.rewind(1)
        run.finish({"segments": 1}, records, "de")
        assert run.is_complete()


def test_a_failure_before_the_first_record_leaves_no_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        with RunDir(tmp_path / "runs" / "group" / "run") as run:
            run.open(resume=False, overwrite=False)
            run.write_config(load_config("baseline", [f"runs_dir={tmp_path}"]))
            raise ValueError("e.g. a bad setting found late")
    assert not (tmp_path / "runs").exists()




def test_the_store_is_streamed_to_its_file_byte_for_byte_and_a_failed_write_is_one_line(tmp_path: Path) -> None:
    """write_store writes through safetensors' save_file (no copy of the store in memory): the same file as
    safetensors' own in-memory ``save`` (its size, tensors and metadata; the header's order of metadata keys is
    safetensors' hash order, which differs from call to call even for ``save``); a write that fails (here: its folder was removed under it) is one RunDirError
    naming the file and the OS's reason, and leaves no .tmp behind."""
    import shutil

    import torch
    from safetensors import safe_open
    from safetensors.torch import save

    from simpe.storefile import StoreMetadata

    tensors = {"w": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(5, dtype=torch.bfloat16)}
    metadata = StoreMetadata(method="full", base_model="demo-en-de")
    with RunDir(tmp_path / "run") as run:
        run.open(resume=False, overwrite=False)
        path = run.write_store(tensors, metadata)
        expected = save(tensors, metadata=metadata.to_strings())
        assert path.stat().st_size == len(expected)
        with safe_open(str(path), framework="pt") as handle:
            assert handle.metadata() == metadata.to_strings()
            assert all(torch.equal(handle.get_tensor(name), tensor) for name, tensor in tensors.items())
            assert sorted(handle.keys()) == ["b", "w"]
        shutil.rmtree(run.path)
        with pytest.raises(RunDirError, match=r"^cannot write .*store\.safetensors: No such file or directory \(ENOENT\); "
                                              r"free space or fix the folder"):
            run.write_store(tensors, metadata)
    assert not list(tmp_path.rglob("*.tmp"))
