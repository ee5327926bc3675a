"""The LibreOffice help extraction and alignment, on small hand-written pages."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from simpe.corpus.gettext import read_catalog, read_mo, read_po, strip_mnemonics, write_pairs
from simpe.corpus.help import extract_segments
from simpe.corpus.libreoffice import Segment, build_from, split_corpus
from simpe.errors import DataError

EN_PAGE = """<html><head><title>Fill</title><script>var x = 1;</script></head><body>
<h1 id="hd_id1" dir="auto">Fill   Series</h1>
<p id="par_id2" class="paragraph">You can also press <span id="sw1" class="switchinline"><span hidden="true" id="MACx_1" class="MAC">Command</span><span hidden="true" id="defaultx_1">Ctrl</span></span>+Page Up.</p>
<p id="par_id3" class="paragraph">Choose <span id="sw2" class="switchinline"><span hidden="true" id="MACx_2" class="MAC"><span class="emph">LibreOffice - Preferences</span>
</span><span hidden="true" id="defaultx_2"><span class="emph">Tools - Options</span></span></span><span class="emph"> - Calc</span>.</p>
<p id="par_id4"><img src="a.png" alt="Icon">Icon&nbsp;text<br>second line</p>
<span id="sw3" class="switch"><span hidden="true" id="CALCtext_3" class="CALC"><p id="par_id5">Only in Calc.</p></span><span hidden="true" id="WRITERtext_3" class="WRITER"><p id="par_id6">Only in Writer.</p></span></span>
<p id="par_id7">First occurrence.</p>
<p id="par_id7">Repeated id, dropped.</p>
<div id="par_id8"><p>Outer text</p><p id="par_id9">inner paragraph</p></div>
<p>no id: not a segment</p>
<p id="par_id10">   </p>
</body></html>"""

DE_PAGE = """<html><body>
<h1 id="hd_id1">Reihe füllen</h1>
<p id="par_id2">Sie können auch <span class="switchinline"><span hidden="true" id="MACy" class="MAC">Befehl</span><span hidden="true" id="defaulty">Strg</span></span>+Bild-auf drücken.</p>
<p id="par_id4">Symboltext</p>
<span class="switch"><span hidden="true" id="CALCt" class="CALC"><p id="par_id5">Nur in Calc.</p></span></span>
<p id="par_id7">Erstes Vorkommen.</p>
<p id="par_id99">only German</p>
</body></html>"""


def test_extract_segments_renders_what_a_non_mac_calc_user_sees():
    segs = extract_segments(EN_PAGE, "scalc")
    assert segs == [
        ("hd_id1", "Fill Series"),
        ("par_id2", "You can also press Ctrl+Page Up."),  # system switch: the default, not "CommandCtrl"
        ("par_id3", "Choose Tools - Options - Calc."),
        ("par_id4", "Icon text second line"),  # image dropped, nbsp and <br> become spaces
        ("par_id5", "Only in Calc."),  # application switch: the page's own application
        ("par_id7", "First occurrence."),  # a repeated id keeps its first occurrence
        ("par_id8", "Outer text"),  # the nested paragraph is its own segment
        ("par_id9", "inner paragraph"),
    ]


def test_application_switch_falls_back_to_default_outside_its_module():
    page = ('<span class="switch"><span hidden="true" id="CALCa" class="CALC"><p id="par_id1">calc</p></span>'
            '<span hidden="true" id="defaulta"><p id="par_id2">default</p></span></span>')
    assert extract_segments(page, "swriter") == [("par_id2", "default")]
    assert extract_segments(page, "scalc") == [("par_id1", "calc")]


def _write_help(root: Path, module: str, name: str, en: str, de: str) -> None:
    for lang, html in (("en-US", en), ("de", de)):
        page = root / lang / "text" / module / name
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html, encoding="utf-8")


def mo_bytes(entries: list[tuple[str, str]]) -> bytes:
    """A GNU .mo file, built from the format's specification (little endian, no hash table)."""
    entries = sorted(entries)
    ids = b"".join(k.encode() + b"\0" for k, _ in entries)
    strs = b"".join(v.encode() + b"\0" for _, v in entries)
    n = len(entries)
    header = 7 * 4
    orig_table, trans_table = header, header + 8 * n
    data_start = header + 16 * n
    orig, trans, off = [], [], data_start
    for k, _ in entries:
        orig.append((len(k.encode()), off))
        off += len(k.encode()) + 1
    for _, v in entries:
        trans.append((len(v.encode()), off))
        off += len(v.encode()) + 1
    out = struct.pack("<7I", 0x950412DE, 0, n, orig_table, trans_table, 0, 0)
    out += b"".join(struct.pack("<2I", *t) for t in orig) + b"".join(struct.pack("<2I", *t) for t in trans)
    return out + ids + strs


def test_alignment_splits_and_train_cleaning(tmp_path: Path):
    help_root, ui_root = tmp_path / "help", tmp_path / "ui"
    _write_help(help_root, "scalc", "a.html", EN_PAGE, DE_PAGE)
    shared_en = '<p id="par_id1">Fill Series</p><p id="par_id2">Shared only.</p>'
    shared_de = '<p id="par_id1">Reihe füllen (shared)</p><p id="par_id2">Nur geteilt.</p>'
    _write_help(help_root, "shared", "b.html", shared_en, shared_de)
    _write_help(help_root, "schart", "c.html", '<p id="par_id1">Chart</p>', '<p id="par_id1">Diagramm</p>')
    _write_help(help_root, "smath", "d.html", '<p id="par_id1">Math</p>', '<p id="par_id1">Mathe</p>')
    ui_root.mkdir()
    (ui_root / "sc.mo").write_bytes(mo_bytes([("", "Project-Id: x"), ("ctx\x04~Chart", "~Diagramm"),
                                              ("_Save", "_Speichern"), ("Shared only.", "Nur geteilt.")]))
    counts = build_from(help_root, ui_root, tmp_path / "out", {"test": "1"})
    out = tmp_path / "out"
    # stream = scalc, aligned by (file, id): par_id3/8/9 have no German side, par_id99 no English one
    assert (out / "stream.en").read_text().splitlines() == [
        "Fill Series", "You can also press Ctrl+Page Up.", "Icon text second line", "Only in Calc.", "First occurrence."]
    assert (out / "stream.de").read_text().splitlines()[1] == "Sie können auch Strg+Bild-auf drücken."
    assert (out / "stream.ids").read_text().splitlines()[0] == "text/scalc/a\thd_id1"
    assert (out / "dev.en").read_text() == "Chart\n" and (out / "reserved.de").read_text() == "Mathe\n"
    # train: "Fill Series" (source in the stream) and "Chart" (in dev) are removed; the repeated pair once
    assert (out / "train.en").read_text().splitlines() == ["Shared only.", "Save"]
    assert (out / "train.de").read_text().splitlines() == ["Nur geteilt.", "Speichern"]
    assert counts == {"train": 2, "dev": 1, "stream": 5, "reserved": 1}
    # the train targets' vocabulary in rk.rb's -v format, after the metrics' Moses tokenisation and truecasing
    vocab = (out / "vocab.train.de").read_text(encoding="utf-8").splitlines()
    # (the demo model's truecaser lowercases the sentence-initial "Nur" and "Speichern")
    assert vocab == ["1 .", "1 geteilt", "1 nur", "1 speichern"]
    assert json.loads((out / "manifest.json").read_text())["train_vocab"]["types"] == len(vocab)
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    build_from(help_root, ui_root, out, {"test": "1"})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # deterministic: same bytes twice


def test_split_corpus_keeps_stream_order_and_repeats():
    seg = lambda d, i, s: Segment(d, i, s, s.upper())  # noqa: E731
    splits = split_corpus([("scalc", seg("a", "1", "x")), ("scalc", seg("a", "2", "x")), ("shared", seg("b", "1", "x")),
                           ("shared", seg("b", "2", "y")), ("sdatabase", seg("c", "1", "z"))], [seg("ui", "0", "z")])
    assert [s.seg_id for s in splits["stream"]] == ["1", "2"]  # repeats inside the stream stay (R1 needs them)
    assert [s.source for s in splits["train"]] == ["y"]
    assert [s.source for s in splits["reserved"]] == ["z"]


PO = r'''# comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

msgctxt "menu"
msgid "~Open"
msgstr "Ö~ffnen"

#, fuzzy
msgid "Fuzzy"
msgstr "Unscharf"

msgid "Multi "
"line"
msgstr "Mehr"
"zeilig"

msgid "One file"
msgid_plural "%1 files"
msgstr[0] "Eine Datei"
msgstr[1] "%1 Dateien"

msgid "Untranslated"
msgstr ""

#~ msgid "Obsolete"
#~ msgstr "Veraltet"
'''


def test_read_po_entries_and_pairs(tmp_path: Path):
    path = tmp_path / "x.po"
    path.write_text(PO, encoding="utf-8")
    entries = read_po(path)
    assert ("menu", "~Open", "Ö~ffnen") in entries
    assert all(e[1] != "Fuzzy" for e in entries)
    assert ("", "Multi line", "Mehrzeilig") in entries
    assert ("", "One file", "Eine Datei") in entries
    assert read_catalog(path) == [("Open", "Öffnen"), ("Multi line", "Mehrzeilig"), ("One file", "Eine Datei")]
    assert write_pairs([tmp_path], tmp_path / "pairs") == 3
    assert (tmp_path / "pairs.tgt").read_text().splitlines() == ["Öffnen", "Mehrzeilig", "Eine Datei"]


def test_read_mo_context_and_errors(tmp_path: Path):
    path = tmp_path / "y.mo"
    path.write_bytes(mo_bytes([("a\x04Text", "Texte"), ("Hello", "Hallo")]))
    assert read_mo(path) == [("", "Hello", "Hallo"), ("a", "Text", "Texte")]
    bad = tmp_path / "bad.mo"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(DataError, match="bad magic number"):
        read_mo(bad)
    latin = tmp_path / "latin.po"
    latin.write_bytes('msgid "caf\xe9"\nmsgstr "x"\n'.encode("latin-1"))
    with pytest.raises(DataError, match="not valid UTF-8"):
        read_po(latin)
    with pytest.raises(DataError, match="unknown catalog type"):
        read_catalog(tmp_path / "z.txt")


@pytest.mark.parametrize("text, expected", [("~File", "File"), ("_Name:", "Name:"), ("file_name_x", "file_name_x"), ("A_B", "AB")])
def test_strip_mnemonics(text, expected):
    assert strip_mnemonics(text) == expected
