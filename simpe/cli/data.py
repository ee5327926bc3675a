"""`simpe corpus` and `simpe train-demo-model`: the data and the demo model the project builds itself."""
from __future__ import annotations

import argparse
from pathlib import Path

from simpe.cli.common import DeprecatedFlag, mark_old, seed


def add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="build corpora: the LibreOffice splits, or pairs from gettext catalogs")
    csub = p.add_subparsers(dest="corpus_command", required=True)
    lo = csub.add_parser("libreoffice", help="build data/libreoffice from Debian's LibreOffice 7.4 packages "
                                                   "(train also gets GNOME help and gettext catalogs of other Debian packages)")
    lo.add_argument("-o", "--out", type=Path, default=Path("data/libreoffice"), help="output folder (default: %(default)s)")
    lo.add_argument("--cache", type=Path, default=Path("data/cache"), help="where .deb files are downloaded and unpacked (default: %(default)s)")
    lo.add_argument("--installed", action="store_true", help="read an installed LibreOffice under /usr instead of downloading its packages "
                                                                "(the other packages are still downloaded)")
    gl = csub.add_parser("glossary", help="build data/libreoffice/glossary.tsv: the UI strings the Calc and Chart help quotes, "
                                          "with their German UI translations, where the German help uses them")
    gl.add_argument("-o", "--out", type=Path, default=Path("data/libreoffice"),
                    help="the corpus folder: reads its dev and stream splits, writes glossary.tsv there (default: %(default)s)")
    gl.add_argument("--cache", type=Path, default=Path("data/cache"), help="where .deb files are downloaded and unpacked (default: %(default)s)")
    gl.add_argument("--installed", action="store_true", help="read an installed LibreOffice under /usr instead of downloading its packages")
    gt = csub.add_parser("gettext", help="aligned (msgid, msgstr) pairs from .po/.mo files")
    gt.add_argument("paths", nargs="+", type=Path, help=".po or .mo files, or folders searched for them")
    gt.add_argument("-o", "--out", type=Path, required=True, help="output prefix: writes PREFIX.src and PREFIX.tgt (one segment per line)")
    p.set_defaults(func=cmd_corpus)


def cmd_corpus(args: argparse.Namespace) -> None:
    if args.corpus_command == "libreoffice":
        from simpe.build_data.libreoffice import build

        counts = build(args.out, args.cache, installed=args.installed)
        for name, count in counts.items():
            print(f"{name:12s} {count:7d} segments")
        print(f"wrote {args.out}")
    elif args.corpus_command == "glossary":
        from simpe.build_data.glossary import build as build_glossary

        entry = build_glossary(args.out, args.cache, installed=args.installed)
        stream = entry["occurrences"]["stream"]
        print(f"{entry['entries']} entries; stream: {stream['occurrences']} occurrences in {stream['segments_with_a_term']} "
              f"of {stream['segments']} segments -> {args.out / entry['file']}")
    else:
        from simpe.build_data.gettext import write_pairs

        count = write_pairs(args.paths, args.out)
        print(f"{count} pairs -> {args.out}.src / {args.out}.tgt")


def add_train_demo_model(sub: argparse._SubParsersAction, name: str = "train-demo-model", old_of: str | None = None) -> None:
    from simpe.config.files import defaults

    p = sub.add_parser(name, help=f"deprecated: use {old_of}" if old_of else "train the embedded demo Marian model (make demo-model)")
    mark_old(p, old_of)
    for field, default in vars(defaults("train")).items():
        flags = {"seed": ["--train-seed"], "out_dir": ["-o", "--out"]}.get(field, ["--" + field.replace("_", "-")])
        p.add_argument(*flags, dest=field, type=type(default), default=default, help=f"(default: {default})")
    p.add_argument("--seed", dest="seed", type=seed, action=DeprecatedFlag, new="--train-seed")  # named by what it seeds
    p.add_argument("--out-dir", dest="out_dir", type=str, action=DeprecatedFlag, new="-o/--out")
    p.add_argument("--resume", action="store_true", help="continue from OUT_DIR/checkpoints/last.pt")
    p.set_defaults(func=cmd_train_demo_model)


def cmd_train_demo_model(args: argparse.Namespace) -> None:
    from simpe.config.files import defaults
    from simpe.demo.train import train

    fields = vars(defaults("train"))
    cfg = defaults("train", **{k: getattr(args, k) for k in fields})
    card = train(cfg, resume=args.resume)
    s = card["scores_beam5"]["stream_first_1000"]
    print(f"saved {cfg.out_dir}: stream[:1000] beam-5 BLEU {s['bleu']['score']} chrF {s['chrf']['score']} TER {s['ter']['score']}")
