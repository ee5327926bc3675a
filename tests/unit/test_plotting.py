"""Cumulative delta curves and ranking snapshots: the data behind the figures, the files, ``simpe plot``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_reader import perturb, stream, write_group, write_run  # noqa: E402

from simpe.cli import main  # noqa: E402
from simpe.report.compare import compare_runs  # noqa: E402
from simpe.report.plotting import cumulative_deltas, plot_group, snapshot_series  # noqa: E402
from simpe.rundir.reader import load_group  # noqa: E402

PANEL_KEYS = ["r0", "r1", "r0+1", "bleu"]


@pytest.fixture(scope="module")
def group_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_group(tmp_path_factory.mktemp("runs"), num_segments=120)


def _cumulative(run_dir: Path, key: str) -> list[float | None]:
    lines = (run_dir / "segments.jsonl").read_text().splitlines()
    return [json.loads(line)["cumulative"][key] for line in lines]


def test_curves_end_at_the_table_deltas(group_dir: Path) -> None:
    group = load_group([group_dir])
    curves = cumulative_deltas(group)
    comparison = compare_runs(group, num_resamples=50)
    assert list(curves.deltas) == ["bias", "full", "lasso"]
    assert curves.segment_index.tolist() == list(range(120))
    for row in comparison.rows[1:]:
        for key in PANEL_KEYS:
            assert curves.deltas[row.run.name][key][-1] == pytest.approx(row.deltas[key], abs=1e-9), (row.run.name, key)
    assert all(np.all(curves.deltas["bias"][key][~np.isnan(curves.deltas["bias"][key])] == 0) for key in PANEL_KEYS)


def test_curves_are_method_minus_baseline_at_every_index(group_dir: Path) -> None:
    curves = cumulative_deltas(load_group([group_dir]))
    base_bleu, full_bleu = _cumulative(group_dir / "baseline", "bleu"), _cumulative(group_dir / "full", "bleu")
    base_r1, lasso_r1 = _cumulative(group_dir / "baseline", "r1"), _cumulative(group_dir / "lasso", "r1")
    for i in (0, 7, 63, 119):
        assert curves.deltas["full"]["bleu"][i] == pytest.approx(full_bleu[i] - base_bleu[i])
        if base_r1[i] is None:  # no type seen once before yet: undefined, not zero
            assert np.isnan(curves.deltas["lasso"]["r1"][i])
        else:
            assert curves.deltas["lasso"]["r1"][i] == pytest.approx(100 * (lasso_r1[i] - base_r1[i]))
    assert base_r1[0] is None and np.isnan(curves.deltas["lasso"]["r1"][0])


def test_snapshot_series_are_the_logged_values(group_dir: Path) -> None:
    series = snapshot_series(load_group([group_dir]))
    assert set(series) == {"baseline", "bias", "full", "lasso"}
    assert set(series["full"]) == {"top.krg", "top.kqrg", "top.empty_rate", "top.beam_error_rate", "mc.krg", "mc.kqrg"}
    logged = [json.loads(line) for line in (group_dir / "full" / "snapshots.jsonl").read_text().splitlines()]
    segments, values = series["full"]["mc.kqrg"]
    assert segments.tolist() == [record["segment"] for record in logged] == list(range(0, 120, 10))
    assert values.tolist() == [record["mc.kqrg"] for record in logged]


def test_plot_writes_png_and_pdf(group_dir: Path, tmp_path: Path) -> None:
    paths = plot_group(load_group([group_dir]), tmp_path / "plots")
    assert [p.name for p in paths] == ["cumulative_delta.png", "cumulative_delta.pdf",
                                       "ranking_snapshots.png", "ranking_snapshots.pdf"]
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 10_000
        assert data.startswith(b"\x89PNG") if path.suffix == ".png" else data.startswith(b"%PDF")


def test_cli_plot_without_snapshots_and_with_an_incomplete_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    group = write_group(tmp_path, num_segments=30, snapshots=False,
                        methods={"baseline": ("baseline", 0.35, 0), "full": ("full", 0.1, 9)})
    _, references = stream(30)
    write_run(group, "lasso", "lasso", perturb(references, 0.2, 4), logged=21, snapshots=False)
    assert main(["plot", str(group)]) == 2
    assert "lasso is incomplete" in capsys.readouterr().err
    assert not (group / "plots").exists()

    assert main(["plot", str(group), "--allow-incomplete"]) == 0
    assert sorted(p.name for p in (group / "plots").iterdir()) == ["cumulative_delta.pdf", "cumulative_delta.png"]
    curves = cumulative_deltas(load_group([group], allow_incomplete=True))
    assert curves.labels == {"full": "full", "lasso": "lasso (incomplete)"}
    assert len(curves.deltas["lasso"]["bleu"]) == len(curves.deltas["full"]["bleu"]) == 21
    assert "wrote " + str(group / "plots" / "cumulative_delta.png") in capsys.readouterr().out


def test_random_krg_references_and_inexact_snapshots(tmp_path: Path) -> None:
    """The reference lines are measures.random_krg of each logged (k, gain) and (samples, gain); snapshots with
    top.exact_rate < 1 are the ones marked. Linear gain, k = 3: f = 2, 1, 0 (k - rank, ranks 1..k) and discounts
    1, 1/log2 3, 1/2, so the random order's expected DCG is 1 * (1 + 0.6309 + 0.5) = 2.1309 against the ideal
    2 + 0.6309 + 0 = 2.6309: 0.8100."""
    from simpe.ranking.measures import random_krg
    from simpe.report.plotting import inexact_snapshots, random_krg_references

    group_dir = write_group(tmp_path, num_segments=30)
    records = [{"segment": s, "k": 3, "gain": "linear", "mc.samples": 8, "top.krg": 0.7, "top.kqrg": 0.4,
                "top.exact_rate": rate, "mc.krg": 0.6, "mc.kqrg": 0.3} for s, rate in ((10, 1.0), (20, 0.95), (30, 1.0))]
    (group_dir / "full" / "snapshots.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    group = load_group([group_dir])
    references = random_krg_references(group)
    assert references == {("mc", 8, "linear"): pytest.approx(random_krg(8, "linear")),
                          ("top", 3, "linear"): pytest.approx(random_krg(3, "linear"))}
    assert references[("top", 3, "linear")] == pytest.approx((1 + 1 / np.log2(3) + 0.5) / (2 + 1 / np.log2(3)))
    assert inexact_snapshots(group) == {"full": [(20, 0.95)]}
    paths = plot_group(group, tmp_path / "plots")
    assert (tmp_path / "plots" / "ranking_snapshots.png") in paths
