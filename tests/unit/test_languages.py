"""A stream's languages against the model's (simpe.models.languages): worked out by hand from the demo model's
tokenizer_config.json (source_lang en, target_lang de) and the families' code tables."""
from __future__ import annotations

from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.datasets import DATASETS
from simpe.datasets.languages import base, check_languages, family_codes, model_pair, pair_text, stream_pair
from simpe.errors import ConfigError
from simpe.paths import DEFAULT_MODEL
from simpe.rundir.layout import group_digest

XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <file original="a.html" source-language="en-US" target-language="{tgt}" datatype="html"><body>
  <trans-unit id="1"><source>Open the file.</source><target>{target}</target></trans-unit>
 </body></file>
</xliff>
"""


def _xliff(tmp_path: Path, tgt: str, target: str) -> Path:
    path = tmp_path / f"{tgt}.xlf"
    path.write_text(XLIFF.format(tgt=tgt, target=target), encoding="utf-8")
    return path


@pytest.mark.parametrize("code, expected", [("de", "de"), ("de-AT", "de"), ("de_DE", "de"), ("deu_Latn", "de"),
                                            ("German", "de"), ("fr_XX", "fr"), ("EN", "en"), (None, None)])
def test_codes_reduce_to_their_language(code, expected):
    assert base(code) == expected


def test_the_demo_model_names_its_pair_and_families_take_the_streams():
    assert model_pair(str(DEFAULT_MODEL), "marian", {}) == ("en", "de")  # tokenizer_config.json
    assert model_pair("/nowhere/opus-mt-en-fr", "marian", {}) == ("en", "fr")  # the folder's name
    assert model_pair("/nowhere/opus-mt-en-mul", "marian", {"tgt_lang": "fra"}) == ("en", "fra")
    assert model_pair("/nowhere/my-model", "marian", {}) == (None, None)  # names no pair: not checked
    assert model_pair("/nowhere/x", "m2m100", {"src_lang": "eng_Latn", "tgt_lang": "fra_Latn"}) == ("en", "fr")
    assert family_codes("mbart", "/nowhere", ("en", "fr")) == ("en_XX", "fr_XX")
    assert family_codes("causal", "/nowhere", ("en", "fr")) == ("English", "French")
    assert family_codes("m2m100", "/nowhere", ("en", "fr")) == ("en", "fr")


def test_an_en_fr_xliff_is_refused_by_the_en_de_model_in_one_line(tmp_path: Path):
    cfg = load_config("baseline", ["data.name=xliff", f"data.params.path={_xliff(tmp_path, 'fr-FR', 'Ouvrez le fichier.')}"])
    dataset = DATASETS.build("xliff", path=cfg.data.params["path"])
    assert stream_pair(cfg, dataset) == ("en", "fr")
    with pytest.raises(ConfigError) as err:
        check_languages(cfg, dataset)
    assert str(err.value) == ("the stream (xliff fr-FR.xlf) is en->fr but the model demo-en-de translates en->de; give a "
                              "model that translates en->fr (--model) or a stream in en->de")
    # the same file in en->de passes; metrics.lang must be the stream's target
    cfg = load_config("baseline", ["data.name=xliff", f"data.params.path={_xliff(tmp_path, 'de', 'Öffnen Sie die Datei.')}",
                                   "metrics.lang=fr"])
    with pytest.raises(ConfigError, match="metrics.lang is 'fr' but the stream .* is en->de.*metrics.lang=de"):
        check_languages(cfg, DATASETS.build("xliff", path=cfg.data.params["path"]))


def test_the_languages_enter_the_digest_and_en_de_keeps_its_own():
    assert pair_text(("en", "de")) is None and pair_text(("en", "fr")) == "en-fr"
    old = group_digest("s", "m", None)
    assert group_digest("s", "m", None, None, None) == old
    assert group_digest("s", "m", None, None, "en-fr") != old


@pytest.mark.parametrize("command", [["simulate", "--dataset", "xliff", "--set", "data.params.path={path}", "--runs-dir", "{runs}"],
                                     ["serve", "init", "fr", "--xliff", "{path}", "--translators", "anna",
                                      "--projects-dir", "{runs}"]])
def test_the_cli_refuses_an_en_fr_file_with_the_en_de_model_in_one_line(tmp_path: Path, command: list[str]):
    import os
    import subprocess
    import sys

    from simpe.paths import REPO_ROOT

    path, runs = _xliff(tmp_path, "fr", "Ouvrez le fichier."), tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "simpe", *[c.format(path=path, runs=runs) for c in command]],
                          capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "simpe: error: the stream (xliff fr.xlf) is en->fr but the model demo-en-de translates en->de; give a model "
        "that translates en->fr (--model) or a stream in en->de"]
    assert not runs.exists()  # refused before anything was written (or the model loaded)
