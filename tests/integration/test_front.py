"""The learning-against-forgetting front (simpe plot --front) on real runs of the demo model: 4 stream segments, the
forgetting probe on 5 held-out dev sentences after the last one; the points and what dominates what, counted by hand
from the runs' own summaries and snapshots."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.cli import main
from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.metrics import metric_for
from simpe.report.front import FrontPoint, _mark_dominated, front
from simpe.rundir.reader import load_group, read_jsonl

RUNS = {"baseline": ("baseline", []), "full--lr=0.01": ("full", []), "full--lr=0.1": ("full", ["update.lr=0.1"]),
        "bias": ("bias", [])}


@pytest.fixture(scope="module")
def group_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("front")
    try:
        for name, (preset, extra) in RUNS.items():
            overrides = ["data.segments=4", "device=cpu", "snapshots.every=4", "snapshots.ranking=false",
                         "snapshots.forgetting=5", f"runs_dir={root}", f"adapter={name}", *extra]
            path = Loop(load_config(preset, overrides), progress=False).run()
    finally:
        torch.set_num_threads(threads)
    return path.parent


def test_front_points_and_dominance_by_hand(group_dir: Path, tmp_path: Path) -> None:
    corpus = {name: json.loads((group_dir / name / "summary.json").read_text())["corpus"]["bleu"] for name in RUNS}
    probe = {name: read_jsonl(group_dir / name / "snapshots.jsonl")[-1] for name in RUNS}
    # the probe's per-sentence statistics sum to the BLEU it logged
    for record in probe.values():
        assert record["segment"] == 4 and record["forget.size"] == 5 and len(record["forget.stats"]["bleu"]) == 5
        summed = [sum(column) for column in zip(*record["forget.stats"]["bleu"])]
        assert metric_for("bleu").score_from_stats(summed) == pytest.approx(record["forget.bleu"], abs=1e-9)
    result = front(load_group([group_dir]), "bleu")
    hand = {name: (corpus[name] - corpus["baseline"], probe["baseline"]["forget.bleu"] - probe[name]["forget.bleu"])
            for name in RUNS if name != "baseline"}
    points = {p.name: p for p in result.points}
    assert set(points) == set(hand)
    for name, (gain, forgetting) in hand.items():
        assert points[name].gain == pytest.approx(gain, abs=1e-9) and points[name].forgetting == pytest.approx(forgetting, abs=1e-9)
        assert points[name].setting == {"full--lr=0.01": 0.01, "full--lr=0.1": 0.1, "bias": 1.0}[name]
        ci = points[name].forgetting_ci
        assert ci is not None and ci[0] <= ci[1]
        others = {"baseline": (0.0, 0.0), **{n: v for n, v in hand.items() if n != name}}
        dominated = sorted(n for n, (g, f) in others.items() if g >= gain and f <= forgetting and (g > gain or f < forgetting))
        assert sorted(points[name].dominated_by) == dominated
    assert [p.setting for p in result.methods()["full"]] == [0.01, 0.1]
    assert main(["plot", str(group_dir), "--front", "-o", str(tmp_path)]) in (0, None)
    assert (tmp_path / "front.png").stat().st_size > 10_000 and "Methods whose every point is dominated" in (tmp_path / "front.md").read_text()


def test_dominance_counted_by_hand() -> None:
    # a gains 2 forgetting 1; b gains 1 forgetting 2 (a dominates b); c gains -1 forgetting 0.5 (the baseline at (0, 0)
    # dominates c); d gains 3 forgetting 3 (on the front with a)
    points = [FrontPoint("a", "m", 1, 2.0, None, 1.0, None), FrontPoint("b", "m", 2, 1.0, None, 2.0, None),
              FrontPoint("c", "n", 1, -1.0, None, 0.5, None), FrontPoint("d", "n", 2, 3.0, None, 3.0, None)]
    _mark_dominated(points, True)
    assert [p.dominated_by for p in points] == [[], ["a"], ["baseline"], []]
    _mark_dominated(points, False)  # lower is better (TER): c's -1 is now the best gain
    assert points[2].dominated_by == []


def test_the_reader_checks_the_probes_statistics() -> None:
    from simpe.errors import RunDirError
    from simpe.rundir.record import check_snapshot

    check_snapshot({"segment": 4, "forget.bleu": 30.0, "forget.stats": {"bleu": [[1, 2, 3]], "chrf": [[4.5]]}}, "ok")
    for bad in ({"bleu": [[1, "x"]]}, {"bleu": [1, 2]}, [[1, 2]]):
        with pytest.raises(RunDirError, match="forget.stats should map each metric"):
            check_snapshot({"segment": 4, "forget.stats": bad}, "snapshot")
