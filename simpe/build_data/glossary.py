"""Build the embedded default's glossary: the UI strings the Calc and Chart help quotes, with their German UI
translations, kept where the German help uses them (``make glossary``, ``simpe corpus glossary``).

From Debian's LibreOffice 7.4 packages (the ones ``make corpus`` reads, ``libreoffice.PACKAGES``):

1. **Quoted UI strings.** Every paragraph of the help modules of the stream and dev splits (``scalc``, ``schart``;
   never ``smath`` or ``sdatabase``, the reserved modules) is read as ``help.extract_segments`` renders it, and its
   ``menuitem`` and ``emph`` spans (menu paths, dialog, field and command names: ``help.extract_quotes``) are its
   quoted UI strings. A menu path ("Tools - Options") is split into its items; a trailing ellipsis or colon is
   dropped ("Details..." is "Details"); an item is kept when it has two characters or more, starts with a capital
   letter or a digit (emphasis of running text, "columns", is not a UI name), holds a letter, and has at most
   ``MAX_TERM_TOKENS`` tokens.
2. **German UI translations.** The msgid -> msgstr pairs of every catalog of ``libreoffice-l10n-de``
   (``gettext.read_catalog``: mnemonics removed, whitespace normalised; ellipsis and colon dropped as above). A quoted
   item the catalogs do not hold is not a UI string and is left out.
3. **Used by the reference.** A quote is a *use* of a (UI string, German translation) pair when the paragraph's
   aligned German paragraph (same file, same id) holds the translation and the English paragraph holds the UI
   string, both by the term metrics' own rule (``simpe.terms.match``: whole Moses tokens; source case exact, target
   case ignored). A UI string's entry is its most used translation (ties: the one the catalogs give most often,
   then the first in code-point order). An entry is kept when it has at least one use, and its target differs from
   its source (case ignored: "OK" -> "OK" is no terminology).

The entries are written sorted by source (``str.casefold``, then as written) after a comment header and a ``#langs en
de`` line (the format ``simpe.terms.glossary`` reads). The manifest (``data/libreoffice/manifest.json``, key
``glossary``) records the packages, the rules, the counts and the file's SHA-256; the NOTICE gets a section. The
occurrence counts are the term metrics' (``simpe.terms.score``): per segment of the shipped splits, the entries whose
source term the source holds and whose target term the reference holds, once per segment.

The LibreOffice references are independent translations of the help, made by LibreOffice's translators from the
English text, not post-edits of any MT output: a glossary entry records what the German help and UI call a thing, and
a term "used by the reference" means the German help used that name there.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from simpe.build_data.gettext import read_catalog
from simpe.build_data.help import extract_quotes, extract_segments
from simpe.build_data.libreoffice import (
    GLOSSARY_NOTICE_MARK,
    HELP_SUBDIR,
    PACKAGES,
    SPLIT_OF_MODULE,
    SRC_LANG,
    TGT_LANG,
    UI_SUBDIR,
    fetch_packages,
    package_versions,
)
from simpe.errors import DataError
from simpe.terms.match import TermMatcher, find_all, fold

logger = logging.getLogger(__name__)

GLOSSARY_FILE = "glossary.tsv"
MODULES = tuple(sorted(module for module, split in SPLIT_OF_MODULE.items() if split in ("stream", "dev")))  # schart, scalc
assert "smath" not in MODULES and "sdatabase" not in MODULES  # the reserved modules are never read
MAX_TERM_TOKENS = 6
MENU_SEPARATOR = re.compile(r"\s+-\s+")
TRAILING = re.compile(r"(\s*(\.\.\.|…|:))+$")
NOTICE_MARK = GLOSSARY_NOTICE_MARK  # the start of the NOTICE's glossary section
COUNTED_PREFIXES = (500, 2000)  # stream prefixes whose occurrences the manifest counts (the main job, the comparison)


def ui_form(text: str) -> str:
    """A UI string as the glossary compares it: a trailing ellipsis or colon dropped, spaces stripped."""
    return TRAILING.sub("", text.strip()).strip()


def quoted_items(quote: str) -> list[str]:
    """The UI strings of one quoted span: a menu path split at " - ", each item in ``ui_form``, kept when it has two
    characters or more, starts with a capital letter (or a digit) and holds a letter."""
    items = []
    for part in MENU_SEPARATOR.split(quote.strip().strip("-").strip()):
        item = ui_form(part)
        if len(item) >= 2 and (item[0].isupper() or item[0].isdigit()) and any(ch.isalpha() for ch in item):
            items.append(item)
    return items


def ui_translations(ui_root: Path) -> dict[str, Counter[str]]:
    """English UI string (``ui_form``) -> its German translations in every catalog, with how often each is given."""
    if not ui_root.is_dir():
        raise DataError(f"missing UI catalogs in {ui_root}; run `make corpus` or download libreoffice-l10n-de")
    table: dict[str, Counter[str]] = {}
    for mo in sorted(ui_root.glob("*.mo")):
        for source, target in read_catalog(mo):
            source, target = ui_form(source), ui_form(target)
            if source and target:
                table.setdefault(source, Counter())[target] += 1
    return table


@dataclass(frozen=True)
class Quote:
    """One quoted UI string in one aligned help paragraph: its module, file and id, the paragraph's two texts."""

    module: str
    doc_id: str
    seg_id: str
    item: str
    source: str
    reference: str


def help_quotes(help_root: Path) -> list[Quote]:
    """Every quoted UI string of the stream's and dev's help modules in aligned paragraphs, in sorted file order."""
    en_root, de_root = help_root / "en-US", help_root / "de"
    for lang_root in (en_root, de_root):
        if not lang_root.is_dir():
            raise DataError(f"missing help folder {lang_root}; run `make corpus` or download {', '.join(PACKAGES[:2])}")
    out = []
    for module in MODULES:
        for en_page in sorted((en_root / "text" / module).glob("**/*.html")):
            rel = en_page.relative_to(en_root)
            de_page = de_root / rel
            if not de_page.exists():
                continue
            en_html = en_page.read_text(encoding="utf-8")
            en_text = dict(extract_segments(en_html, module))
            de_text = dict(extract_segments(de_page.read_text(encoding="utf-8"), module))
            doc_id = rel.with_suffix("").as_posix()
            for seg_id, quotes in extract_quotes(en_html, module):
                if seg_id in en_text and de_text.get(seg_id):
                    for quote in quotes:
                        out.extend(Quote(module, doc_id, seg_id, item, en_text[seg_id], de_text[seg_id])
                                   for item in quoted_items(quote))
    return out


@dataclass
class Selection:
    """The chosen entries and the figures of how they were chosen."""

    entries: list[tuple[str, str]]
    uses: dict[str, int]  # source term -> its uses (quotes whose paragraphs hold both sides)
    figures: dict[str, int]


def select_entries(quotes: list[Quote], catalogs: dict[str, Counter[str]]) -> Selection:
    """Choose one translation per quoted UI string by its uses in the aligned German paragraphs (module docstring)."""
    candidates = sorted({q.item for q in quotes if q.item in catalogs})
    pairs = [(item, target) for item in candidates for target in sorted(catalogs[item])]
    matcher = TermMatcher(pairs, SRC_LANG, TGT_LANG)
    index_of = {pair: i for i, pair in enumerate(pairs)}
    uses: Counter[tuple[str, str]] = Counter()
    long_items = set()
    source_tokens: dict[str, list[str]] = {}
    target_tokens: dict[str, tuple[str, ...]] = {}
    for quote in quotes:
        if quote.item not in catalogs:
            continue
        own = [index_of[(quote.item, target)] for target in sorted(catalogs[quote.item])]
        term = matcher.source_terms[own[0]]  # the item's tokens (every pair of the item has them)
        if len(term) > MAX_TERM_TOKENS:
            long_items.add(quote.item)
            continue
        if quote.source not in source_tokens:
            source_tokens[quote.source] = matcher.source_tokens(quote.source)
        if not find_all(source_tokens[quote.source], [term]):
            continue  # the rendered paragraph does not hold the item as whole tokens
        if quote.reference not in target_tokens:
            target_tokens[quote.reference] = fold(matcher.target_tokens(quote.reference))
        for i in own:
            if find_all(target_tokens[quote.reference], [matcher.target_terms[i]]):
                uses[pairs[i]] += 1
    entries, term_uses = [], {}
    identical = 0
    for item in candidates:
        if item in long_items:
            continue
        used = [(uses[(item, target)], catalogs[item][target], target) for target in catalogs[item] if uses[(item, target)]]
        if not used:
            continue
        count, _, target = min(used, key=lambda u: (-u[0], -u[1], u[2]))
        if target.casefold() == item.casefold():
            identical += 1
            continue
        entries.append((item, target))
        term_uses[item] = count
    entries.sort(key=lambda pair: (pair[0].casefold(), pair[0]))
    figures = {"quotes": len(quotes), "quoted_ui_strings": len({q.item for q in quotes}),
               "in_catalogs": len(candidates), "longer_than_max_tokens": len(long_items),
               "used_by_a_reference": len(entries) + identical, "dropped_target_equals_source": identical,
               "entries": len(entries)}
    return Selection(entries, term_uses, figures)


# ------------------------------------------------------------------ counts on the shipped splits
def occurrences(entries: list[tuple[str, str]], sources: list[str], references: list[str]) -> list[list[int]]:
    """Per segment, the entries counted there (ascending): source term in the source, target term in the reference.

    The rule of the term metrics (``simpe.terms.score``), each entry once per segment.
    """
    matcher = TermMatcher(entries, SRC_LANG, TGT_LANG)
    out = []
    for source, reference in zip(sources, references):
        in_source = matcher.in_source(matcher.source_tokens(source))
        used = set(matcher.in_target(matcher.target_tokens(reference))) if in_source else set()
        out.append([i for i in in_source if i in used])
    return out


def split_counts(counted: list[list[int]], prefixes: tuple[int, ...] = ()) -> dict[str, object]:
    """Occurrence figures of one split, whole and on its first ``prefixes`` segments: occurrences, segments with
    one, entries that occur, and first / later occurrences (the T0 / T1 denominators)."""
    def figures(rows: list[list[int]]) -> dict[str, int]:
        seen: set[int] = set()
        first = 0
        for row in rows:
            first += sum(1 for i in row if i not in seen)
            seen.update(row)
        total = sum(len(row) for row in rows)
        return {"segments": len(rows), "occurrences": total, "segments_with_a_term": sum(1 for row in rows if row),
                "entries_occurring": len(seen), "first_occurrences": first, "later_occurrences": total - first}

    out: dict[str, object] = figures(counted)
    for prefix in prefixes:
        if prefix < len(counted):
            out[f"first_{prefix}"] = figures(counted[:prefix])
    return out


# ------------------------------------------------------------------ files
def glossary_text(entries: list[tuple[str, str]]) -> str:
    """The TSV file: a comment header, the ``#langs`` line and one ``source<TAB>target`` line per entry."""
    head = ["# LibreOffice 7.4 UI strings quoted by the Calc and Chart help, with their German UI translations.",
            "# Built by `make glossary` (simpe.build_data.glossary) from Debian's LibreOffice packages; MPL-2.0, see NOTICE.",
            f"#langs {SRC_LANG} {TGT_LANG}"]
    for source, target in entries:
        assert "\t" not in source + target and "\n" not in source + target
    return "".join(line + "\n" for line in head + [f"{source}\t{target}" for source, target in entries])


def notice_section(figures: dict[str, int], versions: dict[str, str]) -> str:
    """The NOTICE's glossary section."""
    version = versions.get("libreoffice-l10n-de", "")
    return "\n".join([
        f"{NOTICE_MARK} holds {figures['entries']} entries: English UI strings that the",
        "LibreOffice Calc and Chart help (libreoffice-help-en-us) quotes in its menuitem and",
        "emph spans, each with its German translation from the UI catalogs of",
        f"libreoffice-l10n-de {version}, kept where the aligned German help paragraph",
        "(libreoffice-help-de) uses that translation. Both are LibreOffice's own text (MPL-2.0,",
        "above); simpe chose the entries and otherwise changed only whitespace, UI mnemonics and",
        "a trailing ellipsis or colon. The German help is an independent translation by",
        "LibreOffice's translators, not a post-edit of machine translation.", ""])


def write_glossary(out_dir: Path, selection: Selection, versions: dict[str, str]) -> dict[str, object]:
    """Write ``glossary.tsv``, its manifest entry (``manifest.json``'s ``glossary``) and the NOTICE section; return
    the manifest entry. The splits must be in ``out_dir`` (the shipped dev and stream)."""
    from simpe.datasets.libreoffice import LibreOfficeDataset

    data = glossary_text(selection.entries).encode("utf-8")
    path = out_dir / GLOSSARY_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    dataset = LibreOfficeDataset(str(out_dir))
    counts = {}
    for split in ("stream", "dev"):
        segments = dataset.load(split)
        counted = occurrences(selection.entries, [s.source for s in segments], [s.reference for s in segments])
        counts[split] = split_counts(counted, COUNTED_PREFIXES if split == "stream" else ())
    entry = {"file": GLOSSARY_FILE, "sha256": hashlib.sha256(data).hexdigest(),
             "packages": {p: versions[p] for p in PACKAGES if p in versions}, "modules": list(MODULES),
             "quote_classes": ["emph", "menuitem"], "max_term_tokens": MAX_TERM_TOKENS,
             "match": "simpe.terms.match: whole Moses tokens; source case exact, target case ignored",
             **selection.figures, "occurrences": counts}
    manifest_path = out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    manifest["glossary"] = entry
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    notice_path = out_dir / "NOTICE"
    notice = notice_path.read_text(encoding="utf-8") if notice_path.exists() else ""
    head = notice.split(NOTICE_MARK, 1)[0].rstrip("\n")
    notice_path.write_text((head + "\n\n" if head else "") + notice_section(selection.figures, versions))
    return entry


def build(out_dir: Path, cache: Path, installed: bool = False) -> dict[str, object]:
    """Fetch (or find) the LibreOffice packages and write the glossary into ``out_dir``; return its manifest entry."""
    if installed:
        root, versions = Path("/"), {"installed": "/usr"}
    else:
        root = fetch_packages(cache)
        versions = package_versions(cache)
    catalogs = ui_translations(root / UI_SUBDIR)
    quotes = help_quotes(root / HELP_SUBDIR)
    selection = select_entries(quotes, catalogs)
    logger.info("glossary: %d quoted UI strings, %d in the catalogs, %d entries", selection.figures["quoted_ui_strings"],
                selection.figures["in_catalogs"], selection.figures["entries"])
    return write_glossary(out_dir, selection, versions)
