"""`simpe compare`, `plot`, `report`, `list`, `export-store` and `translate`: what runs left behind, and using it."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simpe.cli.common import DeprecatedFlag, add_model_settings, add_run_group_args, decoder_overrides, integer, mark_old, model_settings, seed


def add_compare(sub: argparse._SubParsersAction) -> None:
    from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    p = sub.add_parser("compare", help="table of adaptation methods against the baseline, with bootstrap significance")
    add_run_group_args(p, "output folder for compare.md/.csv/.tex (default: GROUP/compare)")
    p.add_argument("--bootstrap-seed", type=seed, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--seed", dest="bootstrap_seed", type=seed, action=DeprecatedFlag, new="--bootstrap-seed")
    p.add_argument("--bootstrap", type=integer, default=DEFAULT_RESAMPLES, metavar="N",
                   help="bootstrap resamples (default: %(default)s)")
    p.add_argument("--time-outliers", choices=("none", "matecat"), default="none",
                   help="translators' editing time: matecat counts a segment's time only within 0.25-30 s per source "
                        "word, as Matecat does (default: %(default)s: every segment's)")
    add_replicate_arg(p)
    p.set_defaults(func=cmd_compare)


def add_replicate_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replicate", action="append", default=[], type=Path, metavar="GROUP",
                   help="a further replicate: a group folder of the same presets on another stream or document order "
                        "(--set data.shuffle_documents=SEED); repeatable; adds each method's mean difference, spread and "
                        "sign agreement across replicates (compare: replicates.md/.csv beside the table; report: a section)")


def cmd_compare(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown, write_comparison
    from simpe.rundir.layout import compare_dir
    from simpe.rundir.reader import load_group

    if args.bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    group = load_group(args.runs, allow_incomplete=args.allow_incomplete, baseline=args.baseline)
    comparison = compare_runs(group, seed=args.bootstrap_seed, num_resamples=args.bootstrap, time_rule=args.time_outliers)
    paths = write_comparison(comparison, args.out or compare_dir(group.group_dir))
    print(to_markdown(comparison))
    if args.replicate:
        from simpe.report import replicates

        table = replicates.compare_replicates(comparison, args.replicate, args.allow_incomplete, args.baseline)
        written = replicates.write_replicates(table, args.out or compare_dir(group.group_dir))
        paths.update({f"replicates {kind}": path for kind, path in written.items()})
        print(replicates.to_markdown(table))
    print("wrote " + ", ".join(str(path) for path in paths.values()))


def add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="plot cumulative metric deltas to the baseline (Simianer et al. (2019), Figure 2) and ranking snapshots")
    add_run_group_args(p, "output folder for the PNG and PDF figures (default: GROUP/plots)")
    p.add_argument("--front", action="store_true",
                   help="draw the learning-against-forgetting front instead (front.png/.pdf and front.md: each run's gain "
                        "on the stream against its forgetting on the probe, snapshots.forgetting; sweeps/front.yaml)")
    p.add_argument("--front-metric", default="bleu", metavar="METRIC",
                   help="the front's gain metric, a column of simpe compare's table (default: %(default)s)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> None:
    from simpe.report.plotting import plot_group
    from simpe.rundir.layout import plots_dir
    from simpe.rundir.reader import load_group

    group = load_group(args.runs, allow_incomplete=args.allow_incomplete, baseline=args.baseline)
    if args.front:
        from simpe.report.front import write_front

        paths = write_front(group, args.out or plots_dir(group.group_dir), args.front_metric)
    else:
        paths = plot_group(group, args.out or plots_dir(group.group_dir))
    for path in paths:
        print(f"wrote {path}")


def add_report(sub: argparse._SubParsersAction) -> None:
    from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    p = sub.add_parser("report", help="one self-contained HTML page of a run group: table, figures, snapshots, segment browser")
    add_run_group_args(p, "output folder for report.html (default: the group folder)")
    p.add_argument("--bootstrap-seed", type=seed, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--seed", dest="bootstrap_seed", type=seed, action=DeprecatedFlag, new="--bootstrap-seed")
    p.add_argument("--bootstrap", type=integer, default=DEFAULT_RESAMPLES, metavar="N", help="bootstrap resamples (default: %(default)s)")
    add_replicate_arg(p)
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.report.html import write_report
    from simpe.rundir.reader import load_group

    if args.bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    group = load_group(args.runs, allow_incomplete=args.allow_incomplete, baseline=args.baseline)
    path = write_report(group, args.out, seed=args.bootstrap_seed, num_resamples=args.bootstrap, replicates=args.replicate)
    print(f"wrote {path}  (open it in a browser: file://{path.resolve()})")


def add_list(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list every registry: datasets, methods, presets, decoders, metrics, utilities, model families, trackers")
    p.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> None:
    from simpe.config.files import known_presets
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


def add_export_store(sub: argparse._SubParsersAction, name: str = "export-store", old_of: str | None = None) -> None:
    p = sub.add_parser(name, help=f"deprecated: use {old_of}" if old_of else "write a run's final adapted state as a per-user store (safetensors)")
    mark_old(p, old_of)
    p.add_argument("run", type=Path, metavar="RUN", help="a complete run directory")
    p.add_argument("-o", "--out", type=Path, help="the store file (default: ./<group>--<preset>.safetensors)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_export_store)


def cmd_export_store(args: argparse.Namespace) -> None:
    from simpe.store.user import export_store

    info = export_store(args.run, args.out, overwrite=args.overwrite)
    print(f"wrote {info['path']}: {info['method']} store for {info['base_model']}, {info['file_bytes']} bytes "
          f"= {info['data_bytes']} bytes of tensors (the run's store_bytes: {info['reported_store_bytes']}) "
          f"+ {info['header_bytes']} bytes of safetensors header")


def add_translate(sub: argparse._SubParsersAction) -> None:
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
    add_model_settings(p)
    p.set_defaults(func=cmd_translate)


def cmd_translate(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.rundir.writer import write_text_atomic
    from simpe.store.translate import translate_file
    from simpe.textfile import check_replaceable

    if args.out:  # before the model loads: a translation is not computed for a file that cannot be written
        if args.out.is_dir():
            raise ConfigError(f"-o {args.out} is a folder; give the translations' file name (e.g. {args.out / 'hyp.txt'})")
        if not args.out.parent.is_dir():
            raise ConfigError(f"-o {args.out}: the folder {args.out.parent} does not exist; create it first")
        check_replaceable(args.out, ConfigError)
    decoder, params = decoder_overrides(args.overrides, args.decoder)
    lines = translate_file(args.model, args.input, args.store, decoder, params, args.device,
                           model_settings=model_settings(args))
    text = "".join(line + "\n" for line in lines)
    if args.out:
        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)
