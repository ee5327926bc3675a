"""build_data.mallard: GNOME help pages aligned by position, on hand-written pages."""
from __future__ import annotations

from pathlib import Path

from simpe.build_data.mallard import align_page, doc_pairs, link_titles, page_blocks, parse_page

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
