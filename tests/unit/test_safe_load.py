"""No code runs from a file a user is handed: every torch.load of simpe refuses a crafted pickle in one line.

Each loader gets a file whose pickle calls ``Path.touch(marker)`` when unpickled (what a payload of
``os.system`` would do, harmlessly): the loader refuses it, and the marker never appears. The same
file does run its payload under ``torch.load(weights_only=False)``, so the test would notice a loader
that went back to it.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from simpe.errors import ModelError, RunDirError, SimpeError


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def crafted(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"segments_done": 1, "method": {"w": torch.zeros(1)}, "evil": Payload(marker)}, path)
    return path


def test_the_payload_is_live_under_an_unsafe_load(tmp_path: Path):
    marker = tmp_path / "ran"
    torch.load(crafted(tmp_path / "x.pt", marker), weights_only=False)
    assert marker.exists()  # so the tests below would see a loader that unpickles code


def test_a_run_checkpoint_is_refused_and_its_payload_never_runs(tmp_path: Path):
    from simpe.rundir.writer import RunDir

    marker = tmp_path / "ran"
    rundir = RunDir(tmp_path / "run")
    crafted(rundir.checkpoint_file, marker)
    with pytest.raises(RunDirError, match="is not a checkpoint simpe can read safely .*--overwrite") as err:
        rundir.load_checkpoint()
    assert "\n" not in str(err.value) and not marker.exists()
    rundir.checkpoint_file.write_bytes(b"garbage, not a checkpoint")  # garbage: the same one line
    with pytest.raises(RunDirError, match="is not a checkpoint simpe can read safely"):
        rundir.load_checkpoint()


def test_a_training_checkpoint_is_refused_and_its_payload_never_runs(tmp_path: Path):
    from simpe.demo.card import load_state

    marker = tmp_path / "ran"
    with pytest.raises(SimpeError, match="is not a training checkpoint simpe can read safely"):
        load_state(crafted(tmp_path / "checkpoints" / "last.pt", marker), "cpu")
    assert not marker.exists()


def test_a_comet_checkpoint_is_refused_and_its_payload_never_runs(tmp_path: Path):
    from simpe.metrics.comet import _check_weights

    marker = tmp_path / "ran"
    with pytest.raises(ModelError, match="is not one simpe can read safely"):
        _check_weights(None, crafted(tmp_path / "checkpoints" / "model.ckpt", marker))
    assert not marker.exists()


def test_what_simpe_writes_still_loads(tmp_path: Path):
    """A real resume state (lasso's kept names and rows, the RNG) passes the weights-only load."""
    from simpe.rundir.writer import RunDir

    rundir = RunDir(tmp_path / "run")
    rundir.checkpoint_file.parent.mkdir(parents=True)
    state = {"segments_done": 50, "torch_rng": torch.get_rng_state(),
             "method": {"w": torch.ones(2), "__kept_tensors__": ["a", "b"], "__kept_rows__": {"e": torch.tensor([1, 2])}}}
    torch.save(state, rundir.checkpoint_file)
    loaded = rundir.load_checkpoint()
    assert loaded["method"]["__kept_tensors__"] == ["a", "b"] and torch.equal(loaded["torch_rng"], state["torch_rng"])
