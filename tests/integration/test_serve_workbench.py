"""simpe serve's workbench on the demo model: revisions, matches, glossary hits, pauses, comments and flags, the
segment list, in one process (Starlette's test client). The browser tests are in test_serve_browser.py."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simpe.rundir import layout
from simpe.serve import project as projects

SOURCES = ["Open the file.", "Open the files.", "Choose Sheet - Cell Protection.", "Close the file."]
REFERENCES = ["Öffnen Sie die Datei.", "Öffnen Sie die Dateien.", "Wählen Sie Tabelle - Zellschutz.",
              "Schließen Sie die Datei."]
MEMORY = "Open a file.\tÖffnen Sie eine Datei.\n"
GLOSSARY = "#langs en de\nSheet\tTabelle\nCell Protection\tZellschutz\n"


def study(tmp_path: Path, segments: list[str] = SOURCES, references: list[str] = REFERENCES,
          extra: list[str] | None = None) -> list[str]:
    """A text stream, a warm-start memory and a glossary in ``tmp_path``; the settings of a project on them."""
    (tmp_path / "src.en").write_text("\n".join(segments) + "\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("\n".join(references) + "\n", encoding="utf-8")
    (tmp_path / "memory.tsv").write_text(MEMORY, encoding="utf-8")
    (tmp_path / "glossary.tsv").write_text(GLOSSARY, encoding="utf-8")
    return [f"runs_dir={tmp_path / 'runs'}", "device=cpu", "data.name=text", f"data.params.source={tmp_path / 'src.en'}",
            f"data.params.reference={tmp_path / 'ref.de'}", f"warm_start.path={tmp_path / 'memory.tsv'}",
            "warm_start.epochs=1", *(extra or [])]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]


def test_revisions_matches_glossary_pauses_and_notes(tmp_path: Path, one_torch_thread):
    from starlette.testclient import TestClient

    from simpe.serve.app import create_app
    from simpe.serve.bind import allowed_names
    from simpe.serve.events import read_events
    from simpe.serve.server import open_sessions

    project, tokens = projects.create(tmp_path / "projects", "study", "bias", study(tmp_path), ["alice"],
                                      glossary=tmp_path / "glossary.tsv")
    assert project.glossary == "glossary.tsv" and (tmp_path / "projects" / "study" / "glossary.tsv").read_text() == GLOSSARY
    project = projects.load(tmp_path / "projects" / "study")
    sessions = open_sessions(project)
    try:
        client = TestClient(create_app(project, sessions, *allowed_names("127.0.0.1", 8765, False, [])),
                            base_url="http://127.0.0.1:8765")
        alice = {"Authorization": f"Bearer {tokens['alice']}"}
        view = client.get("/api/segment", headers=alice).json()
        assert (view["status"], view["doc_id"], view["src_lang"], view["tgt_lang"], view["glossary"]) == \
            ("current", "src.en", "en", "de", True)
        # the memory's "Open a file." against "Open the file.": 3 edits over 14 characters, 78 %
        assert [(m["rank"], m["score"], m["origin"], m["target"]) for m in view["matches"]] == \
            [(1, 78, "memory", "Öffnen Sie eine Datei.")]
        assert view["terms"] == [] and view["post_edit"] == view["hypothesis"]
        answer = client.post("/api/submit", headers=alice, json={
            "index": 0, "post_edit": "Öffnen Sie eine Datei.", "seconds": 4.0,
            "keys": [[100, "t", 1], [300, "n", 0]], "pauses": [[1000, 3000]]})
        assert answer.status_code == 200, answer.text
        view = answer.json()
        # segment 1: alice's own post-edit of segment 0 (1 insertion over 15 characters: 93 %) before the memory (73 %)
        assert [(m["score"], m["origin"], m["index"]) for m in view["matches"]] == [(93, "post-edit", 0), (73, "memory", None)]
        # revise segment 0: an event; the record keeps the version the model learned from
        assert client.post("/api/revise", headers=alice, json={"index": 1, "post_edit": "x"}).status_code == 400
        revised = client.post("/api/revise", headers=alice, json={"index": 0, "post_edit": "Öffnen Sie die Datei.",
                                                                  "seconds": 2.5, "keys": [[10, "d", 4]]})
        assert revised.status_code == 200 and revised.json()["index"] == 1  # the next segment: the current one
        assert revised.json()["matches"][0]["target"] == "Öffnen Sie die Datei."  # the final version is the memory's
        again = client.post("/api/revise", headers=alice, json={"index": 0, "post_edit": "Öffnen Sie die Datei.",
                                                                "seconds": 2.5, "keys": [[10, "d", 4]]})
        assert again.status_code == 200  # a retried revision is recorded once
        zero = client.get("/api/segment?index=0", headers=alice).json()
        assert (zero["status"], zero["post_edit"], zero["learned"], zero["versions"]) == \
            ("done", "Öffnen Sie die Datei.", "Öffnen Sie eine Datei.", 2)
        for bad in ("?index=2", "?index=9", "?index=-1", "?index=x"):
            assert client.get(f"/api/segment{bad}", headers=alice).status_code == 400
        # comments and a flag on the segment on screen
        assert client.post("/api/note", headers=alice, json={"index": 1, "comment": "plural?"}).json()["comments"] == ["plural?"]
        assert client.post("/api/note", headers=alice, json={"index": 1, "flagged": True}).json()["flagged"] is True
        assert client.post("/api/note", headers=alice, json={"index": 2, "flagged": True}).status_code == 400
        listing = client.get("/api/segments", headers=alice).json()
        assert listing["current"] == 1
        assert [(s["status"], s["versions"], s["flagged"], s["comments"]) for s in listing["segments"]] == \
            [("done", 2, False, 0), ("current", 0, True, 1), ("todo", 0, False, 0), ("todo", 0, False, 0)]
        # a draft of the segment on screen: synced, listed, given back with the view; a later segment takes none
        draft = client.post("/api/draft", headers=alice, json={"index": 1, "post_edit": "Öffnen Sie die Dat", "seconds": 1.5,
                                                               "keys": [[10, "d", 4]], "elapsed_ms": 2000})
        assert draft.json() == {"index": 1, "version": 1}
        assert [s["draft"] for s in client.get("/api/segments", headers=alice).json()["segments"]] == [False, True, False, False]
        assert client.get("/api/segment", headers=alice).json()["draft"] == {
            "post_edit": "Öffnen Sie die Dat", "human": {"seconds": 1.5, "keys": [[10, "d", 4]], "elapsed_ms": 2000}}
        assert client.post("/api/draft", headers=alice, json={"index": 2, "post_edit": ""}).status_code == 400
        view = client.post("/api/submit", headers=alice, json={"index": 1, "post_edit": "Öffnen Sie die Dateien."}).json()
        assert view["draft"] is None and not client.get("/api/segments", headers=alice).json()["segments"][1]["draft"]
        # segment 2: the glossary's terms, highlighted where they stand; a draft without Zellschutz misses it
        assert [(t["source"], t["target"], t["spans"]) for t in view["terms"]] == \
            [("Sheet", "Tabelle", [[7, 12]]), ("Cell Protection", "Zellschutz", [[15, 30]])]
        check = client.post("/api/check", headers=alice, json={"index": 2, "text": "Wählen Sie Tabelle - Zellen schützen."})
        assert check.json()["missing"] == [{"source": "Cell Protection", "target": "Zellschutz"}]
        client.post("/api/submit", headers=alice, json={"index": 2, "post_edit": "Wählen Sie Blatt - Zellschutz."})
        last = client.post("/api/submit", headers=alice, json={"index": 3, "post_edit": "Schließen Sie die Datei."}).json()
        assert last["done"] is True
        # a complete run is still revised (its records stay as the model learned them)
        done = client.post("/api/revise", headers=alice, json={"index": 3, "post_edit": "Datei schließen."})
        assert done.status_code == 200 and done.json()["done"] is True
    finally:
        for session in sessions.values():
            session.close()
    path = sessions["alice"].path
    saved = records(path)
    assert [r["reference"] for r in saved] == ["Öffnen Sie eine Datei.", "Öffnen Sie die Dateien.",
                                              "Wählen Sie Blatt - Zellschutz.", "Schließen Sie die Datei."]
    first = saved[0]["human"]
    assert (first["version"], first["seconds"], first["paused_seconds"], first["pauses"], first["matches"]) == \
        (1, 4.0, 2.0, [[1000, 3000]], 1)
    assert first["matches_used"] == [{"rank": 1, "score": 78, "source": "Open a file.", "target": "Öffnen Sie eine Datei.",
                                      "origin": "memory", "index": None}]
    assert saved[2]["human"]["terms_missing"] == [{"source": "Sheet", "target": "Tabelle"}]
    assert saved[1]["human"]["terms_missing"] == []
    events = read_events(path)
    assert [(e["event"], e["index"], e.get("version")) for e in events] == \
        [("revision", 0, 2), ("comment", 1, None), ("flag", 1, None), ("draft", 1, 1), ("revision", 3, 2)]
    assert (events[0]["previous"], events[0]["human"]["keystrokes"], events[0]["human"]["seconds"]) == \
        ("Öffnen Sie eine Datei.", 1, 2.5)
    summary = json.loads((path / layout.SUMMARY_FILE).read_text())
    assert (summary["human"]["paused_seconds"], summary["human"]["matches"]) == (2.0, 1)
    # effort where researchers read it: revisions' time and keys added, HTER against the final versions
    from sacrebleu.metrics import TER

    from simpe.report.people import run_effort
    from simpe.rundir.reader import load_run

    effort = run_effort(load_run(path), 4)
    finals = ["Öffnen Sie die Datei.", "Öffnen Sie die Dateien.", "Wählen Sie Blatt - Zellschutz.", "Datei schließen."]
    assert (effort.segments, effort.seconds, effort.paused_seconds, effort.revisions, effort.matches) == (4, 6.5, 2.0, 2, 1)
    assert effort.keystrokes == 2 + 1 + 0  # segment 0's two events, its revision's deletion; the revision of 3 sent none
    assert effort.chars == sum(len(f) for f in finals)
    assert effort.hter_mt == pytest.approx(TER().corpus_score([r["hypothesis"] for r in saved], [finals]).score)
    # against the starts: segment 0 started from the memory's match (Ctrl+1, t in its key log), the others from the MT
    assert [r["human"]["start"]["origin"] for r in saved] == ["match", "mt", "mt", "mt"] and effort.matches == 1
    starts = ["Öffnen Sie eine Datei."] + [r["hypothesis"] for r in saved[1:]]
    assert effort.hter == pytest.approx(TER().corpus_score(starts, [finals]).score)
    assert effort.hter != pytest.approx(summary["human"]["hter"])  # the records' HTER is against the learned versions


def test_without_lookups_the_views_carry_no_matches_or_terms(tmp_path: Path, one_torch_thread):
    from simpe.serve.server import open_sessions

    project, _ = projects.create(tmp_path / "projects", "study", "bias", study(tmp_path, extra=["data.segments=2"]),
                                 ["bob"], glossary=tmp_path / "glossary.tsv")
    sessions = open_sessions(project, lookups=False)
    try:
        bob = sessions["bob"]
        view = bob.view()
        assert (view["matches"], view["terms"], view["lookups"]) == ([], [], False)
        bob.submit(0, "Öffnen Sie die Datei.", {"seconds": 1.0, "keys": [[5, "t", 1]]})
        assert bob.view()["matches"] == []
    finally:
        for session in sessions.values():
            session.close()
    human = records(sessions["bob"].path)[0]["human"]
    assert human["matches_used"] == [{"rank": 1}] and "terms_missing" not in human


def test_a_bad_glossary_is_refused_before_the_project_is_written(tmp_path: Path):
    from simpe.errors import DataError

    settings = study(tmp_path)
    (tmp_path / "bad.tsv").write_text("Sheet Tabelle\n", encoding="utf-8")
    with pytest.raises(DataError, match="bad.tsv"):
        projects.create(tmp_path / "projects", "study", "bias", settings, ["alice"], glossary=tmp_path / "bad.tsv")
    assert not (tmp_path / "projects" / "study").exists()
