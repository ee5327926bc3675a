"""The ``simpe`` command line: argparse subcommands, one-line errors, exit codes.

Only this module touches ``argparse``; every command calls a function that takes plain
values or config objects. A ``SimpeError`` is printed as one line and exits with 2.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from simpe import log
from simpe.errors import SimpeError

logger = logging.getLogger("simpe")


# ---------------------------------------------------------------- corpus / baseline
def _add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="build corpora: the LibreOffice splits, or pairs from gettext catalogs")
    csub = p.add_subparsers(dest="corpus_command", required=True)
    lo = csub.add_parser("libreoffice", help="build data/libreoffice from Debian's LibreOffice 7.4 packages")
    lo.add_argument("--out", type=Path, default=Path("data/libreoffice"), help="output folder (default: %(default)s)")
    lo.add_argument("--cache", type=Path, default=Path("data/cache"), help="where .deb files are downloaded and unpacked (default: %(default)s)")
    lo.add_argument("--installed", action="store_true", help="read an installed LibreOffice under /usr instead of downloading packages")
    gt = csub.add_parser("gettext", help="aligned (msgid, msgstr) pairs from .po/.mo files")
    gt.add_argument("paths", nargs="+", type=Path, help=".po or .mo files, or folders searched for them")
    gt.add_argument("--out", type=Path, required=True, help="output prefix: writes PREFIX.src and PREFIX.tgt (one segment per line)")
    p.set_defaults(func=_cmd_corpus)


def _cmd_corpus(args: argparse.Namespace) -> None:
    if args.corpus_command == "libreoffice":
        from simpe.corpus.libreoffice import build

        counts = build(args.out, args.cache, installed=args.installed)
        for name, count in counts.items():
            print(f"{name:9s} {count:7d} segments")
        print(f"wrote {args.out}")
    else:
        from simpe.corpus.gettext import write_pairs

        count = write_pairs(args.paths, args.out)
        print(f"{count} pairs -> {args.out}.src / {args.out}.tgt")


def _add_train_baseline(sub: argparse._SubParsersAction) -> None:
    from simpe.baseline import TrainConfig

    p = sub.add_parser("train-baseline", help="train the embedded demo Marian model (make baseline)")
    for field, default in vars(TrainConfig()).items():
        p.add_argument("--" + field.replace("_", "-"), type=type(default), default=default, help=f"(default: {default})")
    p.add_argument("--resume", action="store_true", help="continue from OUT_DIR/checkpoints/last.pt")
    p.set_defaults(func=_cmd_train_baseline)


def _cmd_train_baseline(args: argparse.Namespace) -> None:
    from simpe.baseline import TrainConfig, train

    fields = vars(TrainConfig())
    cfg = TrainConfig(**{k: getattr(args, k) for k in fields})
    card = train(cfg, resume=args.resume)
    s = card["scores_beam5"]["stream_first_1000"]
    print(f"saved {cfg.out_dir}: stream[:1000] beam-5 BLEU {s['bleu']['score']} chrF {s['chrf']['score']} TER {s['ter']['score']}")


# ---------------------------------------------------------------- simulate (loop)
def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run the online simulated post-editing loop for one or more methods")
    p.add_argument("--method", nargs="+", default=None, metavar="ADAPTER",
                   help="adapter names under adapters/ (or .yaml paths), run in turn on the same stream (default: baseline)")
    p.add_argument("--dataset", help="dataset name (default from adapters/defaults.yaml: libreoffice)")
    p.add_argument("--split", help="dataset split (default: stream)")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--segments", type=int, help="the first N segments of the stream (default: all)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default: auto)")
    p.add_argument("--comet", help="COMET model (hub id or checkpoint path) scored at the end of each run")
    p.add_argument("--truecaser", help="truecaser model path, or 'none' (default: the one shipped with the model)")
    p.add_argument("--snapshot-every", type=int, help="ranking snapshot every N segments (default: 0 = off)")
    p.add_argument("--skip-empty", action="store_true", help="skip segments with an empty source or reference (counted warning) instead of failing")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key, e.g. --set update.lr=0.02 (repeatable)")
    p.add_argument("--config", type=Path, help="a resolved config.yaml of an earlier run: reproduce it")
    p.add_argument("--runs-dir", help="where run folders go (default: runs)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its last checkpoint")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_simulate)


def _simulate_overrides(args: argparse.Namespace) -> list[str]:
    flags = {"data.name": args.dataset, "data.split": args.split, "model": args.model, "data.segments": args.segments,
             "device": args.device, "comet": args.comet, "metrics.truecaser": args.truecaser,
             "snapshots.every": args.snapshot_every, "runs_dir": args.runs_dir}
    out = [f"{key}={value}" for key, value in flags.items() if value is not None]
    if args.skip_empty:
        out.append("data.skip_empty=true")
    return out + args.overrides


def _cmd_simulate(args: argparse.Namespace) -> None:
    from simpe.simulate import simulate

    paths = simulate(args.method or ["baseline"], _simulate_overrides(args), resume=args.resume, overwrite=args.overwrite,
                     progress=not args.no_progress, config_file=args.config)
    for path in paths:
        print(f"complete: {path}")


def _add_select_fixed(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("select-fixed", help="choose the tensor subset of the 'fixed' method on the dev split")
    p.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    p.add_argument("--dataset", default="libreoffice", help="dataset (default: %(default)s)")
    p.add_argument("--split", default="dev", help="held-out split to adapt on (default: %(default)s)")
    p.add_argument("--budget", type=float, default=0.025, help="fraction of the model's parameters to select (default: %(default)s)")
    p.add_argument("--segments", type=int, help="use only the first N segments of the split")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--out", type=Path, help="selection file (default: <model folder>/fixed-selection.json)")
    p.set_defaults(func=_cmd_select_fixed)


def _cmd_select_fixed(args: argparse.Namespace) -> None:
    from simpe.selection import select_fixed

    sel = select_fixed(args.model, args.dataset, args.split, args.budget, args.segments, args.device, args.out)
    print(f"selected {len(sel['tensors'])} tensors, {sel['selected_parameters']:,} of {sel['model_parameters']:,} parameters")

# ---------------------------------------------------------------- score (metrics)
# (section owned by the metrics work: _add_score / _cmd_score)

# ---------------------------------------------------------------- rank (decoders)
# (section owned by the decoders work: _add_rank / _cmd_rank)

# ---------------------------------------------------------------- compare / plot
# (section owned by the compare work: _add_compare / _cmd_compare / _add_plot / _cmd_plot)


def _add_list(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list every registry: datasets, methods, decoders, metrics")
    p.set_defaults(func=_cmd_list)


def _cmd_list(args: argparse.Namespace) -> None:
    from simpe import registries

    for kind, names in registries.all_registries().items():
        print(f"{kind}: {', '.join(names)}")


PARSER_BUILDERS = [_add_corpus, _add_train_baseline, _add_simulate, _add_select_fixed, _add_list]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simpe", description="Simulated post-editing adaptation harness for NMT.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug output on the console")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in PARSER_BUILDERS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
