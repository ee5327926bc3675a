"""A Slurm sweep seen from outside: each run's status (done, running, pending, failed) from its folder, its task's
Slurm state and submitit's result, for the driver that follows the array (``follow``, the same bars and end lines as
the Ray path) and for ``simpe sweep --status`` (``status_lines``).

The Slurm state comes from ``squeue`` (finished tasks stay there for the cluster's ``MinJobAge``), else from ``sacct``
where the cluster keeps accounting; a task gone from both is judged by its run folders and its result file.
"""
from __future__ import annotations

import json
import pickle
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError
from simpe.rundir import layout
from simpe.sweep.slurm import LOGS_DIR, MANIFEST

RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING"}
WAITING = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SUSPENDED", "STOPPED", "RESV_DEL_HOLD"}
ENDED_BADLY = {"FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED",
               "SPECIAL_EXIT", "REVOKED"}
POLL_SECONDS = 2.0


def slurm_states(job: str) -> dict[str, str]:
    """Each array task's Slurm state by its id (``123_4``), and the job's own (``123``) for a single job."""
    out: dict[str, str] = {}
    for command in (["squeue", "-h", "-r", "-t", "all", "-j", str(job), "-o", "%i %T"],
                    ["sacct", "-n", "-P", "-X", "-j", str(job), "-o", "JobID,State"]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode != 0:
            continue
        for line in done.stdout.splitlines():
            parts = line.replace("|", " ").split()
            if len(parts) >= 2 and parts[0] not in out:
                out[parts[0]] = parts[1].rstrip("+")  # sacct: "CANCELLED by 0"
        if out:
            break
    return out


def task_result(logs: Path, task_id: str) -> tuple[str, Any] | None:
    """submitit's result of a finished task: ("success", outcomes) or ("error", traceback); None while it has none."""
    path = Path(logs) / f"{task_id}_0_result.pkl"
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return None


@dataclass
class RunStatus:
    """One run of a Slurm sweep as it stands."""

    name: str
    path: Path
    task: str  # the array task's id, 123_4 (123: a sweep of one task is a plain job)
    status: str  # done, running, pending or failed
    slurm: str  # the task's Slurm state, or "-" when the cluster no longer knows it
    segments: int
    note: str = ""


def _segments(path: Path) -> int:
    try:
        with open(path / layout.SEGMENTS_FILE, "rb") as handle:
            return handle.read().count(b"\n")
    except OSError:
        return 0


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def run_statuses(manifest: dict[str, Any], states: dict[str, str] | None = None) -> list[RunStatus]:
    """Every run of the sweep ``manifest`` describes, with its status (see the module docstring)."""
    job = manifest["job"]
    states = slurm_states(job) if states is None else states
    logs = Path(manifest["logs"])
    out = []
    for task in manifest["tasks"]:
        task_id = task.get("id") or f"{job}_{task['index']}"  # 123_4, or 123 for a sweep of one task
        slurm = states.get(task_id, "-")
        result = task_result(logs, task_id) if slurm not in RUNNING | WAITING else None
        for run in task["runs"]:
            path = Path(run["path"])
            error = path / layout.ERROR_FILE
            note = ""
            if (path / layout.DONE_FILE).exists():
                status = "done"
            elif slurm in RUNNING:
                status = "running"
            elif slurm in WAITING:
                status = "pending"
            else:
                status = "failed"
                if error.exists():
                    note = _first_line(error.read_text(encoding="utf-8", errors="replace"))
                elif result is not None and result[0] == "error":
                    note = _first_line(str(result[1]).strip().splitlines()[-1] if str(result[1]).strip() else "")
                elif slurm == "-" and result is None:
                    note = "the task left the queue without a result (cancelled or killed)"
                else:
                    note = f"the task ended {slurm} without completing the run"
                note += f"; its log: {logs / f'{task_id}_0_log.err'}"
            out.append(RunStatus(run["name"], path, task_id, status, slurm, _segments(path), note))
    return out


def find_manifest(folder: Path) -> dict[str, Any]:
    """The latest sweep submitted from ``folder`` (a runs folder, its Slurm log folder, or a manifest file)."""
    folder = Path(folder)
    if folder.is_file():
        candidates = [folder]
    else:
        candidates = sorted([*folder.glob(MANIFEST.format(job="*")), *(folder / LOGS_DIR).glob(MANIFEST.format(job="*"))])
    manifests = []
    for path in candidates:
        try:
            manifests.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    if not manifests:
        raise ConfigError(f"--status {folder}: no Slurm sweep was submitted there (no {MANIFEST.format(job='<job>')} in it or in "
                          f"its {LOGS_DIR}/); give the runs folder or the Slurm log folder of a sweep run with --backend slurm")
    return max(manifests, key=lambda m: m.get("submitted", 0))


def status_lines(manifest: dict[str, Any]) -> tuple[list[str], list[RunStatus]]:
    """What ``simpe sweep --status`` prints: a count per status, then a line per run."""
    runs = run_statuses(manifest)
    counts = {word: sum(r.status == word for r in runs) for word in ("done", "running", "pending", "failed")}
    lines = [f"slurm job {manifest['job']}: {len(runs)} runs: " + ", ".join(f"{n} {word}" for word, n in counts.items())]
    for run in runs:
        lines.append(f"{run.status:8s} {run.slurm:12s} {run.task:10s} {run.name} ({run.segments} segments)"
                     + (f": {run.note}" if run.note else ""))
    tables = manifest.get("tables")
    if tables and tables != "driver":
        state, reason = job_state(str(tables))
        if reason == "DependencyNeverSatisfied":  # afterok on an array whose task failed once, even if requeued since
            groups = " ".join(sorted({str(r.path.parent) for r in runs}))
            lines.append(f"tables: job {tables} ({state}, {reason}: a task failed before; scancel {tables} and write them "
                         f"with simpe compare {groups})")
        else:
            lines.append(f"tables: job {tables} ({state}; it runs once every task ended well, afterok)")
    return lines, runs


def job_state(job: str) -> tuple[str, str]:
    """A plain job's Slurm state and the reason it waits (squeue), or its state from sacct, or ("-", "")."""
    try:
        done = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T %r"], capture_output=True, text=True, timeout=60)
        if done.returncode == 0 and done.stdout.split():
            state, _, reason = done.stdout.strip().partition(" ")
            return state, reason if reason != "None" else ""
    except (OSError, subprocess.TimeoutExpired):
        pass
    return slurm_states(job).get(job, "-"), ""


def follow(manifest: dict[str, Any], specs: list[Any], progress: bool = True, poll: float = POLL_SECONDS) -> list[Any]:
    """Follow the array until every run is done or failed: the Ray path's bars (one of runs, one per running run with
    its segments and running figures) and a line as each run ends. Returns the runs' ``Outcome`` in ``specs``' order."""
    from simpe.sweep.executor import Outcome, Progress

    by_name = {spec.name: spec for spec in specs}
    shown = Progress(len(specs), 0, "sweep") if progress else None
    outcomes: dict[str, Outcome] = {}
    started: set[str] = set()
    try:
        while len(outcomes) < len(specs):
            for run in run_statuses(manifest):
                if run.name in outcomes:
                    continue
                spec = by_name[run.name]
                if run.status in ("running", "done", "failed") and run.name not in started:
                    started.add(run.name)
                    if shown is not None:
                        shown.start(spec)
                if run.status in ("done", "failed"):
                    outcome = Outcome(run.name, run.path, run.status, error=run.note or None)
                    outcomes[run.name] = outcome
                    if shown is not None:
                        shown.poll()
                        shown.finish(outcome)
            if shown is not None:
                shown.poll()
            if len(outcomes) < len(specs):
                time.sleep(poll)
    finally:
        if shown is not None:
            shown.close()
    return [outcomes[spec.name] for spec in specs]
