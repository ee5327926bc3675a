"""The Autodesk Post-Editing Data corpus (Zhechev 2012; ISLRN 290-859-676-529-5), en-US -> de, as distributed.

No dataset host is reachable offline, so the loader reads a documented local path:
``$SIMPE_AUTODESK_DIR`` or, by default, ``data/autodesk/``. When nothing is there, the error
says what to download, from where, and where to put it; there is no fallback to another dataset.

**The distributed layout.** One file per target language and origin: ``deu.mt.bz2``
(post-edited MT) and ``deu.tm.bz2`` (post-edited translation-memory fuzzy matches), bz2 or
unpacked (``deu.mt``). Each record ends with U+F8FF followed by "◊÷" and a newline (records
are split on that terminator, not on newlines); its ten fields are separated by U+F8FF:
source, raw MT (or TM) output, post-edit, product, release, type (MT/FUZZY), Moses score,
fuzzy score, placeholders, creation date ("2012/11/13 00:13:54"). A record with another
number of fields is one error line naming the file and the record number. TMX files and
source<TAB>post-edit TSV files in the folder are read as further formats (a single
``stream`` split, file order) when no distributed file is there.

**The stream design** (every choice is a parameter, saved in the run's config.yaml and
described with counts in its data-manifest.json):

- ``origin``: ``mt`` (default), ``tm`` or ``both`` (the MT file, then the TM file).
- ``order``: ``file`` (default: records in file order) or ``date`` (a stable sort by the
  creation date, field 10).
- ``dedupe``: false (default: repeats are kept as distributed, since post-editors do meet
  them); true keeps only the first occurrence of each (source, post-edit) pair in that order
  and logs how many it dropped.
- documents are (product, release) pairs, id ``PRODUCT/RELEASE``; the corpus has no other
  document ids. The stream visits documents one after another, in the order of their first
  record; inside a document, records keep the order above.
- splits of held-out documents: documents are ranked by sha256 of ``"<split_seed>:<doc id>"``
  (a fixed pseudo-random order that does not depend on the file order); ``stream`` takes
  documents from the top of that ranking until it holds at least ``stream_fraction`` of the
  segments, ``dev`` the next ones until ``dev_fraction``, and ``train`` the rest. A train
  pair whose source also occurs in the stream or dev split is dropped (counted), so an
  in-domain baseline trained on ``train`` (``simpe train-demo-model --dataset autodesk``) never
  saw a stream source.

Each segment carries the raw MT output (``Segment.mt``) and product, release, type, date
and origin (``Segment.info``).
"""
from __future__ import annotations

import bz2
import hashlib
import logging
import os
import re
from pathlib import Path
from typing import Any

from simpe.datasets.base import DATASETS, Dataset, Segment
from simpe.datasets.parallel import TsvDataset, read_tmx
from simpe.errors import ConfigError, DataError
from simpe.paths import DATA_DIR
from simpe.textfile import MAX_FILE_BYTES, read_bytes

logger = logging.getLogger(__name__)

ENV_VAR = "SIMPE_AUTODESK_DIR"
DEFAULT_DIR = DATA_DIR / "autodesk"
ISLRN = "290-859-676-529-5"
DOWNLOAD_HINT = (
    "download the 'Autodesk Post-Editing Data' corpus (Zhechev 2012, ISLRN {islrn}: http://www.islrn.org/resources/{islrn}/; "
    "published by Autodesk, https://autodesk.app.box.com/Autodesk-PostEditing) on a machine with network access, "
    "and put its en-US -> de file {lang}.mt.bz2 (and {lang}.tm.bz2 for origin tm/both; unpacked files work too) "
    "in {where} (or set {env} to their folder)"
)
FIELD_SEPARATOR = "\uf8ff"
RECORD_END = re.compile("\uf8ff\u25ca\u00f7\r?\n")  # U+F8FF "◊÷" newline
FIELDS = ("source", "mt", "post_edit", "product", "release", "type", "moses_score", "fuzzy_score", "placeholders", "date")
DATE = re.compile(r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}")
ORIGINS = ("mt", "tm", "both")
ORDERS = ("file", "date")


def corpus_file(folder: Path, lang: str, origin: str) -> Path | None:
    """``<lang>.<origin>`` unpacked, else ``<lang>.<origin>.bz2``; None when neither is there."""
    for name in (f"{lang}.{origin}", f"{lang}.{origin}.bz2"):
        if (folder / name).is_file():
            return folder / name
    return None


def _bunzip(data: bytes, path: Path) -> bytes:
    """``data`` unpacked, to at most MAX_FILE_BYTES (a bz2 bomb of a few kB would unpack to any size)."""
    parts, total, rest = [], 0, data
    while rest:  # one bz2 stream after another, as bz2.decompress reads a file of several
        unpacker = bz2.BZ2Decompressor()
        parts.append(unpacker.decompress(rest, max_length=MAX_FILE_BYTES + 1 - total))
        total += len(parts[-1])
        if total > MAX_FILE_BYTES:
            raise DataError(f"{path} unpacks to more than {MAX_FILE_BYTES:,} bytes; the Autodesk files unpack to about 200 MB")
        if not unpacker.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = unpacker.unused_data
    return b"".join(parts)


def read_records(path: Path) -> list[dict[str, str]]:
    """The records of one distributed file (bz2 or unpacked), in file order, as field-name -> text.

    Raises:
        DataError: invalid UTF-8, an unterminated last record, or a record without ten fields
            (naming the file and the 1-based record number).
    """
    data = read_bytes(path, "Autodesk file")
    try:
        raw = _bunzip(data, path) if path.suffix == ".bz2" else data
    except (OSError, ValueError, EOFError) as err:  # not bz2 at all, or cut short
        raise DataError(f"{path} is not a complete bz2 file ({err}); download it again (see the Autodesk data page)") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: invalid UTF-8 at byte {err.start} (of the unpacked text)") from None
    text = text.removeprefix("\ufeff")
    parts = RECORD_END.split(text)
    tail = parts.pop()  # what follows the last terminator: nothing in a whole file
    if tail.strip():
        raise DataError(f"{path}: record {len(parts) + 1} does not end with U+F8FF + '◊÷' + newline (a torn or "
                        "reformatted file? records are split on that terminator)")
    records = []
    for number, record in enumerate(parts, 1):
        fields = record.split(FIELD_SEPARATOR)
        if len(fields) != len(FIELDS):
            raise DataError(f"{path}: record {number} has {len(fields)} fields, expected {len(FIELDS)} separated by U+F8FF "
                            f"({', '.join(FIELDS)})")
        records.append(dict(zip(FIELDS, fields)))
    return records


def _rank(seed: int, doc: str) -> str:
    return hashlib.sha256(f"{seed}:{doc}".encode()).hexdigest()


@DATASETS.add("autodesk")
class AutodeskDataset(Dataset):
    """The Autodesk Post-Editing Data corpus as distributed (see the module docstring for the stream design)."""

    splits = ("stream", "dev", "train")

    def __init__(self, path: str | None = None, lang: str = "deu", origin: str = "mt", order: str = "file",
                 dedupe: bool = False, stream_fraction: float = 0.1, dev_fraction: float = 0.05, split_seed: int = 0) -> None:
        if origin not in ORIGINS:
            raise ConfigError(f"unknown autodesk origin {origin!r}; known: {', '.join(ORIGINS)}")
        if order not in ORDERS:
            raise ConfigError(f"unknown autodesk order {order!r}; known: {', '.join(ORDERS)}")
        for key, value in (("stream_fraction", stream_fraction), ("dev_fraction", dev_fraction)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"autodesk {key} must be in [0, 1], got {value}")
        self.path = Path(path or os.environ.get(ENV_VAR) or DEFAULT_DIR)
        self.lang, self.origin, self.order, self.dedupe = lang, origin, order, dedupe
        self.stream_fraction, self.dev_fraction, self.split_seed = stream_fraction, dev_fraction, split_seed
        self._splits: dict[str, list[Segment]] | None = None
        self._manifest: dict[str, Any] = {}

    # ------------------------------------------------------------ loading
    def _hint(self) -> str:
        return DOWNLOAD_HINT.format(islrn=ISLRN, lang=self.lang, where=self.path, env=ENV_VAR)

    def _files(self) -> list[Path]:
        origins = ("mt", "tm") if self.origin == "both" else (self.origin,)
        return [f for f in (corpus_file(self.path, self.lang, o) for o in origins) if f is not None]

    def _load(self, split: str) -> list[Segment]:
        if not self.path.is_dir():
            raise DataError(f"the Autodesk corpus is not at {self.path}: {self._hint()}")
        origins = ("mt", "tm") if self.origin == "both" else (self.origin,)
        if any(corpus_file(self.path, self.lang, o) for o in ("mt", "tm")):
            missing = [o for o in origins if corpus_file(self.path, self.lang, o) is None]
            if missing:
                raise DataError(f"origin={self.origin} but {self.path} has no {self.lang}.{missing[0]}(.bz2): {self._hint()}")
            if self._splits is None:
                self._splits = self._build(self._files())
            return self._splits[split]
        tmx, tsv = sorted(self.path.glob("*.tmx")), sorted(self.path.glob("*.tsv"))
        if not tmx and not tsv:
            raise DataError(f"no {self.lang}.mt.bz2, {self.lang}.mt, .tmx or .tsv file in {self.path}: {self._hint()}")
        if split != "stream":
            raise DataError(f"the Autodesk TMX/TSV formats have only a stream split (got {split!r}); the distributed "
                            f"{self.lang}.mt.bz2 has stream, dev and train")
        out: list[Segment] = []
        for f in tmx:
            out.extend(read_tmx(f, "en", "de"))
        for f in tsv:
            out.extend(TsvDataset(str(f))._load("stream"))
        self._manifest = {"format": "tmx/tsv", "files": [str(f) for f in tmx + tsv], "segments": len(out)}
        return out

    def _build(self, files: list[Path]) -> dict[str, list[Segment]]:
        """Read, order, dedupe, group into documents and split (the documented design)."""
        rows: list[tuple[str, int, dict[str, str]]] = []  # (file name, record number, fields)
        file_facts = []
        for f in files:
            records = read_records(f)
            rows.extend((f.name, n, r) for n, r in enumerate(records, 1))
            file_facts.append({"file": f.name, "records": len(records), "sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
        if self.order == "date":
            for name, number, r in rows:
                if not DATE.fullmatch(r["date"].strip()):
                    raise DataError(f"{self.path / name}: record {number} has creation date {r['date']!r}, expected "
                                    "YYYY/MM/DD hh:mm:ss (order=date sorts on it)")
            rows.sort(key=lambda row: row[2]["date"].strip())  # stable: file order among equal dates
        duplicates = 0
        if self.dedupe:
            seen, kept = set(), []
            for row in rows:
                key = (row[2]["source"], row[2]["post_edit"])
                if key in seen:
                    duplicates += 1
                    continue
                seen.add(key)
                kept.append(row)
            rows = kept
            logger.info("autodesk: dedupe dropped %d repeated (source, post-edit) pairs of %d", duplicates, duplicates + len(rows))
        documents: dict[str, list[Segment]] = {}  # in order of first record
        for name, number, r in rows:
            doc = f"{r['product']}/{r['release']}"
            origin = name.split(".")[1]
            info = {"product": r["product"], "release": r["release"], "type": r["type"], "date": r["date"],
                    "origin": origin, "record": f"{name}:{number}"}
            documents.setdefault(doc, []).append(Segment(doc, f"{origin}:{number}", r["source"], r["post_edit"], r["mt"], info))
        total = sum(len(s) for s in documents.values())
        ranked = sorted(documents, key=lambda d: _rank(self.split_seed, d))
        assigned: dict[str, set[str]] = {"stream": set(), "dev": set(), "train": set()}
        counts = {"stream": 0, "dev": 0}
        for doc in ranked:
            for split, fraction in (("stream", self.stream_fraction), ("dev", self.dev_fraction)):
                if counts[split] < fraction * total:
                    assigned[split].add(doc)
                    counts[split] += len(documents[doc])
                    break
            else:
                assigned["train"].add(doc)
        splits = {split: [s for d in documents if d in docs for s in documents[d]] for split, docs in assigned.items()}
        held_out = {s.source for split in ("stream", "dev") for s in splits[split]}
        train = [s for s in splits["train"] if s.source not in held_out]
        overlap = len(splits["train"]) - len(train)
        splits["train"] = train
        logger.info("autodesk: %d segments in %d documents (product/release): stream %d documents %d segments, dev %d/%d, "
                    "train %d/%d (%d train pairs dropped: source in stream or dev)", total, len(documents),
                    len(assigned["stream"]), len(splits["stream"]), len(assigned["dev"]), len(splits["dev"]),
                    len(assigned["train"]), len(splits["train"]), overlap)
        self._manifest = {
            "format": "distributed", "folder": str(self.path), "files": file_facts,
            "choices": {"lang": self.lang, "origin": self.origin, "order": self.order, "dedupe": self.dedupe,
                        "documents": "product/release", "stream_fraction": self.stream_fraction,
                        "dev_fraction": self.dev_fraction, "split_seed": self.split_seed},
            "records": len(rows) + duplicates, "duplicates_dropped": duplicates, "segments": total,
            "train_pairs_dropped_source_held_out": overlap,
            "splits": {split: {"segments": len(splits[split]),
                               "documents": [{"id": d, "segments": len(documents[d])} for d in documents if d in assigned[split]]}
                       for split in ("stream", "dev", "train")},
        }
        return splits

    def manifest(self) -> dict[str, Any]:
        return {"dataset": self.name, **self._manifest}
