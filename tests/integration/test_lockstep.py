"""Runs in lockstep (simpe.loop.group): a group's records are, file by file, those of each run alone.

Three presets (full, fixed, lasso: the shared SGD, a fixed subset, a method with its own step and budget) on the demo
model, with ranking snapshots (their Monte Carlo samples read each run's own random state) and a checkpoint, run as
one group and each alone (a group of one, the path every lockstep method takes alone); then the same group killed
mid-stream (SIGKILL) and resumed. At one torch thread each run's block of a batched product is the product a run
alone computes, so the comparison is exact: every record field but the clock, the snapshots, the store's tensors and
metadata, and the summary's figures.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from simpe.config.files import load_config
from simpe.loop.group import Group, describe_groups, plan_groups
from simpe.loop.lockstep import why_alone
from simpe.loop.run import check_runs, simulate
from simpe.rundir.reader import read_jsonl
from simpe.rundir.same import differences

REPO = Path(__file__).resolve().parents[2]
PRESETS = ["full", "fixed", "lasso"]
SETTINGS = ["data.segments=6", "snapshots.every=3", "snapshots.probe=dev", "snapshots.probe_size=2", "ranking.k=3",
            "ranking.samples=6", "ranking.max_expansions=1000", "checkpoint_every=2", "device=cpu"]


def _configs(runs: Path, presets: list[str] = PRESETS) -> list:
    return [load_config(preset, [*SETTINGS, f"runs_dir={runs}"]) for preset in presets]


def _assert_same_run(alone: Path, grouped: Path) -> None:
    assert differences(alone, grouped) == [], alone.name
    assert (grouped / "DONE").exists()


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = tmp_path_factory.mktemp("alone")
        paths = simulate(_configs(runs), progress=False, lockstep=False)
    finally:
        torch.set_num_threads(threads)
    return {path.name: path for path in paths}


def test_three_presets_as_a_group_write_the_records_of_each_alone(alone: dict[str, Path], tmp_path: Path,
                                                                  one_torch_thread: None) -> None:
    loops = check_runs(_configs(tmp_path), progress=False)
    groups = plan_groups(loops)
    assert [[loop.cfg.adapter for loop in group] for group in groups] == [PRESETS]
    assert describe_groups(groups) == ["in lockstep (one pass for 3 runs): full, fixed, lasso"]
    paths = Group(groups[0]).run()
    assert [p.name for p in paths] == PRESETS
    for path in paths:
        _assert_same_run(alone[path.name], path)


def test_the_shared_update_of_a_group_is_the_same_for_each_run_alone(tmp_path: Path, one_torch_thread: None) -> None:
    """The update as one stacked pass for all runs (a GPU's default; simpe.loop.group_update.shared_pass), forced on
    the CPU: each run's records in the group are those of the same run alone through it (a group of one)."""
    settings = [*SETTINGS[:1], "snapshots.every=0", "device=cpu"]
    alone = {}
    for preset in PRESETS:
        loops = check_runs([load_config(preset, [*settings, f"runs_dir={tmp_path / 'alone'}"])], progress=False)
        alone[preset] = Group(loops, shared_update=True).run()[0]
    loops = check_runs([load_config(preset, [*settings, f"runs_dir={tmp_path / 'group'}"]) for preset in PRESETS],
                       progress=False)
    for path in Group(loops, shared_update=True).run():
        _assert_same_run(alone[path.name], path)


def test_which_runs_go_together(tmp_path: Path) -> None:
    knn, full = load_config("knn", [f"runs_dir={tmp_path}"]), load_config("full", [f"runs_dir={tmp_path}"])
    assert why_alone(full) is None
    assert why_alone(knn) == "method knn (lockstep: baseline, full, bias, fixed, top, norms, lasso)"
    assert why_alone(load_config("full+replay", [f"runs_dir={tmp_path}"])) == "modifier replay (lockstep: ewc)"
    assert why_alone(load_config("full+ewc", [f"runs_dir={tmp_path}"])) is None
    assert why_alone(load_config("full", [f"runs_dir={tmp_path}", "decoder.name=greedy", "decoder.params={}"])) == \
        "decoder greedy (lockstep: beam, heap_beam)"
    assert why_alone(load_config("full", [f"runs_dir={tmp_path}", "protocol.name=interactive"])) == "protocol interactive"


@pytest.mark.slow  # docs/tests.md: the group against alone in make test; a run alone killed and resumed there too
def test_a_group_killed_mid_stream_resumes_without_losing_or_repeating_a_segment(alone: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    runs = tmp_path / "killed"
    cmd = [sys.executable, "-m", "simpe", "simulate", "--preset", *PRESETS, "--runs-dir", str(runs), "--no-progress",
           *[arg for setting in SETTINGS for arg in ("--set", setting)]]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    folders = {name: runs / path.parent.name / name for name, path in alone.items()}
    while time.time() < deadline and len(read_jsonl(folders["lasso"] / "segments.jsonl", tolerate_torn_tail=True)
                                         if (folders["lasso"] / "segments.jsonl").exists() else []) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not any((folder / "DONE").exists() for folder in folders.values())
    resumed = subprocess.run([*cmd, "--resume"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "in lockstep (one pass for 3 runs): full, fixed, lasso" in resumed.stderr + resumed.stdout
    for name, folder in folders.items():
        _assert_same_run(alone[name], folder)


def test_a_sweeps_tasks_put_the_costliest_first_and_split_groups_only_for_idle_workers(tmp_path: Path):
    """simpe.sweep.executor.lockstep_tasks: a lockstep group is one task when the runs alone keep the workers busy, and
    is queued by its runs' summed cost (a group queued behind the runs alone would end last, alone on one worker); with
    idle workers it is dealt round-robin into parts (longest first)."""
    from simpe.sweep.executor import lockstep_tasks
    from simpe.sweep.plan import expected_cost, plan

    specs = plan(["knn", "full", "bias", "top"], overrides=[f"runs_dir={tmp_path}", "data.segments=4", "device=cpu"])
    todo = sorted([(spec, False) for spec in specs], key=lambda item: -expected_cost(item[0]))
    names = lambda tasks: [[spec.name for spec, _ in task] for task in tasks]  # noqa: E731
    costs = {spec.name: expected_cost(spec) for spec in specs}
    group = [spec.name for spec, _ in todo if spec.name != "knn"]  # longest first
    assert costs["knn"] < sum(costs[name] for name in group) and len(group) == 4
    assert names(lockstep_tasks(todo, 2)) == [group, ["knn"]]  # one group: its sum above knn's
    parts = [group[0::2], group[1::2], ["knn"]]
    assert names(lockstep_tasks(todo, 3)) == sorted(parts, key=lambda part: -sum(costs[name] for name in part))
