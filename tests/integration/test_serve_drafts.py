"""Nothing typed is lost, and effort is measured from what the editor started from: two translators in Chromium at
1366x768, keyboard only, on a project from a partly filled XLIFF file (targets in units 1 and 3, none in unit 2).

alice: inserts the memory's match (Ctrl+1) and undoes it (Ctrl+Z), accepts the file's target; types " gut" in
segment 2, moves away (Ctrl+Up), saves the submitted segment unchanged (no revision recorded, back to the current
one), finds her draft, reloads the page, finds it again, and again after the server is killed (SIGKILL) and restarted;
submits it (its QA warning overridden with a second Ctrl+Enter); accepts segment 3's target. bob: accepts segment 1's
target, starts segment 2 from the best match (Ctrl+1: his own post-edit of segment 1), comments on segment 3
(Ctrl+Enter in the comment box adds it, and submits nothing) and edits it with a word-wise selection
(Ctrl+Shift+Left) and typing. The effort tables of compare are checked against a count by hand; the XLIFF export
carries the final versions. Skips without Chromium."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.serve import project as projects
from tests.integration.test_serve import REPO, Server, _chromium, _free_port, _records
from tests.integration.test_serve_browser import _submit
from tests.integration.test_serve_workbench import study

XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <file original="manual.html" source-language="en" target-language="de" datatype="html"><body>
  <trans-unit id="u1"><source>Open the file.</source><target state="translated">Öffnen Sie die Datei.</target>
   <note>UI string: keep it short</note></trans-unit>
  <trans-unit id="u2"><source>Open the files.</source></trans-unit>
  <trans-unit id="u3"><source>Close the file.</source><target state="translated">Schließen Sie die Datei.</target></trans-unit>
 </body></file>
</xliff>
"""
SOURCES = ["Open the file.", "Open the files.", "Close the file."]
TARGETS = ["Öffnen Sie die Datei.", None, "Schließen Sie die Datei."]
MATCH = "Öffnen Sie eine Datei."  # the memory's target (study's memory.tsv)

needs_chromium = pytest.mark.skipif(_chromium() is None, reason="no Chromium (apt-get install -y chromium; .ci/run installs it)")


def _open(browser, server: Server, token: str):
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(f"http://127.0.0.1:{server.port}/#token={token}")
    page.wait_for_selector("#source:not(:empty)")
    return page


def _draft_saved(playwright, page) -> None:
    playwright.expect(page.locator("#draft-state")).to_have_text("draft saved", timeout=30_000)


@pytest.mark.slow  # two server processes, two translators: about a minute on 2 busy cores
@needs_chromium
def test_drafts_survive_and_effort_is_counted_from_the_start(tmp_path: Path, one_torch_thread):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    expect = playwright.expect
    settings = [s for s in study(tmp_path, SOURCES, ["a", "b", "c"]) if not s.startswith("data.")]
    (tmp_path / "manual.xlf").write_text(XLIFF, encoding="utf-8")
    project, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice", "bob"],
                                      xliff=tmp_path / "manual.xlf")
    port = _free_port()
    server = Server(tmp_path, tokens["alice"], port=port)
    shots = tmp_path / "shots"
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            alice, bob = _open(browser, server, tokens["alice"]), _open(browser, server, tokens["bob"])
            # the file's note is shown; the editor starts from the file's target
            expect(alice.locator("#notes li")).to_have_text(["UI string: keep it short"])
            assert alice.input_value("#post-edit") == TARGETS[0]
            # Ctrl+1 inserts the memory's match, Ctrl+Z takes it back
            alice.keyboard.press("Control+1")
            assert alice.input_value("#post-edit") == MATCH
            alice.keyboard.press("Control+z")
            assert alice.input_value("#post-edit") == TARGETS[0]
            _submit(playwright, alice, 1, 3)
            # segment 2 (no target: the MT): type, wait for the draft, move away and back
            mt = alice.input_value("#post-edit")
            alice.keyboard.press("End")
            alice.keyboard.type(" gut")
            _draft_saved(playwright, alice)
            alice.keyboard.press("Control+ArrowUp")
            expect(alice.locator("#segment-number")).to_have_text("(segment 1 of 3)")
            expect(alice.locator("#segment-list button[data-index='1'] .text")).to_contain_text("• ")  # a draft there
            assert alice.input_value("#post-edit") == TARGETS[0]
            alice.keyboard.press("Control+Enter")  # unchanged: no revision, back to the segment on screen
            expect(alice.locator("#segment-number")).to_have_text("(segment 2 of 3)")
            expect(alice.locator("#status")).to_contain_text("no revision recorded")
            assert alice.input_value("#post-edit") == mt + " gut"
            shots.mkdir()
            alice.screenshot(path=str(shots / "workbench-1366x768.png"))  # the whole workbench fits the window
            # a reload gives the draft back, and its clock goes on from where it was
            alice.keyboard.press("End")
            alice.keyboard.type("!")
            alice.keyboard.press("Backspace")
            _draft_saved(playwright, alice)
            alice.reload()
            alice.wait_for_selector("#source:not(:empty)")
            assert alice.input_value("#post-edit") == mt + " gut"
            expect(alice.locator("#draft-state")).to_have_text("draft restored")
            # kill -9 and a restart on the same address: the draft is on the disk
            server.kill()
            server = Server(tmp_path, tokens["alice"], port=port)
            alice.reload()
            alice.wait_for_selector("#source:not(:empty)")
            assert alice.input_value("#post-edit") == mt + " gut"
            from simpe.serve.events import read_events

            alice_path = next((tmp_path / "runs").glob("*/bias@alice"))
            saved_draft = [e for e in read_events(alice_path) if e["event"] == "draft"][-1]
            assert saved_draft["post_edit"] == mt + " gut" and saved_draft["human"]["keys"][0][1:] == ["n", 0]
            _submit(playwright, alice, 2, 3)
            _submit(playwright, alice, 3, 3)
            # bob: the file's target as it is; the memory's match; a word-wise selection typed over
            _submit(playwright, bob, 1, 3)
            bob.keyboard.press("Control+1")  # the best match: his own post-edit of segment 1 (93 %), before the memory's
            assert bob.input_value("#post-edit") == TARGETS[0]
            _submit(playwright, bob, 2, 3)
            bob.focus("#comment")  # Ctrl+Enter in the comment box adds the comment; the segment stays unsubmitted
            bob.keyboard.type("Akte or Datei?")
            bob.keyboard.press("Control+Enter")
            expect(bob.locator("#comments li")).to_have_text(["Akte or Datei?"])
            expect(bob.locator("#progress")).to_have_text("2 of 3 done")
            bob.focus("#post-edit")
            bob.keyboard.press("End")
            bob.keyboard.press("Control+Shift+ArrowLeft")
            bob.keyboard.type("Akte.")
            bob_last = bob.input_value("#post-edit")
            _submit(playwright, bob, 3, 3)
            browser.close()
    finally:
        server.kill()
    runs = tmp_path / "runs"
    alice_path, bob_path = (next(runs.glob(f"*/bias@{n}")) for n in ("alice", "bob"))
    alice_records, bob_records = _records(alice_path), _records(bob_path)
    from simpe.serve.events import read_events

    assert [e["event"] for e in read_events(alice_path) if e["event"] != "draft"] == []  # no empty revision
    assert [r["reference"] for r in alice_records] == [TARGETS[0], mt + " gut", TARGETS[2]]
    assert [r["human"]["start"]["origin"] for r in alice_records] == ["target", "mt", "target"]
    assert [r["human"]["start"]["origin"] for r in bob_records] == ["target", "match", "target"]
    # every second: the submission's time is at least the draft's (the clock went on after the reload and the kill)
    assert alice_records[1]["human"]["seconds"] >= saved_draft["human"]["seconds"] > 0
    # the keys by hand: alice Ctrl+1 (t), Ctrl+Z (u); End (n), " gut" (4 i), End, "!" and Backspace (n, i, d);
    # bob Ctrl+1 (t); End (n), Ctrl+Shift+Left (v), "Akte." (5 i)
    assert [[op for _, op, _ in r["human"]["keys"]] for r in alice_records] == \
        [["t", "u"], ["n", "i", "i", "i", "i", "n", "i", "d"], []]
    assert [[op for _, op, _ in r["human"]["keys"]] for r in bob_records] == [[], ["t"], ["n", "v", "i", "i", "i", "i", "i"]]

    # compare: no stream references (unit 2 had no target): the translators' tables all the same
    from sacrebleu.metrics import TER

    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown
    from simpe.rundir.reader import load_group

    comparison = compare_runs(load_group([alice_path, bob_path]), num_resamples=20)
    people = {e.name: e for e in comparison.people}
    alice_e, bob_e = people["bias@alice"], people["bias@bob"]
    assert (alice_e.keystrokes, alice_e.unchanged, alice_e.matches, alice_e.inserts, alice_e.revisions) == (10, 2, 0, 1, 0)
    assert (bob_e.keystrokes, bob_e.unchanged, bob_e.matches, bob_e.inserts, bob_e.revisions) == (8, 2, 1, 1, 0)
    assert alice_e.keys_by == {"typing": 5, "deleting": 1, "moving": 2, "replacing": 1, "undoing": 1}
    assert bob_e.keys_by == {"typing": 5, "moving": 1, "selecting": 1, "replacing": 1}
    # HTER from the start: alice changed only segment 2 (one word added to the MT); bob only segment 3
    finals_alice = [TARGETS[0], mt + " gut", TARGETS[2]]
    assert alice_e.hter == pytest.approx(100 * 1 / sum(len(f.split()) for f in finals_alice))
    assert bob_e.hter == pytest.approx(TER().corpus_score([TARGETS[0], TARGETS[0], TARGETS[2]],
                                                          [[TARGETS[0], TARGETS[0], bob_last]]).score)
    shown = [r["hypothesis"] for r in alice_records]
    assert alice_e.hter_mt == pytest.approx(TER().corpus_score(shown, [finals_alice]).score)
    assert alice_e.unchanged_mt == sum(h == f for h, f in zip(shown, finals_alice))
    table = to_markdown(comparison)
    assert "No run of this group has references of the stream" in table and "### Keystrokes by kind" in table
    (tmp_path / "effort.md").write_text(table, encoding="utf-8")

    # XLIFF out: the final versions as the targets
    from translate.storage import xliff

    out = tmp_path / "alice.xlf"
    done = subprocess.run([sys.executable, "-m", "simpe", "serve", "export", "study", "alice", "--xliff", str(out),
                           "--projects-dir", str(tmp_path / "projects")], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert [u.target for u in xliff.xlifffile.parsefile(str(out)).units if not u.isheader()] == finals_alice
    keep = os.environ.get("SIMPE_TEST_KEEP")  # a folder to copy the screenshot and the effort table to
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for path in (shots / "workbench-1366x768.png", tmp_path / "effort.md"):
            Path(keep, path.name).write_bytes(path.read_bytes())
