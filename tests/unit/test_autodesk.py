"""The Autodesk reader on small files in the distributed layout (written here), its stream design and its errors."""
from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

import pytest
from autodesk_files import RECORDS, record, write_corpus
from messages import raises_naming

from simpe.datasets import DATASETS
from simpe.datasets.autodesk import read_records
from simpe.errors import ConfigError, DataError


def _load(folder: Path, split: str = "stream", **params):
    return DATASETS.build("autodesk", path=str(folder), **params).load(split)


def test_reader_splits_records_on_the_terminator_not_on_newlines(tmp_path: Path):
    # a post-edit with an embedded newline stays one record; bz2 and unpacked files read the same
    records = [("Line one.", "Zeile eins.", "Zeile\neins.", "ACD", "2010", "2012/11/13 00:13:54")]
    packed = read_records(write_corpus(tmp_path / "a", records))
    plain = read_records(write_corpus(tmp_path / "b", records, name="deu.mt"))
    assert packed == plain == [{"source": "Line one.", "mt": "Zeile eins.", "post_edit": "Zeile\neins.", "product": "ACD",
                                "release": "2010", "type": "MT", "moses_score": "0.42", "fuzzy_score": "",
                                "placeholders": "", "date": "2012/11/13 00:13:54"}]


def test_segments_carry_document_raw_mt_and_facts(tmp_path: Path):
    write_corpus(tmp_path)
    train = _load(tmp_path, "train")
    first = train[0]
    assert (first.doc_id, first.seg_id, first.source, first.reference, first.mt) == \
        ("ACD/2010", "mt:1", "Click OK.", "Klicken Sie auf OK.", "Klicken OK.")
    assert first.info == {"product": "ACD", "release": "2010", "type": "MT", "date": "2012/01/05 10:00:00",
                          "origin": "mt", "record": "deu.mt.bz2:1"}


def _rank(doc: str) -> str:
    return hashlib.sha256(f"0:{doc}".encode()).hexdigest()


def test_held_out_document_splits_in_the_documented_order(tmp_path: Path):
    write_corpus(tmp_path)
    # documents by first record: ACD/2010 (1), MAYA/2011 (3), ACD/2011 (4), INV/2012 (7); ranked by sha256("0:<doc>")
    ranked = sorted(["ACD/2010", "MAYA/2011", "ACD/2011", "INV/2012"], key=_rank)
    assert ranked == ["ACD/2011", "INV/2012", "MAYA/2011", "ACD/2010"]
    # 8 segments: stream_fraction 0.1 -> 0.8 segments -> the first ranked document (1 segment);
    # dev_fraction 0.05 -> 0.4 -> the next one (INV/2012, 2 segments); train the rest, documents contiguous in first-record order
    ids = lambda segs: [(s.doc_id, s.seg_id) for s in segs]  # noqa: E731
    assert ids(_load(tmp_path, "stream")) == [("ACD/2011", "mt:4")]
    assert ids(_load(tmp_path, "dev")) == [("INV/2012", "mt:7"), ("INV/2012", "mt:8")]
    assert ids(_load(tmp_path, "train")) == [("ACD/2010", "mt:1"), ("ACD/2010", "mt:2"), ("ACD/2010", "mt:6"),
                                            ("MAYA/2011", "mt:3"), ("MAYA/2011", "mt:5")]
    # larger fractions: stream takes ACD/2011 + INV/2012 (3 >= 2.4 segments), in first-record order
    assert ids(_load(tmp_path, "stream", stream_fraction=0.3, dev_fraction=0.2)) == \
        [("ACD/2011", "mt:4"), ("INV/2012", "mt:7"), ("INV/2012", "mt:8")]
    assert ids(_load(tmp_path, "dev", stream_fraction=0.3, dev_fraction=0.2)) == [("MAYA/2011", "mt:3"), ("MAYA/2011", "mt:5")]


def test_date_order_and_dedupe_are_counted_in_the_manifest(tmp_path: Path, caplog):
    write_corpus(tmp_path)
    dataset = DATASETS.build("autodesk", path=str(tmp_path), order="date")
    # train documents by first date: MAYA/2011 (01/01), ACD/2010 (01/03); inside ACD/2010 by date: 2 (01/03), 1 (01/05), 6 (01/06)
    assert [s.seg_id for s in dataset.load("train")] == ["mt:3", "mt:5", "mt:2", "mt:1", "mt:6"]
    kept = DATASETS.build("autodesk", path=str(tmp_path))
    assert [s.seg_id for s in kept.load("train")].count("mt:6") == 1  # repeats kept by default
    deduped = DATASETS.build("autodesk", path=str(tmp_path), dedupe=True)
    with caplog.at_level("INFO"):
        assert [s.seg_id for s in deduped.load("train")] == ["mt:1", "mt:2", "mt:3", "mt:5"]
    assert "dedupe dropped 1 repeated (source, post-edit) pairs of 8" in caplog.text
    manifest = deduped.manifest()
    assert manifest["duplicates_dropped"] == 1 and manifest["records"] == 8 and manifest["segments"] == 7
    assert manifest["choices"]["dedupe"] is True and manifest["choices"]["order"] == "file"
    assert [d["id"] for d in manifest["splits"]["stream"]["documents"]] == ["ACD/2011"]
    assert manifest["files"][0]["sha256"] == hashlib.sha256((tmp_path / "deu.mt.bz2").read_bytes()).hexdigest()


def test_train_drops_pairs_whose_source_is_held_out(tmp_path: Path):
    # "Click OK." of ACD/2010 (train) also occurs in ACD/2011 (the stream document)
    records = RECORDS[:3] + [("Click OK.", "Klicken OK.", "Klicken Sie bitte auf OK.", "ACD", "2011", "2012/01/02 08:30:00")]
    write_corpus(tmp_path, records)
    dataset = DATASETS.build("autodesk", path=str(tmp_path), dev_fraction=0.0)
    assert [s.doc_id for s in dataset.load("stream")] == ["ACD/2011"]
    assert [s.source for s in dataset.load("train")] == ["Save the file.", "Open the drawing."]
    assert dataset.manifest()["train_pairs_dropped_source_held_out"] == 1


def test_both_origins_read_mt_then_tm(tmp_path: Path):
    write_corpus(tmp_path, RECORDS[:2])
    (tmp_path / "deu.tm.bz2").write_bytes(bz2.compress(record("Print.", "Drucken.", "Drucken.", "ACD", "2010",
                                                              "2012/01/09 00:00:00", kind="FUZZY").encode()))
    segs = _load(tmp_path, "train", origin="both", stream_fraction=0.0, dev_fraction=0.0)
    assert [(s.seg_id, s.info["type"]) for s in segs] == [("mt:1", "MT"), ("mt:2", "MT"), ("tm:1", "FUZZY")]
    with pytest.raises(DataError, match=r"origin=tm but .* has no deu.tm\(.bz2\)"):
        write_corpus(tmp_path / "only_mt", RECORDS[:2])
        _load(tmp_path / "only_mt", origin="tm")


def test_malformed_record_is_one_line_naming_file_and_record(tmp_path: Path):
    path = write_corpus(tmp_path, RECORDS[:2], extra=record(*RECORDS[2], fields=9))
    with pytest.raises(DataError) as err:
        _load(tmp_path)
    message = str(err.value)
    assert message == (f"{path}: record 3 has 9 fields, expected 10 separated by U+F8FF (source, mt, post_edit, product, "
                       "release, type, moses_score, fuzzy_score, placeholders, date)")
    assert "\n" not in message
    write_corpus(tmp_path, RECORDS[:2], extra="a torn record\uf8ffwithout its end")
    with pytest.raises(DataError, match=r"deu.mt.bz2: record 3 does not end with U\+F8FF"):
        _load(tmp_path)


def test_empty_post_edit_follows_the_rule_of_every_dataset(tmp_path: Path):
    records = [RECORDS[0], ("Save.", "Speichern.", "", "ACD", "2010", "2012/01/01 00:00:00")] + RECORDS[2:]
    write_corpus(tmp_path, records)
    with raises_naming(DataError, "autodesk:train", "segment 2", "empty", "--skip-empty"):
        _load(tmp_path, "train")
    assert [s.seg_id for s in DATASETS.build("autodesk", path=str(tmp_path)).load("train", skip_empty=True)][:2] == ["mt:1", "mt:6"]


def test_absent_corpus_says_what_to_download_from_where_and_where_to_put_it(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SIMPE_AUTODESK_DIR", str(tmp_path / "autodesk"))
    with raises_naming(DataError, str(tmp_path / "autodesk"), "Autodesk Post-Editing Data", "ISLRN 290-859-676-529-5",
                       "deu.mt.bz2", "SIMPE_AUTODESK_DIR"):
        DATASETS.build("autodesk").load()
    (tmp_path / "autodesk").mkdir()
    with pytest.raises(DataError, match="no deu.mt.bz2, deu.mt, .tmx or .tsv file in"):
        DATASETS.build("autodesk").load()


def test_bad_choices_are_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="unknown autodesk order 'time'; known: file, date"):
        DATASETS.build("autodesk", order="time")
    with pytest.raises(ConfigError, match="unknown autodesk origin 'pe'; known: mt, tm, both"):
        DATASETS.build("autodesk", origin="pe")
    records = [RECORDS[0][:5] + ("13.11.2012",)]
    write_corpus(tmp_path, records)
    with raises_naming(DataError, "deu.mt.bz2", "record 1", "'13.11.2012'", "YYYY/MM/DD"):
        _load(tmp_path, order="date")


def test_score_reports_the_raw_mt_distance_to_the_post_edit(tmp_path: Path, capsys):
    from sacrebleu.metrics import TER

    from simpe.cli import main

    segs = _load(write_corpus(tmp_path, RECORDS[:2]).parent, "train", stream_fraction=0.0, dev_fraction=0.0)
    (tmp_path / "mt.de").write_text("".join(s.mt + "\n" for s in segs), encoding="utf-8")
    (tmp_path / "pe.de").write_text("".join(s.reference + "\n" for s in segs), encoding="utf-8")
    # "Klicken OK." -> "Klicken Sie auf OK.": 2 insertions of 4 words; "Speichern die Datei." -> "Speichern Sie die Datei.":
    # 1 of 4; corpus TER = 3 / 8 = 37.5, as sacreBLEU's own TER says
    assert TER().corpus_score([s.mt for s in segs], [[s.reference for s in segs]]).score == pytest.approx(37.5)
    assert main(["score", "-i", str(tmp_path / "pe.de"), "-r", str(tmp_path / "pe.de"), "--mt", str(tmp_path / "mt.de"),
                 "--truecaser", "none", "--format", "json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["raw_mt"]["hter"] == pytest.approx(37.5) and report["corpus"]["ter"] == 0.0
    assert report["raw_mt"]["signature"].startswith("nrefs:1|case:lc|tok:tercom")
    assert main(["score", "-i", str(tmp_path / "pe.de"), "-r", str(tmp_path / "pe.de"), "--mt", str(tmp_path / "mt.de"),
                 "--truecaser", "none"]) == 0
    assert "HTER (raw MT)   37.50  TER of the raw MT against the references" in capsys.readouterr().out


def test_train_demo_model_reads_the_train_and_dev_splits_of_the_dataset(tmp_path: Path, monkeypatch):
    from simpe.cli import build_parser
    from simpe.config.files import defaults
    from simpe.demo.data import split_pairs

    write_corpus(tmp_path)
    monkeypatch.setenv("SIMPE_AUTODESK_DIR", str(tmp_path))
    args = build_parser().parse_args(["train-demo-model", "--dataset", "autodesk"])
    cfg = defaults("train", dataset=args.dataset)
    assert split_pairs(cfg, "train")[0] == ["Click OK.", "Save the file.", "Save the file.", "Open the drawing.", "Close the window."]
    assert split_pairs(cfg, "dev") == (["Undo the change.", "Redo the change."],
                                       ["Machen Sie die Änderung rückgängig.", "Wiederholen Sie die Änderung."])
