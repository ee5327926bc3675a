"""The shipped train-sample split: exactly the 200 train pairs that EWC's seeded draw picked from the train split, read by
the ewc presets whether or not the train split exists (so a fresh clone and a full checkout estimate the same Fisher)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.datasets import DATASETS, draw
from simpe.datasets.libreoffice import DEFAULT_DIR, SAMPLE_SEED, SAMPLE_SIZE, TRAIN_SAMPLE
from simpe.errors import DataError
from simpe.loop.run import Loop, check_runs

# sha256 over (source \0 reference \1) of the 200 pairs that simpe.loop.stream.method_sentences (then simpe.stream) drew from the train split
# built by `make corpus` (train.en sha256 f95effe3…, 62,550 pairs) with seed 1 before train-sample shipped: computed
# once from that split with a full checkout (the code of commit a73a748); the sample must stay these pairs, in this order
DRAWN = "5ec0160726e2d742ad61b9d1085906b7c1c7b70d63e1fd8613b8e3e929b36ddf"
HAS_TRAIN = (DEFAULT_DIR / "train.en").is_file()


def _digest(pairs: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for source, reference in pairs:
        digest.update(source.encode("utf-8") + b"\x00" + reference.encode("utf-8") + b"\x01")
    return digest.hexdigest()


def test_the_shipped_sample_is_the_recorded_draw_of_train() -> None:
    """Its files are the manifest's (sha256), its pairs the recorded draw's (DRAWN), and the manifest's indices are
    what the one draw function gives for 200 of the train split's 62,550 pairs with seed 1."""
    manifest = json.loads((DEFAULT_DIR / "manifest.json").read_text(encoding="utf-8"))
    for ext in ("en", "de", "ids"):
        name = f"{TRAIN_SAMPLE}.{ext}"
        assert hashlib.sha256((DEFAULT_DIR / name).read_bytes()).hexdigest() == manifest["sha256"][name]
    entry = manifest["splits"][TRAIN_SAMPLE]
    assert (entry["drawn_from"], entry["train_segments"], entry["seed"], entry["size"]) == ("train", 62550, SAMPLE_SEED, SAMPLE_SIZE)
    assert entry["indices"] == draw(62550, SAMPLE_SIZE, SAMPLE_SEED) and len(entry["indices"]) == 200
    sample = DATASETS.build("libreoffice").load(TRAIN_SAMPLE)
    assert _digest([(s.source, s.reference) for s in sample]) == DRAWN


def test_ewc_presets_read_the_sample_in_any_checkout(tmp_path: Path) -> None:
    """full+ewc and lasso+ewc read the 200 shipped pairs (before the model loads), the same for any stream length."""
    for preset in ("full+ewc", "lasso+ewc"):
        for segments in (2, 300):
            loop = Loop(load_config(preset, [f"data.segments={segments}", f"runs_dir={tmp_path}"]), progress=False)
            loop.check_sentences()
            assert list(loop.own_sentences) == [(TRAIN_SAMPLE, 200)]
            assert _digest(loop.own_sentences[(TRAIN_SAMPLE, 200)]) == DRAWN


@pytest.mark.skipif(not HAS_TRAIN, reason="the train split is built by make corpus, not shipped")
def test_the_sample_equals_ewcs_draw_from_the_train_split(tmp_path: Path) -> None:
    """With the train split present, ewc's draw from it (split: train, seed 1) is the shipped sample, pair for pair."""
    modifier = "method.modifiers=[{name: ewc, params: {split: train, sentences: 200}}]"
    loop = Loop(load_config("full", ["data.segments=2", f"runs_dir={tmp_path}", modifier]), progress=False)
    loop.check_sentences()
    sample = DATASETS.build("libreoffice").load(TRAIN_SAMPLE)
    assert loop.own_sentences[("train", 200)] == [(s.source, s.reference) for s in sample]


def test_a_list_of_presets_is_refused_as_a_whole_before_the_first_run(tmp_path: Path) -> None:
    """A preset whose method reads a split the dataset lacks (here: train, in a data folder without it) is refused in
    one line naming the preset and the missing files, before baseline, listed first, has run (no run folder)."""
    data = tmp_path / "data"
    data.mkdir()
    for split in ("stream", "dev"):
        for ext in ("en", "de", "ids"):
            (data / f"{split}.{ext}").write_bytes((DEFAULT_DIR / f"{split}.{ext}").read_bytes())
    common = [f"data.params.path={data}", "data.segments=2", f"runs_dir={tmp_path / 'runs'}", "snapshots.every=0"]
    configs = [load_config("baseline", common),
               load_config("full", [*common, "method.modifiers=[{name: ewc, params: {split: train, sentences: 200}}]"])]
    configs[1].adapter = "full+ewc-on-train"
    with pytest.raises(DataError) as err:
        check_runs(configs)
    assert str(err.value).startswith("preset full+ewc-on-train: the method needs 200 sentences of the train split: missing ")
    assert "train.en" in str(err.value) and "make corpus" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists()
