"""The LibreOffice glossary: the builder's rules on hand-written pages and catalogs (simpe.build_data.glossary), and
the shipped data/libreoffice/glossary.tsv checked against them where no Debian package is needed."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_gettext import mo_bytes
from test_help import EN_PAGE, _write_help

from simpe.build_data.glossary import GLOSSARY_FILE, NOTICE_MARK, help_quotes, quoted_items, select_entries, ui_form, ui_translations, write_glossary
from simpe.build_data.help import extract_quotes
from simpe.build_data.libreoffice import build_from
from simpe.datasets.libreoffice import DEFAULT_DIR, LibreOfficeDataset
from simpe.terms.glossary import load_glossary
from simpe.terms.match import TermMatcher

CALC_EN = """<html><body>
<p id="par_id1">Choose <span class="menuitem">Tools - Options</span>.</p>
<p id="par_id2">Click <span class="emph">OK</span> or <span class="emph">Sort Ascending</span>.</p>
<p id="par_id3">Click <span class="emph">Sort Ascending</span> and <span class="emph">columns</span>.</p>
<p id="par_id4">Select <span class="emph">Number</span>.</p>
</body></html>"""
CALC_DE = """<html><body>
<p id="par_id1">Wählen Sie Extras - Optionen.</p>
<p id="par_id2">Klicken Sie auf OK oder Aufsteigend sortieren.</p>
<p id="par_id3">Klicken Sie auf Aufsteigend und Spalten.</p>
<p id="par_id4">Wählen Sie Zahl.</p>
</body></html>"""
CATALOG = [("", "Project-Id: x"), ("~Tools", "~Extras"), ("Options...", "Optionen..."), ("ctx\x04Options", "Einstellungen"),
           ("OK", "OK"), ("Sort ~Ascending", "~Aufsteigend sortieren"), ("a\x04Number", "Zahl"), ("b\x04Number", "Zahl"),
           ("c\x04Number", "Nummer"), ("~Insert", "~Einfügen")]


def test_quotes_of_a_page_as_the_user_reads_it() -> None:
    # par_id3 of test_help's page: the default (non-macOS) variant of the switch, then the span after it
    assert extract_quotes(EN_PAGE, "scalc") == [("par_id3", ["Tools - Options", "- Calc"])]
    assert extract_quotes('<p id="par_id1"><span class="menuitem">A <span class="emph">B</span></span> '
                          '<span class="emph" hidden="true">C</span></p>') == [("par_id1", ["A B"])]


@pytest.mark.parametrize("quote, items", [
    ("Tools - Options", ["Tools", "Options"]),
    ("- LibreOffice Calc - Calculate", ["LibreOffice Calc", "Calculate"]),
    ("Details...", ["Details"]), ("Name:", ["Name"]), ("Save As …", ["Save As"]),
    ("columns", []), ("C", []), ("#VALUE!", []), ("3D View", ["3D View"]), ("Data - Sort - Options", ["Data", "Sort", "Options"]),
])
def test_quoted_items(quote: str, items: list[str]) -> None:
    assert quoted_items(quote) == items


def test_ui_form() -> None:
    assert [ui_form(t) for t in ("Options...", " Name: ", "Export…", "Define Range:...", "A - B")] == [
        "Options", "Name", "Export", "Define Range", "A - B"]


def test_build_on_hand_written_packages(tmp_path: Path) -> None:
    help_root, ui_root, out = tmp_path / "help", tmp_path / "ui", tmp_path / "out"
    _write_help(help_root, "scalc", "a.html", CALC_EN, CALC_DE)
    _write_help(help_root, "schart", "b.html", '<p id="par_id1">Choose <span class="emph">Number</span>.</p>',
                '<p id="par_id1">Wählen Sie Nummer.</p>')
    _write_help(help_root, "smath", "c.html", '<p id="par_id1">Choose <span class="emph">Insert</span>.</p>',
                '<p id="par_id1">Wählen Sie Einfügen.</p>')  # a reserved module: never read
    ui_root.mkdir()
    (ui_root / "sc.mo").write_bytes(mo_bytes(CATALOG))
    build_from(help_root, ui_root, out, {"test": "1"})
    catalogs = ui_translations(ui_root)
    assert catalogs["Options"] == {"Optionen": 1, "Einstellungen": 1} and catalogs["Number"] == {"Zahl": 2, "Nummer": 1}
    quotes = help_quotes(help_root)
    assert [(q.module, q.seg_id, q.item) for q in quotes] == [
        ("scalc", "par_id1", "Tools"), ("scalc", "par_id1", "Options"), ("scalc", "par_id2", "OK"),
        ("scalc", "par_id2", "Sort Ascending"), ("scalc", "par_id3", "Sort Ascending"), ("scalc", "par_id4", "Number"),
        ("schart", "par_id1", "Number")]
    selection = select_entries(quotes, catalogs)
    # Options: "Optionen" is used, "Einstellungen" not; OK -> OK is dropped (target = source); Sort Ascending is
    # used in par_id2 only (par_id3's German says "Aufsteigend" alone); Number: "Zahl" (scalc) and "Nummer" (schart)
    # are used once each, and the catalogs give "Zahl" more often
    assert selection.entries == [("Number", "Zahl"), ("Options", "Optionen"), ("Sort Ascending", "Aufsteigend sortieren"),
                                 ("Tools", "Extras")]
    assert selection.uses == {"Number": 1, "Options": 1, "Sort Ascending": 1, "Tools": 1}
    assert selection.figures == {"quotes": 7, "quoted_ui_strings": 5, "in_catalogs": 5, "longer_than_max_tokens": 0,
                                 "used_by_a_reference": 5, "dropped_target_equals_source": 1, "entries": 4}
    entry = write_glossary(out, selection, {"libreoffice-l10n-de": "4:7.4.7-1"})
    lines = (out / GLOSSARY_FILE).read_text(encoding="utf-8").splitlines()
    assert lines[2:] == ["#langs en de", "Number\tZahl", "Options\tOptionen", "Sort Ascending\tAufsteigend sortieren",
                         "Tools\tExtras"] and all(line.startswith("# ") for line in lines[:2])
    # the stream (scalc): par_id1 counts Tools and Options, par_id2 Sort Ascending, par_id4 Number; dev: "Nummer" is
    # not the entry's target, so Number does not count there
    stream = entry["occurrences"]["stream"]
    assert stream == {"segments": 4, "occurrences": 4, "segments_with_a_term": 3, "entries_occurring": 4,
                      "first_occurrences": 4, "later_occurrences": 0}
    assert entry["occurrences"]["dev"]["occurrences"] == 0 and entry["modules"] == ["scalc", "schart"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["glossary"] == entry and entry["sha256"] == hashlib.sha256((out / GLOSSARY_FILE).read_bytes()).hexdigest()
    assert "holds 4 entries" in (out / "NOTICE").read_text()
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    write_glossary(out, selection, {"libreoffice-l10n-de": "4:7.4.7-1"})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # deterministic, and the NOTICE section replaced
    build_from(help_root, ui_root, out, {"test": "1"})  # rebuilding the corpus keeps the glossary's manifest and NOTICE
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


# ------------------------------------------------------------------ the shipped glossary
@pytest.fixture(scope="module")
def shipped() -> tuple[list[str], dict]:
    lines = (DEFAULT_DIR / GLOSSARY_FILE).read_text(encoding="utf-8").splitlines()
    return lines, json.loads((DEFAULT_DIR / "manifest.json").read_text(encoding="utf-8"))["glossary"]


def test_shipped_glossary_format_and_manifest(shipped: tuple[list[str], dict]) -> None:
    lines, entry = shipped
    head = [line for line in lines if line.startswith("#")]
    rows = [line.split("\t") for line in lines if not line.startswith("#")]
    assert lines[: len(head)] == head and head[-1] == "#langs en de"  # the header, then only entries
    assert all(len(row) == 2 and all(side == side.strip() and side for side in row) for row in rows)
    sources = [source for source, _ in rows]
    assert sources == sorted(sources, key=lambda s: (s.casefold(), s)) and len(set(sources)) == len(sources)
    assert all(target.casefold() != source.casefold() for source, target in rows)
    assert all(len(quoted_items(source)) == 1 and quoted_items(source)[0] == source for source, _ in rows)
    glossary = load_glossary(DEFAULT_DIR / GLOSSARY_FILE, "en-US", "de")
    assert len(glossary) == len(rows) == entry["entries"]
    assert entry["sha256"] == hashlib.sha256((DEFAULT_DIR / GLOSSARY_FILE).read_bytes()).hexdigest()
    assert f"{NOTICE_MARK} holds {len(rows)} entries" in (DEFAULT_DIR / "NOTICE").read_text(encoding="utf-8")


def test_every_shipped_entry_is_used_by_a_reference(shipped: tuple[list[str], dict]) -> None:
    """Each entry's target occurs, by the term metrics' rule, in the reference of a stream or dev segment whose
    source holds its source term (the builder kept only used entries; smath is never read)."""
    lines, _ = shipped
    pairs = [tuple(line.split("\t")) for line in lines if not line.startswith("#")]
    matcher = TermMatcher(pairs, "en", "de")
    dataset = LibreOfficeDataset()
    segments = [s for split in ("stream", "dev") for s in dataset.load(split)]
    unused = []
    for index, (source, target) in enumerate(pairs):
        # cheap filters first: both sides as substrings, then the rule on those segments only
        folded = target.casefold()
        found = any(index in matcher.in_source(matcher.source_tokens(s.source))
                    and index in matcher.in_target(matcher.target_tokens(s.reference))
                    for s in segments if source in s.source and folded in s.reference.casefold())
        if not found:
            unused.append((source, target))
    assert unused == []


def test_the_terminology_page_states_the_manifests_counts(shipped: tuple[list[str], dict]) -> None:
    """docs/terms.md's count tables are the manifest's (make glossary writes the manifest; the page follows it)."""
    _, entry = shipped
    page = (DEFAULT_DIR.parents[1] / "docs" / "terms.md").read_text(encoding="utf-8")
    block = page.split("<!-- glossary counts:", 1)[1].split("<!-- end of glossary counts -->", 1)[0]

    def n(value: int) -> str:
        return f"{value:,}"

    for label, key in (("quotes of UI strings in aligned scalc and schart paragraphs", "quotes"),
                       ("distinct quoted UI strings", "quoted_ui_strings"), ("of them in the UI catalogs", "in_catalogs"),
                       ("of them used by a reference (by the rule above)", "used_by_a_reference"),
                       ("dropped: target equals source", "dropped_target_equals_source")):
        assert f"| {label} | {n(entry[key])} |" in block
    assert f"| **entries** | **{n(entry['entries'])}** |" in block
    stream, dev = entry["occurrences"]["stream"], entry["occurrences"]["dev"]
    for label, figures in (("scalc stream, first 500", stream["first_500"]), ("scalc stream, first 2,000", stream["first_2000"]),
                           ("scalc stream, whole", stream), ("schart (dev)", dev)):
        row = [figures[k] for k in ("segments", "occurrences", "segments_with_a_term", "entries_occurring",
                                    "first_occurrences", "later_occurrences")]
        assert f"| {label} | " + " | ".join(n(v) for v in row) + " |" in block, label


def test_the_data_page_states_the_entry_count(shipped: tuple[list[str], dict]) -> None:
    _, entry = shipped
    page = (DEFAULT_DIR.parents[1] / "docs" / "data.md").read_text(encoding="utf-8")
    assert f"ships too: {entry['entries']} UI strings" in page
