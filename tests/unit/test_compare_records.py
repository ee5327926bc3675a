"""scripts/compare_records.py: two records folders compared run by run, segment-paired."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.paths import REPO_ROOT

RECORD = REPO_ROOT / "docs" / "replication" / "records" / "scalc" / "baseline.json"


def _run(old: Path, new: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "compare_records.py"), str(old), str(new)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)


@pytest.mark.skipif(not RECORD.exists(), reason="the committed scalc baseline record is absent")
def test_one_changed_segment_is_counted_and_not_significant(tmp_path: Path) -> None:
    for side in ("old", "new"):
        (tmp_path / side / "scalc").mkdir(parents=True)
        shutil.copy(RECORD, tmp_path / side / "scalc" / RECORD.name)
    path = tmp_path / "new" / "scalc" / RECORD.name
    data = json.loads(path.read_text(encoding="utf-8"))
    data["columns"]["r0.matched"][0] = 0  # segment 0 matched 1 of its 3 R0 types in the committed record
    path.write_text(json.dumps(data), encoding="utf-8")
    done = _run(tmp_path / "old", tmp_path / "new")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[2]: line.split() for line in done.stdout.splitlines() if line.startswith("scalc ")}
    assert rows["bleu"][-1] == "0" and rows["sbleu"][-1] == "0"  # no BLEU statistic differs
    assert rows["r0"][-1] == "1" and rows["r0+1"][-1] == "1"  # one segment's R0 (and so R0+1) differs
    assert float(rows["r0"][5]) < 0  # one match fewer: R0 falls
    assert "significant moves: 0" in done.stdout


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _run(tmp_path / "absent", tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "absent is not a records folder" in done.stderr
