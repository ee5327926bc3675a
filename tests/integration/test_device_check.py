"""scripts/device_check.sh --cpu: the GPU check's steps on tiny inputs on the CPU, so it works the first time it meets a GPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _check(tmp_path: Path, *steps: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHON": sys.executable}
    extra = ["--steps", ",".join(steps)] if steps else []
    done = subprocess.run([str(REPO / "scripts" / "device_check.sh"), "--cpu", "--out", str(tmp_path), *extra], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "device-check.json").read_text())


def test_the_device_checks_single_process_steps_run_on_the_cpu(tmp_path: Path) -> None:
    result = _check(tmp_path, "cuda_tests", "demo", "real_size", "graphs")
    assert result["device"] == "cpu" and set(result["steps"]) == {"cuda_tests", "demo", "real_size", "graphs"}
    assert result["steps"]["cuda_tests"]["ok"] and "skipped" in result["steps"]["cuda_tests"]["summary"]
    assert set(result["steps"]["demo"]) == {"baseline-float32", "full-float32", "baseline-bfloat16", "full-bfloat16"}
    assert all(row["segments"] == 2 and row["s_per_segment"] > 0 for row in result["steps"]["demo"].values())
    assert set(result["steps"]["real_size"]) == {"nllb-600m-full-float32", "llama3.2-1b-full-float32"}
    for row in result["steps"]["real_size"].values():  # the warm-up segment left out; random weights take every repetition
        assert (row["segments"], row["timed_segments"], row["repetitions"]) == (2, 1, 3.0)
        assert row["update_s_per_repetition"] == pytest.approx(row["update_s"] / 3, abs=1e-4)  # both rounded to 4 places
    assert result["steps"]["demo"]["full-bfloat16"]["update_s"] > 0
    graphs = result["steps"]["graphs"]  # fixed shapes against the dynamic cache: in float32 the same hypotheses
    assert set(graphs) == {"nllb-600m-float32", "demo-float32"}
    for row in graphs.values():
        assert row["sentences"] == 2 and row["steps"] > 0 and not row["graph_captured"]  # no CUDA: no graph
        assert (row["graphs_same_as_dynamic"], row["static_same_as_dynamic"]) == (1.0, 1.0)
    update = graphs["nllb-600m-float32"]  # full's update three ways: random weights take every repetition
    assert update["update_graphs_repetitions"] == update["update_static_repetitions"] == update["update_eager_repetitions"] == 3  # --cpu: 1 pair
    assert not update["update_graph_captured"] and update["update_graphs_ms_per_repetition"] > 0
    table = (tmp_path / "device-check.md").read_text()
    assert "| demo | full-bfloat16 |" in table and "| real_size | nllb-600m-full-float32 |" in table
    assert "beam-5 step, demo-float32: " in table and "not captured (no CUDA: eager)" in table


@pytest.mark.slow  # about 35 of the check's 55 s on 2 cores, and the exact search; in make test, the single-process steps
# above, the lockstep group's records in test_lockstep.py, simulate's processes in test_simulate.py, exact top-k against
# brute force in test_topk.py
def test_the_device_check_runs_every_step_on_the_cpu(tmp_path: Path) -> None:
    result = _check(tmp_path)
    assert result["device"] == "cpu" and set(result["steps"]) == {"cuda_tests", "demo", "group", "real_size", "shared",
                                                                   "exact_topk", "graphs"}
    exact = result["steps"]["exact_topk"]  # the demo model's searches end exact; a random-weight shape's never do
    assert (exact["demo-float32"]["sentences"], exact["demo-float32"]["exact"], exact["demo-float32"]["cap"]) == (2, 2, 20000)
    assert exact["demo-float32"]["yan2021_s_per_sentence"] == 47.3
    assert (exact["nllb-600m-float32"]["exact"], exact["nllb-600m-float32"]["cap"]) == (0, 50)
    assert exact["nllb-600m-float32"]["s_per_1000_expansions"] > 0
    shared = result["steps"]["shared"]
    assert (shared["processes"], shared["segments"]) == (2, 2) and shared["segments_per_s_aggregate"] > 0
    assert shared["aggregate_over_one"] == pytest.approx(shared["segments_per_s_aggregate"] / shared["segments_per_s_alone"], abs=0.01)
    group = result["steps"]["group"]  # lockstep: 2 runs of full as one group against one alone, per model
    assert set(group) == {"demo-full-float32", "nllb-600m-full-float32"}
    assert all((row["runs"], row["segments"]) == (2, 2) and row["group_over_one"] > 0 for row in group.values())
    table = (tmp_path / "device-check.md").read_text()
    assert "lockstep, nllb-600m-full-float32: 2 runs as one group" in table
    assert "exact top-10, demo-float32: " in table and "Yan et al. (2021), Table 5: about 47.3 s a sentence" in table


def test_without_a_python_that_has_torch_it_says_so_in_one_line(tmp_path: Path) -> None:
    """No PYTHON, no .venv, a python3 without torch (a stand-in script on PATH that fails every import, as a bare
    python3 does for torch): one line naming what it tried, exit 2, no traceback; PYTHON is taken alone when set."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "device_check.sh").write_bytes((REPO / "scripts" / "device_check.sh").read_bytes())
    (tmp_path / "scripts" / "device_check.sh").chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "device_check.sh"), "--cpu", "--out", str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("device_check: no Python with torch: tried python3; set PYTHON to one that has torch")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(bin_dir / "python3")
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "device_check.sh"), "--cpu"], env={**env, "PYTHON": "/bin/false"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "tried /bin/false (PYTHON);" in done.stderr
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "device_check.sh"), "--cpu"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "tried .venv/bin/python, python3;" in done.stderr
