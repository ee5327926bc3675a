"""build_data.gettext: .po and .mo catalogs read, pairs written, mnemonics stripped."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from simpe.build_data.gettext import read_catalog, read_mo, read_po, strip_mnemonics, write_pairs
from simpe.errors import DataError


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
