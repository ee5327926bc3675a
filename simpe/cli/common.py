"""What the commands share: the old spellings (one warning line, kept for one release), model settings, run-group
arguments, decoder overrides, the train vocabulary, tracking flags and the runs-to-track bookkeeping."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from simpe.errors import SimpeError

logger = logging.getLogger("simpe")


def integer(text: str) -> int:
    """argparse type of every integer flag: an integer of 64 bits (``simpe.values.INT_MIN``..``INT_MAX``, what its
    consumers take); beyond it the parser's one line, exit 2."""
    from simpe.values import INT_MAX, INT_MIN

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not INT_MIN <= value <= INT_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in [{INT_MIN}, {INT_MAX}] (64 bits), got {text}")
    return value


def seed(text: str) -> int:
    """argparse type of every seed flag: an integer in [0, ``simpe.values.INT_MAX``] (``simpe.values.check_seed``)."""
    from simpe.errors import ConfigError
    from simpe.values import check_seed

    try:
        return check_seed(integer(text), "a seed")
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


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


def add_old_command(sub: argparse._SubParsersAction, add, old: str, new: str) -> None:
    """Register the subcommand ``old`` as ``add`` builds ``new``, marked to print one line when it is used."""
    add(sub, name=old, old_of=new)


def mark_old(p: argparse.ArgumentParser, old_of: str | None) -> None:
    if old_of:
        p.set_defaults(deprecated_command=old_of)


def report_outcomes(outcomes: list, done_word: str) -> None:
    failed = [o for o in outcomes if o.status == "failed"]
    for outcome in outcomes:
        if outcome.status == "failed":
            print(f"failed:   {outcome.name}: {outcome.error}")
        else:
            word = {"skipped": "skipped (complete)", "resumed": "resumed"}.get(outcome.status, done_word)
            print(f"{word}: {outcome.path}" + (f" ({outcome.seconds:.1f} s)" if outcome.seconds else ""))
    if failed:
        raise SystemExit(f"{len(failed)} of {len(outcomes)} runs failed: {', '.join(o.name for o in failed)}")


def tracker_list(value: str) -> list[str]:
    """``--track`` / ``--to``: one tracker name or a comma list, each checked (argparse makes a bad one one line)."""
    from simpe.track import tracker_names

    try:
        return tracker_names([value])
    except SimpeError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_track_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--track", action="extend", type=tracker_list, default=[], metavar="TRACKER",
                   help="also log each run, as it completes, to mlflow and/or tensorboard (repeatable, or a comma list; "
                        "docs/tracking.md); simpe report's HTML page stays the default view")
    p.add_argument("--track-uri", metavar="URI",
                   help="with --track mlflow: the tracking URI (default: a file store in the run's group folder, GROUP/mlruns)")
    p.add_argument("--track-dir", type=Path, metavar="DIR",
                   help="with --track tensorboard: event files go to DIR/<group>/<run> (default: GROUP/tensorboard/<run>)")


class Tracking:
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


def add_model_settings(p: argparse.ArgumentParser) -> None:
    """--src-lang, --tgt-lang, --prompt-template, --family, --dtype: the model section's keys (default: adapters/defaults.yaml)."""
    p.add_argument("--src-lang", help="model.src_lang: the source language code the family's tokenizer or prompt takes")
    p.add_argument("--tgt-lang", help="model.tgt_lang: the target language code (forced BOS, >>id<<, <2xx>, prompt)")
    p.add_argument("--prompt-template", help="model.prompt_template: a causal LM's plain prompt, with {source}")
    p.add_argument("--family", help="model.family: auto (from config.json) or a family name")
    p.add_argument("--dtype", help="model.dtype: float32, bfloat16 or float16")


def model_settings(args: argparse.Namespace) -> dict:
    flags = {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang, "prompt_template": args.prompt_template,
             "family": args.family, "dtype": args.dtype}
    return {key: value for key, value in flags.items() if value is not None}


def train_vocab(dataset: str, lang: str):
    """The train vocabulary of ``dataset`` (None when it has none: resolve_vocab then says so), or one line when
    the dataset cannot be opened without its own parameters (a file-based dataset has no train split)."""
    from simpe.datasets import DATASETS
    from simpe.errors import ConfigError, SimpeError

    try:
        return DATASETS.build(dataset).train_vocab(lang)
    except SimpeError:  # text, tsv, tmx: files of the user's, no train split
        raise ConfigError(f"--novel-vocab train: dataset {dataset!r} has no train vocabulary; give a vocabulary file "
                          "(--novel-vocab PATH) or --dataset libreoffice") from None


def model_section(args: argparse.Namespace):  # -> simpe.config.tree.ModelConfig
    """The model section of adapters/defaults.yaml with the --src-lang ... flags that were given."""
    from simpe.config.files import defaults

    return defaults("model", **model_settings(args))


def add_run_group_args(p: argparse.ArgumentParser, out_help: str) -> None:
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run directories of one stream, or one group folder runs/<dataset>-<split>--<model>--<N>seg/ (all runs in it)")
    p.add_argument("-o", "--out", type=Path, default=None, help=out_help)
    p.add_argument("--allow-incomplete", action="store_true",
                   help="include runs without DONE, marked (incomplete); outputs cover the segments every run has logged")
    p.add_argument("--baseline", metavar="NAME",
                   help="the run every other one is compared with, by its preset name (default: the one run of method "
                        "baseline); e.g. a baseline with constrained_beam beside one with beam")


def decoder_overrides(overrides: list[str], decoder: str | None) -> tuple[str | None, dict | None]:
    """translate's ``--set``: config keys of the decoder section (``decoder.name``, ``decoder.params.K``).
    A bare ``K=V`` (a decoder parameter, its spelling before the config keys) still works for one release."""
    from simpe.config.files import parse_override
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
