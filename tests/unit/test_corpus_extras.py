"""The extra train text: Mallard help alignment, licence naming, and the extras in the split, on hand-written files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_corpus import _write_help, mo_bytes

from simpe.corpus import debian
from simpe.corpus.extras import NOTICE_HEAD, RELEASE, extra_corpus, licence_notice
from simpe.corpus.libreoffice import build_from
from simpe.corpus.licences import copyright_licence, licence_from_url
from simpe.corpus.mallard import align_page, doc_pairs, link_titles, page_blocks, parse_page
from simpe.errors import DataError

HEAD = ('<page xmlns="http://projectmallard.org/1.0/" xmlns:its="http://www.w3.org/2005/11/its" '
        'xmlns:mal="http://projectmallard.org/1.0/" type="topic" id="{id}">')

EN_INDEX = HEAD.format(id="index") + """
  <info><title type="link">Sheets Help</title><title type="sort">1</title></info>
  <title>Sheets</title>
</page>"""
DE_INDEX = HEAD.format(id="index") + """
  <info><title type="link">Tabellen-Hilfe</title><title type="sort">1</title></info>
  <title>Tabellen</title>
</page>"""

EN_PAGE = HEAD.format(id="sort-data") + """
  <info>
    <link type="guide" xref="index"/>
    <credit type="author"><name>Jane Doe</name></credit>
    <include href="legal.xml" xmlns="http://www.w3.org/2001/XInclude"/>
    <desc>Sort the rows of a table.</desc>
  </info>
  <title>Sort <app>Sheets</app> data</title>
  <comment><p>Editorial: add a screenshot. (itstool leaves comments out of translations.)</p></comment>
  <p>Select the cells and press <keyseq><key>Ctrl</key><key>S</key></keyseq>, or
  choose <guiseq><gui>Data</gui><gui>Sort</gui></guiseq>.</p>
  <steps>
    <item><p>Click <media type="image" src="figures/sort.svg">sort icon</media><gui>Sort</gui>.</p></item>
    <item><p>See <link xref="index"/> and <link xref="#options"/>.</p></item>
  </steps>
  <section id="options">
    <title>Options</title>
    <table>
      <tr><td><p>Ascending</p></td><td><p>A&#160;to   Z</p></td></tr>
    </table>
    <code mime="text/x-shellscript">sort -k 2 data.csv</code>
    <p>Untranslated paragraph.</p>
    <p>Read <link href="help:other-doc/page"/> too.</p>
  </section>
</page>"""

DE_PAGE = HEAD.format(id="sort-data") + """
  <info>
    <link type="guide" xref="index"/>
    <credit type="author"><name>Jane Doe</name></credit>
    <include xmlns="http://www.w3.org/2001/XInclude" href="legal.xml"/>
    <desc>Die Zeilen einer Tabelle sortieren.</desc>
    <mal:credit type="translator copyright"><mal:name>Max Muster</mal:name><mal:years>2023</mal:years></mal:credit>
  </info>
  <title>Daten in <app>Tabellen</app> sortieren</title>
  <p>Wählen Sie die Zellen und drücken Sie <keyseq><key>Strg</key><key>S</key></keyseq>
  oder wählen Sie <guiseq><gui>Daten</gui><gui>Sortieren</gui></guiseq>.</p>
  <steps>
    <item><p>Klicken Sie auf <media type="image" src="figures/sort.svg">Sortiersymbol</media><gui>Sortieren</gui>.</p></item>
    <item><p>Siehe <link xref="index"/> und <link xref="#options"/>.</p></item>
  </steps>
  <section id="options">
    <title>Optionen</title>
    <table>
      <tr><td><p>Aufsteigend</p></td><td><p>A bis Z</p></td></tr>
    </table>
    <code mime="text/x-shellscript">sort -k 2 data.csv</code>
    <p>Untranslated paragraph.</p>
    <p>Lesen Sie auch <link href="help:other-doc/page"/>.</p>
  </section>
</page>"""

EXPECTED = [  # (position in the page, English, German)
    (0, "Sort the rows of a table.", "Die Zeilen einer Tabelle sortieren."),  # info/desc; credits are not text
    (1, "Sort Sheets data", "Daten in Tabellen sortieren"),  # the comment is not a block: no shift
    (2, "Select the cells and press Ctrl+S, or choose Data \u25b8 Sort.",
     "Wählen Sie die Zellen und drücken Sie Strg+S oder wählen Sie Daten \u25b8 Sortieren."),
    (3, "Click Sort.", "Klicken Sie auf Sortieren."),  # media's fallback text is not shown
    (4, "See Sheets Help and Options.", "Siehe Tabellen-Hilfe und Optionen."),  # empty links show their target's title
    (5, "Options", "Optionen"),
    (6, "Ascending", "Aufsteigend"),
    (7, "A to Z", "A bis Z"),  # no-break space and whitespace runs normalised
    # 8: the code block is dropped; 9: de = en (untranslated) is dropped; 10: link into another document, dropped
]


def _blocks(pages: dict[str, str], name: str):
    roots = {k: parse_page(v) for k, v in pages.items()}
    return page_blocks(roots[name], link_titles(roots))


def test_mallard_page_pair_aligns_by_position():
    en = _blocks({"index": EN_INDEX, "sort-data": EN_PAGE}, "sort-data")
    de = _blocks({"index": DE_INDEX, "sort-data": DE_PAGE}, "sort-data")
    assert [b.path for b in en] == ["info/desc", "title", "p", "steps/item/p", "steps/item/p", "section/title",
                                    "section/table/tr/td/p", "section/table/tr/td/p", "section/code", "section/p",
                                    "section/p"]
    pairs, stats = align_page(en, de)
    assert pairs == EXPECTED
    assert (stats.pages_aligned, stats.pages_skipped, stats.pairs) == (1, 0, 8)
    assert stats.dropped == {"code block": 1, "untranslated (de = en)": 1, "unresolved link title": 1}


def test_mallard_page_with_another_block_sequence_is_skipped_whole():
    en = _blocks({"p": HEAD.format(id="p") + "<title>Print</title><p>One.</p><p>Two.</p></page>"}, "p")
    de = _blocks({"p": HEAD.format(id="p") + "<title>Drucken</title><p>Eins. Zwei.</p></page>"}, "p")
    pairs, stats = align_page(en, de)
    assert pairs == []  # the titles would pair up, but nothing on the page is trusted
    assert (stats.pages_aligned, stats.pages_skipped) == (0, 1)
    assert stats.dropped == {"blocks on skipped pages": 3}


def _write_doc(root: Path, lang: str, pages: dict[str, str]) -> Path:
    folder = root / "usr/share/help" / lang / "sheets"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (folder / f"{name}.page").write_text(text, encoding="utf-8")
    return folder


def test_doc_pairs_in_sorted_page_order(tmp_path: Path):
    en = _write_doc(tmp_path, "C", {"sort-data": EN_PAGE, "index": EN_INDEX, "extra": HEAD.format(id="extra") + "<p>New.</p></page>"})
    de = _write_doc(tmp_path, "de", {"sort-data": DE_PAGE, "index": DE_INDEX})
    pages, stats = doc_pairs(en, de)
    assert [name for name, _ in pages] == ["index", "sort-data"]
    assert pages[0][1] == [(0, "Sheets Help", "Tabellen-Hilfe"), (1, "Sheets", "Tabellen")]  # a sort title is not shown
    assert (stats.pages_aligned, stats.pages_skipped, stats.dropped["page not translated"]) == (2, 1, 1)


DEP5 = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sheets

Files: *
Copyright: 2020 Someone
License: GPL-2+

Files: help/*
 data/help.xml
Copyright: 2021 Writer
License: CC-BY-SA-3.0
 Creative Commons Attribution-ShareAlike 3.0 Unported

License: GPL-2+
 This program is free software.
"""

FREE_FORM = """This package was debianized by someone.

Main License (everything except docs):

    This package is free software; you can redistribute it and/or modify
    it under the terms of the GNU General Public License as published by
    the Free Software Foundation; either version 3 of the License, or
    (at your option) any later version.

The help is licensed under the GFDL:

    Permission is granted to copy, distribute and/or modify this
    document under the terms of the GNU Free Documentation License,
    Version 1.1 or any later version.
"""


@pytest.mark.parametrize("text, path, expected", [
    (DEP5, "po/de.po", "GPL-2+"),
    (DEP5, "help/C/index.page", "CC-BY-SA-3.0"),  # the last matching Files paragraph wins
    (FREE_FORM, "po/de.po", "GPL-3+"),  # the first grant
    (FREE_FORM, "help/C/index.page", "GFDL-1.1+"),  # the first grant introduced by help or documentation
    ("File | Licence\npo/de.po | GPLv2h | Someone\n", "po/de.po", "GPL-2+"),  # a table row for the path
    ("no licence here", "po/de.po", "unknown"),
])
def test_copyright_licence(text, path, expected):
    assert copyright_licence(text, path) == expected


@pytest.mark.parametrize("url, expected", [
    ("http://creativecommons.org/licenses/by-sa/3.0/", "CC-BY-SA-3.0"),
    ("http://creativecommons.org/licenses/by-sa/3.0/us/", "CC-BY-SA-3.0-US"),
    ("http://www.gnu.org/licenses/fdl-1.1.html", "GFDL-1.1"),
    ("https://example.org/licence", "https://example.org/licence"),
])
def test_licence_from_url(url, expected):
    assert licence_from_url(url) == expected


def _fake_packages(tmp_path: Path) -> dict[str, Path]:
    sheets = tmp_path / "sheets-common"
    _write_doc(sheets, "C", {"index": EN_INDEX, "sort-data": EN_PAGE})
    _write_doc(sheets, "de", {"index": DE_INDEX, "sort-data": DE_PAGE})
    for root, package, copyright_text, entries in (
            (sheets, "sheets-common", DEP5, [("", "x"), ("~Sort", "~Sortieren"), ("Sum", "Summe")]),
            (tmp_path / "viewer", "viewer", FREE_FORM, [("Open", "Öffnen"), ("Options", "Optionen")])):
        locale = root / "usr/share/locale/de/LC_MESSAGES"
        locale.mkdir(parents=True)
        (locale / f"{package.split('-')[0]}.mo").write_bytes(mo_bytes(entries))
        doc = root / "usr/share/doc" / package
        doc.mkdir(parents=True)
        (doc / "copyright").write_text(copyright_text)
    return {"viewer": tmp_path / "viewer", "sheets-common": sheets}


def test_extra_corpus_ids_figures_and_notice(tmp_path: Path):
    versions = {"sheets-common": "1.0-1", "viewer": "2:3.4-5"}
    extra = extra_corpus(_fake_packages(tmp_path), versions)
    # help of every package first (sorted), then the catalogs; ids name the package, document/page or domain
    assert [(s.doc_id, s.seg_id) for s in extra.segments] == [
        ("gnome/sheets-common/sheets/index", "0"), ("gnome/sheets-common/sheets/index", "1"),
        *[("gnome/sheets-common/sheets/sort-data", str(pos)) for pos, _, _ in EXPECTED],
        ("mo/sheets-common/sheets", "0"), ("mo/sheets-common/sheets", "1"),
        ("mo/viewer/viewer", "0"), ("mo/viewer/viewer", "1")]
    assert [s.source for s in extra.segments[-4:]] == ["Sum", "Sort", "Open", "Options"]  # .mo order: by msgid
    help_figures = extra.figures["sheets-common"]["help"]
    assert (help_figures["pages_aligned"], help_figures["pairs"], help_figures["licence"]) == (2, 10, "CC-BY-SA-3.0")
    assert help_figures["source_words"] == sum(len(s.source.split()) for s in extra.segments[:10])
    assert extra.figures["viewer"] == {"version": "2:3.4-5", "catalogs": {
        "domains": ["viewer"], "pairs": 2, "source_words": 2, "licence": "GPL-3+"}}
    notice = licence_notice(extra.taken, versions)
    # per licence (sorted), the packages with their versions and what was taken; * marks a free-form copyright file
    assert notice == NOTICE_HEAD.format(release=RELEASE) + (
        "\nCC-BY-SA-3.0:\n  sheets-common 1.0-1: help sheets (2 pages aligned)\n\n"
        "GPL-2+:\n  sheets-common 1.0-1: catalog sheets\n\n"
        "GPL-3+:\n  viewer 2:3.4-5: catalog viewer *\n")


def test_extras_go_to_train_only_after_the_same_cleaning(tmp_path: Path):
    help_root, ui_root = tmp_path / "help", tmp_path / "ui"
    _write_help(help_root, "scalc", "a.html", '<p id="par_id1">Options</p>', '<p id="par_id1">Optionen</p>')
    _write_help(help_root, "shared", "b.html", '<p id="par_id1">Sum</p>', '<p id="par_id1">Summe</p>')
    ui_root.mkdir()
    (ui_root / "sc.mo").write_bytes(mo_bytes([("Open", "Öffnen")]))
    versions = {"sheets-common": "1.0-1", "viewer": "2:3.4-5"}
    extra = extra_corpus(_fake_packages(tmp_path / "pkgs"), versions)
    out = tmp_path / "out"
    counts = build_from(help_root, ui_root, out, versions, extra)
    assert (out / "stream.en").read_text() == "Options\n"  # extras never enter the held-out splits
    train_ids = (out / "train.ids").read_text().splitlines()
    train_en = (out / "train.en").read_text().splitlines()
    # LibreOffice first; the extras' "Options" (twice: a page block and a catalog string) is the stream's source,
    # and "Sum"/"Summe" and "Open"/"Öffnen" repeat LibreOffice pairs: all removed
    assert train_en[:2] == ["Sum", "Open"]
    assert "Options" not in train_en and train_en.count("Sum") == 1 and train_en.count("Open") == 1
    assert train_ids[2] == "gnome/sheets-common/sheets/index\t0"
    assert counts["train"] == 2 + 9 + 1  # LibreOffice 2; help 10 minus "Options"; catalogs: only "Sort"
    manifest = json.loads((out / "manifest.json").read_text())
    help_figures = manifest["extra_sources"]["sheets-common"]["help"]
    assert (help_figures["train_pairs"], help_figures["removed_source_in_dev_stream_reserved"],
            help_figures["removed_repeated"]) == (9, 1, 0)
    assert manifest["extra_sources"]["viewer"]["catalogs"]["train_pairs"] == 0
    assert manifest["train_sources"] == {"gettext": 1, "gnome-help": 9, "libreoffice-help": 1, "libreoffice-ui": 1}
    notice = (out / "NOTICE").read_text()
    assert notice.startswith("The LibreOffice help text") and "Mozilla Public License" in notice
    assert "CC-BY-SA-3.0:\n  sheets-common 1.0-1: help sheets (2 pages aligned)" in notice


def test_download_names_the_packages_and_the_folder_without_apt_get(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(debian.shutil, "which", lambda name: None)
    (tmp_path / "cached_1.0-1_all.deb").write_bytes(b"")
    with pytest.raises(DataError, match=rf"cannot fetch gnumeric-common, yelp: apt-get is not available; .* put them in {tmp_path}"):
        debian.download(("cached", "gnumeric-common", "yelp"), tmp_path, "Debian bookworm")
    assert debian.download(("cached",), tmp_path, "Debian bookworm") == {"cached": tmp_path / "cached_1.0-1_all.deb"}
    assert debian.deb_version(tmp_path / "libreoffice-help-de_4%3a7.4.7-1+deb12u14_all.deb") == "4:7.4.7-1+deb12u14"
