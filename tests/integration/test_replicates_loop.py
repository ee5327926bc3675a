"""Replicates on two document orders of one stream: real runs of the demo model (6 segments, two documents), the
replicate statistics of ``simpe compare --replicate`` against a count by hand from the runs' own summaries."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from simpe.cli import main
from simpe.config.files import load_config
from simpe.errors import RunDirError
from simpe.loop.run import Loop
from simpe.report.compare import compare_runs
from simpe.report.replicates import replicate_table
from simpe.rundir.reader import load_group, read_jsonl

# the first 6 libreoffice stream segments: text/scalc/00/00000004 (3 segments), then text/scalc/00/00000402 (3);
# random.Random(1).shuffle of the two documents swaps them. full at lr 0.05 (five times its preset's): on so few
# segments its outputs then differ between the orders (at 0.01 they are the same), so the two deltas differ
ORDERS = {"as-read": [], "seed1": ["data.shuffle_documents=1"]}
PRESETS = {"baseline": [], "full": ["update.lr=0.05"], "bias": []}


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("replicates")
    found = {}
    try:
        for order, extra in ORDERS.items():
            for preset, own in PRESETS.items():
                overrides = ["data.segments=6", "device=cpu", "snapshots.every=0", f"runs_dir={root / order}", *extra, *own]
                found[order] = Loop(load_config(preset, overrides), progress=False).run().parent
    finally:
        torch.set_num_threads(threads)
    return found


def _corpus(group: Path, name: str) -> dict:
    return json.loads((group / name / "summary.json").read_text())["corpus"]


def test_the_orders_are_the_same_segments_with_the_documents_swapped(groups: dict[str, Path]) -> None:
    read, shuffled = (read_jsonl(groups[o] / "baseline" / "segments.jsonl") for o in ORDERS)
    assert [s["doc_id"] for s in read] == ["text/scalc/00/00000004"] * 3 + ["text/scalc/00/00000402"] * 3
    assert [s["doc_id"] for s in shuffled] == ["text/scalc/00/00000402"] * 3 + ["text/scalc/00/00000004"] * 3
    assert [s["source"] for s in shuffled] == [s["source"] for s in read[3:] + read[:3]]
    assert groups["as-read"].name != groups["seed1"].name  # the group's digest names the stream as loaded


def test_replicate_statistics_equal_a_count_by_hand(groups: dict[str, Path], tmp_path: Path) -> None:
    comparisons = [compare_runs(load_group([groups[o]])) for o in ORDERS]
    table = replicate_table(comparisons)
    assert table.methods == ["bias", "full"] and "documents shuffled with seed 1" in table.replicates[1]
    for method in table.methods:
        for key, scale in (("bleu", 1.0), ("chrf", 1.0), ("r0+1", 100.0), ("ter", 1.0)):
            deltas = [(_corpus(groups[o], method)[key] - _corpus(groups[o], "baseline")[key]) * scale for o in ORDERS]
            mean = (deltas[0] + deltas[1]) / 2
            std = abs(deltas[0] - deltas[1]) / math.sqrt(2)  # sample standard deviation of two values
            sign = (mean > 0) - (mean < 0)
            agree = sum(1 for d in deltas if sign and (d > 0) - (d < 0) == sign)
            found = table.spreads[(method, key)]
            assert found.deltas == pytest.approx(deltas, abs=1e-9) and found.mean == pytest.approx(mean, abs=1e-9)
            assert found.std == pytest.approx(std, abs=1e-9) and found.agree == agree
            assert (found.low, found.high) == pytest.approx((min(deltas), max(deltas)), abs=1e-9)
    assert table.spreads[("full", "bleu")].std > 0.1  # the orders differ for full
    with pytest.raises(RunDirError, match="same stream in the same order"):
        replicate_table([comparisons[0], comparisons[0]])
    out = tmp_path / "out"
    assert main(["compare", str(groups["as-read"]), "--replicate", str(groups["seed1"]), "-o", str(out)]) in (0, None)
    text = (out / "replicates.md").read_text()
    assert "Replicates: 2 methods on 2 streams or orders" in text and "/2 (" in text
    rows = (out / "replicates.csv").read_text().splitlines()
    assert rows[0].startswith("method,metric,delta_1,delta_2,mean,std")
