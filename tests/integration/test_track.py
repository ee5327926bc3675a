"""--track mlflow|tensorboard and simpe track, against the real libraries: what they hold, read back, is what the run
logged (steps, values, parameters, tags); logging again is skipped, a run made again replaces its entry; bad trackers,
missing packages and incomplete runs are one line."""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from simpe.cli import main
from simpe.rundir.reader import load_run, read_jsonl
from simpe.rundir.state import RunState, state

SOURCES = ["Choose Format - Cells.", "Open the file.", "Save the document.", "Close the window."]
REFERENCES = ["Wählen Sie Format - Zellen.", "Öffnen Sie die Datei.", "Speichern Sie das Dokument.", "Schließen Sie das Fenster."]
SNAPSHOTS = ["snapshots.every=2", "snapshots.probe=stream", "snapshots.probe_size=2", "ranking.k=2", "ranking.samples=4",
             "ranking.max_len_b=4", "ranking.max_len_cap=4"]


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> Path:
    """One run of ``full`` on 4 segments with 2 ranking snapshots, made with ``--track mlflow --track tensorboard``."""
    root = tmp_path_factory.mktemp("track")
    (root / "s.en").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    (root / "s.de").write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    settings = ["data.name=text", f"data.params.source={root / 's.en'}", f"data.params.reference={root / 's.de'}", *SNAPSHOTS]
    threads = torch.get_num_threads()
    try:
        assert main(["simulate", "--preset", "full", "--runs-dir", str(root / "runs"), "--device", "cpu", "--no-progress",
                     "--threads", "1", *(arg for key in settings for arg in ("--set", key)),
                     "--track", "mlflow", "--track", "tensorboard"]) == 0
    finally:
        torch.set_num_threads(threads)
    (run,) = (root / "runs").glob("*/full")
    return run


@pytest.fixture
def file_store(monkeypatch):
    """Reading MLflow's file store takes its opt-in, as the tracker's writing does."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")


def _mlflow_runs(store: Path, experiment: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else list(client.search_runs([found.experiment_id]))


def _flat(config: dict, prefix: str = "") -> dict[str, str]:
    """config.yaml's leaves as text, as a reader of MLflow's parameters expects them (YAML's spelling of true/null)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        elif isinstance(value, (dict, list)):
            out[f"{prefix}{key}"] = json.dumps(value, separators=(",", ":"))
        else:
            out[f"{prefix}{key}"] = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _expected(run_path: Path) -> dict[str, list[tuple[int, float]]]:
    """Some of each kind of figure, (step, value), straight from the run's files."""
    records = read_jsonl(run_path / "segments.jsonl")
    snapshots = read_jsonl(run_path / "snapshots.jsonl")
    summary = json.loads((run_path / "summary.json").read_text(encoding="utf-8"))
    out = {f"cumulative/{name}": [(r["index"], r["cumulative"][name]) for r in records] for name in ("bleu", "chrf", "ter", "sbleu")}
    out["segment/sbleu"] = [(r["index"], r["metrics"]["sbleu"]) for r in records]
    out["segment/r0plus1"] = [(r["index"], r["metrics"]["r0+1"][0] / r["metrics"]["r0+1"][1]) for r in records if r["metrics"]["r0+1"][1]]
    out["update/loss_before"] = [(r["index"], r["update"]["loss_before"]) for r in records]
    out["seconds/translate"] = [(r["index"], r["seconds"]["translate"]) for r in records]
    for name in ("top.krg", "top.kqrg", "mc.krg", "mc.kqrg"):
        out[f"snapshot/{name}"] = [(s["segment"], s[name]) for s in snapshots]
    out["corpus/bleu"] = [(len(records), summary["corpus"]["bleu"])]
    out["summary/adapted_parameters"] = [(len(records), summary["adapted_parameters"])]
    return out


def test_mlflow_holds_every_step_value_parameter_and_signature_of_the_run(tracked: Path, file_store):
    from mlflow.tracking import MlflowClient

    store = tracked.parent / "mlruns"
    (found,) = _mlflow_runs(store, tracked.parent.name)  # experiment = the group, one run
    assert (found.info.run_name, found.info.status) == ("full", "FINISHED")
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    records = read_jsonl(tracked / "segments.jsonl")
    for name, expected in _expected(tracked).items():
        history = sorted(client.get_metric_history(found.info.run_id, name), key=lambda m: m.step)
        assert [(m.step, m.value) for m in history] == expected, name  # exact: MLflow keeps doubles
    assert [m.step for m in client.get_metric_history(found.info.run_id, "cumulative/bleu")] == list(range(len(records)))
    config = yaml.safe_load((tracked / "config.yaml").read_text(encoding="utf-8"))
    assert found.data.params == _flat(config)
    assert found.data.params["update.lr"] == str(config["update"]["lr"]) and found.data.params["method.name"] == "full"
    assert found.data.params["metrics.logged"] == '["bleu","chrf","ter"]'
    summary = json.loads((tracked / "summary.json").read_text(encoding="utf-8"))
    tags = found.data.tags
    assert {name: tags[f"signature.{name}"] for name in summary["signatures"]} == summary["signatures"]
    assert tags["simpe.run_path"] == str(tracked.resolve()) and tags["simpe.method"] == "full"
    assert tags["simpe.code_fingerprint"] == json.loads((tracked / "env.json").read_text(encoding="utf-8"))["code"]["fingerprint"]
    assert sorted(a.path for a in client.list_artifacts(found.info.run_id, "run")) == ["run/config.yaml", "run/env.json", "run/summary.json"]


def test_tensorboard_holds_every_step_value_and_signature_of_the_run(tracked: Path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util

    events = EventAccumulator(str(tracked.parent / "tensorboard" / "full"), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    for name, expected in _expected(tracked).items():
        got = [(event.step, event.value) for event in events.Scalars(name)]
        assert got == [(step, float(np.float32(value))) for step, value in expected], name  # TensorBoard keeps float32
    summary = json.loads((tracked / "summary.json").read_text(encoding="utf-8"))
    for name, signature in summary["signatures"].items():
        (text,) = events.Tensors(f"signature/{name}/text_summary")
        assert tensor_util.make_ndarray(text.tensor_proto).item().decode() == signature
    start = plugin_data_pb2.HParamsPluginData.FromString(events.PluginTagToContent("hparams")["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["update.lr"].number_value == 0.01
    assert start.session_start_info.hparams["method.name"].string_value == "full"


def test_the_run_folder_is_left_a_complete_run_and_its_group_still_compares(tracked: Path):
    """The trackers write beside the runs (GROUP/mlruns, GROUP/tensorboard), never into one: a run folder holding other
    files would be foreign to --overwrite, --resume and simpe sweep."""
    assert state(tracked) is RunState.COMPLETE
    assert sorted(p.name for p in tracked.parent.iterdir()) == ["full", "mlruns", "tensorboard"]
    assert load_run(tracked).complete


def test_logging_again_is_skipped_and_a_run_made_again_replaces_its_entry(tracked: Path, tmp_path: Path, capsys, file_store):
    assert main(["track", str(tracked.parent), "--to", "mlflow,tensorboard"]) == 0
    out = capsys.readouterr().out
    assert "mlflow: full is logged already" in out and "tensorboard: full is written already" in out
    assert len(_mlflow_runs(tracked.parent / "mlruns", tracked.parent.name)) == 1
    # a copy (its own group folder), tracked, then made again: one entry, the new one
    group = tmp_path / tracked.parent.name
    shutil.copytree(tracked, group / "full")
    assert main(["track", str(group / "full"), "--to", "mlflow", "--to", "tensorboard"]) == 0
    (first,) = _mlflow_runs(group / "mlruns", group.name)
    summary = group / "full" / "summary.json"
    summary.write_text(summary.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # another digest
    capsys.readouterr()
    assert main(["track", str(group), "--to", "mlflow,tensorboard"]) == 0
    out = capsys.readouterr().out
    assert f"replaced {first.info.run_id}" in out and "replaced 1 event file(s)" in out
    (second,) = _mlflow_runs(group / "mlruns", group.name)
    assert second.info.run_id != first.info.run_id and second.data.tags["simpe.run_digest"] != first.data.tags["simpe.run_digest"]
    assert len(list((group / "tensorboard" / "full").glob("events.out.tfevents.*"))) == 1


@pytest.mark.parametrize("args, fragments", [
    (["simulate", "--track", "wandb"], ["--track", "'wandb'", "mlflow, tensorboard"]),
    (["simulate", "--track", "mlflow,wandb", "--preset", "baseline"], ["--track", "'wandb'", "mlflow, tensorboard"]),
    (["sweep", "--track", "csv"], ["--track", "'csv'", "mlflow, tensorboard"]),
    (["track", "runs", "--to", "neptune"], ["--to", "'neptune'", "mlflow, tensorboard"]),
])
def test_a_bad_tracker_is_one_line_naming_it_and_the_known_ones(args, fragments, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert all(fragment in err for fragment in fragments), err


def test_a_setting_without_its_tracker_and_a_missing_package_are_one_line(capsys, monkeypatch):
    assert main(["simulate", "--track", "tensorboard", "--track-uri", "http://localhost:5000"]) == 2
    assert "--track-uri goes with --track mlflow" in capsys.readouterr().err
    start = time.perf_counter()  # a tracking server that does not answer: refused before the run, not after MLflow's retries
    assert main(["simulate", "--track", "mlflow", "--track-uri", "http://127.0.0.1:9", "--preset", "baseline"]) == 2
    err = capsys.readouterr().err
    assert "mlflow at http://127.0.0.1:9 cannot be used" in err and len(err.strip().splitlines()) == 1
    assert time.perf_counter() - start < 60
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if it were not installed
    assert main(["simulate", "--track", "mlflow", "--preset", "baseline"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'simpe[track]'" in err and "mlflow" in err and len(err.strip().splitlines()) == 1


def test_an_incomplete_run_is_refused_and_left_out_of_its_group(tracked: Path, tmp_path: Path, capsys):
    group = tmp_path / tracked.parent.name
    shutil.copytree(tracked, group / "full")
    (group / "full" / "DONE").unlink()
    assert main(["track", str(group / "full"), "--to", "tensorboard"]) == 2
    err = capsys.readouterr().err
    assert "incomplete" in err and "DONE" in err and str(group / "full") in err
    assert main(["track", str(group), "--to", "tensorboard"]) == 2
    err = capsys.readouterr().err
    assert f"left out (incomplete, no DONE): {group / 'full'}" in err and "no complete run" in err
    assert not (group / "tensorboard").exists()


def test_a_long_run_logs_in_seconds(tracked: Path, tmp_path: Path, capsys, file_store):
    """2,000 segments (the 4 of the run, repeated), about 30 figures each: batches, not a call per point."""
    group = tmp_path / tracked.parent.name
    shutil.copytree(tracked, group / "full")
    records = read_jsonl(tracked / "segments.jsonl")
    long = [{**records[i % len(records)], "index": i} for i in range(2000)]
    (group / "full" / "segments.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in long), encoding="utf-8")
    summary = json.loads((group / "full" / "summary.json").read_text(encoding="utf-8"))
    (group / "full" / "summary.json").write_text(json.dumps({**summary, "segments": 2000}), encoding="utf-8")
    for tracker in ("mlflow", "tensorboard"):
        start = time.perf_counter()
        assert main(["track", str(group / "full"), "--to", tracker]) == 0
        seconds = time.perf_counter() - start
        assert seconds < 60, f"{tracker}: {seconds:.1f} s"
    from mlflow.tracking import MlflowClient

    (found,) = _mlflow_runs(group / "mlruns", group.name)
    history = MlflowClient(tracking_uri=(group / "mlruns").resolve().as_uri()).get_metric_history(found.info.run_id, "cumulative/bleu")
    assert sorted(m.step for m in history) == list(range(2000))


def test_a_sweep_tracks_every_run_of_its_grid_those_complete_before_too(tracked: Path, tmp_path: Path, capsys):
    """The grid's one run is complete (the sweep skips it and starts no Ray): it is logged all the same."""
    root = tracked.parents[2]
    settings = ["data.name=text", f"data.params.source={root / 's.en'}", f"data.params.reference={root / 's.de'}",
                "data.params.src_lang=en", "data.params.tgt_lang=de", "data.params.dev=0", "device=cpu", *SNAPSHOTS]
    assert main(["sweep", "--preset", "full", "--no-baseline", "--runs-dir", str(tracked.parents[1]), "--no-progress",
                 *(arg for key in settings for arg in ("--set", key)), "--track", "tensorboard", "--track-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"skipped (complete): {tracked}" in out and "tensorboard: full: " in out
    assert (tmp_path / tracked.parent.name / "full" / "simpe-run.json").is_file()
