"""The one glossary loader: a TSV or TBX file of (source term, target term) entries, checked against a stream.

A glossary is what a translator or a client hands over before the job: source terms and the target terms they
want. ``load_glossary`` reads one file and refuses, in one line (``DataError``, naming the file and the line), a
malformed entry, a glossary in languages other than the stream's and an empty glossary. It does not find terms in
text (``simpe.terms.match``) or score them (``simpe.terms.score``).

**TSV** (UTF-8; ``.tsv``, ``.txt`` or any name but ``.tbx``): one entry per line, ``source<TAB>target``, no quoting.
Blank lines are ignored. A line whose first character is ``#`` is a comment, except the languages line
``#langs SRC TGT`` (e.g. ``#langs en de``), which may stand before the first entry and says the glossary's
languages; without it the glossary is taken to be in the stream's languages. Each side is stripped of surrounding
spaces; a line with no tab, more than one tab or an empty side is malformed.

**TBX** (``.tbx``; ISO 30042:2008 with its ``martif`` root, what translate-toolkit reads): each ``termEntry``
gives one entry, its first non-deprecated term (``tig``) in the ``langSet`` of the stream's source language
and its first one in the target language's. A ``termEntry`` without both languages is skipped (counted in the log);
a ``langSet`` without ``xml:lang`` (on itself or the root) or a language with no term is malformed.

A glossary holds at most ``MAX_ENTRIES`` (100,000) entries in at most ``MAX_BYTES`` (64 MiB); a longer one is
refused at the first entry past the limit, before any term is tokenised (keep the entries of the job's domain).

Languages compare by their primary subtag, case ignored (``en-US`` is ``en``; ``de_DE`` is ``de``). A source term
given twice is refused (naming both lines): matching is exact on the source side (``simpe.terms.match``), so one
source has one target.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, DataError
from simpe.paths import DATA_DIR, REPO_ROOT
from simpe.textfile import read_bytes, read_lines

logger = logging.getLogger(__name__)

DEFAULT_GLOSSARY = DATA_DIR / "libreoffice" / "glossary.tsv"  # the embedded default's (``make glossary``)
FORMATS = ("tsv", "tbx")
LANGS_LINE = re.compile(r"#langs[ \t]+(\S+)[ \t]+(\S+)[ \t]*")
MAX_TERM_CHARS = 200  # a term is a name, not a paragraph: a longer side is refused as malformed
# A client's or a product's termbase holds thousands of entries; every entry is Moses-tokenised for matching (about
# 0.1 ms a side), so 1,000,000 entries took minutes and 2 GB before the first segment. More are refused at once.
MAX_ENTRIES = 100_000
MAX_BYTES = 64 * 1024**2  # of the file: 100,000 TBX entries take about 40 MB


@dataclass(frozen=True)
class Entry:
    """One glossary entry: the source term, the target term, and where it stands in its file (1-based line)."""

    source: str
    target: str
    line: int


@dataclass(frozen=True)
class Glossary:
    """The checked entries of one file, in file order, and the file's languages (primary subtags)."""

    path: Path
    format: str
    source_lang: str
    target_lang: str
    entries: tuple[Entry, ...]

    def __len__(self) -> int:
        return len(self.entries)

    def pairs(self) -> list[tuple[str, str]]:
        """The (source term, target term) pairs in file order."""
        return [(entry.source, entry.target) for entry in self.entries]


GLOSSARY_OF_DATASET = "dataset"  # data.glossary / --glossary: the dataset's own glossary (Dataset.glossary)


def resolve_glossary(value: str, dataset: Any) -> Path:
    """The file ``data.glossary`` names: ``dataset`` -> the dataset's own glossary (``Dataset.glossary``), else a
    path. Refused in one line: a dataset without a glossary, a path that is not a file."""
    if value == GLOSSARY_OF_DATASET:
        own = dataset.glossary()
        if own is None:
            raise ConfigError(f"--glossary dataset: dataset {dataset.name!r} has no glossary of its own; give a glossary "
                              "file (TSV or TBX: docs/terms.md)")
        path = Path(own)
        if not path.is_file():
            raise DataError(f"--glossary dataset: {path} does not exist; run `make glossary` to build it")
        return path
    path = Path(value)
    if not path.is_file():
        raise DataError(f"glossary {value!r} is not a file; give a TSV or TBX glossary (docs/terms.md), or 'dataset' "
                        "for the dataset's own")
    return path


def glossary_label(path: str | Path, value: str, dataset: str) -> str:
    """How a run's records name its glossary, never by an absolute path of this machine: a file inside the repository
    by its path relative to the repository (``data/libreoffice/glossary.tsv``); elsewhere, ``dataset:<name>`` for a
    dataset's own glossary (``value`` is ``dataset``), else the file's name alone (its content hash is the group's and
    the term signature's)."""
    resolved = Path(path).resolve()
    if resolved.is_relative_to(REPO_ROOT.resolve()):
        return resolved.relative_to(REPO_ROOT.resolve()).as_posix()
    return f"dataset:{dataset}" if value == GLOSSARY_OF_DATASET else resolved.name


def primary_language(code: str) -> str:
    """The primary subtag of a language code, lowercased: ``en-US`` -> ``en``, ``de_DE`` -> ``de``."""
    return re.split(r"[-_]", code.strip(), maxsplit=1)[0].lower()


def glossary_format(path: str | Path) -> str:
    """``tbx`` for a ``.tbx`` file, else ``tsv``."""
    return "tbx" if Path(path).suffix.lower() == ".tbx" else "tsv"


def load_glossary(path: str | Path, source_lang: str, target_lang: str) -> Glossary:
    """Read and check the glossary ``path`` for a stream from ``source_lang`` to ``target_lang``.

    Raises:
        DataError: the file is missing or unreadable, an entry is malformed (file and line), a source term repeats,
            its languages are not the stream's, or it holds no entry.
    """
    path = Path(path)
    src, tgt = primary_language(source_lang), primary_language(target_lang)
    kind = glossary_format(path)
    if path.is_file() and path.stat().st_size > MAX_BYTES:
        raise DataError(f"glossary {str(path)!r} is {path.stat().st_size:,} bytes; simpe takes glossaries of at most "
                        f"{MAX_BYTES:,} bytes and {MAX_ENTRIES:,} entries (keep the terms of the job's domain)")
    entries = _read_tbx(path, src, tgt) if kind == "tbx" else _read_tsv(path, src, tgt)
    seen: dict[str, Entry] = {}
    for entry in entries:
        for side, text in (("source", entry.source), ("target", entry.target)):
            if len(text) > MAX_TERM_CHARS:
                raise DataError(f"glossary {str(path)!r} line {entry.line}: the {side} term has {len(text)} characters; "
                                f"a term has at most {MAX_TERM_CHARS}")
        first = seen.get(entry.source)
        if first is not None:
            raise DataError(f"glossary {str(path)!r} line {entry.line}: source term {entry.source!r} is given again "
                            f"(first on line {first.line}); give each source term once")
        seen[entry.source] = entry
    if not entries:
        raise DataError(f"glossary {str(path)!r} holds no {src}->{tgt} entry; give at least one "
                        + ("'source<TAB>target' line" if kind == "tsv" else "termEntry with both languages"))
    logger.info("glossary %s: %d %s->%s entries (%s)", path, len(entries), src, tgt, kind)
    return Glossary(path, kind, src, tgt, tuple(entries))


def _check_count(path: Path, count: int, line: int) -> None:
    if count > MAX_ENTRIES:
        raise DataError(f"glossary {str(path)!r} line {line}: more than {MAX_ENTRIES:,} entries; simpe takes glossaries "
                        f"of at most {MAX_ENTRIES:,} (keep the terms of the job's domain)")


def _check_languages(path: Path, where: str, found: tuple[str, str], stream: tuple[str, str]) -> None:
    if found != stream:
        raise DataError(f"glossary {str(path)!r} {where} is {found[0]}->{found[1]}, but the stream is "
                        f"{stream[0]}->{stream[1]}; give a {stream[0]}->{stream[1]} glossary")


def _read_tsv(path: Path, src: str, tgt: str) -> list[Entry]:
    entries: list[Entry] = []
    for number, line in enumerate(read_lines(path, "glossary"), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            match = LANGS_LINE.fullmatch(line)
            if match is not None:
                if entries:
                    raise DataError(f"glossary {str(path)!r} line {number}: the '#langs SRC TGT' line must stand "
                                    "before the first entry")
                _check_languages(path, f"line {number} ('#langs')",
                                 (primary_language(match[1]), primary_language(match[2])), (src, tgt))
            elif line.startswith("#lang"):
                raise DataError(f"glossary {str(path)!r} line {number}: malformed languages line {line[:60]!r}; "
                                "write '#langs SRC TGT', e.g. '#langs en de'")
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(f"glossary {str(path)!r} line {number}: expected 'source<TAB>target', got "
                            f"{len(fields)} field{'s' if len(fields) != 1 else ''} ({line[:60]!r})")
        source, target = (field.strip() for field in fields)
        if not source or not target:
            raise DataError(f"glossary {str(path)!r} line {number}: the {'source' if not source else 'target'} term "
                            f"is empty ({line[:60]!r})")
        entries.append(Entry(source, target, number))
        _check_count(path, len(entries), number)
    return entries


def _read_tbx(path: Path, src: str, tgt: str) -> list[Entry]:
    from lxml import etree
    from translate.misc.xml_helpers import getXMLlang
    from translate.storage import tbx

    data = read_bytes(path, "glossary")
    try:
        store = tbx.tbxfile.parsestring(data)
    except etree.XMLSyntaxError as err:
        raise DataError(f"glossary {str(path)!r} line {err.lineno}: not well-formed XML ({err.msg})") from None
    except AssertionError:  # translate-toolkit asserts the root element
        raise DataError(f"glossary {str(path)!r} line 1: not a TBX file (its root element is not 'martif'; "
                        "simpe reads TBX as ISO 30042:2008 writes it)") from None
    root_lang = getXMLlang(store.document.getroot())
    entries: list[Entry] = []
    languages: set[str] = set()
    skipped = 0
    for unit in store.units:
        terms: dict[str, str] = {}
        for node in unit.getlanguageNodes():
            code = getXMLlang(node) or root_lang
            if not code:
                raise DataError(f"glossary {str(path)!r} line {node.sourceline}: a langSet without xml:lang")
            lang = primary_language(code)
            languages.add(lang)
            # _get_terms reads one langSet's tig terms with their status; the public getters read only the source and
            # target langSet the store itself picked, by exact language code
            found = [term for term in unit._get_terms(node) if not term.deprecated]
            text = found[0].text.strip() if found else ""
            if not text:
                raise DataError(f"glossary {str(path)!r} line {node.sourceline}: the {code} langSet holds no term")
            terms.setdefault(lang, text)
        if src in terms and tgt in terms:
            entries.append(Entry(terms[src], terms[tgt], unit.xmlelement.sourceline))
            _check_count(path, len(entries), unit.xmlelement.sourceline)
        else:
            skipped += 1
    if not entries and languages and not {src, tgt} <= languages:
        raise DataError(f"glossary {str(path)!r} holds the languages {', '.join(sorted(languages))}, but the stream is "
                        f"{src}->{tgt}; give a glossary with {src} and {tgt} terms")
    if skipped:
        logger.info("glossary %s: %d termEntry elements lack %s or %s terms; skipped", path, skipped, src, tgt)
    return entries
