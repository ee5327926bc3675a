"""Every model family through the online loop: records, ranking snapshots, stores, export-store,
translate --adapter and simpe rank, on the tiny checkpoints of ``tests/tiny_families.py``.

The tiny models are random: their translations and scores mean nothing; what is checked is
the mechanics (the loop runs, the store reproduces the adapted model, the settings travel).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_families import SETTINGS

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.rundir.reader import read_jsonl
from simpe.store.translate import translate_file, translate_lines
from simpe.store.user import export_store, read_store

REPO = Path(__file__).resolve().parents[2]
TRUECASER = REPO / "models" / "demo-en-de" / "truecase.de.model"
SMALL = ["data.segments=3", "device=cpu", "decoder.params={beam_size: 2, max_len_a: 0.0, max_len_b: 6, max_len_cap: 6}",
         f"metrics.truecaser={TRUECASER}", "snapshots.every=0"]
SNAPSHOTS = ["snapshots.every=2", "snapshots.probe_size=2", "snapshots.probe=dev", "ranking.k=2", "ranking.samples=4",
             "ranking.beam_size=2", "ranking.max_expansions=100", "ranking.max_len_a=0.0", "ranking.max_len_b=3", "ranking.max_len_cap=3"]


def _settings(kind: str) -> list[str]:
    return [f"model.{key}={value}" for key, value in SETTINGS[kind].items()]


def _run(tmp_path: Path, folder: Path, kind: str, adapter: str, extra: list[str] = ()) -> Loop:
    overrides = [f"model.path={folder}", *_settings(kind), f"runs_dir={tmp_path / 'runs'}", *SMALL, *extra]
    loop = Loop(load_config(adapter, overrides), progress=False)
    loop.run()
    loop.timer.remove()
    return loop


def _reproduces(tmp_path: Path, loop: Loop, kind: str, folder: Path, adapter: str) -> dict:
    """export-store, then translate --store on a fresh base: the adapted model's outputs."""
    sources = [r["source"] for r in read_jsonl(loop.path / "segments.jsonl")]
    adapted = translate_lines(loop.model, loop.tokenizer, loop.decoder, sources, loop.loaded.device, loop.method)
    info = export_store(loop.path, tmp_path / f"{kind}-{adapter}.safetensors")
    _, metadata = read_store(Path(info["path"]))
    src = tmp_path / f"{kind}.src"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    again = translate_file(str(folder), src, Path(info["path"]), decoder="beam", device="cpu",
                           decoder_params={"beam_size": 2, "max_len_a": 0.0, "max_len_b": 6, "max_len_cap": 6})
    assert again == adapted
    return metadata


@pytest.mark.parametrize("kind, adapter", [("mbart", "lasso"), ("m2m100", "top"), ("nllb", "bias"), ("t5", "knn"), ("llama", "lora")])
def test_a_short_run_with_snapshots_and_its_store(kind: str, adapter: str, family_model, tmp_path: Path, one_torch_thread) -> None:
    folder = family_model(kind)
    loop = _run(tmp_path, folder, kind, adapter, SNAPSHOTS)
    records = read_jsonl(loop.path / "segments.jsonl")
    snapshots = read_jsonl(loop.path / "snapshots.jsonl")
    summary = json.loads((loop.path / "summary.json").read_text())
    assert len(records) == 3 and summary["model"] == folder.name and [s["segment"] for s in snapshots] == [2]
    assert snapshots[0]["probe_size"] == 2 and snapshots[0]["top.krg"] is not None and snapshots[0]["mc.krg"] is not None
    assert all(r["update"]["skipped"] is None for r in records)
    metadata = _reproduces(tmp_path, loop, kind, folder, adapter)
    assert metadata.model_family == loop.loaded.family.name and metadata.model_settings["tgt_lang"] == \
        SETTINGS[kind].get("tgt_lang")


@pytest.mark.parametrize("adapter", ["full", "lora", "knn", "icl"])
def test_a_causal_lm_with_a_chat_template_through_the_loop(adapter: str, family_model, tmp_path: Path, one_torch_thread) -> None:
    """Qwen2 with its ChatML template: each method runs; icl's records count the prompt's examples (earlier
    segments only: none for the first) and its store reproduces the prompts."""
    folder = family_model("qwen2")
    loop = _run(tmp_path, folder, "qwen2", adapter)
    records = read_jsonl(loop.path / "segments.jsonl")
    summary = json.loads((loop.path / "summary.json").read_text())
    if adapter == "icl":
        assert [r.get("examples", 0) for r in records] == [0, 1, 2]
        assert summary["adapted_parameters"] == 0 and summary["store_bytes"] > 0
    if adapter in ("full", "lora"):
        assert all(r["update"]["repetitions"] >= 1 for r in records)
    _reproduces(tmp_path, loop, "qwen2", folder, adapter)


def test_rank_on_another_family(family_model, tmp_path: Path, capsys) -> None:
    """simpe rank takes the model section's settings as flags (here T5's <2de> prefix)."""
    from simpe.cli import main

    src, ref = tmp_path / "probe.en", tmp_path / "probe.de"
    src.write_text("Click OK.\nPress Enter.\n", encoding="utf-8")
    ref.write_text("Klicken Sie auf OK.\nDrücken Sie die Eingabetaste.\n", encoding="utf-8")
    code = main(["rank", "--model", str(family_model("t5")), "--tgt-lang", "de", "--src", str(src), "--ref", str(ref),
                 "--out", str(tmp_path / "rank"), "--k", "2", "--samples", "4", "--max-expansions", "50", "--device", "cpu",
                 "--threads", "1"])
    assert code == 0, capsys.readouterr().err
    records = read_jsonl(tmp_path / "rank" / "records.jsonl")
    assert len(records) == 2 and all(len(r["top"]["hypotheses"]) >= 1 for r in records)
    assert main(["rank", "--model", str(family_model("t5")), "--tgt-lang", "xx", "--src", str(src), "--ref", str(ref),
                 "--out", str(tmp_path / "rank2"), "--device", "cpu"]) == 2
    assert "the tokenizer has no <2xx> token" in capsys.readouterr().err


def test_a_causal_lms_prompt_says_the_glossary_terms(family_model, tmp_path: Path, one_torch_thread) -> None:
    """data.glossary_prompt: segment 1 of the stream ("More explanations on top of this page.") holds the glossary's
    "More" (-> "Zusätze"): its prompt says so, in the plain template (llama) and the chat template (qwen2), for the
    translation and the update alike; segment 0 holds no term and its prompt is the one without a glossary. Refused
    before the model loads: another family, a template without {terms}, no glossary."""
    from simpe.errors import ConfigError

    for kind in ("llama", "qwen2"):
        folder = family_model(kind)
        overrides = [f"model.path={folder}", *_settings(kind), f"runs_dir={tmp_path / kind}", *SMALL,
                     "data.glossary=dataset", "data.glossary_prompt=true"]
        loop = Loop(load_config("baseline", overrides), progress=False)
        loop.load()
        plain = Loop(load_config("baseline", overrides[:-1] + [f"runs_dir={tmp_path / 'plain'}"]), progress=False)
        plain.load()
        for index, said in ((0, None), (1, "Use these term translations: More = Zusätze.")):
            draft = loop.translate(index, loop.segments[index])
            prompt = loop.tokenizer.decode(draft.pair.input_ids[0].tolist())
            unsaid = plain.tokenizer.decode(plain.translate(index, plain.segments[index]).pair.input_ids[0].tolist())
            if said is None:
                assert prompt == unsaid and draft.terms == ()
            else:
                assert said in prompt and "term translations" not in unsaid and draft.terms == (("More", "Zusätze"),)
                assert prompt.index(said) < prompt.index("More explanations")  # before the source line
            assert loop.corrected(draft, draft.segment.reference + " x").pair.input_ids.tolist() == draft.pair.input_ids.tolist()
        loop.timer.remove()
        plain.timer.remove()
    with pytest.raises(ConfigError, match="the marian family has no prompt"):
        Loop(load_config("baseline", [f"runs_dir={tmp_path}", "data.glossary=dataset", "data.glossary_prompt=true"]))
    with pytest.raises(ConfigError, match="no glossary"):
        Loop(load_config("baseline", [f"runs_dir={tmp_path}", "data.glossary_prompt=true"]))
    template = "model.prompt_template='Translate: {source}'"
    with pytest.raises(ConfigError, match="has no \\{terms\\} field"):
        Loop(load_config("baseline", [f"model.path={family_model('llama')}", *_settings("llama"), template,
                                      f"runs_dir={tmp_path}", "data.glossary=dataset", "data.glossary_prompt=true"]))
