"""The ``hf`` dataset on datasets built here with the ``datasets`` library: a save_to_disk table, a DatasetDict, a
parquet folder, a JSON-lines file, and each bad input's one line."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from messages import raises_naming

from simpe.datasets import DATASETS
from simpe.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]
ROWS = {"source": ["Open the file.", "Close the window.", "Save the table."],
        "post_edit": ["Öffnen Sie die Datei.", "Schließen Sie das Fenster.", "Speichern Sie die Tabelle."],
        "doc_id": ["help/a", "help/a", 7]}
TEXT = {key: ROWS[key] for key in ("source", "post_edit")}


def _pairs(segments) -> list[tuple[str, str, str, str]]:
    return [(s.doc_id, s.seg_id, s.source, s.reference) for s in segments]


def _hf(path: Path, **params):
    return DATASETS.build("hf", path=str(path), **params)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """A save_to_disk table (document ids of two types), a DatasetDict (train / validation / test), a parquet folder
    of two files (one written by pyarrow, with other column names), and a JSON-lines file."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("hf")
    datasets.disable_progress_bars()
    datasets.Dataset.from_dict({**ROWS, "doc_id": ["help/a", "help/a", "help/b"]}).save_to_disk(root / "table")
    datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"source": ["Train one.", "Train two."], "post_edit": ["Eins.", "Zwei."]}),
        "validation": datasets.Dataset.from_dict({"source": ["Check."], "post_edit": ["Prüfen."]}),
        "test": datasets.Dataset.from_dict(TEXT),
    }).save_to_disk(root / "dict")
    (root / "parquet").mkdir()
    datasets.Dataset.from_dict({"src": ROWS["source"][:2], "pe": ROWS["post_edit"][:2]}).to_parquet(root / "parquet" / "a.parquet")
    pq.write_table(pa.table({"src": ["Print it."], "pe": ["Drucken Sie es."], "extra": [1.5]}), root / "parquet" / "b.parquet")
    _jsonl(root / "stream.jsonl", [{"source": s, "post_edit": r, "doc_id": d} for s, r, d in zip(*ROWS.values())])
    datasets.enable_progress_bars()
    return {name: root / name for name in ("table", "dict", "parquet", "stream.jsonl")}


def test_a_save_to_disk_table_is_the_stream_in_row_order(saved):
    ds = _hf(saved["table"])
    assert ds.splits == ("stream",)
    assert _pairs(ds.load()) == [("help/a", "1", "Open the file.", "Öffnen Sie die Datei."),
                                 ("help/a", "2", "Close the window.", "Schließen Sie das Fenster."),
                                 ("help/b", "3", "Save the table.", "Speichern Sie die Tabelle.")]
    manifest = ds.manifest()
    assert (manifest["dataset"], manifest["format"], manifest["rows"]) == ("hf", "Dataset", {"table": 3})
    assert {f["file"] for f in manifest["files"]} == {"data-00000-of-00001.arrow", "dataset_info.json", "state.json"}
    # no document ids (document_column null): one document named after the folder
    assert {s.doc_id for s in _hf(saved["table"], document_column=None).load()} == {"table"}


def test_a_datasetdicts_test_split_is_the_stream_validation_the_dev(saved):
    ds = _hf(saved["dict"])
    assert ds.splits == ("stream", "dev", "train")
    assert _pairs(ds.load("stream")) == [("dict", str(i), s, r) for i, (s, r) in enumerate(zip(*TEXT.values()), 1)]
    assert _pairs(ds.load("dev")) == [("dict", "1", "Check.", "Prüfen.")]
    assert [s.reference for s in ds.load("train")] == ["Eins.", "Zwei."]
    assert ds.manifest()["rows"] == {"test": 3, "validation": 1, "train": 2}
    with raises_naming(DataError, "'test'", "stream (its 'test')", "dev (its 'validation')", "train"):
        ds.load("test")
    # another split as the stream; then test keeps its own name
    other = _hf(saved["dict"], stream_split="train", dev_split=None)
    assert other.splits == ("stream", "validation", "test") and [s.source for s in other.load()] == ["Train one.", "Train two."]
    with raises_naming(DataError, "'stream'", "'nope'", "data.params.stream_split=NAME", "train", "validation", "test"):
        _hf(saved["dict"], stream_split="nope").load()
    with raises_naming(ConfigError, "dev=1", "DatasetDict", "train, validation, test"):
        _hf(saved["dict"], dev=1).load()


def test_a_datasetdict_listing_and_split_names_that_cannot_be_read(saved, tmp_path):
    with raises_naming(ConfigError, "stream_split and dev_split", "'test'", "dev_split: null"):
        _hf(saved["dict"], dev_split="test")
    for listing, expected in (({"splits": ["test", "../table"]}, "each a folder name"), ({"split": ["test"]}, "list of \"splits\""),
                              ({"splits": ["test", "stream"]}, "would both be simpe's stream or dev")):
        (tmp_path / "dataset_dict.json").write_text(json.dumps(listing))
        with raises_naming(DataError, "dataset_dict.json" if "folder" in expected or "list" in expected else str(tmp_path), expected):
            _hf(tmp_path).load()
    (tmp_path / "dataset_dict.json").write_text(json.dumps({"splits": ["test"]}))
    with raises_naming(DataError, "lists split 'test'", "test/state.json"):
        _hf(tmp_path).load()


def test_a_parquet_folder_is_one_table_of_its_files_in_name_order(saved):
    ds = _hf(saved["parquet"], source_column="src", target_column="pe")
    assert _pairs(ds.load()) == [("parquet", "1", "Open the file.", "Öffnen Sie die Datei."),
                                 ("parquet", "2", "Close the window.", "Schließen Sie das Fenster."),
                                 ("parquet", "3", "Print it.", "Drucken Sie es.")]
    manifest = ds.manifest()
    assert manifest["format"] == "parquet" and manifest["rows"] == {"a.parquet": 2, "b.parquet": 1}
    assert [f["file"] for f in manifest["files"]] == ["a.parquet", "b.parquet"]
    assert manifest["columns"] == {"source": "src", "target": "pe", "document": "doc_id"}
    with raises_naming(DataError, "a.parquet", "no column 'source'", "src, pe", "data.params.source_column=NAME"):
        _hf(saved["parquet"]).load()


def test_a_jsonl_file_with_its_last_rows_held_out_as_dev(saved):
    ds = _hf(saved["stream.jsonl"], dev=1)
    assert ds.splits == ("stream", "dev")
    assert _pairs(ds.load("stream")) == [("help/a", "1", "Open the file.", "Öffnen Sie die Datei."),
                                         ("help/a", "2", "Close the window.", "Schließen Sie das Fenster.")]
    assert _pairs(ds.load("dev")) == [("7", "3", "Save the table.", "Speichern Sie die Tabelle.")]  # a whole-number id
    assert ds.manifest()["format"] == "json"
    with raises_naming(DataError, "no column 'document'", "source, post_edit, doc_id", "document_column=NAME"):
        _hf(saved["stream.jsonl"], document_column="document").load()


def test_reading_touches_no_network_and_no_cache_outside_a_temporary_folder(saved, tmp_path, monkeypatch):
    import datasets

    def no_network(*args, **kwargs):
        raise AssertionError("the hf dataset opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    for path in saved.values():
        params = {"source_column": "src", "target_column": "pe"} if path.name == "parquet" else {}
        assert len(_hf(path, **params).load()) in (2, 3)
    assert not (tmp_path / "hf-cache").exists() and not list((tmp_path / "tmp").iterdir())


def test_import_simpe_does_not_import_datasets_and_its_absence_names_the_extra(saved, monkeypatch):
    code = "import sys, simpe, simpe.cli, simpe.datasets; sys.exit('datasets' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}).returncode == 0
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets raises ImportError
    with raises_naming(ConfigError, "datasets", "pip install 'simpe[hf]'"):
        _hf(saved["table"]).load()


def test_params_are_checked_by_name(tmp_path):
    with raises_naming(ConfigError, "'column'", "dataset 'hf'", "path", "source_column", "target_column", "document_column",
                       "stream_split", "dev_split", "dev"):
        DATASETS.check("hf", {"column": "x"})
    with raises_naming(DataError, "dataset 'hf' needs path", "--set data.params.path=DIR"):
        DATASETS.build("hf")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("case", ["missing", "unrecognised", "mixed", "info-only", "suffix", "int", "list", "nul", "doc-float",
                                  "utf8", "json-syntax", "parquet-cut", "pipe", "too-large"])
def test_bad_input_is_one_line_naming_what_and_where(case, tmp_path, monkeypatch):
    rows = [{"source": "One.", "post_edit": "Eins."}, {"source": "Two.", "post_edit": "Zwei."}]
    folder = tmp_path / "data"
    folder.mkdir()
    if case == "missing":
        path, expected = tmp_path / "nowhere", ("nowhere", "does not exist", "save_to_disk", "dataset_dict.json", "*.parquet")
    elif case == "unrecognised":
        (folder / "pairs.csv").write_text("a,b\n")
        path, expected = folder, ("holds no dataset_dict.json, state.json, *.parquet, *.jsonl or *.json", "pairs.csv")
    elif case == "mixed":
        _jsonl(folder / "a.jsonl", rows)
        (folder / "b.parquet").write_bytes(b"PAR1")
        path, expected = folder, ("data", "mixes parquet and JSON")
    elif case == "info-only":
        (folder / "dataset_info.json").write_text("{}")
        path, expected = folder, ("dataset_info.json", "no state.json")
    elif case == "suffix":
        path, expected = folder / "pairs.tsv", ("pairs.tsv", "not a .parquet, .jsonl or .json file")
        path.write_text("One.\tEins.\n")
    elif case in ("int", "list", "nul", "doc-float"):
        bad = {"int": {"source": 3}, "list": {"post_edit": ["Zwei."]}, "nul": {"post_edit": "Zw\x00ei."},
               "doc-float": {"doc_id": 1.5}}[case]
        path = _jsonl(folder / "rows.jsonl", [{**rows[0], "doc_id": "a"}, {**rows[1], "doc_id": "a", **bad}])
        expected = {"int": ("rows.jsonl: row 2", "'source'", "int 3", "not text"),
                    "list": ("rows.jsonl: row 2", "'post_edit'", "list ['Zwei.']", "not text"),
                    "nul": ("rows.jsonl: row 2", "'post_edit'", "NUL"),
                    "doc-float": ("rows.jsonl: row 2", "'doc_id'", "float 1.5", "document id")}[case]
    elif case == "utf8":
        path = folder / "latin.jsonl"
        path.write_bytes('{"source": "Größe", "post_edit": "Größe"}\n'.encode("latin-1"))
        expected = ("latin.jsonl", "not valid UTF-8")
    elif case == "json-syntax":
        path = folder / "cut.jsonl"
        path.write_text('{"source": "One.", "post_edit": "Eins."}\n{"source": "Two.", \n')
        expected = ("cut.jsonl", "cannot be read as JSON", "ArrowInvalid")
    elif case == "parquet-cut":
        path = folder / "cut.parquet"
        path.write_bytes(b"PAR1 not really parquet")
        expected = ("cut.parquet", "cannot be read as parquet", "ArrowInvalid")
    elif case == "pipe":
        _fifo(folder / "rows.jsonl")
        path, expected = folder, ("rows.jsonl", "named pipe")
    else:
        monkeypatch.setattr("simpe.datasets.hf.MAX_FILE_BYTES", 10)
        path, expected = _jsonl(folder / "rows.jsonl", rows), ("data/rows.jsonl", "bytes of dataset files", "at most 10")
    with raises_naming(DataError, *expected) as info:
        _hf(path).load()
    assert "\n" not in str(info.value)


def test_a_null_or_blank_segment_fails_or_is_skipped_as_in_every_loader(tmp_path):
    path = _jsonl(tmp_path / "rows.jsonl", [{"source": "One.", "post_edit": None}, {"source": "Two.", "post_edit": "Zwei."},
                                            {"source": "  ", "post_edit": "Drei."}])
    with raises_naming(DataError, "hf:stream", "segment 1", "reference", "--skip-empty"):
        _hf(path).load()
    assert _pairs(_hf(path).load(skip_empty=True)) == [("rows.jsonl", "2", "Two.", "Zwei.")]
