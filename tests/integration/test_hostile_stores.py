"""A per-user store is a file a user is handed: every damaged or crafted one is refused in one line, exit 2.

The stores are crafted here with safetensors the way a run writes them (simpe.loop.run's metadata), then
altered one way each: counts that disagree, an index outside the matrix, a NaN, metadata that is not
JSON, tensors of another method than the metadata names. ``simpe translate --adapter`` applies them
to the real demo model. ``export-store`` is tried on an existing folder and on an incomplete run.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from simpe.cli import main
from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.methods.bias import OUTPUT_BIAS
from simpe.methods.knn import IVF, KEYS, VALUES
from simpe.storefile import INDICES_SUFFIX, ROWS_SUFFIX, STORE_FORMAT

EMBEDDING = "model.shared.weight"  # the demo model's tied embedding matrix (8,000 x 256)


def _metadata(method: str, **changes: str) -> dict[str, str]:
    return {"format": STORE_FORMAT, "method": method, "method_params": "{}", "adapter": method, "base_model": "demo-en-de",
            "base_model_path": "", "decoder": "greedy", "decoder_params": "{}", **changes}


def _knn(keys: int, values: int, nan: bool = False, token: int = 5) -> dict[str, torch.Tensor]:
    k = torch.zeros(keys, 256)
    if nan:
        k[0, 3] = float("nan")
    return {KEYS: k, VALUES: torch.full((values,), token, dtype=torch.int32)}


def _knn_index(lists: int = 2, owner: int = 1, trained_at: int = 3, drop: str = "", width: int = 256) -> dict[str, torch.Tensor]:
    """A knn store of 3 entries with an inverted file (``Datastore.index_state``), altered one way."""
    index = {IVF["centroids"]: torch.zeros(lists, width), IVF["lists"]: torch.tensor([0, owner, 0], dtype=torch.int32),
             IVF["trained_at"]: torch.tensor([trained_at])}
    return {**_knn(3, 3), **{name: tensor for name, tensor in index.items() if name != drop}}


def _lasso_rows(index: int) -> dict[str, torch.Tensor]:
    return {EMBEDDING + ROWS_SUFFIX: torch.zeros(1, 256), EMBEDDING + INDICES_SUFFIX: torch.tensor([index], dtype=torch.int32),
            OUTPUT_BIAS: torch.zeros(1, 8000)}


# (id, tensors, metadata, a fragment of the one line)
CASES = [
    ("knn-more-keys-than-values", _knn(4, 3), _metadata("knn"), "the knn store holds 4 keys but 3 values"),
    ("knn-nan-key", _knn(2, 2, nan=True), _metadata("knn"), "tensor '__knn_keys__' holds NaN or infinite values"),
    ("knn-token-out-of-range", _knn(2, 2, token=9000), _metadata("knn"), "token id 9000, outside this model's 8000 tokens"),
    ("knn-index-list-out-of-range", _knn_index(owner=2), _metadata("knn"), "__knn_ivf_lists__ names list 2, outside its 2 lists"),
    ("knn-index-incomplete", _knn_index(drop=IVF["trained_at"]), _metadata("knn"), "an index is all three or none"),
    ("knn-index-trained-past-its-entries", _knn_index(trained_at=4), _metadata("knn"), "the entries it was trained on (1 to 3)"),
    ("knn-index-narrow-centroids", _knn_index(width=8), _metadata("knn"), "an index holds (lists, 256) float centroids"),
    ("lasso-row-out-of-range", _lasso_rows(8000), _metadata("lasso"), "holds row 8000, outside the model's 8000 rows"),
    ("lasso-row-negative", _lasso_rows(-1), _metadata("lasso"), "holds row -1, outside the model's 8000 rows"),
    ("lasso-rows-without-indices", {EMBEDDING + ROWS_SUFFIX: torch.zeros(1, 256)}, _metadata("lasso"),
     f"holds rows of {EMBEDDING} but no {EMBEDDING}{INDICES_SUFFIX}"),
    ("method-params-not-json", _knn(2, 2), _metadata("knn", method_params="{k: 3"), "metadata method_params is not JSON"),
    ("model-settings-not-json", _knn(2, 2), _metadata("knn", model_settings="[1, 2]"), "metadata model_settings must be a JSON object"),
    ("knn-tensors-named-full", _knn(2, 2), _metadata("full"), "holds the tensors of a knn store but its metadata names method 'full'"),
    ("lasso-tensors-named-full", _lasso_rows(3), _metadata("full"), "holds the tensors of a bias or lasso store but its metadata names method 'full'"),
    ("unknown-method", _knn(2, 2), _metadata("sparse"), "was made by method 'sparse', which this simpe does not know; known:"),
    ("no-base-model", _knn(2, 2), _metadata("knn", base_model=""), "names no base_model in its metadata"),
]


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_a_crafted_store_is_one_line_exit_2(case_id: str, tmp_path: Path, capsys: pytest.CaptureFixture, one_torch_thread):
    _, tensors, metadata, fragment = next(c for c in CASES if c[0] == case_id)
    store = tmp_path / "crafted.safetensors"
    save_file(tensors, str(store), metadata=metadata)
    src = tmp_path / "src.en"
    src.write_text("Click OK.\n", encoding="utf-8")
    capsys.readouterr()
    code = main(["translate", "--store", str(store), "-i", str(src), "--device", "cpu"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("simpe: error: "), lines
    assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    torch.set_num_threads(1)
    loop = Loop(load_config("bias", [f"runs_dir={runs}", "data.segments=2", "device=cpu"]), progress=False)
    loop.run()
    loop.timer.remove()
    return loop.path


def test_export_store_to_an_existing_folder_is_one_line_and_leaves_nothing(complete_run: Path, tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture):
    folder = tmp_path / "stores"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    capsys.readouterr()
    code = main(["export-store", str(complete_run), "--out", str(folder), "--overwrite"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert f"--out {folder} is a folder; give the store's file name" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stores"]  # no stores.tmp beside it
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_export_store_on_an_incomplete_run_names_what_to_do(complete_run: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture):
    import shutil

    copy = tmp_path / "group" / "bias"
    shutil.copytree(complete_run, copy)
    (copy / "DONE").unlink()
    capsys.readouterr()
    code = main(["export-store", str(copy), "--out", str(tmp_path / "x.safetensors")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "is incomplete (no DONE): export-store exports the final state of a complete run" in lines[0]
    assert "--allow-incomplete" not in lines[0]  # a flag export-store does not take
    assert not (tmp_path / "x.safetensors").exists()


def test_a_store_a_run_wrote_still_passes_the_checks(complete_run: Path):
    from simpe.store.user import read_store
    from simpe.storefile import StoreMetadata

    path = complete_run / "store.safetensors"
    tensors, metadata = read_store(path)
    assert metadata.method == "bias" and metadata.method_params == {} and metadata.segments == 2
    assert StoreMetadata.from_strings(path, metadata.to_strings()) == metadata  # the typed metadata round-trips
    assert set(tensors) == {OUTPUT_BIAS}
