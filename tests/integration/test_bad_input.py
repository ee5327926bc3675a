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
from messages import raises_naming

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
    for name in ("no_weights", "truncated", "bad_config", "no_spm", "missing_tensor", "negative_layers"):
        folder = root / name
        shutil.copytree(DEMO, folder)
        out[name] = folder
    (out["no_weights"] / "model.safetensors").unlink()
    weights = (out["truncated"] / "model.safetensors").read_bytes()
    (out["truncated"] / "model.safetensors").write_bytes(weights[: len(weights) // 2])  # a copy cut short
    (out["bad_config"] / "config.json").write_text('{"model_type": "marian", ', encoding="utf-8")
    (out["no_spm"] / "source.spm").unlink()
    config = json.loads((out["negative_layers"] / "config.json").read_text(encoding="utf-8"))
    (out["negative_layers"] / "config.json").write_text(json.dumps({**config, "num_hidden_layers": -1}), encoding="utf-8")
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
        # glossaries (issue 57): a line without its tab, another language pair, no entry, a source term twice
        "untabbed.tsv": "Cells\tZellen\nSheet Tabelle\n", "french.tsv": "#langs en fr\nCells\tCellules\n",
        "comments.tsv": "# nothing but a comment\n\n", "twice.tsv": "Cells\tZellen\nCells\tZelle\n",
        "french.tbx": '<martif type="TBX" xml:lang="en"><text><body><termEntry id="1"><langSet xml:lang="en"><tig>'
                      '<term>Cells</term></tig></langSet><langSet xml:lang="fr"><tig><term>Cellules</term></tig></langSet>'
                      '</termEntry></body></text></martif>',
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
    """(id, arguments, the key fragments of the one-line message: the key or flag, the bad value, the valid values):
    simulate unless the arguments say otherwise. The fragments pin what a user needs, not the sentence around them."""
    text_ok = _text(data, "two.en", "two.de")
    return [
        # issue 57: a bad glossary, and constrained decoding without one
        ("glossary-untabbed", ["--glossary", str(data / "untabbed.tsv")], ('untabbed.tsv', 'line 2', 'source<TAB>target')),
        ("glossary-languages", ["--glossary", str(data / "french.tsv")], ('french.tsv', 'en->fr', 'en->de')),
        ("glossary-tbx-languages", ["--glossary", str(data / "french.tbx")], ('french.tbx', 'en, fr', 'en->de')),
        ("glossary-empty", ["--glossary", str(data / "comments.tsv")], ('comments.tsv', 'no en->de entry')),
        ("glossary-twice", ["--glossary", str(data / "twice.tsv")], ('twice.tsv', 'line 2', "'Cells'", 'line 1')),
        ("glossary-missing", ["--glossary", str(tmp / "none.tsv")], ('none.tsv', 'not a file', 'dataset')),
        ("glossary-of-text-dataset", [*text_ok, "--glossary", "dataset"], ("'text'", 'no glossary of its own')),
        ("constrained-without-glossary", ["--set", "decoder.name=constrained_beam"], ("'constrained_beam'", '--glossary')),
        # item 3 and 4: mistyped values and parameter typos name the key and the value
        ("lr-word", ["--set", "update.lr=fast"], ('update.lr', 'number', "'fast'")),
        ("seed-word", ["--set", "seed=abc"], ('seed', 'integer', "'abc'")),
        ("decoder-params-int", ["--set", "decoder.params=3"], ('decoder.params', 'mapping', '3')),
        ("method-params-list", ["--set", "method.params=[1]"], ('method.params', 'mapping', '[1]')),
        ("repeats-float", ["--set", "update.max_repeats=2.5"], ('update.max_repeats', 'integer', '2.5')),
        ("lr-negative", ["--set", "update.lr=-1"], ('update.lr', '> 0', '-1')),
        ("dropout-range", ["--set", "update.dropout=1.5"], ('update.dropout', '[0, 1)', '1.5')),
        ("checkpoint-zero", ["--set", "checkpoint_every=0"], ('checkpoint_every', '>= 1', '0')),
        ("set-into-number", ["--set", "update.lr.x=3"], ("'update.lr.x=3'", 'not a mapping')),
        ("set-no-value", ["--set", "update.lr"], ("'update.lr'", 'KEY=VALUE')),
        ("key-typo", ["--set", "update.optimiser=adam"], ('update.optimiser', 'optimizer', 'lr')),
        ("optimizer", ["--set", "update.optimizer=adam"], ('update.optimizer', "'adam'", 'sgd')),
        ("method-param-typo", ["--preset", "lasso", "--set", "method.params.budgt=0.1"],
         ("'budgt'", "'lasso'", 'penalty')),
        ("method-param-word", ["--preset", "lasso", "--set", "method.params.penalty=high"],
         ("'lasso'", 'penalty', 'number', "'high'")),
        ("data-param-typo", ["--set", "data.params.sourse=a.en"], ("'sourse'", "'libreoffice'")),
        ("beam-zero", ["--set", "decoder.params.beam_size=0"], ('beam_size', '[1, 10,000]', '0')),
        ("beam-word", ["--set", "decoder.params.beam_size=two"], ('beam_size', 'integer', "'two'")),
        # hostile input round 2, class 4: values that are not values (non-finite floats, sizes past any machine)
        ("lr-inf", ["--set", "update.lr=.inf"], ('update.lr', 'finite number', 'inf')),
        ("lr-nan", ["--set", "update.lr=nan"], ('update.lr', 'finite number', "'nan'")),
        ("ppl-inf", ["--set", "update.ppl_threshold=.inf"], ('update.ppl_threshold', 'finite number', 'inf')),
        ("ppl-zero", ["--set", "update.ppl_threshold=0"], ('update.ppl_threshold', '> 0', '0')),
        ("knn-temperature-nan", ["--preset", "knn", "--set", "method.params.temperature=.nan"], ('temperature', 'finite number', 'nan')),
        ("beam-huge", ["--set", "decoder.params.beam_size=1000000000"], ('beam_size', '[1, 10,000]', '1000000000')),
        ("max-len-a-inf", ["--set", "decoder.params.max_len_a=.inf"], ('max_len_a', 'finite number', 'inf')),
        ("decoder-name", ["--set", "decoder.name=viterbi"], ("'viterbi'", 'beam', 'greedy')),
        ("preset-name", ["--preset", "sparse"], ("'sparse'", 'baseline')),
        ("dataset-name", ["--dataset", "wmt"], ("'wmt'", 'autodesk', 'libreoffice')),
        ("split-name", ["--split", "tets"], ("'tets'", 'libreoffice', 'stream')),
        ("segments-zero", ["--segments", "0"], ('data.segments', '>= 1', '0')),
        ("lang-empty", ["--set", "metrics.lang="], ('metrics.lang', "''")),
        ("stopwords", ["--set", "metrics.stopwords=xx"], ("'xx'", 'af')),
        ("truecaser", ["--truecaser", str(tmp / "nope.model")], ('truecaser', 'nope.model')),
        ("novel-vocab", ["--set", f"metrics.novel_vocab={tmp / 'nope.txt'}"], ('nope.txt', 'does not exist')),
        ("snapshots-negative", ["--set", "snapshots.every=-1"], ('snapshots.every', '>= 0', '-1')),
        ("probe", ["--set", "snapshots.probe=nowhere"], ('snapshots.probe', "'nowhere'", 'auto', 'dev', 'stream')),
        ("quality", ["--snapshot-every", "5", "--set", "ranking.quality=bleurt"], ("'bleurt'", 'bleu')),
        ("gain", ["--set", "ranking.gain=log"], ('ranking.gain', "'log'", 'exp', 'linear')),
        ("ties", ["--set", "ranking.ties=random"], ('ranking.ties', "'random'", 'mean', 'model')),
        ("stopword-case", ["--set", "metrics.stopword_case=upper"], ('metrics.stopword_case', "'upper'", 'exact', 'insensitive')),
        ("token-filter", ["--set", "metrics.token_filter=none"], ('metrics.token_filter', "'none'", 'punct-or-digits')),
        ("r-scope", ["--set", "metrics.scope=doc"], ('metrics.scope', "'doc'", 'stream', 'document')),
        ("sbleu-smoothing", ["--set", "metrics.sbleu=add1"], ('metrics.sbleu', "'add1'", 'nakov', 'exp')),
        ("subword-unit", ["--set", "metrics.subword=pieces"], ('metrics.subword', "'pieces'", 'null', 'all', 'content')),
        ("rare-threshold", ["--set", "metrics.rare_threshold=-1"], ('metrics.rare_threshold', '>= 0', '-1')),
        ("config-missing", ["--config", str(tmp / "nope.yaml")], ('nope.yaml',)),
        ("config-bad-yaml", ["--config", str(data / "bad.yaml")], ('bad.yaml', 'YAML')),
        # item 8: data files
        ("text-no-source", ["--dataset", "text"], ("'text'", 'source', '--set data.params.source=')),
        ("text-folder", _text(data, "folder", "two.de"), ('folder', 'not a file')),
        ("tmx-folder", ["--dataset", "tmx", "--set", f"data.params.path={data / 'folder'}"], ('folder', 'TMX')),
        ("tsv-folder", ["--dataset", "tsv", "--set", f"data.params.path={data / 'folder'}"], ('folder', 'not a file')),
        ("line-counts", _text(data, "two.en", "three.de"), ('two.en', 'three.de', 'mismatch')),
        ("latin1", _text(data, "two.en", "latin1.de"), ('latin1.de', 'UTF-8', 'line 1')),
        ("text-missing", _text(data, "two.en", "nope.de"), ('nope.de', 'does not exist')),
        ("empty-line", _text(data, "two.en", "empty.de"), ('segment 2', 'empty')),
        ("nul-byte", _text(data, "two.en", "nul.de"), ('nul.de', 'NUL', 'line 2')),
        ("segments-beyond-data", ["--segments", "3", *text_ok], ('data.segments', '3')),
        ("tmx-languages", ["--dataset", "tmx", "--set", f"data.params.path={data / 'wrong_langs.tmx'}"],
         ('wrong_langs.tmx', "'en'", "'de'", 'es, fr')),
        ("tmx-malformed", ["--dataset", "tmx", "--set", f"data.params.path={data / 'broken.tmx'}"], ('broken.tmx', 'TMX')),
        ("hf-param-typo", ["--dataset", "hf", "--set", "data.params.source_col=src"],
         ("'source_col'", "'hf'", 'path', 'source_column', 'target_column', 'document_column', 'stream_split')),
        ("hf-no-path", ["--dataset", "hf"], ("'hf'", '--set data.params.path=DIR')),
        ("hf-empty-folder", ["--dataset", "hf", "--set", f"data.params.path={data / 'folder'}"], ('folder', 'holds no', '*.parquet')),
        # item 9 and 4: model folders
        ("model-missing", ["--model", str(tmp / "nomodel")], ('nomodel', 'does not exist')),
        ("model-file", ["--model", str(models["a_file"])], ('a_file', 'not a folder')),
        ("model-pegasus", ["--model", str(models["pegasus"])],
         ('pegasus', 'PegasusForConditionalGeneration', 'causal', 'llama', 'm2m100', 'marian', 'mbart', 't5', 'mt5')),
        ("model-bart", ["--model", str(models["bart"])], ('bart', 'BartForConditionalGeneration')),
        # the model section: family and settings, checked before the model loads
        ("family-name", ["--set", "model.family=gpt"], ("'gpt'", 'causal', 'm2m100', 'marian', 'mbart', 't5')),
        ("family-mismatch", ["--set", "model.family=mbart"], ('model.family', "'mbart'")),
        ("family-setting", ["--set", "model.prompt_template=Translate {source}"],
         ('model.prompt_template', 'marian', 'tgt_lang')),
        ("model-dtype", ["--set", "model.dtype=int8"], ('model.dtype', "'int8'", 'float32', 'bfloat16', 'float16')),
        ("model-key", ["--set", "model.language=de"], ('model.language', 'path', 'family', 'src_lang')),
        ("t5-tokenizer-missing", ["--model", str(models["t5_no_tokenizer"]), "--truecaser", "none"], ('t5_no_tokenizer', 'tokenizer')),
        ("icl-encoder-decoder", ["--preset", "icl"], ("'icl'", 'causal')),
        ("lora-targets", ["--preset", "lora", "--set", "method.params.targets=[q_proj, wi]"],
         ('lora', 'targets', 'q_proj', 'out_proj', 'fc1', 'fc2', 'marian')),
        ("model-no-weights", ["--model", str(models["no_weights"])], ('no_weights', 'model.safetensors')),
        ("model-truncated", ["--model", str(models["truncated"])], ('model.safetensors', 'truncated')),
        ("model-bad-config", ["--model", str(models["bad_config"])], ('config.json', 'JSON')),
        ("model-negative-layers", ["--model", str(models["negative_layers"])], ('config.json', 'num_hidden_layers', '[1, 10,000,000]', '-1')),
        ("model-no-spm", ["--model", str(models["no_spm"])], ('source.spm',)),
        # item 4: a runs folder that cannot be written
        ("runs-under-file", ["--runs-dir", str(models["a_file"] / "runs")], ('a_file', '--runs-dir')),
        ("runs-unwritable", ["--runs-dir", "/proc/simpe-runs"], ('/proc/simpe-runs', 'not writable')),
        # item 2: COMET before the stream
        ("comet-missing", ["--comet", str(tmp / "nocomet")], ('nocomet', 'COMET')),
        ("comet-folder", ["--comet", str(data / "comet_folder")], ('comet_folder', 'checkpoints/model.ckpt')),
        # item 7: select-fixed
        ("select-zero", ["select-fixed", "--segments", "0", "--out", str(tmp / "runs" / "sel.json")], ('--segments', '>= 1')),
        ("select-budget", ["select-fixed", "--budget", "0", "--out", str(tmp / "runs" / "sel.json")], ('budget',)),
        ("select-pegasus", ["select-fixed", "--model", str(models["pegasus"]), "--segments", "2", "--out", str(tmp / "runs" / "sel.json")],
         ('pegasus',)),
        ("text-ok-but-t5", [*text_ok, "--model", str(models["bart"])], ('bart',)),
    ] + ([] if torch.cuda.is_available() else [("cuda", ["--device", "cuda"], ('CUDA',))])


CASE_IDS = [case[0] for case in cases({k: Path("/x") for k in ("t5", "pegasus", "bart", "no_weights", "truncated", "bad_config",
                                                             "no_spm", "missing_tensor", "a_file", "t5_no_tokenizer",
                                                             "negative_layers")},
                                       Path("/x"), Path("/x"))]


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
    _, args, fragments = next(case for case in cases(models, data, tmp_path) if case[0] == case_id)
    code, lines = run_cli(args, tmp_path / "runs", capsys)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("simpe: error: "), lines
    assert [f for f in fragments if f not in lines[0]] == [], lines[0]
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

    with raises_naming(ModelError, f"is a {kind} model", "supported families"):
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
    from simpe.config.files import load_config

    with pytest.raises(ConfigError, match="is not a valid name"):
        load_config("full", [f"adapter={name}", f"runs_dir={tmp_path / 'runs'}"])
    assert not (tmp_path / "runs").exists()


def test_overwrite_removes_only_a_run_and_leaves_a_sibling_and_foreign_files(tmp_path: Path):
    """--overwrite on a folder holding a user's notes beside a run's files: refused, nothing removed; a sibling run and
    a foreign file in the group folder survive an overwrite of a real run."""
    from simpe.config.files import load_config
    from simpe.loop.run import Loop

    overrides = ["data.segments=2", "snapshots.every=0", f"runs_dir={tmp_path}", "device=cpu"]
    first = Loop(load_config("baseline", overrides), progress=False).run()
    sibling = Loop(load_config("bias", overrides), progress=False).run()
    notes = first.parent / "notes.txt"
    notes.write_text("mine")
    Loop(load_config("baseline", overrides), progress=False).run(overwrite=True)  # a real run: overwritten
    assert notes.read_text() == "mine" and (sibling / "DONE").exists() and (first / "DONE").exists()
    (first / "my-notes.md").write_text("keep me")
    with raises_naming(RunDirError, "my-notes.md", "--overwrite"):
        Loop(load_config("baseline", overrides), progress=False).run(overwrite=True)
    assert (first / "my-notes.md").read_text() == "keep me" and (first / "DONE").exists()


def test_a_resume_under_another_thread_count_is_refused_unless_asked_and_then_recorded(tmp_path: Path):
    """Records depend on the thread count (docs/reproducibility.md): an interrupted 1-thread run resumed with 2 threads
    is refused in one line naming the difference; --resume-anyway goes on and records it in env.json and the summary."""
    from simpe.config.files import load_config
    from simpe.loop.run import Loop

    overrides = ["data.segments=4", "checkpoint_every=2", "snapshots.every=0", f"runs_dir={tmp_path}", "device=cpu"]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        path = Loop(load_config("full", overrides), progress=False).run(stop_after=3)
        torch.set_num_threads(2)
        with raises_naming(RunDirError, "torch_threads", "1, now 2", "--resume-anyway"):
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


@pytest.mark.parametrize("argv, fragments", [(["simulate", "--segments", "ten"], ("--segments", "'ten'")),
                                             (["simulat"], ("'simulat'", "simulate")),
                                             (["simulate", "--segmnets", "3"], ("--segmnets",))])
def test_a_bad_flag_is_one_line(argv: list[str], fragments: tuple[str, ...], capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.startswith("simpe: error: ")
    assert [f for f in fragments if f not in err] == [], err


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
