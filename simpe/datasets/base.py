"""The dataset contract, its registry, and the checks every loader shares.

A dataset yields an ordered list of ``Segment`` (document id, segment id, source,
reference) for a named split. Every loader rejects bad input with one clear line:
line-count mismatch, empty or whitespace-only segments (or skips them with a counted
warning when ``skip_empty`` is set), invalid UTF-8, unknown split or dataset name.
"""
from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from simpe.errors import DataError
from simpe.registry import Registry

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Segment:
    """One aligned (source, reference) pair in stream order."""

    doc_id: str
    seg_id: str
    source: str
    reference: str


class Dataset(ABC):
    """A parallel corpus with named splits; ``load(split)`` returns segments in order."""

    splits: tuple[str, ...] = ("stream",)
    src_lang: str = "en"
    tgt_lang: str = "de"

    def __init__(self, skip_empty: bool = False) -> None:
        self.skip_empty = skip_empty

    @abstractmethod
    def _load(self, split: str) -> list[Segment]:
        """Read the split's raw segments (checked by ``load``)."""

    def load(self, split: str = "stream") -> list[Segment]:
        """Return the checked segments of ``split`` in stream order."""
        if split not in self.splits:
            raise DataError(f"unknown split {split!r} of dataset {self.name}; known: {', '.join(self.splits)}")
        return check_segments(self._load(split), f"{self.name}:{split}", self.skip_empty)

    @property
    def name(self) -> str:
        return getattr(self, "registered_name", type(self).__name__)


DATASETS: Registry[Dataset] = Registry("dataset")


def register(name: str):
    """Register a dataset class under ``name`` (also stored as its ``registered_name``)."""

    def wrap(cls):
        cls.registered_name = name
        return DATASETS.add(name)(cls)

    return wrap


def check_segments(segments: list[Segment], where: str, skip_empty: bool) -> list[Segment]:
    """Reject (or, with ``skip_empty``, drop with a counted warning) empty segments."""
    kept, skipped = [], 0
    for number, seg in enumerate(segments, 1):
        if not seg.source.strip() or not seg.reference.strip():
            side = "source" if not seg.source.strip() else "reference"
            if not skip_empty:
                raise DataError(f"{where}: segment {number} has an empty or whitespace-only {side}; "
                                f"fix the data or pass --skip-empty to skip such segments")
            skipped += 1
            continue
        kept.append(seg)
    if skipped:
        logger.warning("%s: skipped %d segments with an empty source or reference", where, skipped)
    if not kept:
        raise DataError(f"{where}: no segments")
    return kept


def read_lines(path: Path) -> list[str]:
    """Read a UTF-8 text file as lines (no trailing newline); a clear error on bad input."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"file {path} does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(f"{path}: invalid UTF-8 at line {line} (byte {err.start}: {data[err.start:err.start + 1]!r})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def parallel_files(source: Path, reference: Path, doc_id: str | None = None) -> list[Segment]:
    """Pair two line-aligned files; a line-count mismatch is an error naming both counts."""
    src, ref = read_lines(source), read_lines(reference)
    if len(src) != len(ref):
        raise DataError(f"line-count mismatch: {source} has {len(src)} lines, {reference} has {len(ref)}")
    doc = doc_id or Path(source).name
    return [Segment(doc, str(i), s, r) for i, (s, r) in enumerate(zip(src, ref), 1)]


def stream_hash(segments: list[Segment]) -> str:
    """A sha256 over the sources and references: two runs on the same stream share it."""
    digest = hashlib.sha256()
    for seg in segments:
        digest.update(seg.source.encode("utf-8") + b"\x00" + seg.reference.encode("utf-8") + b"\x01")
    return digest.hexdigest()
