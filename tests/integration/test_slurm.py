"""`simpe sweep --backend slurm` on a real single-node Slurm (tests/slurm_cluster.py: munged, slurmctld and slurmd from
Debian's slurm-wlm, two CPUs): a 4-run sweep with the local backend's records, a cancelled task requeued and resumed
whole, the one-line refusals, the dry run's array. Where the daemons cannot start (not root, not installed) the tests
that need them skip with the reason; with SIMPE_REQUIRE_SLURM=1 (.ci/run) they fail instead."""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import slurm_cluster

from simpe.cli import main
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.sweep import plan
from simpe.sweep.follow import find_manifest, run_statuses
from simpe.sweep.slurm import SlurmSettings, groups, parse_time, run_lockstep, run_one, signal_lead

pytest.importorskip("submitit")

PRESETS = ["bias", "full", "top"]  # with the baseline: 4 runs
NAMES = ["baseline", "bias", "full", "top"]
SETTINGS = ["--segments", "10", "--set", "checkpoint_every=3", "--set", "device=cpu", "--bootstrap", "10"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A single-node Slurm for the module, its SLURM_CONF in the environment (sbatch and the tasks inherit it)."""
    try:
        started = slurm_cluster.start(tmp_path_factory.mktemp("slurm"))
    except slurm_cluster.ClusterError as err:
        if os.environ.get("SIMPE_REQUIRE_SLURM") == "1":
            raise
        pytest.skip(f"no single-node Slurm here: {str(err).splitlines()[0]}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(started.conf))
        patch.setenv("OMP_NUM_THREADS", "1")  # the tasks' torch takes its threads from --cpus-per-task; OpenMP too
        yield started
    started.stop()


def _records(path: Path) -> list[dict]:
    """The segment records without their timings (the only thing allowed to differ between two runs)."""
    records = read_jsonl(path / layout.SEGMENTS_FILE)
    for record in records:
        record.pop("seconds")
    return records


def _group(runs_dir: Path) -> Path:
    (group,) = [p for p in runs_dir.iterdir() if p.name != "slurm"]
    return group


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    """The same 4-run sweep on the local backend (a local Ray, one torch thread per run), as the reference."""
    ray = pytest.importorskip("ray")
    runs = tmp_path_factory.mktemp("local")
    try:
        assert main(["sweep", "--preset", *PRESETS, *SETTINGS, "--runs-dir", str(runs), "--backend", "local", "--workers", "2",
                     "--threads", "1", "--no-progress"]) == 0
    finally:
        ray.shutdown()  # test_sweep.py starts its own
    return _group(runs)


@pytest.mark.slow  # covered in make test: test_the_dry_run_prints_the_array_and_its_sbatch_parameters (the array),
# test_a_failing_run_leaves_its_error_in_its_folder (the task's code in process), the refusals on this cluster
def test_a_4_run_sweep_on_slurm_has_the_local_backends_records(cluster, local_runs, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture):
    assert main(["sweep", "--preset", *PRESETS, *SETTINGS, "--runs-dir", str(tmp_path), "--backend", "slurm",
                 "--cpus-per-task", "1"]) == 0
    out = capsys.readouterr()
    group = _group(tmp_path)
    assert group.name == local_runs.name
    for name in NAMES:
        assert (group / name / layout.DONE_FILE).exists()
        assert _records(group / name) == _records(local_runs / name), name
        assert len(_records(group / name)) == 10
    # the driver's lines, as the Ray path's: one per run as it ends (with its time), the table, then one per run
    lines = out.out.splitlines()
    assert lines[0].startswith("submitted slurm job ") and lines[0].endswith(f": 4 tasks; logs in {tmp_path / 'slurm'}")
    assert sorted(re.sub(r" \(\d+ s\)$", "", line) for line in lines if line.startswith("done: ") and "/" not in line) == \
        [f"done: {name}" for name in NAMES]
    assert "| full |" in out.out and (group / layout.COMPARE_DIR / "compare.md").exists()
    assert [line for line in lines if line.startswith("done: /")] == [f"done: {group / n}" for n in NAMES]
    # only the runs folder and Slurm's log folder are written
    assert sorted(p.name for p in tmp_path.iterdir()) == [group.name, "slurm"]
    manifest = find_manifest(tmp_path)
    assert [s.status for s in run_statuses(manifest)] == ["done"] * 4
    assert main(["sweep", "--status", str(tmp_path)]) == 0
    status = capsys.readouterr().out.splitlines()
    assert status[0] == f"slurm job {manifest['job']}: 4 runs: 4 done, 0 running, 0 pending, 0 failed"
    # a run is done once its DONE is written; its task may still be ending (submitit writes its result), and a finished
    # task stays in the queue for the cluster's MinJobAge (30 s)
    assert {line.split()[0] for line in status[1:]} == {"done"}
    assert {line.split()[1] for line in status[1:]} <= {"COMPLETED", "COMPLETING", "RUNNING"}
    _wait(lambda: {s.slurm for s in run_statuses(manifest)} == {"COMPLETED"}, 30, "every task COMPLETED")


def _wait(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout:g} s")


def _lines(path: Path) -> int:
    try:
        return (path / layout.SEGMENTS_FILE).read_bytes().count(b"\n")
    except OSError:
        return 0


# a cancelled task's process ignores SIGTERM (submitit's handler) and is killed KillWait (2 s) later, plus the
# controller's latency: the run must still be going then. 20 segments (about 3.5 s of full on one thread since the run
# axis) once finished before the kill; 60 leave about 10 s after the fourth record
SEGMENTS = 60
LONGER = ["--segments", str(SEGMENTS), "--set", "checkpoint_every=3", "--set", "device=cpu"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """full on SEGMENTS segments, uninterrupted, on the local backend (one thread, as a task)."""
    runs = tmp_path_factory.mktemp("uninterrupted")
    assert main(["simulate", "--preset", "full", *LONGER, "--runs-dir", str(runs), "--threads", "1", "--no-progress"]) == 0
    return _group(runs) / "full"


def _resumed_whole(run: Path, log: Path, cut: int, uninterrupted: Path) -> None:
    """The run resumed once from a checkpoint (every 3 segments) at or before ``cut``, its records whole and equal to
    the uninterrupted run's."""
    resumed = re.findall(rf"resuming \S+ at segment (\d+) of {SEGMENTS}", log.read_text())
    assert len(resumed) == 1 and int(resumed[0]) % 3 == 0 and 3 <= int(resumed[0]) <= cut, resumed
    records = _records(run)
    assert [r["index"] for r in records] == list(range(SEGMENTS))  # whole, nothing twice
    assert records == _records(uninterrupted)
    assert not (run / layout.ERROR_FILE).exists()


@pytest.mark.slow  # covered in make test: test_simulate.py's resume after a kill (the same records), the task's code
# (test_a_failing_run_leaves_its_error_in_its_folder) reads each run's state when it starts
def test_a_cancelled_task_requeued_resumes_its_run_whole(cluster, uninterrupted, tmp_path: Path, capsys: pytest.CaptureFixture):
    assert main(["sweep", "--preset", "full", *LONGER, "--bootstrap", "10", "--runs-dir", str(tmp_path / "slurm-runs"),
                 "--backend", "slurm", "--detach"]) == 0
    out = capsys.readouterr().out.splitlines()
    job = out[-1]
    manifest = find_manifest(tmp_path / "slurm-runs")
    assert [task["id"] for task in manifest["tasks"]] == [f"{job}_0", f"{job}_1"]  # full (the longer) first, the baseline
    tables = manifest["tables"]
    assert out[1] == f"tables: job {tables} writes them once every task ended well (afterok)"
    run = Path(manifest["tasks"][0]["runs"][0]["path"])  # its folder appears once the task starts
    task = f"{job}_0"
    _wait(lambda: _lines(run) >= 4, 180, "4 segments (a checkpoint after 3)")
    cluster.run("scancel", task)
    _wait(lambda: cluster.run("squeue", "-h", "-t", "all", "-j", task, "-o", "%T").strip() == "CANCELLED", 60, "CANCELLED")
    cut = _lines(run)
    assert not (run / layout.DONE_FILE).exists() and 4 <= cut < SEGMENTS  # killed in the middle
    statuses = {s.name: s for s in run_statuses(find_manifest(tmp_path / "slurm-runs"))}
    assert (statuses["full"].status, statuses["full"].slurm) == ("failed", "CANCELLED")
    assert statuses["full"].note.startswith("the task ended CANCELLED without completing the run; its log: ")
    cluster.run("scontrol", "requeue", task)
    assert run_statuses(find_manifest(tmp_path / "slurm-runs"))[0].status == "pending"
    _wait(lambda: (run / layout.DONE_FILE).exists(), 240, "the requeued task completing the run")
    # resumed from its last checkpoint, not started again (the task's log says), records as the uninterrupted run's
    _resumed_whole(run, Path(manifest["logs"]) / f"{task}_0_log.err", cut, uninterrupted)
    # the tables job waits on afterok, which a cancelled task never satisfies, even requeued: --status says so
    _wait(lambda: all(s.slurm == "COMPLETED" for s in run_statuses(find_manifest(tmp_path / "slurm-runs"))), 60, "COMPLETED")
    _wait(lambda: cluster.run("squeue", "-h", "-j", str(tables), "-o", "%T %r").split() == ["PENDING", "DependencyNeverSatisfied"],
          90, "the tables job's afterok judged never satisfied")  # the controller's next pass over the dependencies
    capsys.readouterr()
    assert main(["sweep", "--status", str(tmp_path / "slurm-runs")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"tables: job {tables} (PENDING, DependencyNeverSatisfied: a task failed before; scancel {tables} and write them "
        f"with simpe compare {run.parent})")


@pytest.mark.slow  # covered in make test: the cancelled task's test's property in process (test_simulate.py's resume
# after a kill); signal_lead (when Slurm sends USR2) in test_a_sweep_files_slurm_block_and_times_are_checked
def test_a_preempted_task_is_requeued_by_submitit_and_resumes(cluster, uninterrupted, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture):
    """USR2, as Slurm sends it before a time limit or at preemption: submitit requeues the task itself, the run resumes,
    and the tables job (afterok) then writes the table."""
    assert main(["sweep", "--preset", "full", *LONGER, "--bootstrap", "10", "--runs-dir", str(tmp_path), "--backend", "slurm",
                 "--detach"]) == 0
    capsys.readouterr()
    manifest = find_manifest(tmp_path)
    run, task = Path(manifest["tasks"][0]["runs"][0]["path"]), manifest["tasks"][0]["id"]
    _wait(lambda: _lines(run) >= 4, 180, "4 segments (a checkpoint after 3)")
    cluster.run("scancel", "--signal=USR2", task)
    _wait(lambda: cluster.run("squeue", "-h", "-t", "all", "-j", task, "-o", "%T %r").split() == ["PENDING", "BeginTime"], 60,
          "the task requeued")
    cut = _lines(run)
    assert not (run / layout.DONE_FILE).exists() and not (run / layout.ERROR_FILE).exists()
    _wait(lambda: (run / layout.DONE_FILE).exists(), 240, "the requeued task completing the run")
    _resumed_whole(run, Path(manifest["logs"]) / f"{task}_0_log.err", cut, uninterrupted)
    _wait(lambda: (run.parent / layout.COMPARE_DIR / "compare.md").exists(), 120, "the tables job's table")
    assert "| full |" in (run.parent / layout.COMPARE_DIR / "compare.md").read_text()


def test_the_refusals_are_one_line(cluster, tmp_path: Path, capsys: pytest.CaptureFixture):
    base = ["sweep", "--preset", "bias", "--no-baseline", "--runs-dir", str(tmp_path), "--backend", "slurm"]
    assert main([*base, "--segments", "10", "--partition", "gpu"]) == 2
    assert capsys.readouterr().err == ("simpe: error: --partition 'gpu': the cluster has no such partition; known: "
                                       f"{slurm_cluster.PARTITION}\n")
    # the demo model's bias run: about 0.12 s a segment on one thread by the dry run, 1,000 segments > 1 minute
    assert main([*base, "--segments", "1000", "--time", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simpe: error: --time 1 min is shorter than the dry run's estimate for run 'bias' (") and \
        err.count("\n") == 1 and "give --time 4 or more" in err
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # nothing submitted, nothing written


def test_no_sbatch_on_path_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["sweep", "--preset", "bias", "--segments", "2", "--runs-dir", str(tmp_path / "runs"), "--backend", "slurm"]) == 2
    assert capsys.readouterr().err == ("simpe: error: --backend slurm: no sbatch on PATH; run the sweep on a Slurm login node "
                                       "(or load its module, e.g. `module load slurm`), or use --backend local\n")


def test_the_dry_run_prints_the_array_and_its_sbatch_parameters(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                  monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a dry run needs no Slurm
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("methods: [bias, full]\ngrid:\n  update.lr: [0.01, 0.02]\nsegments: 10\n"
                     "slurm: {partition: gpu, time: '1:30:00', cpus_per_task: 2, mem: 8G, array_parallelism: 2}\n")
    runs = tmp_path / "runs"
    assert main(["sweep", str(sweep), "--runs-dir", str(runs), "--backend", "slurm", "--dry-run", "--partition", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    logs = runs / "slurm"
    assert lines[:11] == [f"slurm job array: 5 tasks, one run each; logs in {logs}",
                          "#SBATCH --array=0-4%2", "#SBATCH --cpus-per-task=2", f"#SBATCH --error={logs}/%A_%a_0_log.err",
                          "#SBATCH --job-name=simpe-sweep", "#SBATCH --mem=8G", "#SBATCH --nodes=1", "#SBATCH --open-mode=append",
                          f"#SBATCH --output={logs}/%A_%a_0_log.out", "#SBATCH --partition=cpu", "#SBATCH --signal=USR2@60"]
    assert lines[11] == "#SBATCH --time=90"
    tasks = lines[12:]
    assert len(tasks) == 5 and all(line.startswith(f"task {i}: new ") for i, line in enumerate(tasks))
    # the longest first (full's relative cost above bias's), the baseline last
    assert [line.split()[3].rsplit("/", 1)[-1] for line in tasks] == \
        ["full--lr=0.01", "full--lr=0.02", "bias--lr=0.01", "bias--lr=0.02", "baseline"]
    assert not runs.exists()


def test_a_sweep_files_slurm_block_and_times_are_checked(tmp_path: Path):
    assert [parse_time(t) for t in (90, "90", "1:30:00", "45:30", "2-00:00:00", "1-2:30")] == [90, 90, 90, 46, 2880, 1590]
    for bad in ("soon", "0", "-5", True):
        with pytest.raises(Exception, match="time limit"):
            parse_time(bad)
    # USR2 a minute before the limit; a quarter of a limit under four minutes (not at its start)
    assert [signal_lead(t) for t in (None, 60, 4, 3, 1)] == [60, 60, 60, 45, 15]
    with pytest.raises(Exception, match="unknown slurm key 'nodes'; known: partition, time"):
        SlurmSettings.merged({"nodes": 2}, {})
    assert SlurmSettings.merged({"time": "2:00:00", "cpus_per_task": 4}, {"time": "30", "partition": None}) == \
        SlurmSettings(time=30, cpus_per_task=4)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("methods: [bias]\nslurm: {mem: lots}\n")
    assert main(["sweep", str(sweep), "--backend", "slurm", "--dry-run"]) == 2


def test_a_failing_run_leaves_its_error_in_its_folder(tmp_path: Path):
    """What an array task does for a run whose folder cannot be resumed (run in process: the task's own code)."""
    (spec,) = plan(["bias"], overrides=[f"runs_dir={tmp_path}", "data.segments=2", "device=cpu"], baseline=False)
    spec.path.mkdir(parents=True)
    (spec.path / layout.CONFIG_FILE).write_text("update: [unclosed\n")
    (spec.path / layout.SEGMENTS_FILE).write_text("")
    run = {"adapter": spec.adapter, "overrides": spec.overrides, "name": spec.name, "path": str(spec.path)}
    outcome = run_one(run, 1, os.getcwd())
    assert outcome["status"] == "failed" and outcome["error"].startswith("RunDirError:")
    error = (spec.path / layout.ERROR_FILE).read_text()
    assert error.startswith(outcome["error"]) and "Traceback" in error
    # the sweep's status names it with its error's first line
    manifest = {"job": "7", "logs": str(tmp_path / "slurm"), "tasks": [{"index": 0, "runs": [run]}]}
    (status,) = run_statuses(manifest, states={"7_0": "FAILED"})
    assert (status.status, status.slurm) == ("failed", "FAILED") and status.note.startswith(outcome["error"].splitlines()[0])
    # once the folder is fixed, the next task starts the run again and removes the error
    for child in spec.path.iterdir():
        child.unlink()
    assert run_one(run, 1, os.getcwd())["status"] == "done"
    assert not (spec.path / layout.ERROR_FILE).exists() and (spec.path / layout.DONE_FILE).exists()
    assert json.loads((spec.path / layout.SUMMARY_FILE).read_text())


def test_with_a_gpu_per_task_a_lockstep_group_is_one_task(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                          monkeypatch: pytest.MonkeyPatch):
    """--gpus-per-task: the runs that may share their passes are one task (one pass for all on its GPU), a run the
    run axis does not take (lora) a task of its own; on CPUs, or --lockstep off, one run each."""
    specs = plan(["bias", "full", "lora"], overrides=[f"runs_dir={tmp_path}", "data.segments=4", "device=cpu"], baseline=True)
    names = lambda tasks: [task.names for task in tasks]  # noqa: E731
    assert names(groups(specs, SlurmSettings(gpus_per_task=1))) == [["lora"], ["full", "bias", "baseline"]] or \
        names(groups(specs, SlurmSettings(gpus_per_task=1))) == [["full", "bias", "baseline"], ["lora"]]
    assert all(len(task.runs) == 1 for task in groups(specs, SlurmSettings(gpus_per_task=0)))
    assert all(len(task.runs) == 1 for task in groups(specs, SlurmSettings(gpus_per_task=1), lockstep=False))
    monkeypatch.setenv("PATH", str(tmp_path))  # a dry run needs no Slurm
    base = ["sweep", "--preset", "bias", "full", "--segments", "4", "--runs-dir", str(tmp_path / "runs"),
            "--backend", "slurm", "--dry-run", "--gpus-per-task", "1"]
    assert main(base) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"slurm job (one task: no array): 3 runs in lockstep; logs in {tmp_path / 'runs' / 'slurm'}"
    assert [line.split()[:3] for line in lines if line.startswith("task ")] == [["task", "0:", "new"]] * 3
    assert main([*base, "--lockstep", "off"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("slurm job array: 3 tasks, one run each; ")


def test_a_lockstep_task_runs_its_group_together_and_skips_what_is_complete(tmp_path: Path, one_torch_thread):
    """What an array task does with a lockstep group (in process: the task's own code): every run started together,
    each ending with its own records, equal to the run alone's; the task again (a requeue) skips them."""
    settings = ["data.segments=3", "device=cpu"]
    specs = plan(["bias", "full"], overrides=[f"runs_dir={tmp_path / 'group'}", *settings], baseline=False)
    runs = [{"adapter": s.adapter, "overrides": s.overrides, "name": s.name, "path": str(s.path)} for s in specs]
    outcomes = run_lockstep(runs, 1, os.getcwd())
    assert [o["status"] for o in outcomes] == ["done", "done"] and [o["path"] for o in outcomes] == [r["path"] for r in runs]
    for spec in plan(["bias", "full"], overrides=[f"runs_dir={tmp_path / 'alone'}", *settings], baseline=False):
        run = {"adapter": spec.adapter, "overrides": spec.overrides, "name": spec.name, "path": str(spec.path)}
        assert run_one(run, 1, os.getcwd())["status"] == "done"
        grouped = read_jsonl(Path(runs[[r["name"] for r in runs].index(spec.name)]["path"]) / layout.SEGMENTS_FILE)
        assert [r["hypothesis"] for r in grouped] == [r["hypothesis"] for r in read_jsonl(spec.path / layout.SEGMENTS_FILE)]
    assert [o["status"] for o in run_lockstep(runs, 1, os.getcwd())] == ["skipped", "skipped"]


def test_the_cluster_helper_writes_one_node_of_two_cpus(tmp_path: Path):
    conf = slurm_cluster.slurm_conf(tmp_path, 7001, 7002, "root")
    assert "CPUs=2" in conf and f"MinJobAge={slurm_cluster.MIN_JOB_AGE}" in conf and f"StateSaveLocation={tmp_path}/state" in conf


def test_flags_of_another_backend_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    base = ["--preset", "bias", "--segments", "2", "--runs-dir", str(tmp_path)]
    cases = [(["sweep", *base, "--partition", "cpu"], "--partition goes with --backend slurm (the backend here is local)"),
             (["sweep", *base, "--backend", "ray", "--detach"], "--detach goes with --backend slurm (the backend here is ray)"),
             (["sweep", *base, "--backend", "local", "--address", "auto"],
              "--address goes with --backend ray (the local backend starts its own Ray)"),
             (["sweep", *base, "--backend", "slurm", "--workers", "2"],
              "--workers is for the local and Ray backends; on Slurm give --cpus-per-task, --gpus-per-task and --array-parallelism"),
             (["simulate", *base, "--backend", "slurm", "--threads", "2"],
              "--threads is for the local and Ray backends; on Slurm give --cpus-per-task, --gpus-per-task and --array-parallelism"),
             (["sweep", *base, "--backend", "slurm", "--detach", "--track", "tensorboard"],
              "--track logs the runs once they are done, which --detach does not wait for: leave out --detach, or log them "
              "later with simpe track"),
             (["sweep", "--status", str(tmp_path)],
              f"--status {tmp_path}: no Slurm sweep was submitted there (no sweep-<job>.json in it or in its slurm/); give the "
              "runs folder or the Slurm log folder of a sweep run with --backend slurm")]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert capsys.readouterr().err == f"simpe: error: {message}\n"
    assert not any(tmp_path.iterdir())


def test_simulate_on_slurm_dry_runs_its_presets_as_an_array(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["simulate", "--preset", "bias", "full", "--segments", "10", "--runs-dir", str(tmp_path / "runs"),
                 "--backend", "slurm", "--dry-run", "--time", "30", "--array-parallelism", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"slurm job array: 2 tasks, one run each; logs in {tmp_path / 'runs' / 'slurm'}"
    assert "#SBATCH --array=0-1%1" in lines and "#SBATCH --time=30" in lines
    assert [line.split()[3].rsplit("/", 1)[-1] for line in lines if line.startswith("task ")] == ["full", "bias"]
