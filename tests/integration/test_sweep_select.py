"""`simpe sweep --select-on`: a setting chosen on the reported stream is warned about (prequential: tuned on the
test); --select-on dev runs the grid on the dev split, chooses there and runs only the chosen setting on the stream."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from simpe.cli import main

ray = pytest.importorskip("ray")
SWEEP = ["sweep", "--preset", "bias", "--grid", "update.lr=0.5,4.0", "--segments", "3", "--workers", "1", "--threads", "1",
         "--no-progress", "--bootstrap", "10", "--set", "device=cpu", "--set", "snapshots.every=0"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _bleu(run: Path) -> float:
    return json.loads((run / "summary.json").read_text())["corpus"]["bleu"]


def test_select_on_dev_chooses_on_the_dev_split_and_runs_only_the_choice(local_ray, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    main([*SWEEP, "--runs-dir", str(tmp_path), "--select-on", "dev"])
    out = capsys.readouterr().out
    (dev,) = tmp_path.glob("libreoffice-dev--demo-en-de--3seg--*")
    (stream,) = tmp_path.glob("libreoffice-stream--demo-en-de--3seg--*")
    assert sorted(p.name for p in dev.iterdir() if p.is_dir()) == ["bias--lr=0.5", "bias--lr=4.0"]
    # by hand: the better dev BLEU of the two, the first on a tie (max keeps the first)
    scores = {name: _bleu(dev / name) for name in ("bias--lr=0.5", "bias--lr=4.0")}
    chosen = max(scores, key=lambda name: scores[name])
    assert f"chosen on dev (3 segments, bleu {scores[chosen]:.2f}): {chosen}" in out
    assert sorted(p.name for p in stream.iterdir() if p.is_dir() and p.name != "compare") == sorted(["baseline", chosen])
    assert "best on the stream" not in out


def test_choosing_on_the_stream_warns(local_ray, tmp_path: Path, capsys: pytest.CaptureFixture,
                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        main([*SWEEP, "--runs-dir", str(tmp_path)])
    out = capsys.readouterr()
    assert "best on the stream (bleu " in out.out
    assert "tuned on the test" in caplog.text + out.err and "--select-on dev" in caplog.text + out.err
