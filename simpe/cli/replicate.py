"""`simpe replicate`: the replication of the papers' findings (simpe.replicate)."""
from __future__ import annotations

import argparse
from pathlib import Path

from simpe.cli.common import integer


def add_replicate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replicate", help="run every experiment of the papers' findings (docs/references.md) and write docs/replication.md "
                                         "(resumable: complete runs are skipped)")
    p.add_argument("--segments", type=integer, default=2000, help="scalc stream segments of Simianer et al. (2019)'s tables (default: %(default)s)")
    p.add_argument("--second-segments", type=integer, help="sdatabase segments (default: all 1,742)")
    p.add_argument("--sensitivity-segments", type=integer, default=200, help="scalc segments of each sensitivity run (default: %(default)s)")
    p.add_argument("--no-sensitivity", action="store_true", help="leave out the sensitivity study")
    p.add_argument("--probe", type=integer, default=50, help="dev sentences of the decoding studies (default: %(default)s)")
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
    p.add_argument("--workers", type=integer, metavar="N", help="runs at once (default: the cores)")
    p.add_argument("--threads", type=integer, metavar="T", help="torch threads per run (default: cores / workers)")
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
    p.set_defaults(func=cmd_replicate)


def cmd_replicate(args: argparse.Namespace) -> None:
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
