"""build_data.libreoffice: help pages and catalogs aligned into the splits, train cleaning, stream order."""
from __future__ import annotations

import json
from pathlib import Path

from test_gettext import mo_bytes
from test_help import DE_PAGE, EN_PAGE, _write_help

from simpe.build_data.libreoffice import Segment, build_from, split_corpus


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
    assert counts == {"train": 2, "dev": 1, "stream": 5, "reserved": 1, "train-sample": 2}
    # train-sample: the seeded draw of 200 train pairs (here both, in file order), recorded in the manifest
    assert (out / "train-sample.en").read_text() == (out / "train.en").read_text()
    drawn = json.loads((out / "manifest.json").read_text())["splits"]["train-sample"]
    assert (drawn["drawn_from"], drawn["train_segments"], drawn["seed"], drawn["indices"]) == ("train", 2, 1, [0, 1])
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
