"""``--backend`` for ``simpe sweep`` and ``simpe simulate``, and what ``--backend slurm`` does from the command line:
the Slurm flags, the dry run of the array, submitting it, following it (or ``--detach``) and ``simpe sweep --status``.
The array itself is ``simpe.sweep.slurm``'s; what the driver reads while it runs, ``simpe.sweep.follow``'s."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simpe.cli.common import integer, report_outcomes

SLURM_FLAGS = {"partition": "--partition", "time": "--time", "cpus_per_task": "--cpus-per-task", "gpus_per_task": "--gpus-per-task",
               "mem": "--mem", "array_parallelism": "--array-parallelism", "logs": "--slurm-logs"}


def add_backend_flags(p: argparse.ArgumentParser, sweep: bool) -> None:
    """``--backend`` and the Slurm flags (a sweep file's ``slurm:`` block gives the same keys); ``--status`` for sweep."""
    backends = ["local", "ray", "slurm"] if sweep else ["local", "slurm"]
    here = ("local: this machine (a local Ray; default); ray: the Ray cluster at --address (default auto); "
            if sweep else "local: this machine (default); ")
    p.add_argument("--backend", choices=backends, default=None,
                   help=here + "slurm: one Slurm job array, a task per run (with --gpus-per-task, per lockstep group), submitted "
                        "through submitit (docs/sweeps.md, Slurm)")
    g = p.add_argument_group("Slurm (--backend slurm; a sweep file's slurm: block gives the same keys)")
    g.add_argument("--partition", help="the partition to submit to (default: the cluster's default)")
    g.add_argument("--time", metavar="LIMIT",
                   help="time limit per task: minutes or [D-]HH:MM:SS (default: twice the dry run's estimate of the longest "
                        "run, at least 10 min); refused when shorter than that estimate")
    g.add_argument("--cpus-per-task", type=integer, metavar="N", help="CPUs per task, its torch threads (default: 1)")
    g.add_argument("--gpus-per-task", type=integer, metavar="N", help="GPUs per task (default: 0; with GPUs add --set device=cuda)")
    g.add_argument("--mem", metavar="SIZE", help="memory per task as sbatch takes it, e.g. 8G (default: the partition's)")
    g.add_argument("--array-parallelism", type=integer, metavar="N", help="tasks running at once, the array's %%N throttle (default: all)")
    g.add_argument("--slurm-logs", type=Path, metavar="DIR",
                   help="Slurm's log folder: the tasks' logs, submitit's files, the sweep's manifest (default: RUNS_DIR/slurm)")
    g.add_argument("--detach", action="store_true",
                   help="submit, print the job id and exit" + (" (the tables then come from a job that runs once every task "
                                                                "ended well, afterok)" if sweep else "")
                        + "; follow with simpe sweep --status RUNS_DIR")
    if sweep:
        g.add_argument("--status", type=Path, metavar="DIR",
                       help="report a Slurm sweep's runs (done, running, pending, failed, with their Slurm states) from its "
                            "runs folder or Slurm log folder, and exit")


def backend(args: argparse.Namespace) -> str:
    """The backend asked for, checked against the flags that belong to another one (one line, exit 2)."""
    from simpe.errors import ConfigError

    chosen = args.backend or ("ray" if getattr(args, "address", None) else "local")
    if chosen != "slurm":
        given = [flag for key, flag in SLURM_FLAGS.items() if getattr(args, key if key != "logs" else "slurm_logs") is not None]
        given += ["--detach"] if args.detach else []
        if given:
            raise ConfigError(f"{given[0]} goes with --backend slurm (the backend here is {chosen})")
        if chosen == "local" and getattr(args, "address", None):
            raise ConfigError("--address goes with --backend ray (the local backend starts its own Ray)")
        return chosen
    for flag, value in (("--workers", args.workers if args.command == "sweep" else None), ("--threads", args.threads),
                        ("--address", getattr(args, "address", None)), ("--gpus-per-run", getattr(args, "gpus_per_run", 0) or None),
                        ("--return-results", getattr(args, "return_results", False) or None)):
        if value is not None:
            raise ConfigError(f"{flag} is for the local and Ray backends; on Slurm give --cpus-per-task, --gpus-per-task and "
                              "--array-parallelism")
    if args.detach and args.track:
        raise ConfigError("--track logs the runs once they are done, which --detach does not wait for: leave out --detach, or "
                          "log them later with simpe track")
    return chosen


def settings(args: argparse.Namespace, block: dict[str, Any] | None = None) -> Any:
    """The array's settings: the sweep file's ``slurm:`` block with the flags given put over it."""
    from simpe.sweep.slurm import SlurmSettings

    flags = {key: getattr(args, key if key != "logs" else "slurm_logs") for key in SLURM_FLAGS}
    return SlurmSettings.merged(block, flags)


def run_on_slurm(args: argparse.Namespace, specs: list[Any], block: dict[str, Any] | None, tables: bool, tracking: Any,
                 overwrite: bool = False, done_word: str = "done") -> None:
    """``--backend slurm``: the dry run's array, or submit it and follow it (bars, end lines, then the tables), or
    ``--detach``: submit it and its tables job, print the job id and exit."""
    from simpe.sweep import slurm

    chosen = settings(args, block)
    lockstep = getattr(args, "lockstep", "on") == "on"  # with a GPU per task, a lockstep group is one task (slurm.groups)
    runs_dir = Path(specs[0].cfg.runs_dir) if specs and specs[0].cfg is not None else Path("runs")
    if args.dry_run:
        for line in slurm.dry_run(specs, chosen, runs_dir, lockstep=lockstep):
            print(line)
        return
    manifest = slurm.submit(specs, chosen, runs_dir, bootstrap=getattr(args, "bootstrap", 1000), tables=tables, overwrite=overwrite,
                            lockstep=lockstep)
    tasks = len(manifest["tasks"])
    print(f"submitted slurm job {manifest['job']}: {tasks} task{'s' if tasks != 1 else ''}; logs in {manifest['logs']}", flush=True)
    if args.detach:
        if tables:
            print(f"tables: job {slurm.submit_tables(manifest)} writes them once every task ended well (afterok)")
        print(f"follow with: simpe sweep --status {runs_dir}")
        print(manifest["job"])
        return
    from simpe.sweep.follow import follow

    try:
        outcomes = follow(manifest, specs, progress=not args.no_progress)
    except KeyboardInterrupt:
        if tables:
            print(f"simpe: the tasks go on; tables: job {slurm.submit_tables(manifest)} (afterok)")
        print(f"follow with: simpe sweep --status {runs_dir}")
        raise
    if tables:  # as the Ray path: each stream's table over the runs that did not fail
        from simpe.sweep.tables import compare_groups

        for group_dir, text in compare_groups(specs, outcomes, int(manifest["bootstrap"])):
            print(f"\n## {group_dir}\n\n{text}")
    tracking.outcomes(outcomes)
    report_outcomes(outcomes, done_word)
    tracking.finish()


def cmd_status(args: argparse.Namespace) -> None:
    """``simpe sweep --status DIR``: the lines of ``simpe.sweep.follow.status_lines``; exit 1 when a run failed."""
    from simpe.sweep.follow import find_manifest, status_lines

    lines, runs = status_lines(find_manifest(args.status))
    for line in lines:
        print(line)
    if any(run.status == "failed" for run in runs):
        raise SystemExit(1)
