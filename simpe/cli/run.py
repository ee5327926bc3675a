"""`simpe simulate`, `simpe sweep`, `simpe track` and `simpe select-fixed`: runs of the loop and what they need."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simpe.cli.common import DeprecatedFlag, Tracking, add_model_settings, add_track_flags, integer, model_settings, report_outcomes, seed, tracker_list
from simpe.cli.slurm import add_backend_flags


def add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run the online simulated post-editing loop for one or more presets")
    p.add_argument("--preset", nargs="+", default=None, metavar="PRESET",
                   help="preset names under adapters/ (or .yaml paths), run in turn on the same stream (default: baseline)")
    p.add_argument("--method", dest="preset", nargs="+", action=DeprecatedFlag, new="--preset")
    p.add_argument("--dataset", help="dataset name (default from adapters/defaults.yaml: libreoffice)")
    p.add_argument("--split", help="dataset split (default: stream)")
    p.add_argument("--model", help="model folder or hub id of any supported family (default: the embedded demo model); "
                                   "its settings: --set model.src_lang=... model.tgt_lang=... (simpe list: families)")
    p.add_argument("--segments", type=integer, help="the first N segments of the stream (default: all)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default: auto)")
    p.add_argument("--comet", help="COMET model (hub id or checkpoint path) scored at the end of each run")
    p.add_argument("--truecaser", help="truecaser model path, or 'none' (default: the one shipped with the model)")
    p.add_argument("--snapshot-every", type=integer, help="ranking snapshot every N segments; 0 = off (default: snapshots.every of adapters/defaults.yaml)")
    p.add_argument("--skip-empty", action="store_true", help="skip segments with an empty source or reference (counted warning) instead of failing")
    p.add_argument("--reset", choices=["none", "document"], help="return to the base model at each document boundary (default: none)")
    p.add_argument("--protocol", choices=["post-edit", "interactive"],
                   help="post-edit (default), or interactive: a simulated translator corrects, the system completes from "
                        "the typed prefix; KSMR and WSR per segment (protocol.level: char, word or both; docs/interactive.md)")
    p.add_argument("--warm-start", metavar="FILE",
                   help="adapt on the translator's memory (.tmx, .tsv, or text FILE.<src> + FILE.<tgt>) with the method's "
                        "own update before the stream (warm_start.epochs, warm_start.batch_size); a baseline run needs "
                        "--set warm_start.method=PRESET (docs/methods.md, Warm start)")
    p.add_argument("--glossary", metavar="FILE|dataset",
                   help="a glossary (TSV 'source<TAB>target', or .tbx), or 'dataset' for the dataset's own (libreoffice: "
                        "data/libreoffice/glossary.tsv): log term accuracy, T0/T1 and repeated term errors per segment; "
                        "--set decoder.name=constrained_beam also puts its terms into the output (docs/terms.md)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key, e.g. --set update.lr=0.02 (repeatable)")
    p.add_argument("--config", type=Path, help="a resolved config.yaml of an earlier run: reproduce it")
    p.add_argument("--runs-dir", help="where run folders go (default: runs)")
    # continuing a run and replacing it contradict each other: the parser refuses any two of them in one line
    folder = p.add_mutually_exclusive_group()
    folder.add_argument("--resume", action="store_true", help="continue an interrupted run from its last checkpoint")
    folder.add_argument("--resume-anyway", action="store_true",
                        help="resume even in another environment than the run's (threads, CPU kernel set, torch/transformers "
                             "versions, device); the change is recorded in env.json and the summary")
    folder.add_argument("--overwrite", action="store_true", help="replace an existing run (not with --resume or --resume-anyway)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true",
                   help="load no weights, run nothing: print each run's parameters, memory (weights, gradients, method state, "
                        "activations, datastore growth) and estimated s/segment (translate + update, from the run's segments "
                        "read with the model's tokenizer); exit 2 naming a setting that fits if one cannot fit")
    p.add_argument("--memory", type=float, metavar="GIB", help="with --dry-run: the memory to fit in (default: what the device has available)")
    p.add_argument("--workers", type=integer, default=1, metavar="N",
                   help="run the methods as N parallel tasks on a local Ray (simpe sweep's executor; default: 1, one after another)")
    p.add_argument("--threads", type=integer, metavar="T",
                   help="torch threads (CPUs) per run (default: cores / N with --workers N > 1, else torch's default)")
    add_lockstep_flag(p)
    add_backend_flags(p, sweep=False)
    add_track_flags(p)
    p.set_defaults(func=cmd_simulate)


def add_lockstep_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lockstep", choices=["on", "off"], default="on",
                   help="on (default): the runs that may share their passes (same model, stream and beam search; methods "
                        "baseline, full, bias, fixed, top, norms, lasso, +ewc) go through the stream as one group: one "
                        "decoding pass for all (on a GPU one update pass too), with the records each run alone writes "
                        "(docs/lockstep.md); off: every run alone")


def simulate_overrides(args: argparse.Namespace) -> list[str]:
    flags = {"data.name": args.dataset, "data.split": args.split, "model.path": args.model, "data.segments": args.segments,
             "device": args.device, "comet": args.comet, "metrics.truecaser": args.truecaser,
             "snapshots.every": args.snapshot_every, "runs_dir": args.runs_dir, "reset": args.reset,
             "protocol.name": args.protocol, "warm_start.path": args.warm_start, "data.glossary": args.glossary}
    out = [f"{key}={value}" for key, value in flags.items() if value is not None]
    if args.skip_empty:
        out.append("data.skip_empty=true")
    return out + args.overrides


def cmd_simulate(args: argparse.Namespace) -> None:
    from simpe.config.files import run_configs
    from simpe.errors import ConfigError

    if args.workers < 1 or (args.threads is not None and args.threads < 1):
        raise ConfigError(f"--workers and --threads must be >= 1, got {args.workers} and {args.threads}")
    if args.memory is not None and not (args.memory > 0 and args.dry_run):
        raise ConfigError(f"--memory takes a size in GiB > 0 and goes with --dry-run, got {args.memory}")
    tracking = Tracking(args)  # bad trackers, or a missing package: one line before any model loads
    from simpe.cli.slurm import backend

    if backend(args) == "slurm":
        simulate_slurm(args, tracking)
        return
    if args.dry_run:
        from simpe.loop.dryrun import GIB, report
        from simpe.model import resolve_device

        configs = run_configs(args.preset or ["baseline"], simulate_overrides(args), args.config)
        device = resolve_device(configs[0].device).type
        for line in report(configs, device, None if args.memory is None else int(args.memory * GIB)):
            print(line)
        return
    if args.workers > 1 and not args.config and len(args.preset or []) > 1:
        if args.resume_anyway:
            raise ConfigError("--resume-anyway resumes the runs in this process, one at a time: leave out --workers")
        simulate_parallel(args, tracking)
        return
    # bad presets and settings: one line in a fraction of a second, before torch and the model load
    configs = run_configs(args.preset or ["baseline"], simulate_overrides(args), args.config)
    from simpe.loop.run import simulate

    if args.threads is not None:  # one run at a time in this process: it gets the threads asked for
        import torch

        torch.set_num_threads(args.threads)
    paths = simulate(configs, resume=args.resume, overwrite=args.overwrite, resume_anyway=args.resume_anyway,
                     progress=not args.no_progress, on_done=tracking if tracking.trackers else None,
                     lockstep=args.lockstep == "on")
    for path in paths:
        print(f"complete: {path}")
    tracking.finish()


def simulate_parallel(args: argparse.Namespace, tracking: Tracking) -> None:
    """``simpe simulate --workers N``: the presets as Ray tasks (simpe.sweep.execute), with simulate's folder rules."""
    from simpe.rundir.writer import RunDir
    from simpe.sweep import execute, plan

    specs = plan(args.preset, overrides=simulate_overrides(args), baseline=False)
    for spec in specs:
        RunDir.check(spec.path, args.resume, args.overwrite)  # refuse before Ray starts, as simulate does
    from simpe.loop.run import check_runs

    # every preset's settings, inputs and the sentences its method reads, as a whole before the first task starts
    check_runs([spec.cfg for spec in specs], resume=args.resume, progress=False, folders=False)
    outcomes = execute(specs, workers=args.workers, threads=args.threads, progress=not args.no_progress,
                       as_simulate=(args.resume, args.overwrite), lockstep=args.lockstep == "on")
    tracking.outcomes(outcomes)
    report_outcomes(outcomes, "complete")
    tracking.finish()


def simulate_slurm(args: argparse.Namespace, tracking: Tracking) -> None:
    """``simpe simulate --backend slurm``: the presets as a Slurm job array, with simulate's folder rules."""
    from simpe.cli.slurm import run_on_slurm
    from simpe.errors import ConfigError
    from simpe.rundir.writer import RunDir
    from simpe.sweep import plan

    if args.config or args.resume_anyway:
        raise ConfigError("--backend slurm runs presets: leave out --config and --resume-anyway")
    specs = plan(args.preset or ["baseline"], overrides=simulate_overrides(args), baseline=False)
    for spec in specs:
        RunDir.check(spec.path, args.resume, args.overwrite)  # refuse before anything is submitted, as simulate does
    run_on_slurm(args, specs, None, tables=False, tracking=tracking, overwrite=args.overwrite, done_word="complete")


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run presets x settings x seeds as parallel Ray tasks (local Ray, or a cluster with --address) "
                                       "or as one Slurm job array (--backend slurm)")
    p.add_argument("file", nargs="?", type=Path, help="a sweep file (sweeps/*.yaml: methods, grid, seeds, dataset, segments, set); "
                                                      "flags add to it or replace its entries")
    p.add_argument("--preset", nargs="+", default=None, metavar="PRESET", help="preset names under adapters/ (or .yaml paths)")
    p.add_argument("--method", dest="preset", nargs="+", action=DeprecatedFlag, new="--preset")
    p.add_argument("--grid", nargs="+", action="extend", default=[], metavar="KEY=V1,V2",
                   help="a config key and its values, e.g. update.lr=0.01,0.02 (repeatable; the runs are the cross product)")
    p.add_argument("--seeds", nargs="+", type=seed, metavar="S", help="run every combination once per seed")
    p.add_argument("--dataset", help="dataset name (default: libreoffice)")
    p.add_argument("--split", help="dataset split (default: stream)")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--segments", type=integer, help="the first N segments of the stream (default: all)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a config key in every run")
    p.add_argument("--runs-dir", help="where run folders go (default: runs; on a cluster, a path every node sees)")
    p.add_argument("--workers", type=integer, metavar="N", help="runs at once (default: this machine's cores, or the cluster's CPUs / threads)")
    p.add_argument("--threads", type=integer, metavar="T", help="torch threads (CPUs) per run (default: cores / workers)")
    p.add_argument("--gpus-per-run", type=float, default=0.0, metavar="F", help="fraction of a GPU per run (runs on cuda; default: 0, CPU)")
    p.add_argument("--address", help="join an existing Ray cluster (e.g. auto, or ray://HEAD:10001) instead of starting a local Ray")
    p.add_argument("--return-results", action="store_true",
                   help="on a cluster without a shared --runs-dir: each task runs in a scratch folder of its node and "
                        "returns its run folder, which lands in this machine's --runs-dir")
    p.add_argument("--no-baseline", action="store_true", help="do not add a baseline run per stream (then no comparison table)")
    p.add_argument("--bootstrap", type=integer, default=1000, metavar="N", help="bootstrap resamples of the final tables (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and what would become of each, run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lockstep_flag(p)
    add_backend_flags(p, sweep=True)
    p.add_argument("--select-on", choices=["stream", "dev"], default="stream", metavar="{stream,dev}",
                   help="where each preset's setting is chosen: stream (its reported, prequential score: tuned on the "
                        "test, with a warning) or dev (the grid on the dev split first, then only the chosen settings on "
                        "the stream) (default: %(default)s)")
    p.add_argument("--select-metric", default="bleu", metavar="METRIC", help="the corpus metric that chooses (default: %(default)s)")
    add_track_flags(p)
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.sweep import compare_groups, execute, load_sweep_file, parse_grid, plan, state
    from simpe.sweep.executor import check_address

    if args.status is not None:
        from simpe.cli.slurm import cmd_status

        cmd_status(args)
        return
    from simpe.cli.slurm import backend, run_on_slurm

    chosen = backend(args)
    data = load_sweep_file(args.file) if args.file else {}
    for flag, value in (("--workers", args.workers), ("--threads", args.threads)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    if args.gpus_per_run < 0:
        raise ConfigError(f"--gpus-per-run must be >= 0, got {args.gpus_per_run}")
    tracking = Tracking(args)
    grid = {key: values if isinstance(values, (list, dict)) else [values] for key, values in (data.get("grid") or {}).items()}
    grid.update(parse_grid(args.grid))
    flags = {"data.name": args.dataset or data.get("dataset"), "data.split": args.split or data.get("split"),
             "model.path": args.model or data.get("model"),
             "data.segments": args.segments if args.segments is not None else data.get("segments"), "runs_dir": args.runs_dir}
    overrides = [*(data.get("set") or []), *(f"{k}={v}" for k, v in flags.items() if v is not None), *args.overrides]
    specs = plan(args.preset or data.get("methods") or [], grid, args.seeds or data.get("seeds"), overrides,
                 baseline=not args.no_baseline and data.get("baseline", True))
    with_tables = not args.no_baseline and data.get("baseline", True)
    if chosen == "slurm":
        run_on_slurm(args, specs, data.get("slurm"), tables=with_tables, tracking=tracking)
        return
    if args.dry_run:
        for spec in specs:
            print(f"{state(spec):10s} {spec.path}")
        return
    if chosen == "ray" and not args.address:
        args.address = "auto"
    check_address(args.address)
    from simpe.sweep import select

    select.check_metric(args.select_metric)
    if args.select_on == "dev":  # the grid on the dev split first; then the chosen settings on the stream
        specs = select.select_on_dev(specs, args.preset or data.get("methods") or [], grid, args.seeds or data.get("seeds"),
                                     overrides, args.select_metric, lambda runs: execute(
                                         runs, workers=args.workers, threads=args.threads, address=args.address,
                                         gpus_per_run=args.gpus_per_run, progress=not args.no_progress))
    outcomes = execute(specs, workers=args.workers, threads=args.threads, address=args.address,
                       gpus_per_run=args.gpus_per_run, progress=not args.no_progress, return_results=args.return_results,
                       lockstep=args.lockstep == "on")
    if with_tables:
        for group_dir, text in compare_groups(specs, outcomes, args.bootstrap):
            print(f"\n## {group_dir}\n\n{text}")
    select.report_selection(specs, outcomes, args.select_on, args.select_metric)
    tracking.outcomes(outcomes)  # every run of the grid, those complete before this sweep too
    report_outcomes(outcomes, "done")
    tracking.finish()


def add_track(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("track", help="log complete runs made before to mlflow and/or tensorboard (a group folder: all its complete runs)")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run directories (complete), or group folders runs/<dataset>-<split>--<model>--<N>seg/ (their complete runs)")
    p.add_argument("--to", dest="track", action="extend", type=tracker_list, required=True, metavar="TRACKER",
                   help="mlflow and/or tensorboard (repeatable, or a comma list; docs/tracking.md)")
    p.add_argument("--uri", dest="track_uri", metavar="URI",
                   help="with --to mlflow: the tracking URI (default: a file store in each run's group folder, GROUP/mlruns)")
    p.add_argument("--dir", dest="track_dir", type=Path, metavar="DIR",
                   help="with --to tensorboard: event files go to DIR/<group>/<run> (default: GROUP/tensorboard/<run>)")
    p.set_defaults(func=cmd_track)


def cmd_track(args: argparse.Namespace) -> None:
    from simpe.errors import RunDirError
    from simpe.track import run_paths

    tracking = Tracking(args)
    paths, incomplete = run_paths(args.runs)
    for path in incomplete:
        print(f"left out (incomplete, no DONE): {path}", file=sys.stderr)
    if not paths:
        raise RunDirError(f"no complete run in {', '.join(map(str, args.runs))}: only complete runs are tracked")
    for path in paths:
        tracking(path)
    tracking.finish()


def add_select_fixed(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("select-fixed", help="choose the tensor subset of the 'fixed' method on the dev split")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--dataset", default="libreoffice", help="dataset (default: %(default)s)")
    p.add_argument("--split", default="dev", help="held-out split to adapt on (default: %(default)s)")
    p.add_argument("--budget", type=float, default=0.025, help="fraction of the model's parameters to select (default: %(default)s, "
                                                                  "the paper's 1M of a ~40M-parameter model)")
    p.add_argument("--segments", type=integer, help="use only the first N segments of the split")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("-o", "--out", type=Path, help="selection file (default: <model folder>/fixed-selection.json)")
    add_model_settings(p)
    p.set_defaults(func=cmd_select_fixed)


def cmd_select_fixed(args: argparse.Namespace) -> None:
    from simpe.config.files import defaults
    from simpe.loop.select_fixed import select_fixed

    sel = select_fixed(args.model, args.dataset, args.split, args.budget, args.segments, args.device, args.out,
                       model_cfg=defaults("model", **model_settings(args)))
    print(f"selected {len(sel['tensors'])} tensors, {sel['selected_parameters']:,} of {sel['model_parameters']:,} parameters")
