"""XLIFF in and out (simpe.datasets.xliff, simpe serve init --xliff, simpe serve export, simulate --dataset xliff) on
small hand-written files under tests/data/xliff: inline tags as placeholders that must stay and are restored,
units of several segments, targets already filled, a file without targets. translate-toolkit reads the exports back."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.datasets.xliff import check_tags, fill_targets, plain, read_xliff
from simpe.errors import DataError
from simpe.rundir import layout
from simpe.serve import project as projects

DATA = Path(__file__).resolve().parents[1] / "data" / "xliff"
REPO = Path(__file__).resolve().parents[2]


def toolkit_targets(path: Path) -> dict[str, tuple[str | None, str | None]]:
    """Unit id -> (plain target, state) as translate-toolkit reads them (its own ids: 1.2 file\\x04unit, 2.x unit::seg)."""
    from lxml import etree
    from translate.storage import xliff, xliff2

    data = path.read_bytes()
    store = (xliff2.Xliff2File if b'version="2.0"' in data else xliff.xlifffile).parsestring(data)
    out = {}
    for unit in store.units:
        if unit.isheader():
            continue
        element = unit.xmlelement
        target = next((c for c in element if etree.QName(c).localname == "target"), None)
        state = element.get("state") if etree.QName(element).localname == "segment" else (
            target.get("state") if target is not None else None)
        out[unit.getid().split("\x04")[-1]] = (unit.target or None, state)
    return out


@pytest.mark.parametrize("name, ids", [("tags-1.2.xlf", ["u1", "u2", "u3::1", "u3::2"]),
                                       ("tags-2.0.xlf", ["u1", "u2", "u3::a", "u3::b"])])
def test_segments_placeholders_and_targets_read_and_written_back(tmp_path: Path, name: str, ids: list[str]):
    version, src, tgt, segments, store = read_xliff(DATA / name)
    assert (version, src.split("-")[0], (tgt or "").split("-")[0]) == ("1.2" if "1.2" in name else "2", "en", "de")
    # the unit marked translate="no" is left out; a unit of two segments gives two, named unit::segment
    assert [s.id for s in segments] == ids and {s.doc for s in segments} == {"guide.html"}
    assert [s.source for s in segments] == ["Click ⟨1⟩OK⟨/1⟩ to save the file.", "Press ⟨1/⟩ to open the file.",
                                            "Open the file.", "Close the file."]
    assert [s.target for s in segments] == [None, "Drücken Sie ⟨1/⟩, um die Datei zu öffnen.", None, None]
    assert plain(segments[0].source) == "Click OK to save the file." and plain(segments[1].source) == "Press to open the file."
    targets = {ids[0]: "Klicken Sie auf ⟨1⟩OK⟨/1⟩, um die Datei zu speichern.", ids[1]: "Drücken Sie ⟨1/⟩ jetzt.",
               ids[2]: "Öffnen Sie die Datei.", ids[3]: "Schließen Sie die Datei."}
    out = tmp_path / "out.xlf"
    assert fill_targets(store, version, segments, {ids.index(key): text for key, text in targets.items()}) == 4
    out.write_bytes(bytes(store))
    text = out.read_text(encoding="utf-8")
    paired, alone = ("g", "x") if version == "1.2" else ("pc", "ph")
    assert f'<{paired} id="1">OK</{paired}>, um die Datei zu speichern.' in text and f'<{alone} id="2"/> jetzt.' in text
    # translate-toolkit reads the same targets back (as plain text: it drops inline tags), with the state translated
    read = toolkit_targets(out)
    if version == "1.2":  # translate-toolkit 1.2 sees the seg-source unit whole
        assert read == {"u1": (plain(targets["u1"]), "translated"), "u2": ("Drücken Sie jetzt.", "translated"),
                        "u3": ("Öffnen Sie die Datei. Schließen Sie die Datei.", "translated"), "u4": (None, None)}
    else:
        assert read == {"u1::s1": (plain(targets["u1"]), "translated"), "u2::s1": ("Drücken Sie jetzt.", "translated"),
                        "u3::a": (targets["u3::a"], "translated"), "u3::b": (targets["u3::b"], "translated")}
    # and simpe reads its own output back with the tags in place
    assert [s.target for s in read_xliff(out)[3]] == [targets[i] for i in ids]


@pytest.mark.parametrize("post_edit, message", [
    ("Klicken Sie auf OK.", "lacks the tag ⟨1⟩"),
    ("Klicken ⟨1⟩OK⟨/1⟩ ⟨1⟩.", "twice"),
    ("Klicken ⟨/1⟩OK⟨1⟩.", "closes before"),
    ("Klicken ⟨1⟩OK⟨/1⟩ ⟨7/⟩.", "that its source lacks"),
])
def test_a_post_edit_keeps_every_tag_in_order(post_edit: str, message: str):
    with pytest.raises(DataError, match=message):
        check_tags("Click ⟨1⟩OK⟨/1⟩ to save.", post_edit)
    check_tags("Click ⟨1⟩OK⟨/1⟩ to save.", "⟨1⟩OK⟨/1⟩ klicken.")


def test_simulate_reads_filled_targets_as_references_and_refuses_a_file_without(tmp_path: Path, one_torch_thread):
    run = [sys.executable, "-m", "simpe", "simulate", "--preset", "baseline", "--dataset", "xliff",
           "--runs-dir", str(tmp_path / "runs"), "--set", "device=cpu"]
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    empty = subprocess.run([*run, "--set", f"data.params.path={DATA / 'empty-1.2.xlf'}"], capture_output=True, text=True,
                           cwd=REPO, env=env)
    assert empty.returncode == 2 and empty.stderr.strip().count("\n") == 0, empty.stderr
    assert "has no filled target" in empty.stderr and "empty-1.2.xlf" in empty.stderr
    done = subprocess.run([*run, "--set", f"data.params.path={DATA / 'filled-2.0.xlf'}"], capture_output=True, text=True,
                          cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    path, = (tmp_path / "runs").glob("*/baseline")
    records = [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [(r["doc_id"], r["seg_id"], r["source"], r["reference"]) for r in records] == [
        ("guide.html", "u1", "Click OK to save the file.", "Klicken Sie auf OK, um die Datei zu speichern."),
        ("guide.html", "u2::a", "Open the file.", "Öffnen Sie die Datei."),
        ("guide.html", "u2::b", "Close the file.", "Schließen Sie die Datei.")]
    assert records[0]["info"]["tagged_source"] == "Click ⟨1⟩OK⟨/1⟩ to save the file."


@pytest.mark.parametrize("name", ["tags-1.2.xlf", "tags-2.0.xlf"])
def test_a_project_from_xliff_keeps_tags_and_exports_the_final_versions(tmp_path: Path, name: str, one_torch_thread):
    from simpe.serve.export import export_xliff
    from simpe.serve.server import open_sessions

    settings = [f"runs_dir={tmp_path / 'runs'}", "device=cpu"]
    project, _ = projects.create(tmp_path / "projects", "cat", "bias", settings, ["anna"], xliff=DATA / name)
    assert (tmp_path / "projects" / "cat" / projects.XLIFF_FILE).read_bytes() == (DATA / name).read_bytes()
    with pytest.raises(DataError, match="submitted no segment"):
        export_xliff(project, "anna", tmp_path / "none.xlf")
    sessions = open_sessions(project)
    anna = sessions["anna"]
    try:
        view = anna.view()
        assert (view["source"], view["tags"], view["doc_id"]) == ("Click ⟨1⟩OK⟨/1⟩ to save the file.", ["⟨1⟩", "⟨/1⟩"],
                                                                  "guide.html")
        assert view["post_edit"] == view["hypothesis"] + " ⟨1⟩ ⟨/1⟩"  # the tags, for the translator to place
        with pytest.raises(DataError, match="lacks the tag"):
            anna.submit(0, "Klicken Sie auf OK.", {"seconds": 1.0, "keys": []})
        anna.submit(0, "Klicken Sie auf ⟨1⟩OK⟨/1⟩.", {"seconds": 1.0, "keys": []})
        view = anna.view()
        assert view["post_edit"] == "Drücken Sie ⟨1/⟩, um die Datei zu öffnen."  # the filled target: the starting point
        anna.submit(1, view["post_edit"], {"seconds": 1.0, "keys": []})
        anna.submit(2, "Öffnen Sie die Datei.", {"seconds": 1.0, "keys": []})
        anna.revise(0, "Klicken Sie ⟨1⟩OK⟨/1⟩ an.", {"seconds": 2.0, "keys": []})
        assert anna.view(0)["post_edit"] == "Klicken Sie ⟨1⟩OK⟨/1⟩ an."
    finally:
        anna.close()
    records = [json.loads(line) for line in (anna.path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]
    # the model learned the text without tags; the record keeps the tagged post-edit; no stream reference to score
    assert [r["reference"] for r in records] == ["Klicken Sie auf OK.", "Drücken Sie , um die Datei zu öffnen.",
                                                 "Öffnen Sie die Datei."]
    assert records[0]["human"]["tagged"] == "Klicken Sie auf ⟨1⟩OK⟨/1⟩." and "stream" not in records[0]
    out = tmp_path / "anna.xlf"
    written, total, _ = export_xliff(project, "anna", out)
    assert (written, total) == (3, 4)
    segments = read_xliff(out)[3]
    assert [s.target for s in segments] == ["Klicken Sie ⟨1⟩OK⟨/1⟩ an.", "Drücken Sie ⟨1/⟩, um die Datei zu öffnen.",
                                            "Öffnen Sie die Datei.", None]
    read = toolkit_targets(out)
    first = "u1" if "1.2" in name else "u1::s1"
    assert read[first] == ("Klicken Sie OK an.", "translated")
