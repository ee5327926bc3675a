"""Hostile input, round 3 (issue 54): the classes still open, each closed where it enters, one line and exit 2.

Numbers past what their consumer takes (a seed beyond 64 bits ended in torch's overflow traceback), YAML that stays
under the alias limit but expands past any size (nine anchors of ten aliases: 46 s, then a traceback), contradictory
flags (--resume with --overwrite), records of the wrong type read by compare, plot and report, and a store applied
to another base model (the line names the base it was made for and the model it met). Each case runs the real
command (``simpe.cli.main``) and pins the fragments of its one line.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from messages import one_line_error, simulate_args

from simpe.cli import main

REPO = Path(__file__).resolve().parents[2]
# nine levels of ten aliases each: 90 aliases (under the alias limit of 100), 10**9 strings once expanded
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))


def _one_line(args: list[str], capsys: pytest.CaptureFixture, *fragments: str, seconds: float = 30.0) -> str:
    return one_line_error(args, capsys, *fragments, seconds=seconds)


_simulate = simulate_args


@pytest.mark.usefixtures("no_model_load")
@pytest.mark.parametrize("args, fragments", [
    (["--set", "seed=99999999999999999999999999"], ("seed", "[0, 9223372036854775807]", "99999999999999999999999999")),
    (["--set", "seed=-1"], ("seed", "[0, 9223372036854775807]", "-1")),
    (["--set", "checkpoint_every=18446744073709551616"], ("checkpoint_every", "[-9223372036854775808, 9223372036854775807]",
                                                          "(64 bits)", "18446744073709551616")),
    (["--set", "ranking.sample_seed=9223372036854775808"], ("ranking.sample_seed", "[0, 9223372036854775807]")),
    (["--set", "metrics.r_max_k=4611686018427387904"], ("metrics.r_max_k", "[0, 100]", "4611686018427387904")),
    (["--preset", "full+replay", "--set", "method.modifiers=[{name: replay, params: {seed: 99999999999999999999}}]"],
     ("seed", "[0, 9223372036854775807]", "99999999999999999999")),
    (["--snapshot-every", "99999999999999999999"], ("--snapshot-every", "64 bits", "99999999999999999999")),
])
def test_an_integer_past_its_consumer_is_one_line(tmp_path: Path, capsys, args: list[str], fragments: tuple[str, ...]) -> None:
    _one_line(_simulate(tmp_path, *args), capsys, *fragments)
    assert not (tmp_path / "runs").exists()


def test_every_integer_and_seed_flag_is_bounded(tmp_path: Path, capsys) -> None:
    _one_line(["compare", str(tmp_path), "--bootstrap-seed", "-1"], capsys, "--bootstrap-seed", "[0, 9223372036854775807]", "-1")
    _one_line(["sweep", "--preset", "full", "--seeds", "1", "18446744073709551616"], capsys, "--seeds", "64 bits")
    _one_line(["train-demo-model", "--train-seed", "-3"], capsys, "train.seed", "[0, 9223372036854775807]", "-3")
    _one_line(["rank", "--k", "99999999999999999999"], capsys, "--k", "64 bits")


def test_yaml_is_refused_by_what_it_would_build_not_only_by_its_aliases(tmp_path: Path, capsys) -> None:
    """90 aliases pass the alias limit; their expansion (10**9 strings) is refused at once, in a file and in --set."""
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB, encoding="utf-8")
    _one_line(_simulate(tmp_path, "--config", str(config)), capsys, "bomb.yaml", "expand to more than 100,000 values", seconds=5)
    flow = "{" + BOMB.replace("\n", ", ").rstrip(", ") + "}"
    _one_line(_simulate(tmp_path, "--set", f"update.lr={flow}"), capsys, "bad --set update.lr",
              "expand to more than 100,000 values", seconds=5)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("methods: [full]\ngrid:\n  update.lr: " + flow + "\n", encoding="utf-8")
    _one_line(["sweep", str(sweep)], capsys, "sweep.yaml", "expand to more than 100,000 values", seconds=5)
    assert not (tmp_path / "runs").exists()


def test_a_few_aliases_that_expand_a_little_still_load() -> None:
    from simpe.values import expanded_nodes, load_yaml

    assert load_yaml("a: &a [1, 2]\nb: *a\nc: *a\n") == {"a": [1, 2], "b": [1, 2], "c": [1, 2]}
    import yaml

    node = yaml.compose("a: &a [1, 2]\nb: *a\nc: *a\n", Loader=yaml.SafeLoader)
    # the mapping, 3 keys, and the list of 2 scalars three times: 1 + 3 + 3 * 3
    assert expanded_nodes(node) == 13


@pytest.mark.usefixtures("no_model_load")
@pytest.mark.parametrize("flags", [["--resume", "--overwrite"], ["--resume-anyway", "--overwrite"]])
def test_contradictory_flags_are_refused_by_the_parser(tmp_path: Path, capsys, flags: list[str]) -> None:
    _one_line(_simulate(tmp_path, *flags), capsys, "--overwrite", "not allowed with argument", flags[0])


@pytest.fixture(scope="module")
def group(tmp_path_factory) -> Path:
    """A complete group of two 2-segment runs (baseline, bias), taken once; each test damages its own copy."""
    runs = tmp_path_factory.mktemp("runs")
    assert main(["simulate", "--preset", "baseline", "bias", "--segments", "2", "--runs-dir", str(runs), "--device", "cpu",
                 "--no-progress", "--snapshot-every", "0"]) == 0
    group, = runs.iterdir()
    return group


def _damaged(group: Path, tmp_path: Path, damage) -> Path:
    copy = tmp_path / group.name
    shutil.copytree(group, copy)
    damage(copy / "bias")
    return copy


def _summary(run: Path) -> None:
    data = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    data["corpus"]["bleu"] = "high"
    (run / "summary.json").write_text(json.dumps(data), encoding="utf-8")


def _segment(run: Path) -> None:
    lines = (run / "segments.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["cumulative"]["chrf"] = "58.1"
    (run / "segments.jsonl").write_text("\n".join([lines[0], json.dumps(record)]) + "\n", encoding="utf-8")


def _snapshot(run: Path) -> None:
    (run / "snapshots.jsonl").write_text(json.dumps({"segment": 2, "top.krg": "0.71"}) + "\n", encoding="utf-8")


@pytest.mark.parametrize("damage, fragments", [
    (_summary, ("bias/summary.json", "corpus.bleu should be a number or null", "'high'")),
    (_segment, ("bias/segments.jsonl: record 1", "cumulative.chrf should be a number or null", "'58.1'")),
    (_snapshot, ("bias/snapshots.jsonl: snapshot 0", "top.krg should be a number", "'0.71'")),
])
def test_a_record_of_the_wrong_type_is_named_by_compare_plot_and_report(group: Path, tmp_path: Path, capsys, damage,
                                                                       fragments: tuple[str, ...]) -> None:
    damaged = _damaged(group, tmp_path, damage)
    for command in ("compare", "plot", "report"):
        _one_line([command, str(damaged)], capsys, *fragments)
    assert main(["compare", str(group)]) == 0  # the undamaged group compares


def test_a_store_of_another_model_names_the_base_it_was_made_for_and_the_model_it_met(family_model, tmp_path: Path,
                                                                                      capsys, monkeypatch) -> None:
    """A bias store of a tiny M2M100, applied to the demo model: refused before any model loads (before the store's
    language settings meet the Marian family), naming both bases."""
    import transformers
    from safetensors.torch import save_file
    from tiny_families import SETTINGS

    from simpe.config.files import defaults
    from simpe.methods import METHODS
    from simpe.model import load_model, model_family

    folder = family_model("m2m100")
    loaded = load_model(folder, "cpu", model_family(folder, "auto", SETTINGS["m2m100"]))
    method = METHODS.build("bias")
    method.attach(loaded.model, None, defaults("update"))
    store = tmp_path / "bias.safetensors"
    save_file(method.export_store(), str(store), metadata={"format": "simpe-store/1", "method": "bias", "method_params": "{}",
                                                           "base_model": "tiny-m2m100", **loaded.family.store_metadata()})
    source = tmp_path / "src.en"
    source.write_text("Click OK.\n", encoding="utf-8")

    def guard(*args, **kwargs):
        raise AssertionError("the model was loaded")

    for cls in (transformers.MarianMTModel, transformers.AutoModelForSeq2SeqLM, transformers.AutoModelForCausalLM):
        monkeypatch.setattr(cls, "from_pretrained", guard)
    line = _one_line(["translate", "-i", str(source), "--store", str(store)], capsys,
                     "was made for base model 'tiny-m2m100' (m2m100, config ", "not for 'demo-en-de' (marian)",
                     "pass --model models/tiny-m2m100")
    assert "src_lang" not in line
