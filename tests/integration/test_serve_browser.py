"""The workbench in Chromium (playwright driving the system's browser, no download), as test_serve.py's browser test:
two translators work with the keyboard only (a match inserted, a pause, a revision, the source copied, the MT
restored), their records say so, and their XLIFF exports read back with translate-toolkit; ``kill -9`` while a
revision is saved loses nothing. Skips without Chromium."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simpe.serve import project as projects
from tests.integration.test_serve import REPO, Server, _chromium, _free_port, _records
from tests.integration.test_serve_workbench import study

SOURCES = ["Open the file.", "Open the files.", "Choose Sheet - Cell Protection.", "Close the file.", "Save the file."]
REFERENCES = ["Öffnen Sie die Datei.", "Öffnen Sie die Dateien.", "Wählen Sie Tabelle - Zellschutz.",
              "Schließen Sie die Datei.", "Speichern Sie die Datei."]
# the same five segments as a CAT tool's XLIFF 1.2 file, targets filled (the stream's references; the editor's
# starting point), the last with an inline tag
STUDY_XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <file original="manual.html" source-language="en" target-language="de" datatype="html"><body>
{units}
 </body></file>
</xliff>
"""


def study_xliff(path: Path) -> Path:
    units = []
    for number, (source, target) in enumerate(zip(SOURCES, REFERENCES), 1):
        if number == 5:
            source, target = 'Save the <g id="b">file</g>.', 'Speichern Sie die <g id="b">Datei</g>.'
        units.append(f'  <trans-unit id="t{number}"><source>{source}</source><target state="final">{target}</target></trans-unit>')
    path.write_text(STUDY_XLIFF.format(units="\n".join(units)), encoding="utf-8")
    return path

needs_chromium = pytest.mark.skipif(_chromium() is None, reason="no Chromium (apt-get install -y chromium; .ci/run installs it)")


def _page(p, browser, server: Server, token: str):
    page = browser.new_context().new_page()
    page.goto(f"http://127.0.0.1:{server.port}/#token={token}")
    page.wait_for_selector("#source:not(:empty)")
    return page


def _submit(playwright, page, done: int, total: int = 5) -> None:
    """Ctrl+Enter; with QA warnings shown, Ctrl+Enter again (submitted anyway: the record keeps them)."""
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.querySelector('#progress').textContent.startsWith(arguments[0]) || "
                           "document.querySelector('#status').textContent.startsWith('QA:')".replace("arguments[0]", repr(f"{done} of")),
                           timeout=60_000)
    if page.inner_text("#status").startswith("QA:"):
        page.keyboard.press("Control+Enter")
    playwright.expect(page.locator("#progress")).to_have_text(f"{done} of {total} done", timeout=60_000)


@needs_chromium
def test_two_translators_work_with_the_keyboard_only(tmp_path: Path, one_torch_thread):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    settings = [s for s in study(tmp_path, SOURCES, REFERENCES) if not s.startswith("data.")]
    project, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice", "bob"],
                                      glossary=tmp_path / "glossary.tsv", xliff=study_xliff(tmp_path / "manual.xlf"))
    server = Server(tmp_path, tokens["alice"])
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            alice, bob = _page(p, browser, server, tokens["alice"]), _page(p, browser, server, tokens["bob"])
            expect = playwright.expect
            # the page: the document's name, spellchecking in the target language, the shortcuts listed
            expect(alice.locator("#document")).to_have_text("Document: manual.html")
            assert alice.input_value("#post-edit") == REFERENCES[0]  # the file's target: the starting point
            assert alice.get_attribute("#post-edit", "spellcheck") == "true" and alice.get_attribute("#post-edit", "lang") == "de"
            assert alice.get_attribute("#source", "lang") == "en"
            for shortcut in ("Ctrl+Enter", "Ctrl+↓", "Ctrl+I", "Ctrl+M", "Ctrl+1", "Ctrl+P"):
                assert shortcut.replace("+", "") in alice.text_content("#shortcuts").replace("+", "").replace(" ", "").replace("\n", "")
            # segment 0: the memory's match (78 %), inserted with Ctrl+1
            expect(alice.locator("#matches li")).to_have_count(1)
            assert alice.inner_text("#matches li .score") == "78%"
            alice.keyboard.press("Control+1")
            assert alice.input_value("#post-edit") == "Öffnen Sie eine Datei."
            assert alice.locator("#diff ins").count() >= 1  # the diff against the MT follows the editor
            _submit(playwright, alice, 1)
            # segment 1: a pause (the editor hidden, the time left out), then a typed edit
            alice.keyboard.press("Control+p")
            expect(alice.locator("#paused")).to_be_visible()
            time.sleep(0.6)
            alice.keyboard.press("Control+p")
            expect(alice.locator("#paused")).to_be_hidden()
            alice.keyboard.press("End")
            alice.keyboard.type(" gut")
            _submit(playwright, alice, 2)
            # back to segment 1 (Ctrl+Up) and revise it: a new version; the page says the model does not learn again
            alice.keyboard.press("Control+ArrowUp")
            expect(alice.locator("#revision-note")).to_be_visible()
            assert "does not learn again" in alice.inner_text("#revision-note")
            alice.keyboard.press("Control+a")
            alice.keyboard.type("Öffnen Sie alle Dateien.")
            alice.keyboard.press("Control+Enter")
            expect(alice.locator("#segment-number")).to_have_text("(segment 3 of 5)")
            # segment 2: glossary hits highlighted; a post-edit without Zellschutz gets a note
            expect(alice.locator("#source mark")).to_have_count(2)
            assert [alice.locator("#source mark").nth(i).inner_text() for i in range(2)] == ["Sheet", "Cell Protection"]
            alice.keyboard.press("Control+i")  # the source copied in: no German term in it
            expect(alice.locator("#qa")).to_contain_text("Zellschutz")  # a QA warning
            alice.keyboard.press("Control+m")  # the MT restored
            _submit(playwright, alice, 3)
            _submit(playwright, alice, 4)
            _submit(playwright, alice, 5)
            expect(alice.locator("#done")).to_be_visible()
            # bob, meanwhile, accepts each target as the file has it (the last with its tag); his list is his own
            expect(bob.locator("#segment-list .st.done")).to_have_count(0)
            for done in range(1, 6):
                if done == 5:
                    assert bob.input_value("#post-edit") == "Speichern Sie die ⟨1⟩Datei⟨/1⟩."
                    assert bob.inner_text("#source") == "Save the ⟨1⟩file⟨/1⟩."
                    bob.keyboard.press("Control+a")
                    bob.keyboard.press("Backspace")  # a tag cannot be deleted: the page puts the text back
                    assert bob.input_value("#post-edit") == "Speichern Sie die ⟨1⟩Datei⟨/1⟩."
                    expect(bob.locator("#status")).to_contain_text("cannot be deleted")
                _submit(playwright, bob, done)
            expect(bob.locator("#segment-list .st.done")).to_have_count(5)
            browser.close()
    finally:
        server.kill()
    runs = tmp_path / "runs"
    alice_path, bob_path = (next(runs.glob(f"*/bias@{n}")) for n in ("alice", "bob"))
    alice_records, bob_records = _records(alice_path), _records(bob_path)
    assert alice_records[0]["reference"] == "Öffnen Sie eine Datei."
    assert alice_records[0]["human"]["matches_used"][0] | {} == {"rank": 1, "score": 78, "source": "Open a file.",
                                                                  "target": "Öffnen Sie eine Datei.", "origin": "memory",
                                                                  "index": None}
    pause, = alice_records[1]["human"]["pauses"]
    assert pause[1] - pause[0] >= 500 and alice_records[1]["human"]["paused_seconds"] >= 0.5
    assert alice_records[1]["reference"] == REFERENCES[1] + " gut"  # the version the model learned from
    assert [op for _, op, _ in alice_records[2]["human"]["keys"]] == ["s", "r"]
    from simpe.serve.events import read_events

    revision, = read_events(next(runs.glob("*/bias@alice")))
    assert (revision["index"], revision["version"], revision["post_edit"]) == (1, 2, "Öffnen Sie alle Dateien.")
    assert [r["reference"] for r in bob_records] == REFERENCES and bob_records[4]["human"]["tagged"] == \
        "Speichern Sie die ⟨1⟩Datei⟨/1⟩."
    assert [op for r in bob_records for _, op, _ in r["human"]["keys"]] == ["v", "d"]  # Ctrl+A, the refused deletion

    # XLIFF out: each translator's final versions as the targets; translate-toolkit reads the same targets back
    from lxml import etree
    from translate.storage import xliff

    finals = {"alice": ["Öffnen Sie eine Datei.", "Öffnen Sie alle Dateien.", alice_records[2]["reference"],
                        alice_records[3]["reference"], alice_records[4]["reference"]], "bob": REFERENCES}
    for name in ("alice", "bob"):
        out = tmp_path / f"{name}.xlf"
        done = subprocess.run([sys.executable, "-m", "simpe", "serve", "export", "study", name, "--xliff", str(out),
                               "--projects-dir", str(tmp_path / "projects")], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
        assert done.returncode == 0 and "5 of 5 segments" in done.stdout, done.stderr
        units = [u for u in xliff.xlifffile.parsefile(str(out)).units if not u.isheader()]
        assert [u.target for u in units] == finals[name]
        assert [next(c for c in u.xmlelement if etree.QName(c).localname == "target").get("state") for u in units] == \
            ["translated"] * 5
        assert '<g id="b">Datei</g>.' in out.read_text(encoding="utf-8")  # the tag restored where it stood

    # the study's report: each person's run beside a simulated baseline against the stream's references, their effort apart
    from simpe.config.files import load_config
    from simpe.loop.run import Loop
    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown
    from simpe.rundir.reader import load_group

    baseline = Loop(load_config("baseline", [*project.overrides, "warm_start.method=bias"]), progress=False)
    baseline.run()
    comparison = compare_runs(load_group([baseline.path, alice_path, bob_path]), num_resamples=20)
    assert [row.run.name for row in comparison.rows] == ["baseline", "bias@alice", "bias@bob"]
    people = {e.name: e for e in comparison.people}
    assert (people["bias@alice"].revisions, people["bias@alice"].matches, people["bias@bob"].revisions) == (1, 1, 0)
    assert people["bias@alice"].paused_seconds >= 0.5
    # bob's final post-edits are the file's targets: his HTER is sacreBLEU's TER of what he was shown against them
    from sacrebleu.metrics import TER

    shown = [r["hypothesis"] for r in bob_records]
    assert people["bias@bob"].hter_mt == pytest.approx(TER().corpus_score(shown, [REFERENCES]).score)
    # against what his editor started from (the file's targets, accepted as they were): no edit at all
    assert (people["bias@bob"].hter, people["bias@bob"].unchanged) == (0.0, 5)
    assert people["bias@bob"].unchanged_mt == sum(h == r for h, r in zip(shown, REFERENCES))
    assert "## Translators, against their own post-edits" in to_markdown(comparison)


@pytest.mark.slow  # two server processes (as test_serve.py's kill test, which is slow too)
@needs_chromium
def test_killing_the_server_while_a_revision_is_saved_loses_nothing(tmp_path: Path, one_torch_thread):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    settings = study(tmp_path, SOURCES[:3], REFERENCES[:3])
    _, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice"])
    port = _free_port()
    server = Server(tmp_path, tokens["alice"], "journal:1", port=port)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = _page(p, browser, server, tokens["alice"])
        _submit(playwright, page, 1, 3)
        page.keyboard.press("Control+ArrowUp")
        playwright.expect(page.locator("#revision-note")).to_be_visible()
        page.keyboard.press("Control+a")
        page.keyboard.type("Die Datei öffnen.")
        page.keyboard.press("Control+Enter")  # the server writes the revision, syncs it, and is killed before answering
        deadline = time.monotonic() + 60
        while not server.marker.exists():
            assert time.monotonic() < deadline, "the server never reached its stall"
            time.sleep(0.05)
        server.kill()
        playwright.expect(page.locator("#status")).to_contain_text("Not saved", timeout=30_000)
        assert page.input_value("#post-edit") == "Die Datei öffnen."  # the page keeps it
        server = Server(tmp_path, tokens["alice"], port=port)  # the same address: the page submits again
        try:
            page.keyboard.press("Control+Enter")
            playwright.expect(page.locator("#segment-number")).to_have_text("(segment 2 of 3)", timeout=60_000)
            assert server.request("/api/segment?index=0")["post_edit"] == "Die Datei öffnen."
        finally:
            browser.close()
            server.kill()
    from simpe.serve.events import read_events

    events = read_events(next((tmp_path / "runs").glob("*/bias@alice")))
    assert [(e["event"], e["index"], e["version"], e["post_edit"]) for e in events] == \
        [("revision", 0, 2, "Die Datei öffnen.")]  # on disk before the kill, recorded once after the retry
