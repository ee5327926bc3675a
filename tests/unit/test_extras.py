"""The extra train text: Mallard help alignment, licence naming, and the extras in the split, on hand-written files."""
from __future__ import annotations

import json
from pathlib import Path

from test_gettext import mo_bytes
from test_help import _write_help
from test_licences import DEP5, FREE_FORM
from test_mallard import DE_INDEX, DE_PAGE, EN_INDEX, EN_PAGE, EXPECTED, _write_doc

from simpe.build_data.extras import NOTICE_HEAD, RELEASE, extra_corpus, licence_notice
from simpe.build_data.libreoffice import build_from


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


