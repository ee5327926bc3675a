"""benchmarks/*.py: a user mistake is one line and exit 2, as on the command line (benchmarks/entry.py), never a
traceback; every script ends through it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_benchmark_script_ends_through_run_main() -> None:
    scripts = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name not in ("entry.py", "record.py"))
    assert len(scripts) >= 11
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert text.rstrip().endswith('if __name__ == "__main__":\n    sys.exit(run_main(main))'), script.name
        assert "from entry import run_main" in text, script.name


def test_bench_loop_refuses_a_bad_preset_in_one_line_before_any_run(tmp_path: Path) -> None:
    """A bad preset listed after a good one: one line naming it, exit 2, before baseline has run (nothing recorded)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_loop.py"), "--methods", "baseline", "nosuch",
                           "--segments", "1"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("bench_loop.py: error: no preset 'nosuch' in adapters/; known: baseline, ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and done.stdout == ""
