"""``simpe simulate --dataset hf`` end to end: a DatasetDict saved by the ``datasets`` library, three segments of its
test split on the demo model (tests/unit/test_hf_dataset.py checks the loader and its error lines)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from simpe.rundir.reader import read_jsonl

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["Open the file.", "Close the window.", "Save the table.", "Print the page."]
POST_EDITS = ["Öffnen Sie die Datei.", "Schließen Sie das Fenster.", "Speichern Sie die Tabelle.", "Drucken Sie die Seite."]


def test_simulate_reads_the_test_split_of_a_saved_datasetdict(tmp_path: Path):
    import datasets

    datasets.disable_progress_bars()
    datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"source": ["Train."], "post_edit": ["Trainieren."], "doc_id": ["t"]}),
        "test": datasets.Dataset.from_dict({"source": SOURCES, "post_edit": POST_EDITS, "doc_id": ["a", "a", "b", "b"]}),
    }).save_to_disk(tmp_path / "pe")
    datasets.enable_progress_bars()
    cmd = [sys.executable, "-m", "simpe", "simulate", "--dataset", "hf", "--set", f"data.params.path={tmp_path / 'pe'}",
           "--segments", "3", "--preset", "baseline", "--device", "cpu", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    done = subprocess.run(cmd, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    run, = (tmp_path / "runs").glob("hf-stream--demo-en-de--3seg--*/baseline")
    records = read_jsonl(run / "segments.jsonl")
    assert [(r["doc_id"], r["seg_id"], r["source"], r["reference"]) for r in records] == [
        ("a", "1", SOURCES[0], POST_EDITS[0]), ("a", "2", SOURCES[1], POST_EDITS[1]), ("b", "3", SOURCES[2], POST_EDITS[2])]
    manifest = json.loads((run / "data-manifest.json").read_text(encoding="utf-8"))
    assert (manifest["dataset"], manifest["format"], manifest["rows"]) == ("hf", "DatasetDict", {"test": 4})
    params = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))["data"]["params"]
    assert params["path"] == str(tmp_path / "pe") and params["stream_split"] == "test" and params["source_column"] == "source"
