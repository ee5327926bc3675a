"""The user's own parallel data: plain source/reference files, TSV, or TMX.

``text``: two line-aligned files. ``tsv``: one file, source TAB reference per line.
``tmx``: translation units with a ``tuv`` in the source and in the target language.
Each is a single ``stream`` split (the whole file, in file order); with ``dev: N`` the file's last N
segments are held out as a ``dev`` split (what the forgetting probe and ``simpe replicate``'s decoding
studies read) and the stream is the rest.
"""
from __future__ import annotations

import io
import logging
import xml.etree.ElementTree as ET
from pathlib import Path

from simpe.datasets.base import DATASETS, Dataset, Segment, parallel_files
from simpe.errors import ConfigError, DataError
from simpe.textfile import read_bytes, read_lines

logger = logging.getLogger(__name__)

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def need_path(value: str | None, what: str, dataset: str, example: str = "FILE") -> Path:
    """``value`` as a path; DataError naming the ``--set`` that gives it when it is empty."""
    if not value:
        raise DataError(f"dataset {dataset!r} needs {what} (e.g. --set data.params.{what}={example})")
    return Path(value)


class HeldOutDataset(Dataset):
    """One file's segments, the last ``dev`` of them held out as the ``dev`` split when ``dev`` > 0."""

    dev = 0

    def _hold_out(self, dev: int) -> None:
        if isinstance(dev, bool) or not isinstance(dev, int) or dev < 0:
            raise ConfigError(f"dataset {self.name!r}: dev must be a whole number of segments >= 0 (the file's last N "
                              f"held out as the dev split), got {dev!r}")
        self.dev = dev
        self.splits = ("stream", "dev") if dev else ("stream",)

    def _load(self, split: str) -> list[Segment]:
        segments = self._read()
        if not self.dev:
            return segments
        if self.dev >= len(segments):
            raise DataError(f"dataset {self.name!r}: dev={self.dev} holds out every one of its {len(segments)} segments; "
                            "leave some for the stream")
        return segments[-self.dev:] if split == "dev" else segments[: -self.dev]

    def _read(self) -> list[Segment]:
        raise NotImplementedError


@DATASETS.add("text")
class TextDataset(HeldOutDataset):
    def __init__(self, source: str | None = None, reference: str | None = None, src_lang: str = "en",
                 tgt_lang: str = "de", dev: int = 0) -> None:
        self.source, self.reference = need_path(source, "source", "text"), need_path(reference, "reference", "text")
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self._hold_out(dev)

    def _read(self) -> list[Segment]:
        return parallel_files(self.source, self.reference)


@DATASETS.add("tsv")
class TsvDataset(HeldOutDataset):
    def __init__(self, path: str | None = None, src_lang: str = "en", tgt_lang: str = "de", dev: int = 0) -> None:
        self.path = need_path(path, "path", "tsv")
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self._hold_out(dev)

    def _read(self) -> list[Segment]:
        out = []
        for number, line in enumerate(read_lines(self.path, "TSV file"), 1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise DataError(f"{self.path}:{number}: expected 2 tab-separated fields (source, reference), found {len(fields)}")
            out.append(Segment(self.path.name, str(number), fields[0], fields[1]))
        return out


def _lang_matches(lang: str, wanted: str) -> bool:
    lang, wanted = lang.lower().replace("_", "-"), wanted.lower().replace("_", "-")
    return lang == wanted or lang.split("-")[0] == wanted.split("-")[0]


def read_tmx(path: Path, src_lang: str, tgt_lang: str) -> list[Segment]:
    """Read the translation units of a TMX file that have both languages, in file order."""
    data = read_bytes(path, "TMX file")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: invalid UTF-8 at byte {err.start}") from None
    out, langs_seen, one_sided = [], set(), 0
    try:
        for number, (_, tu) in enumerate((ev for ev in ET.iterparse(io.BytesIO(data), events=("end",)) if ev[1].tag == "tu"), 1):
            texts: dict[str, str] = {}
            for tuv in tu.iter("tuv"):
                lang = tuv.get(XML_LANG) or tuv.get("lang") or ""
                langs_seen.add(lang)
                seg = tuv.find("seg")
                text = " ".join("".join(seg.itertext()).split()) if seg is not None else ""
                for wanted in (src_lang, tgt_lang):
                    if _lang_matches(lang, wanted) and wanted not in texts:
                        texts[wanted] = text
            if src_lang in texts and tgt_lang in texts:
                out.append(Segment(path.name, tu.get("tuid") or str(number), texts[src_lang], texts[tgt_lang]))
            else:
                one_sided += 1
            tu.clear()
    except ET.ParseError as err:
        raise DataError(f"{path}: not a well-formed TMX file ({err})") from None
    if not out:
        raise DataError(f"{path}: no translation unit has both {src_lang!r} and {tgt_lang!r}; languages found: {', '.join(sorted(langs_seen)) or 'none'}")
    if one_sided:
        logger.warning("%s: skipped %d of %d translation units that lack %r or %r", path, one_sided, one_sided + len(out),
                       src_lang, tgt_lang)
    return out


@DATASETS.add("tmx")
class TmxDataset(HeldOutDataset):
    def __init__(self, path: str | None = None, src_lang: str = "en", tgt_lang: str = "de", dev: int = 0) -> None:
        self.path = need_path(path, "path", "tmx")
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self._hold_out(dev)

    def _read(self) -> list[Segment]:
        return read_tmx(self.path, self.src_lang, self.tgt_lang)


MEMORY_FORMATS = ("tmx", "tsv", "text")


def memory_format(path: Path) -> str:
    """A translation memory's format from its name: ``.tmx``, ``.tsv``, else ``text`` (``STEM.<src>`` + ``STEM.<tgt>``)."""
    suffix = Path(path).suffix.lower()
    return "tmx" if suffix == ".tmx" else "tsv" if suffix == ".tsv" else "text"


def read_memory(path: str | Path, src_lang: str = "en", tgt_lang: str = "de") -> list[tuple[str, str]]:
    """A translator's memory as (source, target) pairs in file order: a TMX file, a TSV file (source TAB target), or
    text, two line-aligned files ``PATH.<src_lang>`` and ``PATH.<tgt_lang>`` (``--warm-start``, ``tune-retrieve``'s
    ``memory``). Empty pairs are left out."""
    path = Path(path)
    fmt = memory_format(path)
    if fmt == "tmx":
        segments = read_tmx(path, src_lang, tgt_lang)
    elif fmt == "tsv":
        segments = TsvDataset(str(path))._read()
    else:
        source, target = Path(f"{path}.{src_lang}"), Path(f"{path}.{tgt_lang}")
        missing = [str(f) for f in (source, target) if not f.is_file()]
        if missing:
            raise DataError(f"translation memory {path}: a text memory is two line-aligned files, {source} and {target}; "
                            f"missing {', '.join(missing)} (or give a .tmx or .tsv file)")
        segments = parallel_files(source, target)
    pairs = [(s.source, s.reference) for s in segments if s.source.strip() and s.reference.strip()]
    if not pairs:
        raise DataError(f"translation memory {path} holds no (source, target) pair")
    return pairs
