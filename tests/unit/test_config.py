"""Config flow: defaults, then the adapter file, then --set; unknown keys are errors."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from messages import raises_naming

from simpe.config.files import defaults, load_config, load_saved_config, resume_difference, save_config
from simpe.config.tree import SECTIONS, RankingConfig, RunConfig, from_dict
from simpe.errors import ConfigError
from simpe.paths import DEFAULTS_FILE
from simpe.ranking.evaluate import check


def test_paper_defaults_and_adapter_differences():
    full, bias, lasso = load_config("full"), load_config("bias"), load_config("lasso")
    assert (full.update.lr, full.update.clip_norm, full.update.max_repeats, full.update.ppl_threshold) == (0.01, 1.0, 3, 2.0)
    assert full.update.dropout == 0.0 and full.update.label_smoothing == 0.0 and full.update.optimizer == "sgd"
    assert bias.update.lr == 1.0 and bias.method.name == "bias"
    assert lasso.method.params == {"penalty": 0.001, "budget_nonembedding": 0.025, "budget_embedding": 0.025}
    assert full.decoder.name == "beam" and full.decoder.params == {"beam_size": 5}


def test_overrides_come_last_and_are_typed():
    cfg = load_config("lasso", ["update.lr=0.05", "method.params.penalty=0", "data.segments=12", "model=null"])
    assert cfg.update.lr == 0.05 and cfg.method.params["penalty"] == 0 and cfg.data.segments == 12 and cfg.model.path is None
    assert cfg.method.params["budget_embedding"] == 0.025  # params merge key by key


def test_a_variant_is_another_file_and_names_the_run(tmp_path: Path):
    presets = tmp_path / "adapters"
    presets.mkdir()
    (presets / "defaults.yaml").write_text(Path("adapters/defaults.yaml").read_text())
    (presets / "lasso-small.yaml").write_text("method: {name: lasso, params: {budget_nonembedding: 0.01}}\n")
    cfg = load_config("lasso-small", presets_dir=presets)
    assert cfg.adapter == "lasso-small" and cfg.method.name == "lasso" and cfg.method.params == {"budget_nonembedding": 0.01}
    with pytest.raises(ConfigError, match="no preset 'lasso-tiny' in adapters/; known: lasso-small"):
        load_config("lasso-tiny", presets_dir=presets)


def test_saved_config_round_trips(tmp_path: Path):
    cfg = load_config("top", ["seed=7"])
    save_config(cfg, tmp_path / "config.yaml")
    assert load_saved_config(tmp_path / "config.yaml") == cfg


@pytest.mark.parametrize("override, message", [
    ("update.momentum=0.9", "unknown key update.momentum; known: optimizer, lr, clip_norm"),
    ("colour=red", "unknown key colour; known: adapter, model, device"),
    ("update.lr=fast", "update.lr must be a finite number, got 'fast'"),
    ("seed=abc", "seed must be an integer, got 'abc'"),
    ("data.skip_empty=maybe", "data.skip_empty must be true or false, got 'maybe'"),
    ("decoder.params=3", "decoder.params must be a mapping, got 3"),
    ("ranking.k=ten", "ranking.k must be an integer, got 'ten'"),
    ("update=0.1", "update must be a mapping, got 0.1"),
    ("update.lr=-1", "update.lr must be > 0, got -1"),
    ("update.max_repeats=0", "update.max_repeats must be >= 1, got 0"),
    ("snapshots.probe=test", "unknown snapshots.probe 'test'; known: auto, dev, stream"),
    ("nokeyvalue", "bad --set 'nokeyvalue'; expected KEY=VALUE"),
])
def test_bad_values_name_the_value_and_the_valid_ones(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config("full", [override])


def test_a_number_yaml_reads_as_a_string_is_a_number():
    # YAML 1.1 reads 1e-3 (no dot) as a string; a float field takes it as the number it means
    assert load_config("full", ["update.lr=1e-3"]).update.lr == 0.001


def test_every_default_lives_in_defaults_yaml():
    """The config dataclasses have no defaults of their own; every section comes from adapters/defaults.yaml."""
    for cls in (RunConfig, *SECTIONS.values()):
        for field in dataclasses.fields(cls):
            assert field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING, (cls, field.name)
    data = yaml.safe_load(DEFAULTS_FILE.read_text())
    assert set(data) == {f.name for f in dataclasses.fields(RunConfig)} - {"adapter"} | {"train"}  # train: simpe train-demo-model
    for section in SECTIONS:
        assert dataclasses.asdict(defaults(section)) == data[section]
    assert defaults("update", lr=0.5).lr == 0.5 and defaults("ranking").k == 10
    with raises_naming(ConfigError, "'decoding'", "model, method, update"):
        defaults("decoding")


def test_a_run_saved_before_a_key_existed_reads_with_its_default(tmp_path):
    """config.yaml of a run written before snapshots.ranking/forgetting existed: the keys take their defaults (what
    simpe did then); a saved greedy decoder's empty params are not filled with beam's beam_size."""
    import yaml

    from simpe.config.files import dump_config, load_config, load_saved_config

    data = yaml.safe_load(dump_config(load_config("full", ["decoder.name=greedy", "decoder.params={}"])))
    del data["snapshots"]["ranking"], data["snapshots"]["forgetting"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    cfg = load_saved_config(path)
    assert (cfg.snapshots.ranking, cfg.snapshots.forgetting) == (True, 0)
    assert cfg.decoder.name == "greedy" and cfg.decoder.params == {}


def test_a_bare_model_path_is_the_model_section(tmp_path: Path):
    """--set model=PATH (and config.yaml of runs made before the model section) mean model.path=PATH, the rest default."""
    cfg = load_config("full", ["model=models/x", "model.tgt_lang=de"])
    assert cfg.model.path == "models/x" and cfg.model.family == "auto" and cfg.model.tgt_lang == "de" and cfg.model.dtype == "float32"
    saved = tmp_path / "config.yaml"
    save_config(load_config("top"), saved)
    old = yaml.safe_load(saved.read_text())
    old["model"] = None  # as runs wrote it before
    saved.write_text(yaml.safe_dump(old))
    assert load_saved_config(saved) == load_config("top")
    with raises_naming(ConfigError, "model.dtype", "'int4'", "float32, bfloat16, float16"):
        load_config("top", ["model.dtype=int4"])


def test_resume_difference_names_the_setting_and_ignores_where_and_on_what(tmp_path: Path) -> None:
    saved = load_config("lasso", [f"runs_dir={tmp_path}", "device=cpu"])
    assert resume_difference(saved, load_config("lasso", [f"runs_dir={tmp_path}/", "device=auto"])) is None
    assert resume_difference(saved, load_config("lasso", [f"runs_dir={tmp_path}", "method.params.penalty=0.5"])) \
        .startswith("method.params.penalty (the run has ")
    assert resume_difference(saved, load_config("lasso", [f"runs_dir={tmp_path}", "data.segments=7"])) == \
        "data.segments (the run has None, now 7)"


def test_ranking_config_checks() -> None:
    check(defaults("ranking"))
    with pytest.raises(ConfigError, match="known: bleu, chrf, chrf\\+\\+, sbleu, ter, comet"):
        check(defaults("ranking", quality="bleurt"))
    with pytest.raises(ConfigError, match="needs a COMET model"):
        check(defaults("ranking", quality="comet"))
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        defaults("ranking", k=0)
    with pytest.raises(ConfigError, match="max_seconds"):
        defaults("ranking", max_seconds=-1)
    with pytest.raises(ConfigError, match="evaluates nothing"):
        defaults("ranking", top_region=False, sampling=False)
    with pytest.raises(ConfigError, match="known: exp, linear"):
        defaults("ranking", gain="log")


def test_ranking_config_from_a_config_block() -> None:
    block = {**dataclasses.asdict(defaults("ranking")), "k": 3, "quality": "sbleu"}
    assert from_dict(RankingConfig, block, "ranking") == defaults("ranking", k=3, quality="sbleu")
    with pytest.raises(ConfigError, match="unknown key ranking.top_k; known: k, quality, samples"):
        from_dict(RankingConfig, {**block, "top_k": 3}, "ranking")
    with pytest.raises(ConfigError, match="missing key ranking.k"):
        from_dict(RankingConfig, {key: value for key, value in block.items() if key != "k"}, "ranking")
    with pytest.raises(ConfigError, match="ranking.samples must be an integer, got 'many'"):
        from_dict(RankingConfig, {**block, "samples": "many"}, "ranking")
