"""One vocabulary on every command: presets, stores, the demo model, -i/-o/-r, --set, named seeds.
Old spellings still parse for one release and print exactly one line naming the new one; docs/cli.md's
flag table is the parsers' own."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

from simpe.cli import build_parser, flag_table, main
from simpe.config.files import known_presets, load_config
from simpe.errors import ConfigError
from simpe.paths import DEFAULTS_FILE, PRESETS_DIR, REPO_ROOT

OLD_FLAGS = [  # (argv, namespace key, value, the new spelling named)
    (["simulate", "--method", "full", "lasso"], "preset", ["full", "lasso"], "--preset"),
    (["sweep", "--method", "full"], "preset", ["full"], "--preset"),
    (["score", "-i", "h", "--refs", "r.de"], "ref", "r.de", "-r/--ref"),
    (["rank", "--src", "s", "-r", "r", "--out", "o", "--seed", "7"], "sample_seed", 7, "--sample-seed"),
    (["compare", "runs/x", "--seed", "5"], "bootstrap_seed", 5, "--bootstrap-seed"),
    (["report", "runs/x", "--seed", "5"], "bootstrap_seed", 5, "--bootstrap-seed"),
    (["translate", "-i", "doc.en", "--adapter", "u.safetensors"], "store", Path("u.safetensors"), "--store"),
    (["translate", "-i", "doc.en", "--output", "doc.de"], "out", Path("doc.de"), "-o/--out"),
    (["train-demo-model", "--seed", "3"], "seed", 3, "--train-seed"),
    (["train-demo-model", "--out-dir", "m"], "out_dir", "m", "-o/--out"),
    (["rank", "--src", "s", "-r", "r", "--out", "o", "--comet-model", "c"], "comet_model", "c", "--comet"),
]


@pytest.mark.parametrize(("argv", "key", "value", "new"), OLD_FLAGS, ids=[" ".join(a[:1] + a[-2:-1]) for a, *_ in OLD_FLAGS])
def test_an_old_flag_still_parses_and_prints_one_line_naming_the_new(argv, key, value, new, capsys):
    args = build_parser().parse_args(argv)
    assert getattr(args, key) == value
    err = capsys.readouterr().err.splitlines()
    old = argv[-len(value) - 1] if isinstance(value, list) else argv[-2]
    assert err == [f"simpe: warning: {old} is deprecated (kept for one release); use {new}"]


def test_the_new_flags_print_nothing(capsys):
    parser = build_parser()
    assert parser.parse_args(["simulate", "--preset", "full"]).preset == ["full"]
    assert parser.parse_args(["score", "-i", "h", "-r", "r.de"]).ref == "r.de"
    assert parser.parse_args(["translate", "-i", "a", "--store", "u", "-o", "b"]).store == Path("u")
    assert parser.parse_args(["rank", "--src", "s", "--ref", "r", "-o", "o", "--sample-seed", "2"]).sample_seed == 2
    assert parser.parse_args(["compare", "x", "--bootstrap-seed", "4"]).bootstrap_seed == 4
    assert parser.parse_args(["train-demo-model", "--train-seed", "4"]).seed == 4
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("old", "new"), [("train-baseline", "train-demo-model"), ("export-adapter", "export-store")])
def test_an_old_command_runs_the_new_one_after_one_line(old, new, tmp_path: Path, capsys):
    argv = [old, str(tmp_path / "no-run")] if old == "export-adapter" else [old, "--data-dir", str(tmp_path / "no-data")]
    args = build_parser().parse_args(argv)
    assert args.func is build_parser().parse_args([new, *argv[1:]]).func
    assert main(argv) == 2  # the new command's own one-line error (no run folder / no data)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"simpe: warning: {old} is deprecated (kept for one release); use {new}"
    assert len(err) == 2 and err[1].startswith("simpe: error: ")


def test_an_unknown_preset_lists_the_preset_files():
    names = ", ".join(sorted(p.stem for p in (REPO_ROOT / "adapters").glob("*.yaml") if p.name != "defaults.yaml"))
    with pytest.raises(ConfigError, match=f"^no preset 'lasso-tiny' in adapters/; known: {re.escape(names)} \\(or a path"):
        load_config("lasso-tiny")
    assert known_presets() == sorted(p.stem for p in PRESETS_DIR.glob("*.yaml") if p.name != "defaults.yaml")
    assert DEFAULTS_FILE == REPO_ROOT / "adapters" / "defaults.yaml" and not (REPO_ROOT / "presets").exists()


def test_a_preset_names_its_method():
    cfg = load_config("lasso-25")
    assert cfg.adapter == "lasso-25" and cfg.method.name == "lasso"


def test_translate_set_takes_decoder_config_keys(capsys):
    from simpe.cli.common import decoder_overrides as _decoder_overrides

    assert _decoder_overrides(["decoder.name=greedy", "decoder.params.beam_size=8"], None) == ("greedy", {"beam_size": 8})
    assert _decoder_overrides([], "beam") == ("beam", None)
    assert capsys.readouterr().err == ""
    assert _decoder_overrides(["beam_size=8"], "beam") == ("beam", {"beam_size": 8})  # the old spelling, one line
    assert capsys.readouterr().err.splitlines() == [
        "simpe: warning: --set beam_size=8 is deprecated (kept for one release); use --set decoder.params.beam_size=8"]
    with pytest.raises(ConfigError, match="translate --set takes decoder.name or decoder.params.KEY, got 'decoder.x=1'"):
        _decoder_overrides(["decoder.x=1"], None)


def test_score_names_the_dataset_of_its_novel_vocabulary(tmp_path: Path, capsys):
    args = build_parser().parse_args(["score", "-i", "h", "-r", "r"])
    assert args.dataset == "libreoffice"
    assert "(default: libreoffice," in " ".join(build_parser()._subparsers._group_actions[0].choices["score"].format_help().split())
    (tmp_path / "h").write_text("a\n")
    assert main(["score", "-i", str(tmp_path / "h"), "-r", str(tmp_path / "h"), "--dataset", "nope"]) == 2
    assert capsys.readouterr().err.strip() == "simpe: error: unknown dataset 'nope'; known: autodesk, hf, libreoffice, text, tmx, tsv, xliff"


def test_docs_cli_md_is_the_parsers_flag_table():
    spec = importlib.util.spec_from_file_location("write_docs", REPO_ROOT / "scripts" / "write_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page, written = module.rendered("docs/cli.md")
    assert page == written, "docs/cli.md is stale: run make write-docs"
    table = flag_table()
    assert "| simulate | `--preset` | PRESET |" in table and "| translate | `--store` | FILE |" in table
    assert "| export-adapter | | | old spelling of `simpe export-store`" in table
    assert "| score | `--refs` | REF | old spelling of -r/--ref" in table


def _make_n(*argv: str) -> subprocess.CompletedProcess:
    """``make -n`` (print, run nothing) with the venv and the fixed selection taken as made; a top-level make even when
    the suite itself runs under ``make test`` (whose MAKEFLAGS/MAKELEVEL would add "Entering directory" lines)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    return subprocess.run(["make", "-n", "-o", ".venv/.installed", "-o", "models/demo-en-de/fixed-selection.json", *argv],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=True, env=env)


def test_make_presets_and_the_old_methods_variable():
    new = _make_n("simulate", "PRESETS=full lasso")
    assert new.stderr == "" and " --preset full lasso " in new.stdout.splitlines()[0]
    old = _make_n("simulate", "METHODS=full lasso")
    assert old.stderr.splitlines() == ["Makefile:12: METHODS is deprecated (kept for one release); use PRESETS"]
    assert old.stdout.splitlines()[0] == new.stdout.splitlines()[0]
    assert " --preset full " in _make_n("sweep", "SWEEP=sweeps/x.yaml", "METHODS=full").stdout.splitlines()[0]
    assert "--preset" not in _make_n("sweep", "SWEEP=sweeps/x.yaml").stdout.splitlines()[0]  # the file's own presets


def test_make_baseline_is_the_old_name_of_make_demo_model():
    lines = _make_n("baseline").stdout.splitlines()
    assert lines[0] == """echo "make: warning: 'make baseline' is deprecated (kept for one release); use 'make demo-model'" >&2"""
    assert "-m simpe train-demo-model" in _make_n("demo-model").stdout
