"""Session snapshot: a short run's records must not change unless we mean them to.

Two short runs on the shipped demo model (``lasso`` with ranking snapshots, ``fixed``) are
compared with ``tests/golden/<adapter>.json``: texts exactly, numbers with a tolerance (the
same floats can differ in their last bits on another CPU), timings left out. Regenerate
only on purpose, with ``SIMPE_UPDATE_GOLDEN=1 make test``, and review the diff.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from simpe.config import load_config
from simpe.simulate import Loop

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
RUNS = {
    "lasso": ["data.segments=6", "snapshots.every=3", "snapshots.probe=dev", "snapshots.probe_size=3",
              "ranking.k=3", "ranking.samples=8", "ranking.max_expansions=2000"],
    "fixed": ["data.segments=6", "snapshots.every=0"],  # settings explicit: the records do not follow the defaults
}
REL, ABS = 1e-4, 1e-6


def _normalise(value: Any) -> Any:
    """Drop timings, make paths repository-relative."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items() if k != "seconds" and not k.endswith(".seconds")}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str):
        return value.replace(str(REPO), "<repo>")
    return value


def _outputs(path: Path) -> dict[str, Any]:
    def jsonl(name: str) -> list[Any]:
        file = path / name
        return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()] if file.exists() else []

    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    return _normalise({"segments": jsonl("segments.jsonl"), "snapshots": jsonl("snapshots.jsonl"), "summary": summary})


def _assert_close(actual: Any, expected: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            _assert_close(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_close(a, e, f"{where}[{i}]")
    elif isinstance(expected, float) or (isinstance(expected, int) and isinstance(actual, float)):
        assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{where}: {actual!r} is not a number"
        if math.isinf(expected) or math.isnan(expected):
            assert actual == expected or (math.isnan(actual) and math.isnan(expected)), f"{where}: {actual} != {expected}"
        else:
            assert actual == pytest.approx(expected, rel=REL, abs=ABS), f"{where}: {actual} != {expected}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.mark.parametrize("adapter", sorted(RUNS))
def test_short_run_matches_the_golden_records(adapter: str, tmp_path: Path, one_torch_thread: None):
    overrides = [*RUNS[adapter], f"runs_dir={tmp_path}", "device=cpu"]
    path = Loop(load_config(adapter, overrides), progress=False).run()
    outputs = _outputs(path)
    golden = GOLDEN / f"{adapter}.json"
    if os.environ.get("SIMPE_UPDATE_GOLDEN") == "1":
        golden.write_text(json.dumps(outputs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    _assert_close(outputs, expected, adapter)
