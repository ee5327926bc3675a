"""Datasets of the Hugging Face ecosystem: a folder written by ``datasets``' ``save_to_disk``, or parquet / JSON-lines files.

``path`` (``--set data.params.path=DIR``) is, in the order it is recognised:

- a ``DatasetDict`` folder (``dataset_dict.json``): each of its splits is a simpe split; the one named
  ``stream_split`` (default ``test``) is simpe's ``stream``, the one named ``dev_split`` (default ``validation``)
  its ``dev``, the others keep their names (``train``);
- a ``Dataset`` folder (``state.json``, ``dataset_info.json``): one table;
- a folder of ``*.parquet`` files, or of ``*.jsonl`` / ``*.json`` files (one table, the files in name order; not
  both kinds, and not its subfolders), or one such file.

A table is one ``stream`` split in row order; ``dev: N`` holds out its last N rows as the ``dev`` split, as
``text``, ``tsv`` and ``tmx`` do. Columns: ``source_column`` (default ``source``) and ``target_column``
(``post_edit``) hold text; ``document_column`` (``doc_id``) holds the document ids (text or whole numbers) when the
table has that column, and another name given must be there; null: no document ids. Without them every segment is in
one document named after ``path``. Segment ids are row numbers from 1. A null source or post-edit is an empty segment
(an error, or skipped under ``--skip-empty``); a value of another type, a NUL character, a missing column (the columns
found are named), a special file or more than ``MAX_FILE_BYTES`` of files is one error line.

The ``datasets`` package (``pip install 'simpe[hf]'``) is imported here only, when a dataset is read, and only its
local readers run: ``load_from_disk``, and ``Dataset.from_parquet`` / ``from_json`` with their cache in a temporary
folder deleted after the read. Nothing is downloaded, nothing is written under ~/.cache, and the process's hub
settings (``HF_HUB_OFFLINE``, read once at import) are left as the model's loading needs them. Not for: datasets on
the hub (save one with ``load_dataset(...).save_to_disk(DIR)`` where the network is), CSV, streaming.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simpe.datasets.base import DATASETS, Segment
from simpe.datasets.parallel import HeldOutDataset, need_path
from simpe.errors import ConfigError, DataError
from simpe.filehash import file_hash
from simpe.textfile import MAX_FILE_BYTES, read_bytes, special_kind

logger = logging.getLogger(__name__)

DICT_FILE, STATE_FILE, INFO_FILE = "dataset_dict.json", "state.json", "dataset_info.json"  # what save_to_disk writes
FILE_KINDS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}
KIND_NAMES = {"parquet": "parquet", "json": "JSON"}
DOC_COLUMN = "doc_id"
EXPECTED = (f"a folder written by datasets' save_to_disk ({STATE_FILE} and {INFO_FILE}, or {DICT_FILE} for a "
            "DatasetDict), a folder of *.parquet or *.jsonl / *.json files, or one such file")


def _datasets() -> Any:
    """The ``datasets`` package; one line naming the extra when it is not installed."""
    try:
        import datasets
    except ImportError:
        raise ConfigError("dataset 'hf' needs the datasets package: pip install 'simpe[hf]'") from None
    return datasets


@contextlib.contextmanager
def _quiet(datasets: Any) -> Iterator[None]:
    """No progress bars and no log lines of ``datasets`` (a file it cannot read is one error line of ours)."""
    bars, verbosity = not datasets.are_progress_bars_disabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()


def _check_files(files: list[Path], where: Path) -> None:
    """Refuse a special file (a pipe would hang the reader) or more than MAX_FILE_BYTES of files in all."""
    total = 0
    for path in files:
        try:
            info = path.stat()
        except OSError as err:
            raise DataError(f"dataset file {str(path)!r} cannot be read ({err.strerror})") from None
        kind = special_kind(info.st_mode)
        if kind is not None:
            raise DataError(f"dataset file {str(path)!r} is {kind}, not a regular file")
        total += info.st_size
    if total > MAX_FILE_BYTES:
        raise DataError(f"{where} holds {total:,} bytes of dataset files; simpe reads at most {MAX_FILE_BYTES:,}")


def _read_error(path: Path, kind: str, err: Exception) -> DataError:
    reason = err.__cause__ or err  # datasets wraps the reader's error: "An error occurred while generating the dataset"
    text = (str(reason).strip().splitlines() or [""])[0]
    return DataError(f"{path} cannot be read as {kind} ({type(reason).__name__}: {text})")


def _text(value: Any, where: str, row: int, column: str) -> str:
    """A cell of a text column: a string without NUL, or "" for a null (an empty segment, as base.check_segments says)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataError(f"{where}: row {row}, column {column!r} holds {type(value).__name__} {value!r:.60}, not text")
    if "\x00" in value:
        raise DataError(f"{where}: row {row}, column {column!r} holds a NUL character; no segment holds one")
    return value


@DATASETS.add("hf")
class HfDataset(HeldOutDataset):
    """A dataset saved by ``datasets`` or parquet / JSON-lines files (see the module docstring)."""

    def __init__(self, path: str | None = None, source_column: str = "source", target_column: str = "post_edit",
                 document_column: str | None = DOC_COLUMN, stream_split: str = "test", dev_split: str | None = "validation",
                 dev: int = 0) -> None:
        self.path = need_path(path, "path", "hf", "DIR")
        if stream_split == dev_split:
            raise ConfigError(f"dataset 'hf': stream_split and dev_split are both {stream_split!r}; name two splits "
                              "(dev_split: null for none)")
        self.columns = {"source": source_column, "target": target_column}
        self.document_column = document_column
        self.stream_split, self.dev_split = stream_split, dev_split
        self._hold_out(dev)
        self._dict_splits: dict[str, str] | None = None  # simpe split -> the DatasetDict's, once read
        self._read_splits: dict[str, list[Segment]] = {}  # by the DatasetDict's split name ("" for a table)
        self._manifest: dict[str, Any] = {}

    # HeldOutDataset sets the splits of a table (stream, and dev when dev > 0); a DatasetDict folder has its own
    @property
    def splits(self) -> tuple[str, ...]:  # type: ignore[override]
        if (self.path / DICT_FILE).is_file():
            return tuple(self._dict_map())
        return self._table_splits

    @splits.setter
    def splits(self, value: tuple[str, ...]) -> None:
        self._table_splits = value

    def _dict_map(self) -> dict[str, str]:
        """simpe's split name -> the DatasetDict's, from ``dataset_dict.json`` (stream, dev, then the others)."""
        if self._dict_splits is None:
            listing = self.path / DICT_FILE
            try:
                names = json.loads(read_bytes(listing, "DatasetDict listing").decode("utf-8"))["splits"]
            except (ValueError, TypeError, KeyError):
                raise DataError(f"{listing} is not a DatasetDict listing (JSON with a list of \"splits\")") from None
            if not isinstance(names, list) or not all(isinstance(name, str) and name.strip(". ") and "/" not in name
                                                      for name in names):  # a name is a folder beside the listing
                raise DataError(f"{listing} is not a DatasetDict listing (JSON with a list of \"splits\", each a folder name)")
            if self.dev:
                raise ConfigError(f"dataset 'hf': dev={self.dev} holds out the last rows of one table, but {self.path} is "
                                  f"a DatasetDict with its own splits ({', '.join(names)}); leave dev at 0")
            renamed = {self.stream_split: "stream", **({self.dev_split: "dev"} if self.dev_split else {})}
            mapping = {renamed.get(name, name): name for name in names}
            if len(mapping) < len(names):
                raise DataError(f"{self.path}: two of the DatasetDict's splits ({', '.join(names)}) would both be simpe's "
                                f"stream or dev (stream_split={self.stream_split}, dev_split={self.dev_split})")
            order = {"stream": 0, "dev": 1}
            self._dict_splits = dict(sorted(mapping.items(), key=lambda item: order.get(item[0], 2)))
        return self._dict_splits

    def load(self, split: str = "stream", skip_empty: bool = False) -> list[Segment]:
        """The checked segments of ``split``; a DatasetDict's unknown split is named with the names it goes by."""
        if not self.path.exists():
            raise DataError(f"dataset 'hf': {self.path} does not exist; expected {EXPECTED}")
        if (self.path / DICT_FILE).is_file() and split not in self.splits:
            mapping = self._dict_map()
            known = ", ".join(f"{mine} (its {theirs!r})" if mine != theirs else mine for mine, theirs in mapping.items())
            hint = "" if "stream" in mapping else (f"; none is {self.stream_split!r}, simpe's stream: name the stream's split "
                                                   "with --set data.params.stream_split=NAME")
            raise DataError(f"unknown split {split!r} of dataset hf: the DatasetDict {self.path} has {known}{hint}")
        return super().load(split, skip_empty)

    def _load(self, split: str) -> list[Segment]:
        if (self.path / DICT_FILE).is_file():
            return self._read_split(self._dict_map()[split])
        return super()._load(split)  # the table, with dev rows held out

    def _read(self) -> list[Segment]:
        return self._read_split("")

    # ------------------------------------------------------------ reading
    def _read_split(self, name: str) -> list[Segment]:
        """The rows of the DatasetDict's split ``name`` ("" for a table) as segments, read once."""
        if name not in self._read_splits:
            datasets = _datasets()
            with _quiet(datasets):
                self._read_splits[name] = self._read_dict(datasets, name) if name else self._read_table(datasets)
        return self._read_splits[name]

    def _read_dict(self, datasets: Any, name: str) -> list[Segment]:
        folder = self.path / name
        if not (folder / STATE_FILE).is_file():
            raise DataError(f"{self.path} lists split {name!r} in {DICT_FILE} but has no {folder / STATE_FILE}")
        segments = self._segments(self._from_disk(datasets, folder), f"{self.path} (split {name!r})")
        self._record("DatasetDict", sorted(p for p in folder.rglob("*") if p.is_file()), {name: len(segments)})
        return segments

    def _read_table(self, datasets: Any) -> list[Segment]:
        if (self.path / STATE_FILE).is_file():
            segments = self._segments(self._from_disk(datasets, self.path), str(self.path))
            self._record("Dataset", sorted(p for p in self.path.rglob("*") if p.is_file()), {"table": len(segments)})
            return segments
        if self.path.is_dir() and (self.path / INFO_FILE).is_file():
            raise DataError(f"{self.path} has {INFO_FILE} but no {STATE_FILE}: not a whole save_to_disk folder "
                            f"(save_to_disk writes both)")
        files, kind = self._files()
        _check_files(files, self.path)
        reader = datasets.Dataset.from_parquet if kind == "parquet" else datasets.Dataset.from_json
        out: list[Segment] = []
        rows = {}
        for path in files:  # one at a time: an error names its file and row
            with tempfile.TemporaryDirectory(prefix="simpe-hf-") as cache:
                try:
                    table = reader(str(path), cache_dir=cache, keep_in_memory=True)
                except Exception as err:  # any failure of a foreign reader on a user's file is one line
                    raise _read_error(path, KIND_NAMES[kind], err) from None
                segments = self._segments(table, str(path), first=len(out) + 1)
            out.extend(segments)
            rows[os.path.relpath(path, self.path) if path != self.path else path.name] = len(segments)
        self._record(kind, files, rows)
        return out

    def _files(self) -> tuple[list[Path], str]:
        """The table's files and their kind (parquet or json); one line saying what was expected otherwise."""
        if self.path.is_file():
            if self.path.suffix not in FILE_KINDS:
                raise DataError(f"dataset 'hf': {self.path} is not a .parquet, .jsonl or .json file; expected {EXPECTED}")
            return [self.path], FILE_KINDS[self.path.suffix]
        if not self.path.is_dir():
            raise DataError(f"dataset 'hf': {self.path} is {special_kind(self.path.stat().st_mode)}; expected {EXPECTED}")
        found = sorted(p for p in self.path.iterdir() if p.suffix in FILE_KINDS and p.name not in (INFO_FILE, STATE_FILE))
        if not found:
            present = sorted(p.name for p in self.path.iterdir())
            listing = ", ".join(present[:5]) + (f" and {len(present) - 5} more" if len(present) > 5 else "") or "nothing"
            raise DataError(f"dataset 'hf': {self.path} holds no {DICT_FILE}, {STATE_FILE}, *.parquet, *.jsonl or *.json "
                            f"(it holds {listing}); expected {EXPECTED}")
        kinds = sorted({FILE_KINDS[p.suffix] for p in found})
        if len(kinds) > 1:
            raise DataError(f"dataset 'hf': {self.path} mixes parquet and JSON files; put one kind in the folder, or point "
                            "data.params.path at one file")
        return found, kinds[0]

    def _from_disk(self, datasets: Any, folder: Path) -> Any:
        """The table ``save_to_disk`` wrote in ``folder`` (memory-mapped, as ``load_from_disk`` reads it)."""
        _check_files(sorted(p for p in folder.rglob("*") if not p.is_dir()), folder)
        try:
            table = datasets.load_from_disk(str(folder))
        except Exception as err:  # any failure of a foreign reader on a user's folder is one line
            raise _read_error(folder, "a save_to_disk folder", err) from None
        if not isinstance(table, datasets.Dataset):  # a DatasetDict below the top folder
            raise DataError(f"{folder} holds a {type(table).__name__}, not one table; point data.params.path at it")
        return table

    def _segments(self, table: Any, where: str, first: int = 1) -> list[Segment]:
        """Check the columns and cells of one read table (a ``datasets.Dataset``) and make its segments.

        Args:
            where: the table in error messages (a file, a folder, a folder's split); errors count rows from 1 in it.
            first: the first segment's id (the table's files are numbered on from one to the next).
        """
        names, doc = list(table.column_names), self.document_column
        wanted = [*self.columns.values(), *([doc] if doc and (doc != DOC_COLUMN or doc in names) else [])]
        missing = [name for name in wanted if name not in names]
        if missing:
            params = {self.columns["source"]: "source_column", self.columns["target"]: "target_column", doc: "document_column"}
            raise DataError(f"{where} has no column {missing[0]!r} (its columns: {', '.join(names) or 'none'}); name the "
                            f"column with --set data.params.{params[missing[0]]}=NAME")
        try:
            columns = table.select_columns(wanted).to_dict()
        except UnicodeDecodeError as err:  # arrow keeps a JSON file's bytes as they are; Python's strings are checked
            raise DataError(f"{where} is not valid UTF-8 ({err.reason} at byte {err.start} of a cell)") from None
        source, target = columns[self.columns["source"]], columns[self.columns["target"]]
        docs = columns[doc] if doc in columns else [self.path.name] * len(source)
        out = []
        for row, (src, ref, doc_id) in enumerate(zip(source, target, docs), 1):
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                raise DataError(f"{where}: row {row}, column {doc!r} holds {type(doc_id).__name__} {doc_id!r:.60}, "
                                "not a document id (text or a whole number)")
            out.append(Segment(str(doc_id), str(first + row - 1), _text(src, where, row, self.columns["source"]),
                               _text(ref, where, row, self.columns["target"])))
        return out

    def _record(self, kind: str, files: list[Path], rows: dict[str, int]) -> None:
        """Add what was read to the manifest: format, files (bytes, hash), columns, rows per split or file."""
        self._manifest.setdefault("format", kind)
        self._manifest.setdefault("path", str(self.path))
        self._manifest.setdefault("columns", {**self.columns, "document": self.document_column})
        self._manifest.setdefault("files", []).extend(
            {"file": os.path.relpath(p, self.path) if p != self.path else p.name, "bytes": p.stat().st_size,
             "sha256_16": file_hash(p)} for p in files)
        self._manifest.setdefault("rows", {}).update(rows)
        logger.info("hf: read %s from %s (%s)", ", ".join(f"{count} rows of {name}" for name, count in rows.items()), self.path, kind)

    def manifest(self) -> dict[str, Any]:
        return {"dataset": self.name, **self._manifest}
