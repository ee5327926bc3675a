"""Per-user stores: a run's final adapted state exported, then applied to a fresh base model, translates exactly as
the adapted model does at the end of the run; its size is the reported store bytes plus the safetensors header."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.decoders import DECODERS
from simpe.errors import ConfigError, ModelError
from simpe.loop.run import Loop
from simpe.model import load_model
from simpe.rundir.reader import read_jsonl
from simpe.store.translate import translate_file, translate_lines
from simpe.store.user import apply_store, export_store, read_store

METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn"]


def _run(tmp_path: Path, adapter: str, segments: int) -> Loop:
    overrides = [f"runs_dir={tmp_path / 'runs'}", f"data.segments={segments}", "device=cpu", "update.lr=0.05"]
    loop = Loop(load_config(adapter, overrides), progress=False)
    loop.run()
    loop.timer.remove()
    return loop


def _check_store_reproduces_the_run(tmp_path: Path, adapter: str, segments: int) -> dict:
    loop = _run(tmp_path, adapter, segments)
    sources = [r["source"] for r in read_jsonl(loop.path / "segments.jsonl")]
    adapted = translate_lines(loop.model, loop.tokenizer, loop.decoder, sources, loop.loaded.device)
    info = export_store(loop.path, tmp_path / f"{adapter}.safetensors")
    summary = json.loads((loop.path / "summary.json").read_text())
    # the file: 8 bytes of header length, the JSON header, then exactly the reported store bytes of tensor data
    path = Path(info["path"])
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    assert info["file_bytes"] == path.stat().st_size == summary["store_file_bytes"]
    assert info["data_bytes"] == summary["store_bytes"] == info["file_bytes"] - 8 - header_len
    assert info["header_bytes"] == 8 + header_len
    tensors, metadata = read_store(path)
    assert metadata.method == adapter and metadata.base_model == "demo-en-de"
    if adapter != "knn":  # knn stores a datastore (keys, values), not parameters
        assert sum(t.numel() for t in tensors.values() if t.is_floating_point()) == summary["adapted_parameters"]
    # a fresh base model with the store applied translates every stream source as the adapted model does
    src = tmp_path / "src.en"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    assert translate_file(None, src, path, device="cpu") == adapted
    return {"adapted": adapted, "sources": sources, "info": info}


# make test keeps full (a parameter store) and knn (a datastore): the file, its sizes and translate --store are the
# same code for every method, and every method's own export_store/load_store round trip is checked on every family
# by tests/unit/test_models.py::test_every_method_on_every_family; make test-slow runs the other methods here too
IN_MAKE_TEST = ("full", "knn")


@pytest.mark.parametrize("adapter", [m if m in IN_MAKE_TEST else pytest.param(m, marks=pytest.mark.slow) for m in METHODS])
def test_export_then_translate_with_the_store_reproduces_the_adapted_model(tmp_path: Path, adapter: str, one_torch_thread):
    result = _check_store_reproduces_the_run(tmp_path, adapter, segments=3)
    base = translate_file(None, tmp_path / "src.en", None, device="cpu")
    if adapter == "baseline":
        assert result["info"]["data_bytes"] == 0 and result["adapted"] == base
    elif adapter in ("full", "lasso"):  # lr 0.05 on three post-edits changes what these translate
        assert result["adapted"] != base


@pytest.mark.slow
@pytest.mark.parametrize("adapter", METHODS)
def test_store_of_a_30_segment_run(tmp_path: Path, adapter: str, one_torch_thread):
    info = _check_store_reproduces_the_run(tmp_path, adapter, segments=30)["info"]
    print(f"\n{adapter}: file {info['file_bytes']} bytes = store_bytes {info['reported_store_bytes']} + header {info['header_bytes']}")


def test_store_applies_with_another_decoder_and_refuses_another_base_model(tmp_path: Path, one_torch_thread, capsys):
    from simpe.cli import main

    loop = _run(tmp_path, "bias", 2)
    assert main(["export-store", str(loop.path), "--out", str(tmp_path / "bias.safetensors")]) == 0
    # the bias method's store: one (vocab,) float32 tensor
    vocab = loop.model.lm_head.out_features
    header = 8 + struct.unpack("<Q", (tmp_path / "bias.safetensors").read_bytes()[:8])[0]
    assert capsys.readouterr().out == (f"wrote {tmp_path / 'bias.safetensors'}: bias store for demo-en-de, "
                                       f"{4 * vocab + header} bytes = {4 * vocab} bytes of tensors (the run's store_bytes: "
                                       f"{4 * vocab}) + {header} bytes of safetensors header\n")
    info = {"path": str(tmp_path / "bias.safetensors")}
    greedy = DECODERS.build("greedy")
    greedy.bind(loop.tokenizer)
    sources = ["Choose Format - Cells.", "Click OK."]
    src = tmp_path / "src.en"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    assert translate_file(None, src, Path(info["path"]), decoder="greedy", device="cpu") == \
        translate_lines(loop.model, loop.tokenizer, greedy, sources, loop.loaded.device)
    fresh = load_model(None, "cpu")
    # (a Marian store names no config hash: store_base_metadata; the model met names its own)
    with pytest.raises(ModelError, match=r"was made for base model 'demo-en-de' \(marian\), not for "
                                         r"'other' \(marian, config [0-9a-f]{16}\); pass --model models/demo-en-de"):
        apply_store(fresh.model, "other", Path(info["path"]))
    with pytest.raises(ConfigError, match="exists; pass --overwrite"):
        export_store(loop.path, Path(info["path"]))
    (tmp_path / "junk.safetensors").write_bytes(b"not a store")
    with pytest.raises(ConfigError, match="junk.safetensors is not a safetensors file"):
        read_store(tmp_path / "junk.safetensors")
    assert main(["translate", "--store", str(tmp_path / "missing.safetensors"), "-i", str(src)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (f"simpe: error: store file {tmp_path / 'missing.safetensors'} does not exist "
                                               "(make one with `simpe export-store RUN --out FILE`)")


def test_a_store_is_a_system_to_rank_the_adapted_model(tmp_path: Path, one_torch_thread, capsys):
    """``rank --models`` takes a run's store as a system: the base model its metadata names, with the store applied."""
    import torch

    from simpe.cli import main
    from simpe.measure.rank import load_system
    from simpe.paths import DEFAULT_MODEL

    loop = _run(tmp_path, "full", segments=3)
    system = load_system(loop.path / "store.safetensors", "cpu")
    adapted = dict(loop.model.named_parameters())
    assert all(torch.equal(p, adapted[n]) for n, p in system.model.named_parameters())
    src, ref = tmp_path / "t.en", tmp_path / "t.de"
    src.write_text("Click OK.\nSave the file.\n", encoding="utf-8")
    ref.write_text("Klicken Sie auf OK.\nSpeichern Sie die Datei.\n", encoding="utf-8")
    out = tmp_path / "corr"
    assert main(["rank", "--models", str(DEFAULT_MODEL), str(loop.path / "store.safetensors"), "--src", str(src),
                 "--ref", str(ref), "--out", str(out), "--no-top", "--samples", "6", "--mbr-samples", "4", "--device", "cpu"]) == 0
    rows = json.loads((out / "correlation.json").read_text(encoding="utf-8"))["models"]
    assert [r["name"] for r in rows] == ["demo-en-de", "full"]  # a run's store is named by its run
