"""The ``simpe`` command line: argparse subcommands, one-line errors, exit codes.

Only this module touches ``argparse``; every command calls a function that takes plain
values or config objects. A ``SimpeError`` is printed as one line and exits with 2.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import NoReturn

from simpe import log
from simpe.errors import SimpeError

logger = logging.getLogger("simpe")


# ---------------------------------------------------------------- old spellings (kept for one release)
def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints (stderr) before it does what the new one does."""
    print(f"simpe: warning: {old} is deprecated (kept for one release); use {new}", file=sys.stderr)


class DeprecatedFlag(argparse.Action):
    """An old flag: stores into the new flag's ``dest`` and prints one line naming the new spelling.
    Hidden from ``--help``; docs/cli.md lists it under the old spellings."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **{"help": argparse.SUPPRESS, **kwargs})

    def __call__(self, parser, namespace, values, option_string=None):
        deprecated(option_string, self.new)
        setattr(namespace, self.dest, values)


def _add_old_command(sub: argparse._SubParsersAction, add, old: str, new: str) -> None:
    """Register the subcommand ``old`` as ``add`` builds ``new``, marked to print one line when it is used."""
    add(sub, name=old, old_of=new)


def _mark_old(p: argparse.ArgumentParser, old_of: str | None) -> None:
    if old_of:
        p.set_defaults(deprecated_command=old_of)


# ---------------------------------------------------------------- corpus / baseline
def _add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="build corpora: the LibreOffice splits, or pairs from gettext catalogs")
    csub = p.add_subparsers(dest="corpus_command", required=True)
    lo = csub.add_parser("libreoffice", help="build data/libreoffice from Debian's LibreOffice 7.4 packages "
                                                   "(train also gets GNOME help and gettext catalogs of other Debian packages)")
    lo.add_argument("-o", "--out", type=Path, default=Path("data/libreoffice"), help="output folder (default: %(default)s)")
    lo.add_argument("--cache", type=Path, default=Path("data/cache"), help="where .deb files are downloaded and unpacked (default: %(default)s)")
    lo.add_argument("--installed", action="store_true", help="read an installed LibreOffice under /usr instead of downloading its packages "
                                                                "(the other packages are still downloaded)")
    gt = csub.add_parser("gettext", help="aligned (msgid, msgstr) pairs from .po/.mo files")
    gt.add_argument("paths", nargs="+", type=Path, help=".po or .mo files, or folders searched for them")
    gt.add_argument("-o", "--out", type=Path, required=True, help="output prefix: writes PREFIX.src and PREFIX.tgt (one segment per line)")
    p.set_defaults(func=_cmd_corpus)


def _cmd_corpus(args: argparse.Namespace) -> None:
    if args.corpus_command == "libreoffice":
        from simpe.build_data.libreoffice import build

        counts = build(args.out, args.cache, installed=args.installed)
        for name, count in counts.items():
            print(f"{name:9s} {count:7d} segments")
        print(f"wrote {args.out}")
    else:
        from simpe.build_data.gettext import write_pairs

        count = write_pairs(args.paths, args.out)
        print(f"{count} pairs -> {args.out}.src / {args.out}.tgt")


def _add_train_demo_model(sub: argparse._SubParsersAction, name: str = "train-demo-model", old_of: str | None = None) -> None:
    from simpe.config import defaults

    p = sub.add_parser(name, help=f"deprecated: use {old_of}" if old_of else "train the embedded demo Marian model (make demo-model)")
    _mark_old(p, old_of)
    for field, default in vars(defaults("train")).items():
        flags = {"seed": ["--train-seed"], "out_dir": ["-o", "--out"]}.get(field, ["--" + field.replace("_", "-")])
        p.add_argument(*flags, dest=field, type=type(default), default=default, help=f"(default: {default})")
    p.add_argument("--seed", dest="seed", type=int, action=DeprecatedFlag, new="--train-seed")  # named by what it seeds
    p.add_argument("--out-dir", dest="out_dir", type=str, action=DeprecatedFlag, new="-o/--out")
    p.add_argument("--resume", action="store_true", help="continue from OUT_DIR/checkpoints/last.pt")
    p.set_defaults(func=_cmd_train_demo_model)


def _cmd_train_demo_model(args: argparse.Namespace) -> None:
    from simpe.config import defaults
    from simpe.train_demo import train

    fields = vars(defaults("train"))
    cfg = defaults("train", **{k: getattr(args, k) for k in fields})
    card = train(cfg, resume=args.resume)
    s = card["scores_beam5"]["stream_first_1000"]
    print(f"saved {cfg.out_dir}: stream[:1000] beam-5 BLEU {s['bleu']['score']} chrF {s['chrf']['score']} TER {s['ter']['score']}")


# ---------------------------------------------------------------- simulate (loop)
def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run the online simulated post-editing loop for one or more presets")
    p.add_argument("--preset", nargs="+", default=None, metavar="PRESET",
                   help="preset names under adapters/ (or .yaml paths), run in turn on the same stream (default: baseline)")
    p.add_argument("--method", dest="preset", nargs="+", action=DeprecatedFlag, new="--preset")
    p.add_argument("--dataset", help="dataset name (default from adapters/defaults.yaml: libreoffice)")
    p.add_argument("--split", help="dataset split (default: stream)")
    p.add_argument("--model", help="model folder or hub id of any supported family (default: the embedded demo model); "
                                   "its settings: --set model.src_lang=... model.tgt_lang=... (simpe list: families)")
    p.add_argument("--segments", type=int, help="the first N segments of the stream (default: all)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default: auto)")
    p.add_argument("--comet", help="COMET model (hub id or checkpoint path) scored at the end of each run")
    p.add_argument("--truecaser", help="truecaser model path, or 'none' (default: the one shipped with the model)")
    p.add_argument("--snapshot-every", type=int, help="ranking snapshot every N segments; 0 = off (default: snapshots.every of adapters/defaults.yaml)")
    p.add_argument("--skip-empty", action="store_true", help="skip segments with an empty source or reference (counted warning) instead of failing")
    p.add_argument("--reset", choices=["none", "document"], help="return to the base model at each document boundary (default: none)")
    p.add_argument("--protocol", choices=["post-edit", "interactive"],
                   help="post-edit (default), or interactive: a simulated translator corrects, the system completes from "
                        "the typed prefix; KSMR and WSR per segment (protocol.level: char, word or both; docs/interactive.md)")
    p.add_argument("--warm-start", metavar="FILE",
                   help="adapt on the translator's memory (.tmx, .tsv, or text FILE.<src> + FILE.<tgt>) with the method's "
                        "own update before the stream (warm_start.epochs, warm_start.batch_size); a baseline run needs "
                        "--set warm_start.method=PRESET (docs/methods.md, Warm start)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key, e.g. --set update.lr=0.02 (repeatable)")
    p.add_argument("--config", type=Path, help="a resolved config.yaml of an earlier run: reproduce it")
    p.add_argument("--runs-dir", help="where run folders go (default: runs)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its last checkpoint")
    p.add_argument("--resume-anyway", action="store_true",
                   help="resume even in another environment than the run's (threads, CPU kernel set, torch/transformers "
                        "versions, device); the change is recorded in env.json and the summary")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true",
                   help="load nothing, run nothing: print each run's parameters, memory (weights, gradients, method state, "
                        "activations, datastore growth) and estimated s/segment; exit 2 naming a setting that fits if one cannot fit")
    p.add_argument("--memory", type=float, metavar="GIB", help="with --dry-run: the memory to fit in (default: what the device has available)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run the methods as N parallel tasks on a local Ray (simpe sweep's executor; default: 1, one after another)")
    p.add_argument("--threads", type=int, metavar="T",
                   help="torch threads (CPUs) per run (default: cores / N with --workers N > 1, else torch's default)")
    _add_track_flags(p)
    p.set_defaults(func=_cmd_simulate)


def _simulate_overrides(args: argparse.Namespace) -> list[str]:
    flags = {"data.name": args.dataset, "data.split": args.split, "model.path": args.model, "data.segments": args.segments,
             "device": args.device, "comet": args.comet, "metrics.truecaser": args.truecaser,
             "snapshots.every": args.snapshot_every, "runs_dir": args.runs_dir, "reset": args.reset,
             "protocol.name": args.protocol, "warm_start.path": args.warm_start}
    out = [f"{key}={value}" for key, value in flags.items() if value is not None]
    if args.skip_empty:
        out.append("data.skip_empty=true")
    return out + args.overrides


def _cmd_simulate(args: argparse.Namespace) -> None:
    from simpe.config import run_configs
    from simpe.errors import ConfigError

    if args.workers < 1 or (args.threads is not None and args.threads < 1):
        raise ConfigError(f"--workers and --threads must be >= 1, got {args.workers} and {args.threads}")
    if args.memory is not None and not (args.memory > 0 and args.dry_run):
        raise ConfigError(f"--memory takes a size in GiB > 0 and goes with --dry-run, got {args.memory}")
    tracking = _Tracking(args)  # bad trackers, or a missing package: one line before any model loads
    if args.dry_run:
        from simpe.dryrun import GIB, report
        from simpe.model import resolve_device

        configs = run_configs(args.preset or ["baseline"], _simulate_overrides(args), args.config)
        device = resolve_device(configs[0].device).type
        for line in report(configs, device, None if args.memory is None else int(args.memory * GIB)):
            print(line)
        return
    if args.workers > 1 and not args.config and len(args.preset or []) > 1:
        if args.resume_anyway:
            raise ConfigError("--resume-anyway resumes the runs in this process, one at a time: leave out --workers")
        _simulate_parallel(args, tracking)
        return
    # bad presets and settings: one line in a fraction of a second, before torch and the model load
    configs = run_configs(args.preset or ["baseline"], _simulate_overrides(args), args.config)
    from simpe.simulate import simulate

    if args.threads is not None:  # one run at a time in this process: it gets the threads asked for
        import torch

        torch.set_num_threads(args.threads)
    paths = simulate(configs, resume=args.resume, overwrite=args.overwrite, resume_anyway=args.resume_anyway,
                     progress=not args.no_progress, on_done=tracking if tracking.trackers else None)
    for path in paths:
        print(f"complete: {path}")
    tracking.finish()


def _simulate_parallel(args: argparse.Namespace, tracking: _Tracking) -> None:
    """``simpe simulate --workers N``: the presets as Ray tasks (simpe.sweep.execute), with simulate's folder rules."""
    from simpe.rundir.writer import RunDir
    from simpe.sweep import execute, plan

    specs = plan(args.preset, overrides=_simulate_overrides(args), baseline=False)
    for spec in specs:
        RunDir.check(spec.path, args.resume, args.overwrite)  # refuse before Ray starts, as simulate does
    outcomes = execute(specs, workers=args.workers, threads=args.threads, progress=not args.no_progress,
                       as_simulate=(args.resume, args.overwrite))
    tracking.outcomes(outcomes)
    _report_outcomes(outcomes, "complete")
    tracking.finish()


def _report_outcomes(outcomes: list, done_word: str) -> None:
    failed = [o for o in outcomes if o.status == "failed"]
    for outcome in outcomes:
        if outcome.status == "failed":
            print(f"failed:   {outcome.name}: {outcome.error}")
        else:
            word = {"skipped": "skipped (complete)", "resumed": "resumed"}.get(outcome.status, done_word)
            print(f"{word}: {outcome.path}" + (f" ({outcome.seconds:.1f} s)" if outcome.seconds else ""))
    if failed:
        raise SystemExit(f"{len(failed)} of {len(outcomes)} runs failed: {', '.join(o.name for o in failed)}")


# ---------------------------------------------------------------- sweep (Ray)
def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run presets x settings x seeds as parallel Ray tasks (local Ray, or a cluster with --address)")
    p.add_argument("file", nargs="?", type=Path, help="a sweep file (sweeps/*.yaml: methods, grid, seeds, dataset, segments, set); "
                                                      "flags add to it or replace its entries")
    p.add_argument("--preset", nargs="+", default=None, metavar="PRESET", help="preset names under adapters/ (or .yaml paths)")
    p.add_argument("--method", dest="preset", nargs="+", action=DeprecatedFlag, new="--preset")
    p.add_argument("--grid", nargs="+", action="extend", default=[], metavar="KEY=V1,V2",
                   help="a config key and its values, e.g. update.lr=0.01,0.02 (repeatable; the runs are the cross product)")
    p.add_argument("--seeds", nargs="+", type=int, metavar="S", help="run every combination once per seed")
    p.add_argument("--dataset", help="dataset name (default: libreoffice)")
    p.add_argument("--split", help="dataset split (default: stream)")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--segments", type=int, help="the first N segments of the stream (default: all)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a config key in every run")
    p.add_argument("--runs-dir", help="where run folders go (default: runs; on a cluster, a path every node sees)")
    p.add_argument("--workers", type=int, metavar="N", help="runs at once (default: this machine's cores, or the cluster's CPUs / threads)")
    p.add_argument("--threads", type=int, metavar="T", help="torch threads (CPUs) per run (default: cores / workers)")
    p.add_argument("--gpus-per-run", type=float, default=0.0, metavar="F", help="fraction of a GPU per run (runs on cuda; default: 0, CPU)")
    p.add_argument("--address", help="join an existing Ray cluster (e.g. auto, or ray://HEAD:10001) instead of starting a local Ray")
    p.add_argument("--return-results", action="store_true",
                   help="on a cluster without a shared --runs-dir: each task runs in a scratch folder of its node and "
                        "returns its run folder, which lands in this machine's --runs-dir")
    p.add_argument("--no-baseline", action="store_true", help="do not add a baseline run per stream (then no comparison table)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples of the final tables (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and what would become of each, run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_track_flags(p)
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.sweep import compare_groups, execute, load_sweep_file, parse_grid, plan, state
    from simpe.sweep.executor import check_address

    data = load_sweep_file(args.file) if args.file else {}
    for flag, value in (("--workers", args.workers), ("--threads", args.threads)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    if args.gpus_per_run < 0:
        raise ConfigError(f"--gpus-per-run must be >= 0, got {args.gpus_per_run}")
    tracking = _Tracking(args)
    grid = {key: values if isinstance(values, list) else [values] for key, values in (data.get("grid") or {}).items()}
    grid.update(parse_grid(args.grid))
    flags = {"data.name": args.dataset or data.get("dataset"), "data.split": args.split or data.get("split"),
             "model.path": args.model or data.get("model"),
             "data.segments": args.segments if args.segments is not None else data.get("segments"), "runs_dir": args.runs_dir}
    overrides = [*(data.get("set") or []), *(f"{k}={v}" for k, v in flags.items() if v is not None), *args.overrides]
    specs = plan(args.preset or data.get("methods") or [], grid, args.seeds or data.get("seeds"), overrides,
                 baseline=not args.no_baseline and data.get("baseline", True))
    if args.dry_run:
        for spec in specs:
            print(f"{state(spec):10s} {spec.path}")
        return
    check_address(args.address)
    outcomes = execute(specs, workers=args.workers, threads=args.threads, address=args.address,
                       gpus_per_run=args.gpus_per_run, progress=not args.no_progress, return_results=args.return_results)
    if not args.no_baseline and data.get("baseline", True):
        for group_dir, text in compare_groups(specs, outcomes, args.bootstrap):
            print(f"\n## {group_dir}\n\n{text}")
    tracking.outcomes(outcomes)  # every run of the grid, those complete before this sweep too
    _report_outcomes(outcomes, "done")
    tracking.finish()


# ---------------------------------------------------------------- trackers (mlflow, tensorboard)
def _tracker_list(value: str) -> list[str]:
    """``--track`` / ``--to``: one tracker name or a comma list, each checked (argparse makes a bad one one line)."""
    from simpe.track import tracker_names

    try:
        return tracker_names([value])
    except SimpeError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_track_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--track", action="extend", type=_tracker_list, default=[], metavar="TRACKER",
                   help="also log each run, as it completes, to mlflow and/or tensorboard (repeatable, or a comma list; "
                        "docs/tracking.md); simpe report's HTML page stays the default view")
    p.add_argument("--track-uri", metavar="URI",
                   help="with --track mlflow: the tracking URI (default: a file store in the run's group folder, GROUP/mlruns)")
    p.add_argument("--track-dir", type=Path, metavar="DIR",
                   help="with --track tensorboard: event files go to DIR/<group>/<run> (default: GROUP/tensorboard/<run>)")


class _Tracking:
    """The trackers ``--track`` asks for (built when this is made: a missing package is one line before any run),
    called with each completed run's folder. A run a tracker fails to take is named and the others go on;
    ``finish`` then fails the command, naming the runs to log again with ``simpe track``."""

    def __init__(self, args: argparse.Namespace) -> None:
        from simpe.errors import ConfigError
        from simpe.track import build_trackers

        names = list(args.track)
        prefix = "--" if args.command == "track" else "--track-"  # simpe track --to NAME --uri/--dir
        for tracker, option, value in (("mlflow", "uri", args.track_uri), ("tensorboard", "dir", args.track_dir)):
            if value is not None and tracker not in names:
                raise ConfigError(f"{prefix}{option} goes with {'--to' if args.command == 'track' else '--track'} {tracker}")
        self.trackers = build_trackers(names, {"mlflow": {"uri": args.track_uri},
                                               "tensorboard": {"directory": None if args.track_dir is None else str(args.track_dir)}})
        self.untracked: list[str] = []
        self.to = ",".join(names)

    def __call__(self, path: Path) -> None:
        from simpe.track import complete_run

        try:
            run = complete_run(path)
        except SimpeError as err:
            self._failed(path, "every tracker", err)
            return
        for tracker in self.trackers:
            try:
                print(f"{tracker.name}: {tracker.log(run)}", flush=True)
            except Exception as err:  # a tracker's failure (a server down) must not cost the runs that follow
                self._failed(path, tracker.name, err)

    def _failed(self, path: Path, tracker: str, err: Exception) -> None:
        logger.debug("tracking %s failed", path, exc_info=True)
        what = str(err) if isinstance(err, SimpeError) else f"{type(err).__name__}: {err}"
        print(f"not tracked ({tracker}): {path}: {what}", file=sys.stderr, flush=True)
        if str(path) not in self.untracked:
            self.untracked.append(str(path))

    def outcomes(self, outcomes: list) -> None:
        """Log the runs of a sweep's outcomes that are complete (done, resumed or complete before; not failed ones)."""
        if self.trackers:
            for outcome in outcomes:
                if outcome.status != "failed":
                    self(outcome.path)

    def finish(self) -> None:
        if self.untracked:
            raise SimpeError(f"{len(self.untracked)} run(s) not tracked (above: why); once that is fixed, log them with "
                             f"simpe track {' '.join(self.untracked)} --to {self.to}")


def _add_track(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("track", help="log complete runs made before to mlflow and/or tensorboard (a group folder: all its complete runs)")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run directories (complete), or group folders runs/<dataset>-<split>--<model>--<N>seg/ (their complete runs)")
    p.add_argument("--to", dest="track", action="extend", type=_tracker_list, required=True, metavar="TRACKER",
                   help="mlflow and/or tensorboard (repeatable, or a comma list; docs/tracking.md)")
    p.add_argument("--uri", dest="track_uri", metavar="URI",
                   help="with --to mlflow: the tracking URI (default: a file store in each run's group folder, GROUP/mlruns)")
    p.add_argument("--dir", dest="track_dir", type=Path, metavar="DIR",
                   help="with --to tensorboard: event files go to DIR/<group>/<run> (default: GROUP/tensorboard/<run>)")
    p.set_defaults(func=_cmd_track)


def _cmd_track(args: argparse.Namespace) -> None:
    from simpe.errors import RunDirError
    from simpe.track import run_paths

    tracking = _Tracking(args)
    paths, incomplete = run_paths(args.runs)
    for path in incomplete:
        print(f"left out (incomplete, no DONE): {path}", file=sys.stderr)
    if not paths:
        raise RunDirError(f"no complete run in {', '.join(map(str, args.runs))}: only complete runs are tracked")
    for path in paths:
        tracking(path)
    tracking.finish()


def _add_select_fixed(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("select-fixed", help="choose the tensor subset of the 'fixed' method on the dev split")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--dataset", default="libreoffice", help="dataset (default: %(default)s)")
    p.add_argument("--split", default="dev", help="held-out split to adapt on (default: %(default)s)")
    p.add_argument("--budget", type=float, default=0.025, help="fraction of the model's parameters to select (default: %(default)s, "
                                                                  "the paper's 1M of a ~40M-parameter model)")
    p.add_argument("--segments", type=int, help="use only the first N segments of the split")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("-o", "--out", type=Path, help="selection file (default: <model folder>/fixed-selection.json)")
    _add_model_settings(p)
    p.set_defaults(func=_cmd_select_fixed)


def _add_model_settings(p: argparse.ArgumentParser) -> None:
    """--src-lang, --tgt-lang, --prompt-template, --family, --dtype: the model section's keys (default: adapters/defaults.yaml)."""
    p.add_argument("--src-lang", help="model.src_lang: the source language code the family's tokenizer or prompt takes")
    p.add_argument("--tgt-lang", help="model.tgt_lang: the target language code (forced BOS, >>id<<, <2xx>, prompt)")
    p.add_argument("--prompt-template", help="model.prompt_template: a causal LM's plain prompt, with {source}")
    p.add_argument("--family", help="model.family: auto (from config.json) or a family name")
    p.add_argument("--dtype", help="model.dtype: float32, bfloat16 or float16")


def _model_settings(args: argparse.Namespace) -> dict:
    flags = {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang, "prompt_template": args.prompt_template,
             "family": args.family, "dtype": args.dtype}
    return {key: value for key, value in flags.items() if value is not None}


def _cmd_select_fixed(args: argparse.Namespace) -> None:
    from simpe.config import defaults
    from simpe.select_fixed import select_fixed

    sel = select_fixed(args.model, args.dataset, args.split, args.budget, args.segments, args.device, args.out,
                       model_cfg=defaults("model", **_model_settings(args)))
    print(f"selected {len(sel['tensors'])} tensors, {sel['selected_parameters']:,} of {sel['model_parameters']:,} parameters")

# ---------------------------------------------------------------- score (metrics)
def _add_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="score hypothesis files: BLEU, chrF, TER, SBLEU, R0/R1/R0+1 (and COMET)",
                       description="Score a hypothesis file against a reference file with every simpe metric "
                                   "(BLEU/chrF/TER through sacreBLEU, with signatures).")
    p.add_argument("-i", "--input", required=True, metavar="HYP", help="hypotheses, one detokenised segment per line "
                                                                       "(the text the command reads: see docs/cli.md)")
    ref = p.add_mutually_exclusive_group(required=True)  # required either way: the old spelling counts
    ref.add_argument("-r", "--ref", metavar="REF", help="references (post-edits), one per line")
    ref.add_argument("--refs", dest="ref", action=DeprecatedFlag, new="-r/--ref")
    p.add_argument("--src", metavar="SRC", help="sources, one per line (needed for --comet)")
    p.add_argument("--lang", default=None, help="target language: Moses tokeniser and default stopwords (default: metrics.lang "
                                                "of adapters/defaults.yaml)")
    p.add_argument("--truecaser", metavar="PATH|none",
                   help="MosesTruecaser model, or 'none' (default: the demo model's truecase.<lang>.model when it ships one, else none)")
    p.add_argument("--stopwords", metavar="LANG|PATH", help="stopword list: a code under stopwords/ or a file (default: --lang)")
    p.add_argument("--r-max-k", type=int, default=None, metavar="K", help="report R0..RK and R0..K (default: metrics.r_max_k "
                                                                            "of adapters/defaults.yaml; R0+1 always)")
    p.add_argument("--stopword-case", choices=["exact", "insensitive"],
                   help="stopword matching (default: metrics.stopword_case, exact as the authors' rk.rb)")
    p.add_argument("--token-filter", choices=["punct-or-digits", "digits-punct-symbols"],
                   help="tokens that are never content words (default: metrics.token_filter, punct-or-digits as rk.rb)")
    p.add_argument("--scope", choices=["stream", "document"], help="R occurrence counts over the stream or per document "
                                                                   "(document needs --ids; default: metrics.scope)")
    p.add_argument("--ids", metavar="IDS", help="document id of each segment, one per line (tab-separated doc and segment id as "
                                                 "data/*/SPLIT.ids), for --scope document")
    p.add_argument("--novel-vocab", metavar="train|PATH", help="training vocabulary ('<count> <word>' lines as rk.rb -v, or one word "
                                                               "per line; 'train': the train vocabulary of --dataset): adds novel:r0 ...")
    p.add_argument("--dataset", default="libreoffice", metavar="NAME",
                   help="the data the hypotheses translate: whose train vocabulary '--novel-vocab train' means (default: "
                        "%(default)s, data/libreoffice/vocab.train.LANG; a dataset with no train vocabulary is refused there)")
    p.add_argument("--rare-threshold", type=int, default=None, metavar="N",
                   help="novel words: vocabulary words seen at most N times still count (rk.rb -R; default: metrics.rare_threshold)")
    p.add_argument("--subword-model", metavar="SPM", help="SentencePiece model: adds the subword variants subword:r0 ...")
    p.add_argument("--subword", choices=["all", "content"], help="with --subword-model: count every piece (default) "
                                                                  "or only the pieces of content words")
    p.add_argument("--sbleu", choices=["nakov", "exp"], help="SBLEU smoothing (default: metrics.sbleu, nakov BLEU+1 as Simianer et al. (2019))")
    p.add_argument("--comet", metavar="MODEL", help="COMET hub id, model folder or model.ckpt (needs --src)")
    p.add_argument("--mt", metavar="MT", help="the raw MT output the references were post-edited from (e.g. a run's mt.de on "
                                              "the Autodesk corpus): also report its TER against the references (HTER-style)")
    p.add_argument("--comet-batch-size", type=int, default=16, metavar="N", help="(default: %(default)s)")
    p.add_argument("--device", default="cpu", help="COMET device: cpu, cuda, cuda:N (default: %(default)s)")
    p.add_argument("--format", choices=["table", "json"], default="table", help="(default: %(default)s)")
    p.add_argument("--cumulative", action="store_true", help="also print every metric over segments 1..i for each i")
    p.set_defaults(func=_cmd_score)


def _cmd_score(args: argparse.Namespace) -> None:
    import json

    from simpe.config import TRUECASER_OF_MODEL, defaults
    from simpe.datasets import DATASETS
    from simpe.errors import ConfigError
    from simpe.score import format_cumulative, format_table, score_files

    if args.dataset not in DATASETS.names():
        raise ConfigError(f"unknown dataset {args.dataset!r}; known: {', '.join(DATASETS.names())}")
    base = defaults("metrics")
    lang = args.lang or base.lang
    truecaser = TRUECASER_OF_MODEL if args.truecaser is None else None if args.truecaser.lower() == "none" else args.truecaser
    given = {"stopword_case": args.stopword_case, "token_filter": args.token_filter, "scope": args.scope,
             "rare_threshold": args.rare_threshold, "subword": args.subword, "sbleu": args.sbleu}
    cfg = defaults("metrics", lang=lang, truecaser=truecaser, stopwords=args.stopwords or lang,
                   r_max_k=base.r_max_k if args.r_max_k is None else args.r_max_k, novel_vocab=args.novel_vocab,
                   **{key: value for key, value in given.items() if value is not None})
    if (args.scope == "document") != (args.ids is not None):
        raise ConfigError("--scope document needs --ids (the document of each segment), and --ids only means something with it")
    report = score_files(args.input, args.ref, args.src, cfg=cfg, comet=args.comet,
                         comet_batch_size=args.comet_batch_size, device=args.device,
                         subword_model=args.subword_model, cumulative=args.cumulative,
                         train_vocab=_train_vocab(args.dataset, lang) if args.novel_vocab == "train" else None,
                         doc_ids=args.ids, mt_path=args.mt)
    if args.format == "json":
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(format_table(report))
        if args.cumulative:
            print()
            print(format_cumulative(report))


def _train_vocab(dataset: str, lang: str):
    """The train vocabulary of ``dataset`` (None when it has none: resolve_vocab then says so), or one line when
    the dataset cannot be opened without its own parameters (a file-based dataset has no train split)."""
    from simpe.datasets import DATASETS
    from simpe.errors import ConfigError, SimpeError

    try:
        return DATASETS.build(dataset).train_vocab(lang)
    except SimpeError:  # text, tsv, tmx: files of the user's, no train split
        raise ConfigError(f"--novel-vocab train: dataset {dataset!r} has no train vocabulary; give a vocabulary file "
                          "(--novel-vocab PATH) or --dataset libreoffice") from None


# ---------------------------------------------------------------- rank (ranking)
def _add_rank(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rank", help="ranking model errors (kRG/kQRG, Yan et al. (2022)) of a model on a test set, "
                                    "or their correlation with MBR across models (--models)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--model", default=None, help="model folder or hub id (default: the embedded demo model)")
    who.add_argument("--models", nargs="+", default=None,
                     help="two or more models, checkpoints or per-user stores (adapted models): per-model figures, MBR quality "
                          "and their correlation (Table 3)")
    p.add_argument("--src", type=Path, required=True, help="source sentences, one per line")
    p.add_argument("-r", "--ref", type=Path, required=True, help="reference translations, aligned with --src")
    p.add_argument("--limit", type=int, default=None, help="only the first N sentence pairs (after --max-words)")
    p.add_argument("--max-words", type=int, default=None, help="only sources of at most N words")
    p.add_argument("-o", "--out", type=Path, required=True, help="output folder: records.jsonl and summary.json "
                                                            "(--models: one folder per model and correlation.json)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier outputs in --out")
    # every ranking setting defaults to the ranking section of adapters/defaults.yaml
    p.add_argument("--k", type=int, help="top-region size (default: ranking.k)")
    p.add_argument("--quality", help="Q: a utility (bleu, sbleu, chrf, chrf++, ter, comet; default: ranking.quality)")
    p.add_argument("--comet", dest="comet_model", default=None, metavar="MODEL",
                   help="COMET model (hub id, folder or .ckpt) for --quality/--mbr-utility comet")
    p.add_argument("--comet-model", dest="comet_model", action=DeprecatedFlag, new="--comet")
    p.add_argument("--samples", type=int, help="Monte Carlo samples per sentence (default: ranking.samples)")
    p.add_argument("--sample-seed", type=int, help="sampling seed; sentence i uses seed + i (default: ranking.sample_seed)")
    p.add_argument("--seed", dest="sample_seed", type=int, action=DeprecatedFlag, new="--sample-seed")
    p.add_argument("--beam-size", type=int, help="beam whose output is checked for search errors (default: ranking.beam_size)")
    p.add_argument("--max-expansions", type=int, help="limit per exact search; 0 = none (default: ranking.max_expansions)")
    p.add_argument("--max-seconds", type=float, help="limit per exact search; 0 = none (default: ranking.max_seconds)")
    p.add_argument("--batch-size", type=int, help="prefixes per forward pass of the exact search (default: ranking.batch_size)")
    p.add_argument("--gain", help="kRG gain: exp (2^f - 1) or linear (f), f = k - rank in [0, k-1] (default: ranking.gain)")
    p.add_argument("--ties", help="hypotheses of equal Q: mean (share the mean gain of their positions) or model "
                                  "(ordered as the model ordered them) (default: ranking.ties)")
    p.add_argument("--no-top", action="store_true", help="skip the top-region (exact top-k) evaluation")
    p.add_argument("--no-sampling", action="store_true", help="skip the Monte Carlo sampling evaluation")
    p.add_argument("--mbr-samples", type=int, default=100, help="--models: MBR samples per sentence (default: %(default)s)")
    p.add_argument("--mbr-utility", default=None, help="--models: MBR utility, any --quality value (default: --quality)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default: %(default)s)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch CPU threads; 0 = torch's default (on a small machine shared with other jobs, 1 is often fastest)")
    _add_model_settings(p)
    p.set_defaults(func=_cmd_rank)


def _ranking_config(args: argparse.Namespace):  # -> simpe.config.RankingConfig
    """The ranking section of adapters/defaults.yaml with the flags that were given."""
    from simpe.config import defaults

    flags = {"k": args.k, "quality": args.quality, "samples": args.samples, "sample_seed": args.sample_seed,
             "beam_size": args.beam_size, "batch_size": args.batch_size, "gain": args.gain, "ties": args.ties,
             "max_expansions": args.max_expansions, "max_seconds": args.max_seconds}
    given = {key: value for key, value in flags.items() if value is not None}
    for key in ("max_expansions", "max_seconds"):
        if given.get(key) == 0:
            given[key] = None  # 0 = no limit
    if args.no_top:
        given["top_region"] = False
    if args.no_sampling:
        given["sampling"] = False
    return defaults("ranking", **given)


def _model_section(args: argparse.Namespace):  # -> simpe.config.ModelConfig
    """The model section of adapters/defaults.yaml with the --src-lang ... flags that were given."""
    from simpe.config import defaults

    return defaults("model", **_model_settings(args))


def _cmd_rank(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.metrics.utility import check_utility
    from simpe.model import model_family
    from simpe.ranking.study import read_test_set, run_correlation, run_protocol

    cfg = _ranking_config(args)
    check_utility(cfg.quality, args.comet_model)
    if args.models and args.mbr_utility is not None:
        check_utility(args.mbr_utility, args.comet_model)
    uses_comet = cfg.quality == "comet" or (args.models and args.mbr_utility == "comet")
    if args.models is not None and len(args.models) < 2:
        raise ConfigError("--models needs at least two models; for one model use --model")
    if args.threads < 0:
        raise ConfigError(f"--threads must be >= 0, got {args.threads}")
    sources, references = read_test_set(args.src, args.ref, args.limit, args.max_words)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    comet = None
    if uses_comet:
        from simpe.metrics.comet import CometScorer

        comet = CometScorer(args.comet_model, device="cuda" if args.device == "cuda" else "cpu")
    if args.models:
        model_cfg = _model_section(args)
        for model_id in args.models:  # every model's family and settings (a store: the file) checked before any loads
            if str(model_id).endswith(".safetensors"):
                from simpe.store import read_store

                read_store(Path(model_id))
            else:
                model_family(model_id, model_cfg.family, model_cfg.family_settings())
        result = run_correlation(args.models, sources, references, cfg, args.out, device=args.device, comet=comet,
                                 model_settings=model_cfg.family_settings(),
                                 mbr_samples=args.mbr_samples, mbr_utility=args.mbr_utility, mbr_seed=cfg.sample_seed,
                                 overwrite=args.overwrite)
        print(f"{'model':30s} {'mc.kqrg':>8s} {'top.kqrg':>8s} {'beam Q':>8s} {'sample Q':>8s} {'MBR Q':>8s}")
        for row in result["models"]:
            cells = [row.get(k) for k in ("mc.kqrg", "top.kqrg", "beam.quality", "mc.mean_quality", "mbr.quality")]
            print(f"{row['name'][:30]:30s} " + " ".join(f"{c:8.4f}" if c is not None else f"{'-':>8s}" for c in cells))
        print(f"correlation with MBR {cfg.quality} quality over {len(args.models)} models ({len(sources)} sentences):")
        for name, corr in result["correlation"].items():
            cells = " ".join(f"{k} {v:+.3f}" if v is not None else f"{k} -" for k, v in corr.items())
            print(f"  {name:16s} {cells}")
        print(f"wrote {args.out / 'correlation.json'}")
        return
    from simpe.model import load_model
    from simpe.rundir.layout import RANK_RECORDS_FILE, RANK_SUMMARY_FILE
    from simpe.rundir.writer import OutputDir

    model_cfg = _model_section(args)
    family = model_family(args.model, model_cfg.family, model_cfg.family_settings())  # checked before the model loads
    OutputDir(args.out, [RANK_RECORDS_FILE, RANK_SUMMARY_FILE], args.overwrite)  # refuses before the model loads
    loaded = load_model(args.model, args.device, family, model_cfg.dtype, family_name=model_cfg.family,
                        settings=model_cfg.family_settings())
    summary = run_protocol(loaded.model, loaded.tokenizer, sources, references, cfg, args.out, comet=comet,
                           meta={"model": str(args.model or loaded.path), "src": str(args.src), "ref": str(args.ref)},
                           overwrite=args.overwrite)
    figures = summary["figures"]
    print(f"{loaded.name}: {len(sources)} sentences, k={cfg.k}, Q={cfg.quality}, gain {cfg.gain}")
    for key, value in figures.items():
        if isinstance(value, float):
            print(f"  {key:20s} {value:.4f}")
    for name, sig in summary["signatures"].items():
        print(f"  {name} signature: {sig}")
    print(f"wrote {args.out / 'records.jsonl'} and {args.out / 'summary.json'}")


# ---------------------------------------------------------------- compare / plot (report)
def _add_run_group_args(p: argparse.ArgumentParser, out_help: str) -> None:
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run directories of one stream, or one group folder runs/<dataset>-<split>--<model>--<N>seg/ (all runs in it)")
    p.add_argument("-o", "--out", type=Path, default=None, help=out_help)
    p.add_argument("--allow-incomplete", action="store_true",
                   help="include runs without DONE, marked (incomplete); outputs cover the segments every run has logged")


def _add_compare(sub: argparse._SubParsersAction) -> None:
    from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    p = sub.add_parser("compare", help="table of adaptation methods against the baseline, with bootstrap significance")
    _add_run_group_args(p, "output folder for compare.md/.csv/.tex (default: GROUP/compare)")
    p.add_argument("--bootstrap-seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--seed", dest="bootstrap_seed", type=int, action=DeprecatedFlag, new="--bootstrap-seed")
    p.add_argument("--bootstrap", type=int, default=DEFAULT_RESAMPLES, metavar="N",
                   help="bootstrap resamples (default: %(default)s)")
    p.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown, write_comparison
    from simpe.rundir.layout import compare_dir
    from simpe.rundir.reader import load_group

    if args.bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    group = load_group(args.runs, allow_incomplete=args.allow_incomplete)
    comparison = compare_runs(group, seed=args.bootstrap_seed, num_resamples=args.bootstrap)
    paths = write_comparison(comparison, args.out or compare_dir(group.group_dir))
    print(to_markdown(comparison))
    print("wrote " + ", ".join(str(path) for path in paths.values()))


def _add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="plot cumulative metric deltas to the baseline (Simianer et al. (2019), Figure 2) and ranking snapshots")
    _add_run_group_args(p, "output folder for the PNG and PDF figures (default: GROUP/plots)")
    p.set_defaults(func=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> None:
    from simpe.report.plotting import plot_group
    from simpe.rundir.layout import plots_dir
    from simpe.rundir.reader import load_group

    group = load_group(args.runs, allow_incomplete=args.allow_incomplete)
    for path in plot_group(group, args.out or plots_dir(group.group_dir)):
        print(f"wrote {path}")


def _add_report(sub: argparse._SubParsersAction) -> None:
    from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    p = sub.add_parser("report", help="one self-contained HTML page of a run group: table, figures, snapshots, segment browser")
    _add_run_group_args(p, "output folder for report.html (default: the group folder)")
    p.add_argument("--bootstrap-seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--seed", dest="bootstrap_seed", type=int, action=DeprecatedFlag, new="--bootstrap-seed")
    p.add_argument("--bootstrap", type=int, default=DEFAULT_RESAMPLES, metavar="N", help="bootstrap resamples (default: %(default)s)")
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.report.html import write_report
    from simpe.rundir.reader import load_group

    if args.bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    group = load_group(args.runs, allow_incomplete=args.allow_incomplete)
    path = write_report(group, args.out, seed=args.bootstrap_seed, num_resamples=args.bootstrap)
    print(f"wrote {path}  (open it in a browser: file://{path.resolve()})")


def _add_list(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list every registry: datasets, methods, presets, decoders, metrics, utilities, model families, trackers")
    p.set_defaults(func=_cmd_list)


def _cmd_list(args: argparse.Namespace) -> None:
    from simpe.config import known_presets
    from simpe.datasets import DATASETS
    from simpe.decoders import DECODERS
    from simpe.methods import METHODS
    from simpe.metrics import METRICS
    from simpe.metrics.utility import utility_names
    from simpe.models import FAMILIES
    from simpe.track import TRACKERS

    listing = {"datasets": DATASETS.names(), "methods": METHODS.names(), "presets": known_presets(),
               "decoders": DECODERS.names(), "metrics": METRICS.names(), "utilities": utility_names(),
               "model families": FAMILIES.names(), "trackers": TRACKERS.names()}
    for kind, names in listing.items():
        print(f"{kind}: {', '.join(names)}")
    for name in FAMILIES.names():
        family = FAMILIES.get(name)
        print(f"  {name:8s} model_type {', '.join(family.model_types)}; settings: {', '.join(family.uses) or 'none'}; "
              f"e.g. {family.hub_example}")


# ---------------------------------------------------------------- per-user stores (store)
def _add_export_store(sub: argparse._SubParsersAction, name: str = "export-store", old_of: str | None = None) -> None:
    p = sub.add_parser(name, help=f"deprecated: use {old_of}" if old_of else "write a run's final adapted state as a per-user store (safetensors)")
    _mark_old(p, old_of)
    p.add_argument("run", type=Path, metavar="RUN", help="a complete run directory")
    p.add_argument("-o", "--out", type=Path, help="the store file (default: ./<group>--<preset>.safetensors)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=_cmd_export_store)


def _cmd_export_store(args: argparse.Namespace) -> None:
    from simpe.store import export_store

    info = export_store(args.run, args.out, overwrite=args.overwrite)
    print(f"wrote {info['path']}: {info['method']} store for {info['base_model']}, {info['file_bytes']} bytes "
          f"= {info['data_bytes']} bytes of tensors (the run's store_bytes: {info['reported_store_bytes']}) "
          f"+ {info['header_bytes']} bytes of safetensors header")


def _add_translate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("translate", help="translate a file with a model, optionally with a per-user store applied")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--store", type=Path, metavar="FILE", help="a per-user store written by export-store")
    p.add_argument("--adapter", dest="store", type=Path, action=DeprecatedFlag, new="--store")
    p.add_argument("--decoder", help="a registered decoder (default: decoder.name of adapters/defaults.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key of the decoder section, e.g. --set decoder.params.beam_size=8 or --set decoder.name=greedy "
                        "(repeatable; default: the defaults.yaml ones for its decoder)")
    p.add_argument("-i", "--input", required=True, type=Path, metavar="SRC", help="source segments, one per line")
    p.add_argument("-o", "--out", type=Path, help="write the translations here (default: standard output)")
    p.add_argument("--output", dest="out", type=Path, action=DeprecatedFlag, new="-o/--out")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    _add_model_settings(p)
    p.set_defaults(func=_cmd_translate)


def _cmd_translate(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.rundir.writer import write_text_atomic
    from simpe.textfile import check_replaceable
    from simpe.translate import translate_file

    if args.out:  # before the model loads: a translation is not computed for a file that cannot be written
        if args.out.is_dir():
            raise ConfigError(f"-o {args.out} is a folder; give the translations' file name (e.g. {args.out / 'hyp.txt'})")
        if not args.out.parent.is_dir():
            raise ConfigError(f"-o {args.out}: the folder {args.out.parent} does not exist; create it first")
        check_replaceable(args.out, ConfigError)
    decoder, params = _decoder_overrides(args.overrides, args.decoder)
    lines = translate_file(args.model, args.input, args.store, decoder, params, args.device,
                           model_settings=_model_settings(args))
    text = "".join(line + "\n" for line in lines)
    if args.out:
        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)


def _decoder_overrides(overrides: list[str], decoder: str | None) -> tuple[str | None, dict | None]:
    """translate's ``--set``: config keys of the decoder section (``decoder.name``, ``decoder.params.K``).
    A bare ``K=V`` (a decoder parameter, its spelling before the config keys) still works for one release."""
    from simpe.config import parse_override
    from simpe.errors import ConfigError

    params: dict | None = None
    for text in overrides:
        keys, value = parse_override(text)
        if keys[0] != "decoder":
            deprecated(f"--set {text}", f"--set decoder.params.{text}")
            keys = ["decoder", "params", *keys]
        if keys == ["decoder", "name"]:
            decoder = str(value)
        elif len(keys) > 2 and keys[1] == "params":
            params = {**(params or {}), ".".join(keys[2:]): value}
        else:
            raise ConfigError(f"translate --set takes decoder.name or decoder.params.KEY, got {text!r}")
    return decoder, params


# ---------------------------------------------------------------- replication report (replicate)
def _add_replicate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replicate", help="run every experiment of the papers' findings (docs/references.md) and write docs/replication.md "
                                         "(resumable: complete runs are skipped)")
    p.add_argument("--segments", type=int, default=2000, help="scalc stream segments of Simianer et al. (2019)'s tables (default: %(default)s)")
    p.add_argument("--second-segments", type=int, help="sdatabase segments (default: all 1,742)")
    p.add_argument("--sensitivity-segments", type=int, default=200, help="scalc segments of each sensitivity run (default: %(default)s)")
    p.add_argument("--no-sensitivity", action="store_true", help="leave out the sensitivity study")
    p.add_argument("--probe", type=int, default=50, help="dev sentences of the decoding studies (default: %(default)s)")
    p.add_argument("--model", help="your model (folder or hub id, any supported family): run the parts that need only a "
                                   "model and a stream (stream, forgetting, studies) on it; its page does not go to "
                                   "docs/replication.md unless -o says so")
    p.add_argument("--dataset", help="your dataset (autodesk, text, tsv, tmx, hf ...; its files and settings with --set "
                                     "data.params.KEY=VALUE; data.params.dev=N holds out a text/TSV/TMX file's last N "
                                     "segments as the dev split)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of every run of --model/--dataset (data.params.*, model.src_lang, metrics.lang ...; repeatable)")
    p.add_argument("--runs-dir", type=Path, help="where its runs go (default: runs/replicate; with --model/--dataset: "
                                                 "runs/replicate-<model>--<dataset>)")
    p.add_argument("-o", "--out", type=Path, help="the Markdown page (default: docs/replication.md; with --model/--dataset: "
                                                  "RUNS_DIR/replication.md); its records go beside it, the HTML page to "
                                                  "RUNS_DIR/replication.html")
    p.add_argument("--workers", type=int, metavar="N", help="runs at once (default: the cores)")
    p.add_argument("--threads", type=int, metavar="T", help="torch threads per run (default: cores / workers)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its expected time, run nothing")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing, read no run: judge every claim from the records and rewrite the page and its json "
                        "(byte for byte what the call that wrote the records wrote)")
    p.add_argument("--status", action="store_true",
                   help="run nothing: list the page's rows whose records or claim code differ from the code as it is now, "
                        "one line each, with the files that changed and the command that brings each up to date")
    p.add_argument("--records", type=Path, metavar="DIR",
                   help="the records folder (default: beside the page, docs/replication/records/ for docs/replication.md)")
    p.add_argument("--only", nargs="+", metavar="PART", help="run only these parts of the plan (docs/replicate.md lists them; "
                                                             "an unknown name is refused with the known ones) and what they "
                                                             "need; the other parts' records stay as earlier calls wrote them")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_replicate)


def _cmd_replicate(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.model import model_name
    from simpe.replicate.plan import Scale, parts_to_run
    from simpe.replicate.provenance import status
    from simpe.replicate.run import DEFAULT_OUT, replicate

    own = args.model is not None or args.dataset is not None
    if args.set and not own:
        raise ConfigError("replicate --set sets your model's or dataset's runs; give --model or --dataset with it "
                          "(the committed page's plan takes no settings)")
    parts_to_run(args.only, own)  # an unknown part: one line, before anything runs
    dataset = args.dataset or "libreoffice"
    runs_dir = args.runs_dir or Path("runs/replicate" if not own else
                                     f"runs/replicate-{model_name(args.model) if args.model else 'demo-en-de'}--{dataset}")
    out = args.out or (runs_dir / "replication.md" if own else DEFAULT_OUT)
    if args.status:
        print(status(out, args.records))
        return

    for flag, value in (("--segments", args.segments), ("--second-segments", args.second_segments),
                        ("--sensitivity-segments", args.sensitivity_segments), ("--probe", args.probe),
                        ("--workers", args.workers), ("--threads", args.threads)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    scale = Scale(segments=args.segments, second_segments=args.second_segments,
                  sensitivity_segments=args.sensitivity_segments, probe=args.probe, sensitivity=not args.no_sensitivity,
                  model=args.model, dataset=dataset, sets=tuple(args.set))
    print(replicate(scale, runs_dir, out, workers=args.workers, threads=args.threads,
                    dry_run=args.dry_run, progress=not args.no_progress, run=not args.report_only, only=args.only,
                    records_dir=args.records))


# ---------------------------------------------------------------- utility sensitivity (Amrhein and Sennrich (2022))
def _add_sensitivity(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sensitivity", help="MBR-based sensitivity of a utility to changed numbers, named entities and "
                                           "nouns (Amrhein and Sennrich (2022)), against copy / hallucination / alternative controls")
    p.add_argument("--src", type=Path, help="source sentences, one per line (default: the libreoffice dev split)")
    p.add_argument("-r", "--ref", type=Path, help="reference translations, one per line (with --src)")
    p.add_argument("--model", help="model folder or hub id drawing the support samples (default: the demo model)")
    p.add_argument("--utility", default="chrf++", help="utility: bleu, sbleu, chrf, chrf++, ter or comet (default: %(default)s)")
    p.add_argument("--comet", help="COMET model for --utility comet (hub id or local folder)")
    p.add_argument("--samples", type=int, default=100, help="support samples per sentence (default: %(default)s)")
    p.add_argument("--limit", type=int, default=200, help="the first N pairs (default: %(default)s)")
    p.add_argument("--sample-seed", type=int, default=0, help="seed of the samples and of the changes (default: %(default)s)")
    p.add_argument("--lang", default="de", choices=["de", "en"], help="the references' language (default: %(default)s)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("-o", "--out", type=Path, help="write the table as JSON here too")
    p.set_defaults(func=_cmd_sensitivity)


def _cmd_sensitivity(args: argparse.Namespace) -> None:
    import json

    from simpe.errors import ConfigError
    from simpe.metrics.utility import check_utility
    from simpe.sensitivity import analyse, format_table

    for flag, value in (("--samples", args.samples), ("--limit", args.limit)):
        if value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    if args.sample_seed < 0:
        raise ConfigError(f"--sample-seed must be >= 0, got {args.sample_seed}")
    check_utility(args.utility, args.comet)
    if (args.src is None) != (args.ref is None):
        raise ConfigError("give --src and --ref together (or neither: the libreoffice dev split)")
    if args.src is not None:
        from simpe.textfile import read_lines

        sources, references = read_lines(args.src, "source file"), read_lines(args.ref, "reference file")
    else:
        from simpe.datasets import DATASETS

        pairs = DATASETS.build("libreoffice").load("dev")
        sources, references = [p.source for p in pairs], [p.reference for p in pairs]
    sources, references = sources[: args.limit], references[: args.limit]
    from simpe.model import check_model, load_model

    check_model(args.model)
    loaded = load_model(args.model, args.device)
    result = analyse(loaded.model, loaded.tokenizer, sources, references, args.utility, args.samples, args.sample_seed,
                     args.lang, comet=args.comet, progress=True)
    print(format_table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


# ---------------------------------------------------------------- serve (a translator in the loop)
def _add_serve(sub: argparse._SubParsersAction) -> None:
    from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT

    p = sub.add_parser("serve", help="post-editing in the browser with live adaptation: projects, translators' links, "
                                     "the server (docs/serve.md)")
    ssub = p.add_subparsers(dest="serve_command", required=True)

    def projects_dir(q: argparse.ArgumentParser) -> None:
        q.add_argument("--projects-dir", type=Path, default=Path("projects"),
                       help="where project folders go (default: %(default)s)")

    def server_flags(q: argparse.ArgumentParser) -> None:
        q.add_argument("--host", default=DEFAULT_HOST,
                       help="address to bind (default: %(default)s, this machine only); any other needs --tls-cert and --tls-key")
        q.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
        q.add_argument("--tls-cert", type=Path, help="TLS certificate (PEM), with --tls-key: serve HTTPS")
        q.add_argument("--tls-key", type=Path, help="TLS private key (PEM)")
        q.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a further host name the translators' browsers use for this server (repeatable)")
        q.add_argument("--threads", type=int, default=1, help="torch threads the translators' models share (default: %(default)s)")

    init = ssub.add_parser("init", help="create a project (a stream, a model, a preset, translators); prints each "
                                        "translator's link once (tokens are stored hashed)")
    init.add_argument("name", help="project name (lower-case letters, digits, _ and -)")
    init.add_argument("--preset", default="full", help="the adaptation preset under adapters/ (default: %(default)s)")
    init.add_argument("--translators", nargs="+", required=True, metavar="NAME", help="the translators' names")
    init.add_argument("--dataset", help="dataset name (default: libreoffice)")
    init.add_argument("--split", help="dataset split (default: stream)")
    init.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    init.add_argument("--segments", type=int, help="the first N segments of the stream (default: all)")
    init.add_argument("--protocol", choices=["post-edit", "interactive"],
                      help="post-edit (default), or interactive: the page completes what the translator types")
    init.add_argument("--reset", choices=["none", "document"], help="return to the base model at each document boundary")
    init.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="override any config key (repeatable), as simpe simulate")
    projects_dir(init)
    token = ssub.add_parser("token", help="new links for translators (the old tokens stop working); adds a new name")
    token.add_argument("name", help="project name")
    token.add_argument("translators", nargs="+", metavar="TRANSLATOR")
    projects_dir(token)
    run = ssub.add_parser("run", help="serve a project until Ctrl+C; every translator resumes at their next segment")
    run.add_argument("name", help="project name")
    projects_dir(run)
    server_flags(run)
    demo = ssub.add_parser("demo", help="make serve: the demo project (demo model, full, 50 stream segments, translators "
                                        "alice and bob), new links, served")
    projects_dir(demo)
    server_flags(demo)
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.serve import project as projects
    from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT, check_bind, link

    if args.serve_command == "init":
        flags = {"data.name": args.dataset, "data.split": args.split, "model.path": args.model, "data.segments": args.segments,
                 "protocol.name": args.protocol, "reset": args.reset}
        overrides = [f"{key}={value}" for key, value in flags.items() if value is not None] + args.overrides
        _, tokens = projects.create(args.projects_dir, args.name, args.preset, overrides, args.translators)
        print(f"project {args.name}: {projects.project_dir(args.projects_dir, args.name)}; each link is shown only now:")
        for name, token in tokens.items():
            print(f"  {name}: {link(DEFAULT_HOST, DEFAULT_PORT, False, token)}")
        print(f"serve it with: simpe serve run {args.name}")
        return
    if args.serve_command == "token":
        for name, token in projects.reissue(args.projects_dir, args.name, args.translators).items():
            print(f"  {name}: {link(DEFAULT_HOST, DEFAULT_PORT, False, token)}")
        return
    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    from simpe.serve.server import serve

    check_bind(args.host, args.tls_cert, args.tls_key)  # before the models load
    tokens = None
    if args.serve_command == "demo":
        name, translators = "demo", ["alice", "bob"]
        folder = projects.project_dir(args.projects_dir, name)
        if (folder / projects.PROJECT_FILE).exists():
            tokens = projects.reissue(args.projects_dir, name, translators)
        else:
            _, tokens = projects.create(args.projects_dir, name, "full", ["data.segments=50"], translators)
    else:
        name = args.name
    import torch

    torch.set_num_threads(args.threads)
    serve(projects.project_dir(args.projects_dir, name), args.host, args.port, args.tls_cert, args.tls_key,
          args.allow_host, tokens)


PARSER_BUILDERS = [_add_corpus, _add_train_demo_model, _add_score, _add_simulate, _add_sweep, _add_select_fixed, _add_compare, _add_plot,
                   _add_report, _add_track, _add_rank, _add_list, _add_export_store, _add_translate, _add_replicate, _add_sensitivity,
                   _add_serve]
OLD_COMMANDS = [(_add_train_demo_model, "train-baseline", "train-demo-model"), (_add_export_store, "export-adapter", "export-store")]


class OneLineParser(argparse.ArgumentParser):
    """A bad flag, value or subcommand is one line, as every other error of simpe (``simpe: error: ...``, exit 2),
    with the command's ``--help`` named instead of a usage block (subcommands' parsers are of this class too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog.split()[0]}: error: {' '.join(self.prog.split()[1:]) + ': ' if ' ' in self.prog else ''}"
                     f"{message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="simpe", description="Simulated post-editing adaptation harness for NMT.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug output on the console")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in PARSER_BUILDERS:
        add(sub)
    for add, old, new in OLD_COMMANDS:
        _add_old_command(sub, add, old, new)
    return parser


def flag_table(parser: argparse.ArgumentParser | None = None) -> str:
    """Every flag of every command as one Markdown table (docs/cli.md between its markers; a test keeps it equal).
    Old spellings (kept for one release) are listed with the new one they stand for."""
    parser = parser or build_parser()
    rows = ["| command | flag | value | what |", "| --- | --- | --- | --- |"]

    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    old_of = child.get_default("deprecated_command")
                    if old_of:
                        rows.append(f"| {name} | | | old spelling of `simpe {old_of}` (one warning line; kept for one release) |")
                    else:
                        walk(child, f"{prefix} {name}".strip())
                continue
            if isinstance(action, argparse._HelpAction) or not prefix:
                continue
            flag = ", ".join(action.option_strings) or action.metavar or action.dest
            value = "" if action.nargs == 0 else cell(action.metavar or action.dest.upper())
            if isinstance(action, DeprecatedFlag):
                what = f"old spelling of {action.new} (one warning line; kept for one release)"
            else:
                what = cell((action.help or "") % {"default": action.default} if action.help else "")
            rows.append(f"| {prefix} | `{flag}` | {value} | {what} |")

    walk(parser, "")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "deprecated_command", None):
        deprecated(args.command, args.deprecated_command)
    log.setup(args.verbose)
    try:
        args.func(args)
    except SimpeError as err:
        print(f"simpe: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("simpe: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
