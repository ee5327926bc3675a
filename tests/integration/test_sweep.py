"""`simpe sweep` on a local Ray (2 CPUs, one started for the module): a 2x2 sweep, an interrupted
sweep resumed to the same records, a failing run reported while the others complete."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpe.cli import main
from simpe.config.files import load_config
from simpe.errors import ConfigError
from simpe.loop.run import Loop, run_path
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.sweep import execute, parse_grid, plan, state

ray = pytest.importorskip("ray")



def _group(segments: int) -> str:
    """The group folder of the demo model's first ``segments`` stream segments (its name ends in their digest)."""
    return run_path(load_config("baseline", [f"data.segments={segments}"])).parent.name


GROUP = _group(4)
NAMES = ["baseline", "bias--lr=0.01", "bias--lr=0.02", "full--lr=0.01", "full--lr=0.02"]


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module (its start-up takes seconds): 2 CPUs, no dashboard."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _overrides(runs_dir: Path) -> list[str]:
    return [f"runs_dir={runs_dir}", "data.segments=4", "checkpoint_every=2", "device=cpu"]


def _records(path: Path) -> list[dict]:
    """The segment records without their timings (the only thing allowed to differ between two runs)."""
    records = read_jsonl(path / layout.SEGMENTS_FILE)
    for record in records:
        record.pop("seconds")
    return records


def _two_by_two(runs_dir: Path):
    return plan(["bias", "full"], parse_grid(["update.lr=0.01,0.02"]), overrides=_overrides(runs_dir))


@pytest.fixture(scope="module")
def whole_sweep(local_ray, tmp_path_factory):
    runs = tmp_path_factory.mktemp("whole")
    specs = _two_by_two(runs)
    return runs, specs, execute(specs, workers=2, threads=1, progress=False)


def test_plan_names_runs_by_their_settings_and_adds_one_baseline(tmp_path: Path):
    specs = plan(["bias", "full"], {"update.lr": [0.01, 0.02]}, seeds=[1, 2], overrides=_overrides(tmp_path))
    names = [s.name for s in specs]
    assert names[0] == "baseline" and names.count("baseline") == 1  # the baseline never updates: lr and seed mean nothing
    assert names[1:] == [f"{m}--lr={lr}--seed={s}" for m in ("bias", "full") for lr in ("0.01", "0.02") for s in (1, 2)]
    assert {s.path.parent for s in specs} == {tmp_path / GROUP}
    assert specs[4].cfg.update.lr == 0.02 and specs[4].cfg.seed == 2 and specs[4].cfg.adapter == "bias--lr=0.02--seed=2"
    with pytest.raises(ConfigError, match="update.lr must be > 0"):
        plan(["full"], {"update.lr": ["-1"]}, overrides=_overrides(tmp_path))
    with pytest.raises(ConfigError, match="expected KEY=V1,V2"):
        parse_grid(["update.lr"])
    with pytest.raises(ConfigError, match="no preset 'nope' in adapters/"):
        plan(["nope"], overrides=_overrides(tmp_path))


@pytest.mark.slow  # covered in make test: test_a_failing_run_is_reported_and_the_others_complete (a sweep on the same local
# Ray through the command line, its runs complete where compare reads them), the plan test (the grid's values in each
# run's config), test_state.py (a complete run is skipped)
def test_a_2x2_sweep_on_local_ray_writes_every_run_where_compare_reads_it(whole_sweep):
    runs, specs, outcomes = whole_sweep
    assert [(o.name, o.status) for o in outcomes] == [(name, "done") for name in NAMES]
    for spec in specs:
        assert spec.path == runs / GROUP / spec.name and (spec.path / layout.DONE_FILE).exists()
        summary = json.loads((spec.path / layout.SUMMARY_FILE).read_text())
        assert summary["segments"] == 4 and summary["adapter"] == spec.name
    # the learning rate reached the runs: the same first loss, different losses after the first update
    first = [_records(runs / GROUP / f"full--lr={lr}")[0]["update"] for lr in ("0.01", "0.02")]
    assert first[0]["loss_before"] == first[1]["loss_before"] and first[0]["loss_after"] != first[1]["loss_after"]
    # a re-run is idempotent: every run is complete, nothing runs
    again = execute(specs, workers=2, threads=1, progress=False)
    assert [o.status for o in again] == ["skipped"] * len(specs)


@pytest.mark.slow  # covered in make test: test_state.py (each run state), the re-run above (complete runs skipped), and
# test_simulate.py's resume after a kill (the same records)
def test_an_interrupted_sweep_skips_complete_runs_and_resumes_the_rest_to_the_same_records(whole_sweep, tmp_path: Path,
                                                                                          one_torch_thread):
    # one thread here too: the sweep's tasks run with --threads 1, and records depend on the thread count
    runs, _, _ = whole_sweep
    specs = _two_by_two(tmp_path)
    by_name = {s.name: s for s in specs}
    # the state an interrupted sweep leaves: one run complete, one stopped after its checkpoint at segment 2
    Loop(by_name["full--lr=0.01"].config(), progress=False).run()
    Loop(by_name["full--lr=0.02"].config(), progress=False).run(stop_after=3)
    done_file = by_name["full--lr=0.01"].path / layout.DONE_FILE
    stamp = done_file.stat().st_mtime_ns
    assert [state(s) for s in specs] == ["new", "new", "new", "complete", "incomplete"]
    outcomes = execute(specs, workers=2, threads=1, progress=False)
    assert [o.status for o in outcomes] == ["done", "done", "done", "skipped", "resumed"]
    assert done_file.stat().st_mtime_ns == stamp
    for name in NAMES:
        assert _records(tmp_path / GROUP / name) == _records(runs / GROUP / name), name


def test_a_failing_run_is_reported_and_the_others_complete(local_ray, tmp_path: Path, capsys: pytest.CaptureFixture):
    broken = tmp_path / _group(2) / "bias--lr=0.02"
    broken.mkdir(parents=True)
    (broken / layout.CONFIG_FILE).write_text("update: [unclosed\n")
    (broken / layout.SEGMENTS_FILE).write_text("")
    with pytest.raises(SystemExit, match=r"1 of 3 runs failed: bias--lr=0.02"):
        main(["sweep", "--preset", "bias", "--grid", "update.lr=0.01,0.02", "--segments", "2", "--runs-dir", str(tmp_path),
              "--workers", "2", "--threads", "1", "--no-progress", "--bootstrap", "10", "--set", "device=cpu"])
    out = capsys.readouterr().out
    assert "failed:   bias--lr=0.02: RunDirError:" in out and "cannot be read" in out
    assert (broken.parent / "baseline" / layout.DONE_FILE).exists()
    assert (broken.parent / "bias--lr=0.01" / layout.DONE_FILE).exists()
    # the table of the stream covers the runs that completed
    assert "| bias--lr=0.01 |" in out and "| baseline |" in out and "bias--lr=0.02 |" not in out
    assert (broken.parent / layout.COMPARE_DIR / "compare.md").exists()


@pytest.mark.slow  # covered in make test: test_a_returned_run_that_fails_comes_back_as_it_was (pack, the task, unpack)
def test_returned_results_land_in_the_drivers_runs_dir_with_the_same_records(whole_sweep, tmp_path: Path,
                                                                             one_torch_thread):
    """--return-results: the tasks run in scratch folders and send their run folders back (a cluster
    without a shared path); an incomplete run travels to its task and is resumed there."""
    runs, _, _ = whole_sweep
    specs = _two_by_two(tmp_path)
    by_name = {s.name: s for s in specs}
    Loop(by_name["full--lr=0.02"].config(), progress=False).run(stop_after=3)
    outcomes = execute(specs, workers=2, threads=1, progress=False, return_results=True)
    assert [o.status for o in outcomes] == ["done", "done", "done", "done", "resumed"]
    for name in NAMES:
        assert (tmp_path / GROUP / name / layout.DONE_FILE).exists(), name
        assert _records(tmp_path / GROUP / name) == _records(runs / GROUP / name), name
    assert sorted(p.name for p in (tmp_path / GROUP).iterdir() if p.name.startswith(".")) == []  # nothing half-unpacked


def test_a_returned_run_that_fails_comes_back_as_it_was(tmp_path: Path):
    """--return-results and a failure: the error, and the run folder as the task left it (nothing lost)."""
    from simpe.sweep import pack, run_task, unpack

    broken = tmp_path / "runs" / _group(2) / "bias"
    broken.mkdir(parents=True)
    (broken / layout.CONFIG_FILE).write_text("update: [unclosed\n")
    (broken / layout.SEGMENTS_FILE).write_text("")
    outcome = run_task("bias", [f"runs_dir={tmp_path / 'runs'}", "data.segments=2", "device=cpu"], 1, True, str(Path.cwd()),
                       returned=pack(broken), return_results=True)
    assert outcome["status"] == "failed" and "cannot be read" in outcome["error"]
    unpack(outcome["archive"], tmp_path / "back" / "bias")
    assert (tmp_path / "back" / "bias" / layout.CONFIG_FILE).read_text() == "update: [unclosed\n"


def test_the_longest_runs_start_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Longest-processing-time order: more segments, then the slower method (bench-loop's relative cost), first;
    equal costs keep the sweep's order. The costs are set here: bench-loop rewrites the table's figures (lasso at
    4 segments may cost more than baseline at 8), and the order, not the figures, is under test."""
    from simpe.sweep import RELATIVE_COST as table
    from simpe.sweep import expected_cost

    for name, cost in {"baseline": 1.0, "bias": 1.3, "full": 1.44, "lasso": 1.63}.items():
        monkeypatch.setitem(table, name, cost)

    specs = plan(["bias", "lasso", "full"], parse_grid(["data.segments=4,8"]), overrides=[f"runs_dir={tmp_path}", "device=cpu"])
    ordered = [s.name for s in sorted(specs, key=lambda s: -expected_cost(s))]
    assert ordered == ["lasso--segments=8", "full--segments=8", "bias--segments=8", "baseline--segments=8",
                       "lasso--segments=4", "full--segments=4", "bias--segments=4", "baseline--segments=4"]
    assert expected_cost(specs[0]) == 4 * 1.0  # baseline, 4 segments


def test_a_composed_preset_costs_its_own_measured_figure(monkeypatch: pytest.MonkeyPatch):
    """full+ewc is method full with a modifier: its cost is the preset's figure when bench-loop measured it (several
    times full's), else its method's; an unmeasured method counts as baseline."""
    from simpe.config.files import load_config
    from simpe.sweep import RELATIVE_COST as table
    from simpe.sweep import relative_cost

    monkeypatch.setitem(table, "full", 1.5)
    monkeypatch.setitem(table, "full+ewc", 4.6)
    assert relative_cost(load_config("full+ewc", [])) == 4.6
    monkeypatch.delitem(table, "full+ewc")
    assert relative_cost(load_config("full+ewc", [])) == 1.5 == relative_cost(load_config("full", []))
    monkeypatch.delitem(table, "full")
    assert relative_cost(load_config("full+ewc", [])) == 1.0


def test_the_progress_shows_each_running_run_and_a_line_as_each_ends(local_ray, tmp_path: Path, capsys: pytest.CaptureFixture):
    """The driver's display: an overall bar labelled as the user's command, one line per running run with its segment
    count and running BLEU / R0+1 (read from the run folders), and a line with its time as each run ends."""
    specs = plan(["bias"], overrides=[*_overrides(tmp_path), "data.segments=3"])
    outcomes = execute(specs, workers=2, threads=1, progress=True, as_simulate=(False, False))
    assert [o.status for o in outcomes] == ["done", "done"]
    out = capsys.readouterr()
    shown = out.out + out.err
    assert "simulate: " in shown and "sweep:" not in shown  # the overall bar, labelled as simulate
    assert re.search(r"done: baseline \(\d+ s\)", shown) and re.search(r"done: bias \(\d+ s\)", shown)
    assert re.search(r"  bias: .*/3 ", shown)  # the run's own line, of its 3 segments (its figures: test below)
    assert "Token authentication" not in shown and "Started a local Ray" not in shown


def test_a_run_folder_is_followed_line_by_line(tmp_path: Path):
    from simpe.sweep.executor import _Tail

    tail = _Tail(tmp_path)
    assert tail.read() == (0, "")
    file = tmp_path / layout.SEGMENTS_FILE
    file.write_text(json.dumps({"cumulative": {"bleu": 31.25, "r0+1": 0.45}}) + "\n" + '{"cumul')  # one line and a torn one
    assert tail.read() == (1, "BLEU 31.2 R0+1 45.0")
    with open(file, "a") as handle:
        handle.write('ative": {"bleu": 40.0, "r0+1": 0.5}}\n')
    assert tail.read() == (2, "BLEU 40.0 R0+1 50.0")
    # a stale run started again from nothing: its folder is cleared and the file begins anew (another inode)
    file.unlink()
    file.write_text(json.dumps({"cumulative": {"bleu": 12.5, "r0+1": 0.25}}) + "\n")
    assert tail.read() == (1, "BLEU 12.5 R0+1 25.0")


def test_a_run_named_to_restart_starts_again_complete_or_not(tmp_path: Path):
    """``execute(restart=...)`` (what simpe replicate gives the runs whose code changed): a complete run in it is
    started again from nothing, not skipped; the others keep their triage."""
    from simpe.sweep.executor import _triage

    specs = plan(["full"], overrides=_overrides(tmp_path))
    for spec in specs:
        spec.path.mkdir(parents=True)
        (spec.path / layout.SEGMENTS_FILE).write_text("")
        (spec.path / layout.DONE_FILE).write_text("complete\n")
    outcomes, todo = _triage(specs, None)
    assert {o.status for o in outcomes.values()} == {"skipped"} and todo == []
    outcomes, todo = _triage(specs, None, restart={specs[1].path})
    assert list(outcomes) == ["baseline"] and todo == [(specs[1], False)]
