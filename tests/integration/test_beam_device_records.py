"""A run's records with plain beam search on the device path (simpe.decoders.beam_device, a GPU's) forced on the CPU
are the host path's, file by file: the translations, their scores and effort counts, the ranking snapshots (their
exact search keeps the host path: it hooks every step), the checkpoint and the summary, all but the clock."""
from __future__ import annotations

from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.decoders import beam_device
from simpe.loop.run import simulate
from simpe.rundir.same import differences

SETTINGS = ["data.segments=6", "snapshots.every=3", "snapshots.probe=dev", "snapshots.probe_size=2", "ranking.k=3",
            "ranking.samples=6", "ranking.max_expansions=1000", "checkpoint_every=2", "device=cpu"]


def test_a_runs_records_are_the_same_with_the_beam_on_the_device_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     one_torch_thread: None) -> None:
    paths, searches = {}, []
    search = beam_device.search
    monkeypatch.setattr(beam_device, "search", lambda *args: searches.append(1) or search(*args))  # counted, then run
    for on_device in (False, True):
        monkeypatch.setattr(beam_device, "ON_DEVICE", on_device)
        runs = tmp_path / str(on_device)
        paths[on_device] = simulate([load_config("full", [*SETTINGS, f"runs_dir={runs}"])], progress=False, lockstep=False)
        assert (len(searches) > 0) is on_device  # the segments' translations and the probe's beam: on the device path
    assert differences(paths[False][0], paths[True][0]) == []
    assert (paths[True][0] / "DONE").exists()
