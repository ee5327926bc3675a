"""benchmarks/record.py: a bench target's row replaces its earlier one, and the page is rendered from the rows."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import record  # noqa: E402


def test_a_target_replaces_its_row_and_the_page_follows(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(record, "DATA", tmp_path / "benchmarks.json")
    monkeypatch.setattr(record, "PAGE", tmp_path / "benchmark-results.md")
    monkeypatch.setattr(sys, "argv", ["bench_loop.py", "--segments", "30"])
    record.record("bench-loop", {"full": "0.1000 s/segment"})
    record.record("bench-topk", {"topk": "0.075 s/sentence"})
    record.record("bench-loop", {"full": "0.0900 s/segment"})
    rows = json.loads((tmp_path / "benchmarks.json").read_text())
    assert sorted(rows) == ["bench-loop", "bench-topk"]
    assert rows["bench-loop"]["figures"] == {"full": "0.0900 s/segment"}
    assert rows["bench-loop"]["command"] == 'make bench-loop ARGS="--segments 30"'
    page = (tmp_path / "benchmark-results.md").read_text()
    assert page.startswith("<!-- written by benchmarks/record.py")
    assert "| `bench-loop` | full: 0.0900 s/segment |" in page and "0.1000" not in page
