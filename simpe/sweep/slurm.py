"""Sweeps on Slurm: a sweep's runs as one job array submitted through ``submitit`` (``submit``), checked first.

Each array task runs a list of runs (``RunGroup``; one run now, a lockstep group of runs later), one after another in
one process with ``cpus_per_task`` torch threads. A task reads each run's folder when it starts: complete runs are
skipped, incomplete ones resumed from their last checkpoint, so a task that Slurm requeues (preemption, ``scontrol
requeue``, a time-out caught by submitit's signal) goes on where its checkpoint was, never repeating nor losing a
segment. A run that fails leaves its error in its folder (``error.txt``) and fails its task, so a dependent job
(``afterok``) does not run. Everything a sweep writes lies in the runs folder and Slurm's log folder
(``SlurmSettings.logs``: submitit's pickles and logs, and the sweep's manifest ``sweep-<job>.json``, which
``simpe sweep --status`` reads). What the driver shows while the array runs is in ``simpe.sweep.follow``.

Before anything is submitted (``check``): sbatch on PATH, the partition known to the cluster, and a time limit no
shorter than the dry run's estimate for the longest run (``simpe.loop.dryrun``), each refused in one line.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError
from simpe.sweep.plan import RunSpec, expected_cost

logger = logging.getLogger(__name__)

SLURM_KEYS = ("partition", "time", "cpus_per_task", "gpus_per_task", "mem", "array_parallelism", "logs")
LOGS_DIR = "slurm"  # the default log folder, inside the runs folder
MANIFEST = "sweep-{job}.json"
MIN_TIME = 10  # minutes: the least default time limit (start-up, loading the model)
TIME_MARGIN = 2.0  # the default time limit is this many times the dry run's estimate for the longest run


def parse_time(value: Any) -> int:
    """A Slurm time limit in whole minutes: ``90``, ``"90"``, ``"1:30:00"``, ``"2-00:00:00"`` or ``"45:00"`` (MM:SS)."""
    text = str(value).strip()
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if match is None or isinstance(value, bool):
        raise ConfigError(f"bad Slurm time limit {value!r}; give minutes (90) or [D-]HH:MM:SS (1:30:00, 2-00:00:00)")
    days, first, second, third = match.groups()
    if days is None and second is None:
        minutes = int(first)
    elif third is not None:  # H:M:S
        minutes = int(first) * 60 + int(second) + math.ceil(int(third) / 60)
    elif days is not None:  # D-H:M
        minutes = int(first) * 60 + int(second)
    else:  # M:S
        minutes = int(first) + math.ceil(int(second) / 60)
    minutes += int(days or 0) * 24 * 60
    if minutes < 1:
        raise ConfigError(f"the Slurm time limit {value!r} is under a minute")
    return minutes


@dataclass
class SlurmSettings:
    """The array's resources: a sweep file's ``slurm:`` block, then the flags (``--partition`` and the rest).

    ``time`` is in minutes (None: twice the dry run's estimate for the longest run, at least ``MIN_TIME``);
    ``mem`` as sbatch takes it (``8G``); ``array_parallelism``: the ``%N`` throttle (None: every task at once);
    ``logs``: Slurm's log folder (None: ``<runs_dir>/slurm``)."""

    partition: str | None = None
    time: int | None = None
    cpus_per_task: int = 1
    gpus_per_task: int = 0
    mem: str | None = None
    array_parallelism: int | None = None
    logs: Path | None = None

    def __post_init__(self) -> None:
        if self.time is not None:
            self.time = parse_time(self.time)
        for name in ("cpus_per_task", "gpus_per_task", "array_parallelism"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) and not str(value).isdigit():
                raise ConfigError(f"slurm {name} must be a whole number, got {value!r}")
            setattr(self, name, int(value))
        if self.cpus_per_task < 1 or self.gpus_per_task < 0 or (self.array_parallelism is not None and self.array_parallelism < 1):
            raise ConfigError(f"slurm cpus_per_task and array_parallelism must be >= 1 and gpus_per_task >= 0, got "
                              f"{self.cpus_per_task}, {self.array_parallelism} and {self.gpus_per_task}")
        if self.mem is not None and not re.fullmatch(r"\d+[KMGT]?B?", str(self.mem).strip(), re.IGNORECASE):
            raise ConfigError(f"bad slurm mem {self.mem!r}; give a size as sbatch takes it: 4000 (MB), 8G, 1T")
        if self.logs is not None:
            self.logs = Path(self.logs)

    @classmethod
    def merged(cls, block: dict[str, Any] | None, flags: dict[str, Any]) -> SlurmSettings:
        """The sweep file's ``slurm:`` block (its keys checked) with the flags that were given put over it."""
        block = dict(block or {})
        if not isinstance(block, dict):
            raise ConfigError("a sweep file's slurm: must be a mapping, e.g. {partition: gpu, time: 60}")
        unknown = sorted(set(block) - set(SLURM_KEYS))
        if unknown:
            raise ConfigError(f"unknown slurm key {unknown[0]!r}; known: {', '.join(SLURM_KEYS)}")
        block.update({key: value for key, value in flags.items() if value is not None})
        return cls(**block)

    def log_dir(self, runs_dir: Path) -> Path:
        return Path(self.logs) if self.logs is not None else Path(runs_dir) / LOGS_DIR


@dataclass
class RunGroup:
    """What one array task runs: its runs' presets, overrides and names; one run, or a lockstep group of runs that
    advance through the stream together (``groups``). Plain values, so that it pickles without the configs."""

    runs: list[dict[str, Any]]

    @classmethod
    def of(cls, specs: list[RunSpec]) -> RunGroup:
        return cls([{"adapter": s.adapter, "overrides": list(s.overrides), "name": s.name, "path": str(s.path)} for s in specs])

    @property
    def names(self) -> list[str]:
        return [run["name"] for run in self.runs]


def groups(specs: list[RunSpec], settings: SlurmSettings | None = None, lockstep: bool = True) -> list[RunGroup]:
    """The array's tasks, the longest first (so that the tasks still going at the end are short ones).

    With a GPU per task (``gpus_per_task``) and ``lockstep``, the runs that may share their passes
    (``simpe.loop.group``: the same model, stream, decoder and length rule) form one task, one pass for all on its GPU;
    every other run is a task of its own. On CPUs each run is a task of its own: a group would share one task's cores
    where the array runs its tasks side by side, and on the CPU a group shares only its decoding (docs/lockstep.md)."""
    ordered = sorted(specs, key=lambda s: -expected_cost(s))
    if not lockstep or settings is None or settings.gpus_per_task < 1:
        return [RunGroup.of([spec]) for spec in ordered]
    from simpe.sweep.executor import lockstep_tasks

    tasks = lockstep_tasks([(spec, False) for spec in ordered], workers=1)  # one worker: each group whole, costliest first
    return [RunGroup.of([spec for spec, _ in task]) for task in tasks]


# ---- checks before submitting ----

def check_sbatch() -> str:
    """sbatch's path; one line when it is not on PATH."""
    found = shutil.which("sbatch")
    if found is None:
        raise ConfigError("--backend slurm: no sbatch on PATH; run the sweep on a Slurm login node (or load its module, "
                          "e.g. `module load slurm`), or use --backend local")
    return found


def partitions() -> list[str]:
    """The partitions the cluster knows (sinfo), the default one first with its ``*`` taken off."""
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigError(f"--backend slurm: sinfo could not list the partitions ({err})") from None
    if done.returncode != 0:
        raise ConfigError(f"--backend slurm: sinfo failed ({(done.stderr or done.stdout).strip().splitlines()[-1:] or '?'}): "
                          "is the Slurm controller up?")
    names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return sorted(dict.fromkeys(n.rstrip("*") for n in names), key=lambda n: f"{n}*" not in names)


def check_partition(partition: str | None) -> None:
    if partition is None:
        return
    known = partitions()
    if partition not in known:
        raise ConfigError(f"--partition {partition!r}: the cluster has no such partition; known: {', '.join(known) or 'none'}")


def run_estimates(specs: list[RunSpec]) -> dict[str, float]:
    """Each run's seconds by the dry run (its s/segment, one CPU thread, times its segments); runs without an estimate
    (no measured rates for their device or decoder) are left out."""
    from simpe.loop.dryrun import estimate
    from simpe.loop.stream import load_stream

    out = {}
    for spec in specs:
        cfg = spec.cfg or spec.config()
        est = estimate(cfg, "cuda" if str(cfg.device) == "cuda" else "cpu")
        if est.seconds_per_segment is None:
            logger.info("no dry-run estimate for %s: its time limit is not checked", spec.name)
            continue
        segments = cfg.data.segments if cfg.data.segments is not None else len(load_stream(cfg)[1])
        out[spec.name] = est.seconds_per_segment * segments
    return out


def check_time(settings: SlurmSettings, estimates: dict[str, float]) -> int | None:
    """The time limit to ask for (minutes): the one given, refused in one line when shorter than the dry run's
    estimate for a run; else twice the longest estimate, at least ``MIN_TIME`` (None without estimates)."""
    if not estimates:
        return settings.time
    name, seconds = max(estimates.items(), key=lambda item: item[1])
    if settings.time is not None:
        if settings.time * 60 < seconds:
            raise ConfigError(f"--time {settings.time} min is shorter than the dry run's estimate for run {name!r} "
                              f"({_duration(seconds)} on one CPU thread); give --time {math.ceil(TIME_MARGIN * seconds / 60)} "
                              "or more, or fewer --segments")
        return settings.time
    return max(MIN_TIME, math.ceil(TIME_MARGIN * seconds / 60))


# ---- the array ----

SIGNAL_LEAD = 60  # seconds before the time limit that Slurm sends USR2 (submitit then requeues the task)


def signal_lead(time_limit: int | None) -> int:
    """Seconds before the limit that the task is told (``SIGNAL_LEAD``; a quarter of a limit under four minutes, so
    that a short limit is not signalled at its start)."""
    return SIGNAL_LEAD if time_limit is None or time_limit >= 4 else max(1, time_limit * 15)


def sbatch_parameters(settings: SlurmSettings, tasks: int, name: str, time_limit: int | None) -> dict[str, Any]:
    """submitit's SlurmExecutor parameters for the array (the ``%N`` throttle, the signal before the time limit)."""
    params: dict[str, Any] = {"job_name": name, "cpus_per_task": settings.cpus_per_task,
                              "array_parallelism": settings.array_parallelism or tasks,
                              "signal_delay_s": signal_lead(time_limit),
                              "wckey": None}  # submitit's default wckey (its own name) means nothing to a cluster
    if time_limit is not None:
        params["time"] = time_limit
    if settings.partition:
        params["partition"] = settings.partition
    if settings.gpus_per_task:
        params["gpus_per_task"] = settings.gpus_per_task
    if settings.mem:
        params["additional_parameters"] = {"mem": str(settings.mem)}  # as given: submitit's mem takes GB only
    return params


def sbatch_script(settings: SlurmSettings, tasks: int, name: str, time_limit: int | None, logs: Path) -> str:
    """The array's sbatch script as submitit would write it (its ``_make_sbatch_string``; the command shown is the one
    submitit runs in each task)."""
    import shlex
    import sys

    from submitit.slurm.slurm import _make_sbatch_string

    command = " ".join([shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(logs))])
    return _make_sbatch_string(command=command, folder=logs, map_count=tasks if tasks > 1 else None,  # one: a plain job
                               **sbatch_parameters(settings, tasks, name, time_limit))


def dry_run(specs: list[RunSpec], settings: SlurmSettings, runs_dir: Path, name: str = "simpe-sweep",
            lockstep: bool = True) -> list[str]:
    """What ``--dry-run`` prints: the sbatch parameters, then one line per array task (its runs, their state)."""
    from simpe.sweep.plan import state

    estimates = run_estimates(specs)
    time_limit = check_time(settings, estimates)
    tasks = groups(specs, settings, lockstep)
    logs = settings.log_dir(runs_dir)
    script = sbatch_script(settings, len(tasks), name, time_limit, logs)
    each = ("one run each" if all(len(task.runs) == 1 for task in tasks) else
            "a lockstep group of runs (one pass for all on the task's GPU) or one run each")
    lines = [f"slurm job array: {len(tasks)} tasks, {each}; logs in {logs}" if len(tasks) > 1 else
             f"slurm job (one task: no array): {'one run' if len(specs) == 1 else f'{len(specs)} runs in lockstep'}; logs in {logs}"]
    lines += [line for line in script.splitlines() if line.startswith("#SBATCH")]
    by_name = {spec.name: spec for spec in specs}
    for index, task in enumerate(tasks):
        for run in task.runs:
            spec = by_name[run["name"]]
            guess = f"dry run: {_duration(estimates[spec.name])}" if spec.name in estimates else "no dry-run estimate"
            lines.append(f"task {index}: {state(spec):10s} {spec.path} ({guess})")
    return lines


def submit(specs: list[RunSpec], settings: SlurmSettings, runs_dir: Path, bootstrap: int = 1000, tables: bool = True,
           overwrite: bool = False, name: str = "simpe-sweep", lockstep: bool = True) -> dict[str, Any]:
    """Check, then submit the sweep's runs as one job array; returns the manifest (also written to the log folder).

    ``overwrite`` (``simpe simulate --overwrite``) starts each run from nothing on the task's first start only, so that
    a requeued task resumes. ``tables``: the manifest says the driver writes the comparison tables (``submit_tables``
    submits them as a job depending on the array instead, for ``--detach``).
    """
    check_sbatch()
    check_partition(settings.partition)
    time_limit = check_time(settings, run_estimates(specs))
    import submitit

    tasks = groups(specs, settings, lockstep)
    logs = settings.log_dir(runs_dir).resolve()
    logs.mkdir(parents=True, exist_ok=True)
    executor = submitit.SlurmExecutor(folder=logs, max_num_timeout=3)
    executor.update_parameters(**sbatch_parameters(settings, len(tasks), name, time_limit))
    task = SweepTask(settings.cpus_per_task, os.getcwd(), overwrite)
    try:
        jobs = executor.map_array(task, tasks)
    except Exception as err:  # sbatch refused it (a resource the partition lacks, a bad --mem): its own words, one line
        raise ConfigError(f"sbatch refused the array: {_last_line(err)}") from None
    job_id = jobs[0].job_id.split("_")[0]  # submitit submits one task as a plain job: its id has no _0
    manifest = {"job": job_id, "submitted": time.time(), "runs_dir": str(Path(runs_dir).resolve()), "logs": str(logs),
                "time_limit": time_limit, "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(settings).items()},
                "tasks": [{"index": i, "id": str(j.job_id), "runs": t.runs} for i, (t, j) in enumerate(zip(tasks, jobs))],
                "bootstrap": bootstrap,
                "tables": "driver" if tables else None}
    write_manifest(logs, manifest)
    return manifest


def submit_tables(manifest: dict[str, Any]) -> str:
    """Submit the comparison tables as one job that starts once every task of the array ended well (``afterok``);
    returns its id and notes it in the manifest."""
    import submitit

    logs = Path(manifest["logs"])
    executor = submitit.SlurmExecutor(folder=logs, max_num_timeout=0)
    params: dict[str, Any] = {"job_name": "simpe-sweep-tables", "cpus_per_task": 1, "time": MIN_TIME,
                              "dependency": f"afterok:{manifest['job']}"}
    if manifest["settings"].get("partition"):
        params["partition"] = manifest["settings"]["partition"]
    executor.update_parameters(**params)
    runs = [run for task in manifest["tasks"] for run in task["runs"]]
    job = executor.submit(write_tables, runs, int(manifest.get("bootstrap", 1000)), os.getcwd())
    manifest["tables"] = job.job_id
    write_manifest(logs, manifest)
    return str(job.job_id)


def write_tables(runs: list[dict[str, Any]], bootstrap: int, cwd: str = "") -> list[str]:
    """The comparison table of each stream group the runs landed in (the afterok job's work; the driver's too)."""
    from simpe.sweep.executor import Outcome
    from simpe.sweep.tables import compare_groups

    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    specs = [RunSpec(run["adapter"], run["overrides"], run["name"], Path(run["path"])) for run in runs]
    outcomes = [Outcome(spec.name, spec.path, "done") for spec in specs]
    return [f"## {group}\n\n{text}" for group, text in compare_groups(specs, outcomes, bootstrap)]


def write_manifest(logs: Path, manifest: dict[str, Any]) -> Path:
    path = Path(logs) / MANIFEST.format(job=manifest["job"])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def _last_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


# ---- what runs in each task ----

class SweepTask:
    """The function each array task calls with its ``RunGroup`` (submitit pickles it with its arguments).

    Checkpointable (submitit's protocol: ``checkpoint`` returns what to run when the task is requeued after a
    time-out or preemption): the same group again, which resumes each run from its folder."""

    def __init__(self, threads: int, cwd: str, overwrite: bool = False) -> None:
        self.threads, self.cwd, self.overwrite = threads, cwd, overwrite

    def __call__(self, group: RunGroup) -> list[dict[str, Any]]:
        from simpe import log

        log.setup(False)  # the runs' INFO lines in the task's log (Slurm's), their DEBUG lines in each run's log.txt
        overwrite = self.overwrite and _first_start()
        if len(group.runs) > 1:
            outcomes = run_lockstep(group.runs, self.threads, self.cwd, overwrite)
        else:
            outcomes = [run_one(run, self.threads, self.cwd, overwrite) for run in group.runs]
        failed = [(run["name"], outcome["error"]) for run, outcome in zip(group.runs, outcomes) if outcome["status"] == "failed"]
        if failed:  # the task fails (FAILED in Slurm; no afterok), each run's error in its folder
            raise RuntimeError("; ".join(f"run {name} failed: {error}" for name, error in failed))
        return outcomes

    def checkpoint(self, group: RunGroup) -> Any:
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(SweepTask(self.threads, self.cwd, False), group)


def _first_start() -> bool:
    """This task is on its first start (Slurm counts its requeues in SLURM_RESTART_COUNT)."""
    return os.environ.get("SLURM_RESTART_COUNT", "0") in ("", "0")


def _found(run: dict[str, Any], overwrite: bool) -> str:
    """What the run's folder holds for this task: ``new``, ``incomplete`` (resumed) or ``complete`` (skipped)."""
    from simpe.sweep.plan import state

    spec = RunSpec(run["adapter"], run["overrides"], run["name"])
    spec.cfg = spec.config()
    spec.path = Path(run["path"])
    return "new" if overwrite else state(spec)


def _ended(run: dict[str, Any], outcome: dict[str, Any], start: float) -> dict[str, Any]:
    """A run's outcome in this task, its time since ``start``; a failure also printed to the task's log and written to
    the run folder's error.txt. A task requeued by submitit (USR2: SystemExit in the run) exits instead."""
    from simpe.rundir import layout
    from simpe.rundir.writer import write_text_atomic

    if str(outcome.get("error", "")).startswith("SystemExit"):  # submitit requeued the task (USR2) and exits: not
        raise SystemExit(-1)  # a failure of the run, which the requeued task resumes
    outcome["seconds"] = time.perf_counter() - start
    path = Path(run["path"])
    if outcome["status"] == "failed":
        print(outcome.get("traceback", outcome["error"]), flush=True)  # the task's log
        if path.is_dir():
            write_text_atomic(path / layout.ERROR_FILE, f"{outcome['error']}\n\n{outcome.get('traceback', '')}")
    return outcome


def run_one(run: dict[str, Any], threads: int, cwd: str, overwrite: bool = False) -> dict[str, Any]:
    """One run in this task: skipped when complete, resumed when incomplete, started when new; never raises (a failure
    is written to the run folder's error.txt and returned)."""
    from simpe.rundir import layout
    from simpe.sweep.executor import failed_outcome, run_task

    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    (Path(run["path"]) / layout.ERROR_FILE).unlink(missing_ok=True)  # an earlier attempt's; a failure writes its own
    start = time.perf_counter()
    try:
        found = _found(run, overwrite)
    except Exception as err:  # noqa: BLE001 - reported as the run's outcome
        return _ended(run, failed_outcome(err), start)
    if found == "complete":
        return {"path": run["path"], "status": "skipped", "seconds": 0.0}
    outcome = run_task(run["adapter"], [*run["overrides"], f"adapter={run['name']}"], threads, found == "incomplete", cwd,
                       overwrite=overwrite)
    return _ended(run, outcome, start)


def run_lockstep(runs: list[dict[str, Any]], threads: int, cwd: str, overwrite: bool = False) -> list[dict[str, Any]]:
    """A lockstep group's runs in this task (``simpe.sweep.executor.run_group_task``): the complete ones skipped, the
    others started or resumed together, each from its own folder; one outcome per run, in order, as ``run_one``'s."""
    from simpe.rundir import layout
    from simpe.sweep.executor import failed_outcome, run_group_task

    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    start = time.perf_counter()
    outcomes: list[dict[str, Any] | None] = [None] * len(runs)
    todo, members = [], []
    for number, run in enumerate(runs):
        (Path(run["path"]) / layout.ERROR_FILE).unlink(missing_ok=True)
        try:
            found = _found(run, overwrite)
        except Exception as err:  # noqa: BLE001 - reported as the run's outcome
            outcomes[number] = _ended(run, failed_outcome(err), start)
            continue
        if found == "complete":
            outcomes[number] = {"path": run["path"], "status": "skipped", "seconds": 0.0}
            continue
        todo.append({"adapter": run["adapter"], "overrides": [*run["overrides"], f"adapter={run['name']}"],
                     "resume": found == "incomplete", "overwrite": overwrite, "returned": None})
        members.append(number)
    if todo:
        for number, outcome in zip(members, run_group_task(todo, threads, cwd)):
            outcomes[number] = _ended(runs[number], outcome, start)
    return [outcome for outcome in outcomes if outcome is not None]
