"""scripts/device_check.sh --cpu: the GPU check's steps on tiny inputs on the CPU, so it works the first time it meets a GPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_device_check_runs_every_step_on_the_cpu(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHON": sys.executable}
    done = subprocess.run([str(REPO / "scripts" / "device_check.sh"), "--cpu", "--out", str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "device-check.json").read_text())
    assert result["device"] == "cpu" and set(result["steps"]) == {"cuda_tests", "demo", "real_size", "shared"}
    assert result["steps"]["cuda_tests"]["ok"] and "skipped" in result["steps"]["cuda_tests"]["summary"]
    assert set(result["steps"]["demo"]) == {"baseline-float32", "full-float32", "baseline-bfloat16", "full-bfloat16"}
    assert all(row["segments"] == 2 and row["s_per_segment"] > 0 for row in result["steps"]["demo"].values())
    assert set(result["steps"]["real_size"]) == {"nllb-600m-full-float32", "llama3.2-1b-full-float32"}
    for row in result["steps"]["real_size"].values():  # the warm-up segment left out; random weights take every repetition
        assert (row["segments"], row["timed_segments"], row["repetitions"]) == (2, 1, 3.0)
        assert row["update_s_per_repetition"] == pytest.approx(row["update_s"] / 3, abs=1e-4)  # both rounded to 4 places
    shared = result["steps"]["shared"]
    assert (shared["processes"], shared["segments"]) == (2, 2) and shared["segments_per_s_aggregate"] > 0
    assert shared["aggregate_over_one"] == pytest.approx(shared["segments_per_s_aggregate"] / shared["segments_per_s_alone"], abs=0.01)
    assert result["steps"]["demo"]["full-bfloat16"]["update_s"] > 0
    table = (tmp_path / "device-check.md").read_text()
    assert "| demo | full-bfloat16 |" in table and "| real_size | nllb-600m-full-float32 |" in table
