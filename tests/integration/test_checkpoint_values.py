"""A resume checks the checkpoint's values, not only its file format (issue: hostile input, round 2, class 2).

A run folder can come from anyone: a checkpoint whose tensors are NaN once resumed, wrote empty hypotheses and
ended DONE with wrong records; an empty one was a KeyError traceback. Each case here is a real checkpoint of a
real run (the demo model), altered the way a damaged or crafted file would be, and refused in one line that names
the checkpoint, what is wrong, and --overwrite, before any record is written.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from simpe.config.files import load_config
from simpe.errors import RunDirError
from simpe.loop.run import Loop
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl

REPO = Path(__file__).resolve().parents[2]


def _interrupted(tmp_path: Path, method: str) -> tuple[list[str], Path, Path]:
    """A run of ``method`` stopped after 3 of 4 segments, with the checkpoint taken after segment 2."""
    overrides = [f"runs_dir={tmp_path}", "data.segments=4", "checkpoint_every=2", "snapshots.every=0", "device=cpu"]
    path = Loop(load_config(method, overrides), progress=False).run(stop_after=3)
    checkpoint = path / layout.STATE_DIR / layout.CHECKPOINT_FILE
    assert checkpoint.is_file()
    return overrides, path, checkpoint


def _refused(method: str, overrides: list[str], path: Path, *parts: str) -> None:
    before = (path / layout.SEGMENTS_FILE).read_bytes()
    with pytest.raises(RunDirError) as err:
        Loop(load_config(method, overrides), progress=False).run(resume=True)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path / layout.STATE_DIR / layout.CHECKPOINT_FILE)), message
    assert message.endswith("it was not loaded. Start the run again with --overwrite"), message
    for part in parts:
        assert part in message, (part, message)
    assert (path / layout.SEGMENTS_FILE).read_bytes() == before and not (path / layout.DONE_FILE).exists()


def test_a_nan_in_the_adapted_tensors_is_refused_and_the_untouched_checkpoint_resumes(tmp_path: Path, one_torch_thread):
    overrides, path, checkpoint = _interrupted(tmp_path, "bias")
    good = torch.load(checkpoint, weights_only=True)
    assert good["method_name"] == "bias" and good["segments_done"] == 2
    bad = {**good, "method": {name: torch.full_like(t, float("nan")) for name, t in good["method"].items()}}
    torch.save(bad, checkpoint)
    count = next(iter(good["method"].values())).numel()
    _refused("bias", overrides, path, f"(method 'bias') holds {count} non-finite values (NaN or infinity) in")
    torch.save(good, checkpoint)  # the same folder with its own checkpoint: resumes to the end
    Loop(load_config("bias", overrides), progress=False).run(resume=True)
    assert [r["index"] for r in read_jsonl(path / layout.SEGMENTS_FILE)] == [0, 1, 2, 3] and (path / layout.DONE_FILE).exists()


def test_checkpoints_of_the_wrong_shape_are_refused_in_one_line(tmp_path: Path, one_torch_thread):
    overrides, path, checkpoint = _interrupted(tmp_path, "bias")
    good = torch.load(checkpoint, weights_only=True)
    (name, tensor), = good["method"].items()
    cases = [
        ({}, "holds nothing; a checkpoint holds method, segments_done, torch_rng"),
        ({**good, "segments_done": 0}, "says 0 segments are done"),
        ({**good, "segments_done": 4}, "says 4 segments are done; the stream has 4"),
        ({**good, "segments_done": "2"}, "says '2' segments are done"),
        ({**good, "method": [tensor]}, "holds the method's state as list"),
        ({**good, "method_name": "lasso"}, "was written by method 'lasso'; this run's method is 'bias'"),
        ({**good, "torch_rng": torch.zeros(3, dtype=torch.uint8)}, "random generator's state as torch.uint8 of shape (3,)"),
        ({**good, "method": {}}, f"holds the tensors none; 'bias' on this model resumes from {name}"),
        ({**good, "method": {name: tensor[:-1]}}, f"holds {name} as torch.float32 of shape ({tensor.numel() - 1},)"),
        ({**good, "method": {name: tensor.double()}}, f"holds {name} as torch.float64 of shape ({tensor.numel()},)"),
    ]
    for state, part in cases:
        torch.save(state, checkpoint)
        _refused("bias", overrides, path, part)


def test_lasso_and_knn_states_are_checked_as_their_stores_are(tmp_path: Path, one_torch_thread):
    overrides, path, checkpoint = _interrupted(tmp_path / "lasso", "lasso")
    good = torch.load(checkpoint, weights_only=True)
    torch.save({**good, "method": {**good["method"], "__kept_tensors__": ["no.such.tensor"]}}, checkpoint)
    _refused("lasso", overrides, path, "names kept tensors that are not lasso's trainable tensors")
    overrides, path, checkpoint = _interrupted(tmp_path / "knn", "knn")
    good = torch.load(checkpoint, weights_only=True)
    keys = good["method"]["__knn_keys__"].clone()
    keys[0, 0] = float("inf")
    torch.save({**good, "method": {**good["method"], "__knn_keys__": keys}}, checkpoint)
    _refused("knn", overrides, path, "holds 1 non-finite value (NaN or infinity) in __knn_keys__")
    torch.save({**good, "method": {**good["method"], "__knn_values__": good["method"]["__knn_values__"][:1]}}, checkpoint)
    _refused("knn", overrides, path, "keys but 1 values")


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path: Path, one_torch_thread):
    overrides, path, checkpoint = _interrupted(tmp_path, "bias")
    torch.save({}, checkpoint)
    cmd = [sys.executable, "-m", "simpe", "simulate", "--preset", "bias", "--segments", "4", "--device", "cpu", "--runs-dir",
           str(tmp_path), "--set", "checkpoint_every=2", "--set", "snapshots.every=0", "--resume", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())}  # the run's thread count: no environment refusal
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"simpe: error: {checkpoint} holds nothing; a checkpoint holds method, segments_done, torch_rng; it was not loaded. "
        "Start the run again with --overwrite"], proc.stderr
