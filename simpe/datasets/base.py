"""The dataset contract, its registry, and the checks every loader shares.

A dataset yields an ordered list of ``Segment`` (document id, segment id, source,
reference) for a named split. Every loader rejects bad input with one clear line:
line-count mismatch, empty or whitespace-only segments (or skips them with a counted
warning when ``load(split, skip_empty=True)``), invalid UTF-8, unknown split or dataset
name. A dataset's parameters are its constructor's keyword arguments (checked by
``DATASETS.build``; set under ``data.params``).
"""
from __future__ import annotations

import hashlib
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.errors import DataError
from simpe.registry import Registry
from simpe.textfile import read_lines

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Segment:
    """One aligned (source, reference) pair in stream order.

    ``mt``: the raw MT (or TM) output the post-edit was made from, when the corpus has it;
    ``info``: further facts of the segment (Autodesk: product, release, type, date, origin).
    """

    doc_id: str
    seg_id: str
    source: str
    reference: str
    mt: str | None = None
    info: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


class Dataset(ABC):
    """A parallel corpus with named splits; ``load(split)`` returns segments in order."""

    name: str = ""  # set by DATASETS.add
    splits: tuple[str, ...] = ("stream",)
    src_lang: str = "en"
    tgt_lang: str = "de"

    @abstractmethod
    def _load(self, split: str) -> list[Segment]:
        """Read the split's raw segments (checked by ``load``)."""

    def train_vocab(self, lang: str) -> Path | None:
        """The target-side vocabulary of the train split (``<count> <word>`` lines; ``metrics.novel_vocab: train``), or None."""
        return None

    def glossary(self) -> Path | None:
        """The dataset's own glossary file (``--glossary dataset``; docs/terms.md), or None."""
        return None

    def load(self, split: str = "stream", skip_empty: bool = False) -> list[Segment]:
        """Return the checked segments of ``split`` in stream order.

        Args:
            skip_empty: drop segments with an empty source or reference (counted warning) instead of failing.
        """
        if split not in self.splits:
            raise DataError(f"unknown split {split!r} of dataset {self.name}; known: {', '.join(self.splits)}")
        return check_segments(self._load(split), f"{self.name}:{split}", skip_empty)

    def manifest(self) -> dict[str, Any] | None:
        """How the loaded splits were made (files, choices, counts), for the run's data-manifest.json; None: nothing to add."""
        return None


DATASETS: Registry[Dataset] = Registry("dataset")


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


def parallel_files(source: Path, reference: Path, doc_id: str | None = None) -> list[Segment]:
    """Pair two line-aligned files; a line-count mismatch is an error naming both counts."""
    src, ref = read_lines(source, "source file"), read_lines(reference, "reference file")
    if len(src) != len(ref):
        raise DataError(f"line-count mismatch: {source} has {len(src)} lines, {reference} has {len(ref)}")
    doc = doc_id or Path(source).name
    return [Segment(doc, str(i), s, r) for i, (s, r) in enumerate(zip(src, ref), 1)]


def draw(count: int, n: int, seed: int) -> list[int]:
    """The indices of ``min(n, count)`` of ``count`` items drawn without replacement with ``seed``, in file order: the
    one seeded draw of a split's pairs (a method's own sentences, ``simpe.loop.stream.method_sentences``; the shipped
    train sample of the LibreOffice corpus, ``simpe.build_data.libreoffice``)."""
    return sorted(random.Random(seed).sample(range(count), min(n, count)))


def shuffle_documents(segments: list[Segment], seed: int, where: str) -> list[Segment]:
    """``segments`` with their documents in the order ``random.Random(seed).shuffle`` gives: each document's segments
    stay together and in their order (a document read in several stretches is joined at its first); a replicate of
    one stream in another order (``data.shuffle_documents``). DataError when ``where`` (dataset:split) holds one
    document only: no other order exists, and the dataset gives no document ids to shuffle by."""
    documents: dict[str, list[Segment]] = {}
    for seg in segments:
        documents.setdefault(seg.doc_id, []).append(seg)
    if len(documents) < 2:
        raise DataError(f"data.shuffle_documents={seed}: {where} holds one document ({next(iter(documents), '')!r}; the "
                        "dataset gives no document ids), so it has no other document order; leave "
                        "data.shuffle_documents null, or replicate on other streams")
    order = list(documents)
    random.Random(seed).shuffle(order)
    logger.info("%s: %d documents in the order of seed %d (each whole)", where, len(order), seed)
    return [seg for doc in order for seg in documents[doc]]


def stream_hash(segments: list[Segment]) -> str:
    """A sha256 over the sources and references: two runs on the same stream share it."""
    return pairs_hash((seg.source, seg.reference) for seg in segments)


def pairs_hash(pairs: Iterable[tuple[str, str]]) -> str:
    """A sha256 over (source, target) pairs in order (a stream's, a translation memory's)."""
    digest = hashlib.sha256()
    for source, reference in pairs:
        digest.update(source.encode("utf-8") + b"\x00" + reference.encode("utf-8") + b"\x01")
    return digest.hexdigest()
