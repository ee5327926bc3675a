"""The ``simpe`` command line: argparse subcommands, one-line errors, exit codes.

Only this package touches ``argparse``; every command calls a function that takes plain values or config objects. A
``SimpeError`` is printed as one line and exits with 2. One module per family of commands, each giving its
``add_<command>`` (the subparser) and ``cmd_<command>`` (what runs): ``data`` (corpus, train-demo-model), ``run``
(simulate, sweep, track, select-fixed), ``measure`` (score, rank, sensitivity), ``results`` (compare, plot, report,
list, export-store, translate), ``replicate``, ``serve``; ``common`` holds what they share. This module builds the
parser from them (``build_parser``), writes docs/cli.md's flag table (``flag_table``) and runs a command (``main``).
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from simpe import fastpaths, log
from simpe.cli.common import DeprecatedFlag, add_old_command, deprecated
from simpe.cli.data import add_corpus, add_train_demo_model
from simpe.cli.measure import add_rank, add_score, add_sensitivity
from simpe.cli.replicate import add_replicate
from simpe.cli.results import add_compare, add_export_store, add_list, add_plot, add_report, add_translate
from simpe.cli.run import add_select_fixed, add_simulate, add_sweep, add_track
from simpe.cli.serve import add_serve
from simpe.errors import SimpeError

PARSER_BUILDERS = [add_corpus, add_train_demo_model, add_score, add_simulate, add_sweep, add_select_fixed, add_compare, add_plot,
                   add_report, add_track, add_rank, add_list, add_export_store, add_translate, add_replicate, add_sensitivity,
                   add_serve]
OLD_COMMANDS = [(add_train_demo_model, "train-baseline", "train-demo-model"), (add_export_store, "export-adapter", "export-store")]


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
        add_old_command(sub, add, old, new)
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
        fastpaths.check()  # SIMPE_FIXED_SHAPES / SIMPE_CUDA_GRAPHS: on or off, said before anything loads
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
