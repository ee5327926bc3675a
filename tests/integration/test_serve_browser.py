"""The workbench in Chromium (playwright driving the system's browser, no download), as test_serve.py's browser test:
two translators work with the keyboard only (a match inserted, a pause, a revision, the source copied, the MT
restored), their records say so, and their XLIFF exports read back with translate-toolkit; ``kill -9`` while a
revision is saved loses nothing. Skips without Chromium."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from simpe.serve import project as projects
from tests.integration.test_serve import Server, _chromium, _free_port, _records
from tests.integration.test_serve_workbench import study

SOURCES = ["Open the file.", "Open the files.", "Choose Sheet - Cell Protection.", "Close the file.", "Save the file."]
REFERENCES = ["Öffnen Sie die Datei.", "Öffnen Sie die Dateien.", "Wählen Sie Tabelle - Zellschutz.",
              "Schließen Sie die Datei.", "Speichern Sie die Datei."]

needs_chromium = pytest.mark.skipif(_chromium() is None, reason="no Chromium (apt-get install -y chromium; .ci/run installs it)")


def _page(p, browser, server: Server, token: str):
    page = browser.new_context().new_page()
    page.goto(f"http://127.0.0.1:{server.port}/#token={token}")
    page.wait_for_selector("#source:not(:empty)")
    return page


def _submit(playwright, page, done: int, total: int = 5) -> None:
    page.keyboard.press("Control+Enter")
    playwright.expect(page.locator("#progress")).to_have_text(f"{done} of {total} done", timeout=60_000)


@needs_chromium
def test_two_translators_work_with_the_keyboard_only(tmp_path: Path, one_torch_thread):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    settings = study(tmp_path, SOURCES, REFERENCES)
    _, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice", "bob"],
                                glossary=tmp_path / "glossary.tsv")
    server = Server(tmp_path, tokens["alice"])
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            alice, bob = _page(p, browser, server, tokens["alice"]), _page(p, browser, server, tokens["bob"])
            expect = playwright.expect
            # the page: the document's name, spellchecking in the target language, the shortcuts listed
            expect(alice.locator("#document")).to_have_text("Document: src.en")
            assert alice.get_attribute("#post-edit", "spellcheck") == "true" and alice.get_attribute("#post-edit", "lang") == "de"
            assert alice.get_attribute("#source", "lang") == "en"
            for shortcut in ("Ctrl+Enter", "Ctrl+↓", "Ctrl+I", "Ctrl+M", "Ctrl+1", "Ctrl+P"):
                assert shortcut.replace("+", "") in alice.inner_text("#shortcuts").replace("+", "").replace(" ", "").replace("\n", "")
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
            expect(alice.locator("#missing")).to_contain_text("Zellschutz")
            alice.keyboard.press("Control+m")  # the MT restored
            _submit(playwright, alice, 3)
            _submit(playwright, alice, 4)
            _submit(playwright, alice, 5)
            expect(alice.locator("#done")).to_be_visible()
            # bob, meanwhile, accepts each translation; his list shows his own progress only
            for done in range(1, 6):
                _submit(playwright, bob, done)
            expect(bob.locator("#segment-list .st.done")).to_have_count(5)
            browser.close()
    finally:
        server.kill()
    runs = tmp_path / "runs"
    alice_records, bob_records = (_records(next(runs.glob(f"*/bias@{n}"))) for n in ("alice", "bob"))
    assert alice_records[0]["reference"] == "Öffnen Sie eine Datei."
    assert alice_records[0]["human"]["matches_used"][0] | {} == {"rank": 1, "score": 78, "source": "Open a file.",
                                                                  "target": "Öffnen Sie eine Datei.", "origin": "memory",
                                                                  "index": None}
    pause, = alice_records[1]["human"]["pauses"]
    assert pause[1] - pause[0] >= 500 and alice_records[1]["human"]["paused_seconds"] >= 0.5
    assert alice_records[1]["reference"] == alice_records[1]["hypothesis"] + " gut"  # the version the model learned from
    assert [op for _, op, _ in alice_records[2]["human"]["keys"]] == ["s", "r"]
    from simpe.serve.events import read_events

    revision, = read_events(next(runs.glob("*/bias@alice")))
    assert (revision["index"], revision["version"], revision["post_edit"]) == (1, 2, "Öffnen Sie alle Dateien.")
    assert [r["reference"] for r in bob_records] == [r["hypothesis"] for r in bob_records]
    assert all(r["human"]["keystrokes"] == 0 for r in bob_records)


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
