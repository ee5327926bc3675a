"""Every bad input is one line naming the bad value, exit 2, before the model loads, with no run folder left.

The cases run ``simpe.cli.main`` in-process (fast) with the model loader replaced by a guard
that fails the test if a model is loaded, so "before the model loads" is checked, not assumed.
The unsupported folders are real, tiny Pegasus and BART checkpoints written by transformers'
save_pretrained here (no hub access), next to the demo model's Marian tokenizer files, so that
only their config tells them apart from a Marian folder; a T5 one (a supported family) lacks
its tokenizer.
"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
import torch

from simpe.cli import main
from simpe.errors import ConfigError, ModelError, RunDirError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "models" / "demo-en-de"
TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json", "special_tokens_map.json")


def _tiny(kind: str):
    """A tiny seeded encoder-decoder of another family (vocabulary of the demo model's size is not needed)."""
    import transformers as tf

    torch.manual_seed(0)
    small = dict(vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)
    if kind == "t5":
        return tf.T5ForConditionalGeneration(tf.T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                                         num_decoder_layers=1, num_heads=2))
    if kind == "pegasus":
        return tf.PegasusForConditionalGeneration(tf.PegasusConfig(**small))
    return tf.BartForConditionalGeneration(tf.BartConfig(**small))


def _with_marian_tokenizer(folder: Path) -> Path:
    for name in TOKENIZER_FILES:
        shutil.copy(DEMO / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, Path]:
    """Model folders a careless or unlucky user may give: other families, and damaged Marian copies."""
    root = tmp_path_factory.mktemp("models")
    out = {}
    for kind in ("t5", "pegasus", "bart"):
        _tiny(kind).save_pretrained(root / kind)
        out[kind] = _with_marian_tokenizer(root / kind)
    _tiny("t5").save_pretrained(root / "t5_no_tokenizer")  # a supported family, but no tokenizer beside it
    out["t5_no_tokenizer"] = root / "t5_no_tokenizer"
    for name in ("no_weights", "truncated", "bad_config", "no_spm", "missing_tensor"):
        folder = root / name
        shutil.copytree(DEMO, folder)
        out[name] = folder
    (out["no_weights"] / "model.safetensors").unlink()
    weights = (out["truncated"] / "model.safetensors").read_bytes()
    (out["truncated"] / "model.safetensors").write_bytes(weights[: len(weights) // 2])  # a copy cut short
    (out["bad_config"] / "config.json").write_text('{"model_type": "marian", ', encoding="utf-8")
    (out["no_spm"] / "source.spm").unlink()
    # a well-formed safetensors file that lacks one tensor (a partial export)
    from safetensors.torch import load_file, save_file

    tensors = load_file(DEMO / "model.safetensors")
    dropped = next(name for name in sorted(tensors) if "layers.0.fc1.weight" in name)
    del tensors[dropped]
    save_file(tensors, out["missing_tensor"] / "model.safetensors", metadata={"format": "pt"})
    out["a_file"] = root / "a_file"
    out["a_file"].write_text("not a model", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> dict[str, Path]:
    """Bad data files: mismatched, invalid UTF-8, empty line, TMX without the languages, malformed TMX."""
    root = tmp_path_factory.mktemp("data")
    files = {
        "two.en": "One.\nTwo.\n", "three.de": "Eins.\nZwei.\nDrei.\n", "two.de": "Eins.\nZwei.\n",
        "empty.de": "Eins.\n \n", "wrong_langs.tmx": '<tmx><body><tu><tuv xml:lang="fr"><seg>Un.</seg></tuv>'
                                                     '<tuv xml:lang="es"><seg>Uno.</seg></tuv></tu></body></tmx>',
        "broken.tmx": "<tmx><body><tu>", "bad.yaml": "update: [1, 2\n", "nul.de": "Eins.\nZw\x00ei.\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "latin1.de").write_bytes("Größe.\nZwei.\n".encode("latin-1"))
    (root / "folder").mkdir()
    (root / "comet_folder").mkdir()
    return root


def _text(data: Path, source: str, reference: str) -> list[str]:
    return ["--dataset", "text", "--set", f"data.params.source={data / source}", "--set", f"data.params.reference={data / reference}"]


def cases(models: dict[str, Path], data: Path, tmp: Path) -> list[tuple[str, list[str], str]]:
    """(id, arguments, a fragment of the one-line message): simulate unless the arguments say otherwise."""
    text_ok = _text(data, "two.en", "two.de")
    return [
        # item 3 and 4: mistyped values and parameter typos name the key and the value
        ("lr-word", ["--set", "update.lr=fast"], "update.lr must be a number, got 'fast'"),
        ("seed-word", ["--set", "seed=abc"], "seed must be an integer, got 'abc'"),
        ("decoder-params-int", ["--set", "decoder.params=3"], "decoder.params must be a mapping, got 3"),
        ("method-params-list", ["--set", "method.params=[1]"], "method.params must be a mapping, got [1]"),
        ("repeats-float", ["--set", "update.max_repeats=2.5"], "update.max_repeats must be an integer, got 2.5"),
        ("lr-negative", ["--set", "update.lr=-1"], "update.lr must be > 0, got -1.0"),
        ("dropout-range", ["--set", "update.dropout=1.5"], "update.dropout must be in [0, 1), got 1.5"),
        ("checkpoint-zero", ["--set", "checkpoint_every=0"], "checkpoint_every must be >= 1, got 0"),
        ("set-into-number", ["--set", "update.lr.x=3"], "bad --set 'update.lr.x=3': lr is not a mapping"),
        ("set-no-value", ["--set", "update.lr"], "bad --set 'update.lr'; expected KEY=VALUE"),
        ("key-typo", ["--set", "update.optimiser=adam"], "unknown key update.optimiser; known: optimizer, lr"),
        ("optimizer", ["--set", "update.optimizer=adam"], "unknown update.optimizer 'adam'; known: sgd"),
        ("method-param-typo", ["--preset", "lasso", "--set", "method.params.budgt=0.1"],
         "unknown parameter 'budgt' of method 'lasso'; known: penalty"),
        ("method-param-word", ["--preset", "lasso", "--set", "method.params.penalty=high"],
         "method 'lasso' parameter penalty must be a number, got 'high'"),
        ("data-param-typo", ["--set", "data.params.sourse=a.en"], "unknown parameter 'sourse' of dataset 'libreoffice'"),
        ("beam-zero", ["--set", "decoder.params.beam_size=0"], "beam_size must be an integer >= 1, got 0"),
        ("beam-word", ["--set", "decoder.params.beam_size=two"], "parameter beam_size must be an integer, got 'two'"),
        ("decoder-name", ["--set", "decoder.name=viterbi"], "unknown decoder 'viterbi'; known: beam, greedy"),
        ("preset-name", ["--preset", "sparse"], "unknown preset 'sparse'; known: baseline"),
        ("dataset-name", ["--dataset", "wmt"], "unknown dataset 'wmt'; known: autodesk, libreoffice"),
        ("split-name", ["--split", "tets"], "unknown split 'tets' of dataset libreoffice; known:"),
        ("segments-zero", ["--segments", "0"], "data.segments must be >= 1 or null, got 0"),
        ("lang-empty", ["--set", "metrics.lang="], "metrics.lang must be a language code such as 'de', got ''"),
        ("stopwords", ["--set", "metrics.stopwords=xx"], "unknown stopword language 'xx'; known: af"),
        ("truecaser", ["--truecaser", str(tmp / "nope.model")], "truecaser model"),
        ("novel-vocab", ["--set", f"metrics.novel_vocab={tmp / 'nope.txt'}"], "does not exist"),
        ("snapshots-negative", ["--set", "snapshots.every=-1"], "snapshots.every must be >= 0, got -1"),
        ("probe", ["--set", "snapshots.probe=nowhere"], "unknown snapshots.probe 'nowhere'; known: auto, dev, stream"),
        ("quality", ["--snapshot-every", "5", "--set", "ranking.quality=bleurt"], "unknown utility 'bleurt'; known: bleu"),
        ("gain", ["--set", "ranking.gain=log"], "unknown ranking.gain 'log'; known: exp, linear"),
        ("ties", ["--set", "ranking.ties=random"], "unknown ranking.ties 'random'; known: mean, model"),
        ("stopword-case", ["--set", "metrics.stopword_case=upper"], "unknown metrics.stopword_case 'upper'; known: exact, insensitive"),
        ("token-filter", ["--set", "metrics.token_filter=none"], "unknown metrics.token_filter 'none'; known: punct-or-digits"),
        ("r-scope", ["--set", "metrics.scope=doc"], "unknown metrics.scope 'doc'; known: stream, document"),
        ("sbleu-smoothing", ["--set", "metrics.sbleu=add1"], "unknown metrics.sbleu 'add1'; known: nakov, exp"),
        ("subword-unit", ["--set", "metrics.subword=pieces"], "unknown metrics.subword 'pieces'; known: null, all, content"),
        ("rare-threshold", ["--set", "metrics.rare_threshold=-1"], "metrics.rare_threshold must be an integer >= 0, got -1"),
        ("config-missing", ["--config", str(tmp / "nope.yaml")], "config file"),
        ("config-bad-yaml", ["--config", str(data / "bad.yaml")], "not valid YAML"),
        # item 8: data files
        ("text-no-source", ["--dataset", "text"], "dataset 'text' needs source (e.g. --set data.params.source=FILE)"),
        ("text-folder", _text(data, "folder", "two.de"), "is a folder, not a file"),
        ("tmx-folder", ["--dataset", "tmx", "--set", f"data.params.path={data / 'folder'}"], "TMX file"),
        ("tsv-folder", ["--dataset", "tsv", "--set", f"data.params.path={data / 'folder'}"], "is a folder, not a file"),
        ("line-counts", _text(data, "two.en", "three.de"), "line-count mismatch"),
        ("latin1", _text(data, "two.en", "latin1.de"), "is not valid UTF-8 (line 1"),
        ("text-missing", _text(data, "two.en", "nope.de"), "does not exist"),
        ("empty-line", _text(data, "two.en", "empty.de"), "segment 2 has an empty or whitespace-only reference"),
        ("nul-byte", _text(data, "two.en", "nul.de"), "holds a NUL byte (line 2)"),
        ("segments-beyond-data", ["--segments", "3", *text_ok], "data.segments is 3 but text:"),
        ("tmx-languages", ["--dataset", "tmx", "--set", f"data.params.path={data / 'wrong_langs.tmx'}"],
         "no translation unit has both 'en' and 'de'; languages found: es, fr"),
        ("tmx-malformed", ["--dataset", "tmx", "--set", f"data.params.path={data / 'broken.tmx'}"], "not a well-formed TMX"),
        # item 9 and 4: model folders
        ("model-missing", ["--model", str(tmp / "nomodel")], "does not exist"),
        ("model-file", ["--model", str(models["a_file"])], "is a file, not a folder"),
        ("model-pegasus", ["--model", str(models["pegasus"])],
         "is a pegasus model (PegasusForConditionalGeneration), which simpe does not adapt; supported families (config.json "
         "model_type): causal (llama, mistral, qwen2, qwen3); m2m100 (m2m_100); marian (marian); mbart (mbart); t5 (t5, mt5)"),
        ("model-bart", ["--model", str(models["bart"])], "is a bart model (BartForConditionalGeneration), which simpe does not adapt"),
        # the model section: family and settings, checked before the model loads
        ("family-name", ["--set", "model.family=gpt"], "unknown model family 'gpt'; known: causal, m2m100, marian, mbart, t5"),
        ("family-mismatch", ["--set", "model.family=mbart"], "model.family is 'mbart' but model folder"),
        ("family-setting", ["--set", "model.prompt_template=Translate {source}"],
         "model.prompt_template does not apply to the marian family (it reads: tgt_lang)"),
        ("model-dtype", ["--set", "model.dtype=int8"], "unknown model.dtype 'int8'; known: float32, bfloat16, float16"),
        ("model-key", ["--set", "model.language=de"], "unknown key model.language; known: path, family, src_lang"),
        ("t5-tokenizer-missing", ["--model", str(models["t5_no_tokenizer"]), "--truecaser", "none"], "has no tokenizer files"),
        ("icl-encoder-decoder", ["--preset", "icl"], "method 'icl' puts earlier post-edits into a causal LM's prompt"),
        ("lora-targets", ["--preset", "lora", "--set", "method.params.targets=[q_proj, wi]"],
         "lora targets must be a non-empty list of q_proj, k_proj, v_proj, out_proj, fc1, fc2 (the marian family's"),
        ("model-no-weights", ["--model", str(models["no_weights"])], "has no weights (model.safetensors or pytorch_model.bin)"),
        ("model-truncated", ["--model", str(models["truncated"])], "model.safetensors is truncated"),
        ("model-bad-config", ["--model", str(models["bad_config"])], "config.json is not valid JSON"),
        ("model-no-spm", ["--model", str(models["no_spm"])], "lacks source.spm"),
        # item 4: a runs folder that cannot be written
        ("runs-under-file", ["--runs-dir", str(models["a_file"] / "runs")], "is a file, not a folder; choose another --runs-dir"),
        ("runs-unwritable", ["--runs-dir", "/proc/simpe-runs"], "is not writable"),
        # item 2: COMET before the stream
        ("comet-missing", ["--comet", str(tmp / "nocomet")], "COMET checkpoint"),
        ("comet-folder", ["--comet", str(data / "comet_folder")], "has no checkpoints/model.ckpt"),
        # item 7: select-fixed
        ("select-zero", ["select-fixed", "--segments", "0", "--out", str(tmp / "runs" / "sel.json")], "--segments must be >= 1"),
        ("select-budget", ["select-fixed", "--budget", "0", "--out", str(tmp / "runs" / "sel.json")], "budget must be a fraction"),
        ("select-pegasus", ["select-fixed", "--model", str(models["pegasus"]), "--segments", "2", "--out", str(tmp / "runs" / "sel.json")],
         "is a pegasus model"),
        ("text-ok-but-t5", [*text_ok, "--model", str(models["bart"])], "is a bart model"),
    ] + ([] if torch.cuda.is_available() else [("cuda", ["--device", "cuda"], "torch sees no CUDA GPU")])


CASE_IDS = [case[0] for case in cases({k: Path("/x") for k in ("t5", "pegasus", "bart", "no_weights", "truncated", "bad_config",
                                                             "no_spm", "missing_tensor", "a_file", "t5_no_tokenizer")},
                                       Path("/x"), Path("/x"))]


@pytest.fixture
def no_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test when any model is loaded."""
    import transformers

    def guard(*args, **kwargs):
        raise AssertionError("the model was loaded")

    for cls in (transformers.MarianMTModel, transformers.AutoModelForSeq2SeqLM, transformers.AutoModelForCausalLM):
        monkeypatch.setattr(cls, "from_pretrained", guard)


def run_cli(args: list[str], runs: Path, capsys: pytest.CaptureFixture) -> tuple[int, list[str]]:
    if args[0] != "select-fixed":
        args = ["simulate", *args, "--segments", "2", "--no-progress"] if "--segments" not in args else ["simulate", *args, "--no-progress"]
        if "--runs-dir" not in args:
            args += ["--runs-dir", str(runs)]
    capsys.readouterr()
    code = main(args)
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_bad_input_is_one_line_exit_2_before_the_model_loads_and_leaves_no_run_folder(
        case_id: str, models, data, tmp_path: Path, capsys, no_model_load) -> None:
    _, args, fragment = next(case for case in cases(models, data, tmp_path) if case[0] == case_id)
    code, lines = run_cli(args, tmp_path / "runs", capsys)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("simpe: error: "), lines
    assert fragment in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()  # nothing half-written, nothing that blocks a corrected rerun


def test_at_least_forty_bad_input_cases() -> None:
    assert len(CASE_IDS) >= 40 and len(set(CASE_IDS)) == len(CASE_IDS)


def test_a_marian_folder_lacking_a_tensor_is_refused_when_it_loads(models, tmp_path: Path, capsys) -> None:
    """Only loading tells a partial export apart: one line, exit 2, no run folder."""
    code, lines = run_cli(["--model", str(models["missing_tensor"]), "--device", "cpu"], tmp_path / "runs", capsys)
    assert code == 2 and len(lines) == 1 and "lacks 1 of its weights" in lines[0] and "fc1.weight" in lines[0], lines
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kind", ["pegasus", "bart"])
def test_load_model_refuses_other_families(kind: str, models) -> None:
    from simpe.model import load_model

    with pytest.raises(ModelError, match=f"is a {kind} model .*which simpe does not adapt; supported families"):
        load_model(models[kind], "cpu")


def test_safetensors_check_accepts_the_demo_model_and_counts_bytes(models) -> None:
    """The truncation check reads the header: the demo file is exactly 8 + header + data bytes long."""
    from simpe.model import _check_safetensors

    _check_safetensors(DEMO / "model.safetensors")
    raw = (DEMO / "model.safetensors").read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    assert 8 + header_len + max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__") == len(raw)


# ---------------------------------------------------------------- names are names (no path escapes the runs folder)
@pytest.mark.parametrize("name", [".", "..", "../../escaped", "/tmp/absolute", "a/b", "x\nrm", "-flag", ".hidden", "a..b"])
def test_a_run_name_that_is_not_a_name_is_refused_before_anything_is_written(name: str, tmp_path: Path):
    from simpe.config import load_config

    with pytest.raises(ConfigError, match="is not a valid name"):
        load_config("full", [f"adapter={name}", f"runs_dir={tmp_path / 'runs'}"])
    assert not (tmp_path / "runs").exists()


def test_overwrite_removes_only_a_run_and_leaves_a_sibling_and_foreign_files(tmp_path: Path):
    """--overwrite on a folder holding a user's notes beside a run's files: refused, nothing removed; a sibling run and
    a foreign file in the group folder survive an overwrite of a real run."""
    from simpe.config import load_config
    from simpe.simulate import Loop

    overrides = ["data.segments=2", "snapshots.every=0", f"runs_dir={tmp_path}", "device=cpu"]
    first = Loop(load_config("baseline", overrides), progress=False).run()
    sibling = Loop(load_config("bias", overrides), progress=False).run()
    notes = first.parent / "notes.txt"
    notes.write_text("mine")
    Loop(load_config("baseline", overrides), progress=False).run(overwrite=True)  # a real run: overwritten
    assert notes.read_text() == "mine" and (sibling / "DONE").exists() and (first / "DONE").exists()
    (first / "my-notes.md").write_text("keep me")
    with pytest.raises(RunDirError, match="holds files that are not a simpe run's \\(my-notes.md\\); --overwrite removes only a run"):
        Loop(load_config("baseline", overrides), progress=False).run(overwrite=True)
    assert (first / "my-notes.md").read_text() == "keep me" and (first / "DONE").exists()


def test_a_resume_under_another_thread_count_is_refused_unless_asked_and_then_recorded(tmp_path: Path):
    """Records depend on the thread count (docs/reproducibility.md): an interrupted 1-thread run resumed with 2 threads
    is refused in one line naming the difference; --resume-anyway goes on and records it in env.json and the summary."""
    from simpe.config import load_config
    from simpe.simulate import Loop

    overrides = ["data.segments=4", "checkpoint_every=2", "snapshots.every=0", f"runs_dir={tmp_path}", "device=cpu"]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        path = Loop(load_config("full", overrides), progress=False).run(stop_after=3)
        torch.set_num_threads(2)
        with pytest.raises(RunDirError, match=r"ran in another environment: torch_threads \(the run has 1, now 2\);.*--resume-anyway"):
            Loop(load_config("full", overrides), progress=False).run(resume=True)
        assert not (path / "DONE").exists()
        Loop(load_config("full", overrides), progress=False).run(resume_anyway=True)
    finally:
        torch.set_num_threads(threads)
    env = json.loads((path / "env.json").read_text())
    summary = json.loads((path / "summary.json").read_text())
    change = [{"segment": 2, "changes": ["torch_threads (the run has 1, now 2)"]}]
    assert env["resumed_in_another_environment"] == change and summary["resumed_in_another_environment"] == change
    assert (path / "DONE").exists()


@pytest.mark.parametrize("argv, fragment", [(["simulate", "--segments", "ten"], "simulate: argument --segments: invalid int value: 'ten'"),
                                            (["simulat"], "invalid choice: 'simulat'"),
                                            (["simulate", "--segmnets", "3"], "unrecognized arguments: --segmnets 3")])
def test_a_bad_flag_is_one_line(argv: list[str], fragment: str, capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.startswith("simpe: error: ") and fragment in err


def _one_line(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("simpe: error: "), err
    return err


def test_a_garbage_fixed_selection_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    selection = tmp_path / "garbage.json"
    selection.write_text("garbage{")
    err = _one_line(["simulate", "--preset", "fixed", "--set", f"method.params.selection={selection}", "--segments", "1",
                     "--runs-dir", str(tmp_path / "runs")], capsys)
    assert "is not a fixed selection made by `simpe select-fixed`" in err and not (tmp_path / "runs").exists()


def test_config_given_a_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    assert "is a folder; give a config.yaml" in _one_line(["simulate", "--config", str(tmp_path)], capsys)


@pytest.mark.parametrize("content", [b"BZh91AY&SY", b"not bz2 at all"], ids=["cut", "not-bz2"])
def test_a_damaged_autodesk_file_is_one_line(content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "deu.mt.bz2").write_bytes(content)
    monkeypatch.setenv("SIMPE_AUTODESK_DIR", str(tmp_path))
    err = _one_line(["simulate", "--dataset", "autodesk", "--segments", "1", "--runs-dir", str(tmp_path / "runs")], capsys)
    assert "deu.mt.bz2 is not a complete bz2 file" in err
