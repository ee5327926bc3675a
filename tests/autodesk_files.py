"""Small files in the Autodesk Post-Editing Data layout, written by the tests themselves.

Records end with U+F8FF + "◊÷" + newline; the ten fields are separated by U+F8FF (source,
raw MT, post-edit, product, release, type, Moses score, fuzzy score, placeholders, date).
"""
from __future__ import annotations

import bz2
from pathlib import Path

SEP = "\uf8ff"
END = "\uf8ff\u25ca\u00f7\n"

# (source, raw MT, post-edit, product, release, date): three products, four (product, release) documents,
# records of one document not contiguous in the file, one repeated (source, post-edit) pair (records 2 and 6)
RECORDS = [
    ("Click OK.", "Klicken OK.", "Klicken Sie auf OK.", "ACD", "2010", "2012/01/05 10:00:00"),
    ("Save the file.", "Speichern die Datei.", "Speichern Sie die Datei.", "ACD", "2010", "2012/01/03 09:00:00"),
    ("Open the drawing.", "Öffnen die Zeichnung.", "Öffnen Sie die Zeichnung.", "MAYA", "2011", "2012/01/01 08:00:00"),
    ("Select a layer.", "Wählen eine Ebene.", "Wählen Sie eine Ebene.", "ACD", "2011", "2012/01/02 08:30:00"),
    ("Close the window.", "Schließen das Fenster.", "Schließen Sie das Fenster.", "MAYA", "2011", "2012/01/04 11:00:00"),
    ("Save the file.", "Speichern die Datei.", "Speichern Sie die Datei.", "ACD", "2010", "2012/01/06 12:00:00"),
    ("Undo the change.", "Rückgängig die Änderung.", "Machen Sie die Änderung rückgängig.", "INV", "2012", "2012/01/07 13:00:00"),
    ("Redo the change.", "Wiederholen die Änderung.", "Wiederholen Sie die Änderung.", "INV", "2012", "2012/01/08 14:00:00"),
]


def record(source: str, mt: str, post_edit: str, product: str, release: str, date: str, kind: str = "MT",
           fields: int = 10) -> str:
    """One record in the distributed layout (``fields`` < 10 drops trailing fields: a malformed record)."""
    values = [source, mt, post_edit, product, release, kind, "0.42", "", "", date][:fields]
    return SEP.join(values) + END


def write_corpus(folder: Path, records=RECORDS, name: str = "deu.mt.bz2", extra: str = "") -> Path:
    """Write ``records`` (plus raw ``extra`` text) as ``folder/name``, bz2-compressed when the name ends in .bz2."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(record(*r) for r in records) + extra
    data = text.encode("utf-8")
    path = folder / name
    path.write_bytes(bz2.compress(data) if name.endswith(".bz2") else data)
    return path
