"""Every dataset loader: the shipped LibreOffice splits and the error cases of user data."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest
from messages import raises_naming

from simpe.datasets import DATASETS, stream_hash
from simpe.errors import ConfigError, DataError


def test_registry_lists_known_datasets_on_unknown_name():
    with raises_naming(ConfigError, "'wmt'", "autodesk", "hf", "libreoffice", "text", "tmx", "tsv"):
        DATASETS.build("wmt")


def test_libreoffice_shipped_splits():
    ds = DATASETS.build("libreoffice")
    stream = ds.load("stream")
    assert len(stream) == 14972 and len(ds.load("dev")) == 1071 and len(ds.load("reserved")) == 3598
    assert stream[0].doc_id == "text/scalc/00/00000004" and stream[0].source == "To access this function..."
    assert all(s.doc_id.startswith("text/scalc/") for s in stream)
    with raises_naming(DataError, "'test'", "libreoffice", "train", "dev", "stream", "reserved"):
        ds.load("test")


def test_libreoffice_missing_split_names_the_command(tmp_path: Path):
    with pytest.raises(DataError, match="run `make corpus`"):
        DATASETS.build("libreoffice", path=str(tmp_path)).load("train")


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_text_loader_and_errors(tmp_path: Path):
    src = _write(tmp_path / "a.en", "Hello\nWorld\n")
    ref = _write(tmp_path / "a.de", "Hallo\nWelt\n")
    segs = DATASETS.build("text", source=str(src), reference=str(ref)).load()
    assert [(s.source, s.reference, s.seg_id) for s in segs] == [("Hello", "Hallo", "1"), ("World", "Welt", "2")]
    short = _write(tmp_path / "b.de", "Hallo\n")
    with pytest.raises(DataError, match=r"line-count mismatch: .*a.en has 2 lines, .*b.de has 1"):
        DATASETS.build("text", source=str(src), reference=str(short)).load()
    bad = _write(tmp_path / "c.de", b"Hallo\nW\xe9lt\n")
    with pytest.raises(DataError, match=r"c.de' is not valid UTF-8 \(line 2, byte"):
        DATASETS.build("text", source=str(src), reference=str(bad)).load()
    with pytest.raises(DataError, match="needs source"):
        DATASETS.build("text", reference=str(ref))
    with pytest.raises(DataError, match="does not exist"):
        DATASETS.build("text", source=str(tmp_path / "nope"), reference=str(ref)).load()


def test_a_files_last_segments_held_out_as_the_dev_split(tmp_path: Path):
    """text/tsv/tmx with dev=N: the last N segments are the dev split, the stream the rest (never both); dev=0 has no
    dev split."""
    src = _write(tmp_path / "a.en", "".join(f"s{i}\n" for i in range(5)))
    ref = _write(tmp_path / "a.de", "".join(f"r{i}\n" for i in range(5)))
    held = DATASETS.build("text", source=str(src), reference=str(ref), dev=2)
    assert held.splits == ("stream", "dev")
    assert [s.source for s in held.load("stream")] == ["s0", "s1", "s2"] and [s.source for s in held.load("dev")] == ["s3", "s4"]
    tsv = _write(tmp_path / "a.tsv", "".join(f"s{i}\tr{i}\n" for i in range(5)))
    assert [s.reference for s in DATASETS.build("tsv", path=str(tsv), dev=1).load("dev")] == ["r4"]
    plain = DATASETS.build("text", source=str(src), reference=str(ref))
    assert plain.splits == ("stream",) and len(plain.load()) == 5
    with raises_naming(DataError, "'dev'", "stream"):
        plain.load("dev")
    with raises_naming(DataError, "dev=5", "every one of its 5 segments"):
        DATASETS.build("text", source=str(src), reference=str(ref), dev=5).load()
    with raises_naming(ConfigError, "dev", ">= 0"):
        DATASETS.build("text", source=str(src), reference=str(ref), dev=-1)


def test_empty_segments_fail_or_are_skipped_with_a_count(tmp_path: Path, caplog):
    src = _write(tmp_path / "a.en", "Hello\n  \nThird\nFourth\n")
    ref = _write(tmp_path / "a.de", "Hallo\nZwei\nDritte\n\t\n")
    with raises_naming(DataError, "segment 2", "source", "--skip-empty"):
        DATASETS.build("text", source=str(src), reference=str(ref)).load()
    with caplog.at_level(logging.WARNING):
        segs = DATASETS.build("text", source=str(src), reference=str(ref)).load(skip_empty=True)
    assert [s.source for s in segs] == ["Hello", "Third"]
    assert "skipped 2 segments" in caplog.text


def test_tsv_loader(tmp_path: Path):
    path = _write(tmp_path / "x.tsv", "Hello\tHallo\nOpen file\tDatei öffnen\n")
    segs = DATASETS.build("tsv", path=str(path)).load()
    assert [(s.source, s.reference) for s in segs] == [("Hello", "Hallo"), ("Open file", "Datei öffnen")]
    bad = _write(tmp_path / "y.tsv", "Hello\tHallo\nno tab here\n")
    with raises_naming(DataError, "y.tsv:2", "2 tab-separated fields", "found 1"):
        DATASETS.build("tsv", path=str(bad)).load()


TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en-US" datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="x" creationtool="t" creationtoolversion="1"/>
<body>
<tu tuid="7"><tuv xml:lang="en-US"><seg>Click <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept>.</seg></tuv><tuv xml:lang="de-DE"><seg>Klicken Sie auf OK.</seg></tuv></tu>
<tu><tuv xml:lang="en-US"><seg>Only English</seg></tuv></tu>
<tu><tuv xml:lang="EN"><seg>Save</seg></tuv><tuv xml:lang="de"><seg>Speichern</seg></tuv></tu>
</body></tmx>"""


def test_tmx_loader(tmp_path: Path):
    path = _write(tmp_path / "x.tmx", TMX)
    segs = DATASETS.build("tmx", path=str(path)).load()
    # inline markup codes (bpt/ept) carry their text in TMX: itertext keeps them, as the raw segment does
    assert [(s.seg_id, s.reference) for s in segs] == [("7", "Klicken Sie auf OK."), ("3", "Speichern")]
    with raises_naming(DataError, "'en'", "'fr'", "EN, de, de-DE, en-US"):
        DATASETS.build("tmx", path=str(path), tgt_lang="fr").load()
    broken = _write(tmp_path / "b.tmx", "<tmx><body><tu>")
    with pytest.raises(DataError, match="not a well-formed TMX file"):
        DATASETS.build("tmx", path=str(broken)).load()


def test_autodesk_absent_says_what_to_download_and_where(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SIMPE_AUTODESK_DIR", str(tmp_path / "autodesk"))
    with raises_naming(DataError, "autodesk", "Autodesk Post-Editing Data", "SIMPE_AUTODESK_DIR"):
        DATASETS.build("autodesk").load()
    (tmp_path / "autodesk").mkdir()
    with pytest.raises(DataError, match="no deu.mt.bz2, deu.mt, .tmx or .tsv file in"):
        DATASETS.build("autodesk").load()
    _write(tmp_path / "autodesk" / "en-de.tmx", TMX)
    assert len(DATASETS.build("autodesk").load()) == 2


def test_stream_hash_depends_on_text_only(tmp_path: Path):
    src = _write(tmp_path / "a.en", "A\nB\n")
    ref = _write(tmp_path / "a.de", "X\nY\n")
    segs = DATASETS.build("text", source=str(src), reference=str(ref)).load()
    assert stream_hash(segs) == stream_hash(list(segs)) and stream_hash(segs) != stream_hash(segs[:1])


def test_unknown_or_mistyped_dataset_parameters_are_named():
    with raises_naming(ConfigError, "'sourse'", "'text'", "source, reference, src_lang, tgt_lang"):
        DATASETS.build("text", sourse="a.en")
    with raises_naming(ConfigError, "'tsv'", "path", "string or null", "got 3"):
        DATASETS.build("tsv", path=3)
