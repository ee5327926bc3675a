"""simpe serve on the demo model: per-translator records beside simulated runs, isolation, kill-and-restart, a browser.

* In one process (the app through Starlette's test client): two translators of one project adapt apart; a person's
  run folder is a run (``load_group`` reads it beside a simulated run of the same segments, ``compare_runs`` tables
  it), with ``human`` in every record and the summary.
* Kill and restart: the server is a real subprocess, killed with SIGKILL after answered submissions, during an
  update and between a record and its checkpoint (``serve_stall.py``); every submitted segment is recorded once, and the records
  and the final store equal those of a session that was never interrupted.
* Chromium (playwright driving the system's browser, no download): open a translator's link, edit, submit, see the
  next segment, and the record on disk; hostile text in a segment stays text. Skips without Chromium.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import torch
from sacrebleu.metrics import BLEU, TER

from simpe.rundir import layout
from simpe.serve import project as projects

REPO = Path(__file__).resolve().parents[2]
STALL = Path(__file__).with_name("serve_stall.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timings (they differ run to run)."""
    out = {k: v for k, v in record.items() if k != "seconds"}
    out["update"] = {k: v for k, v in record["update"].items() if not k.startswith("seconds")}
    return out


# ---------------------------------------------------------------- in one process
def test_translators_adapt_apart_and_their_runs_sit_beside_simulated_runs(tmp_path: Path, one_torch_thread):
    from starlette.testclient import TestClient

    from simpe.config.files import load_config
    from simpe.errors import RunDirError
    from simpe.loop.run import Loop
    from simpe.metrics import metric_for
    from simpe.report.compare import compare_runs
    from simpe.rundir.reader import load_group
    from simpe.serve.app import create_app
    from simpe.serve.bind import allowed_names
    from simpe.serve.server import open_sessions
    from simpe.serve.session import TranslatorSession

    runs = tmp_path / "runs"
    settings = ["data.segments=3", f"runs_dir={runs}", "device=cpu"]
    project, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice", "bob"])
    sessions = open_sessions(project)
    try:
        client = TestClient(create_app(project, sessions, *allowed_names("127.0.0.1", 8765, False, [])),
                            base_url="http://127.0.0.1:8765")
        alice, bob = ({"Authorization": f"Bearer {tokens[n]}"} for n in ("alice", "bob"))
        assert client.get("/api/segment").status_code == 401
        assert client.get("/api/segment", headers={"Authorization": "Bearer nope"}).status_code == 401
        first = client.get("/api/segment", headers=alice).json()
        assert first["index"] == 0 and client.get("/api/segment", headers=bob).json()["hypothesis"] == first["hypothesis"]
        # simpe serve token on the running server: the old token is refused at once, the new one works
        new = projects.reissue(tmp_path / "projects", "study", ["alice"])
        assert client.get("/api/segment", headers=alice).status_code == 401
        alice = {"Authorization": f"Bearer {new['alice']}"}
        assert client.get("/api/segment", headers=alice).json()["index"] == 0
        # alice teaches the model an odd word; bob, who only accepts, never sees her adaptation
        for index in range(3):
            view = client.get("/api/segment", headers=alice).json()
            answer = client.post("/api/submit", headers=alice, json={"index": index, "post_edit": view["hypothesis"] + " Quallenfisch",
                                                                     "seconds": 2.0, "keys": [[5, "n", 0], [9, "i", " "]]})
            assert answer.status_code == 200, answer.text
        assert answer.json()["done"] is True
        # a retried submission of a recorded segment changes nothing
        again = client.post("/api/submit", headers=bob, json={"index": 0, "post_edit": first["hypothesis"]})
        assert again.status_code == 200 and again.json()["index"] == 1
        assert client.post("/api/submit", headers=bob, json={"index": 0, "post_edit": "x"}).json()["index"] == 1
        bad = client.post("/api/submit", headers=bob, json={"index": 2, "post_edit": "x"})
        assert bad.status_code == 400 and "not the one on screen" in bad.json()["error"]
        assert client.post("/api/submit", headers=bob, content=b"{}", ).status_code == 400  # not declared JSON
        bob_view = client.get("/api/segment", headers=bob).json()
        assert bob_view["before"] == [{"source": first["source"], "post_edit": first["hypothesis"]}]
        # a disk that fills while bob's segment 1 is recorded: 503, and bob's session stops (his model is ahead of the
        # disk) until a restart resumes it from the disk, his journalled submission included
        rundir, append = sessions["bob"].rundir, sessions["bob"].rundir.append_segment

        def full(record):
            raise RunDirError("cannot write segments.jsonl: the disk is full (ENOSPC)")

        rundir.append_segment = full
        assert client.post("/api/submit", headers=bob, json={"index": 1, "post_edit": "Mehr."}).status_code == 503
        rundir.append_segment = append
        assert client.get("/api/segment", headers=bob).status_code == 503
        assert client.get("/api/segment", headers=alice).json()["done"] is True  # alice is not affected
    finally:
        for session in sessions.values():
            session.close()
    bob_again = TranslatorSession(project.run_config("bob"), "bob")
    bob_again.open()  # the running sums against the stream's references are replayed from the records, as the loop's
    assert bob_again.view()["index"] == 2 and bob_again.records[1]["reference"] == "Mehr."
    bob_again.submit(2, "Ende.", {"seconds": 1.0, "keys": []})
    bob_again.close()
    # bob's translation of segment 1 is the base model's (bias adapted only on alice's side)
    baseline = Loop(load_config("baseline", settings), progress=False)
    baseline.run()
    base_records = _records(baseline.path)
    assert bob_view["hypothesis"] == base_records[1]["hypothesis"]
    alice_records = _records(sessions["alice"].path)
    assert [r["reference"] for r in alice_records] == [r["hypothesis"] + " Quallenfisch" for r in alice_records]
    assert alice_records[0]["human"] == {"translator": "alice", "seconds": 2.0, "keys": [[5, "n", 0], [9, "i", " "]],
                                         "keystrokes": 2, "mouse": 0, "pastes": 0, "edits": 1, "version": 1,
                                         "keys_by": {"typing": 1, "moving": 1}, "matches": 0,
                                         # no start sent, no replacement in the key log: the MT
                                         "start": {"origin": "mt", "text": alice_records[0]["hypothesis"]},
                                         "qa": [{"kind": "punctuation", "text": "ends with no punctuation, the source with ."}]}
    summary = json.loads((sessions["alice"].path / layout.SUMMARY_FILE).read_text())
    assert summary["human"]["keystrokes"] == 6 and summary["human"]["hter"] == summary["corpus"]["ter"]
    # each record is scored twice: against the person's post-edit (HTER) and against the stream's reference, with the
    # statistics sacreBLEU gives the shown translation against the stream's reference (as the baseline's records)
    from simpe.report.people import STREAM as READ
    from simpe.serve.session import STREAM as WRITTEN

    assert WRITTEN == READ == "stream"  # the writer's key is the reader's
    bleu, ter = metric_for("bleu"), metric_for("ter")
    stream_refs = [r["reference"] for r in base_records]
    for people in (alice_records, _records(sessions["bob"].path)):
        hyps = [r["hypothesis"] for r in people]
        assert [r["stream"]["reference"] for r in people] == stream_refs
        for record, reference in zip(people, stream_refs):
            assert record["stream"]["stats"]["bleu"] == pytest.approx(bleu.segment_stats(record["hypothesis"], reference))
            assert record["stream"]["stats"]["ter"] == pytest.approx(ter.segment_stats(record["hypothesis"], reference))
            assert record["stats"]["ter"] == pytest.approx(ter.segment_stats(record["hypothesis"], record["reference"]))
        # bob's segment 2 was scored after a restart: its running figures cover all three segments
        assert people[-1]["stream"]["cumulative"]["bleu"] == pytest.approx(BLEU().corpus_score(hyps, [stream_refs]).score)
        assert people[-1]["cumulative"]["ter"] == pytest.approx(TER().corpus_score(hyps, [[r["reference"] for r in people]]).score)
    assert summary["stream"]["corpus"]["ter"] == pytest.approx(TER().corpus_score([r["hypothesis"] for r in alice_records],
                                                                                 [stream_refs]).score)
    assert (sessions["alice"].path / layout.STORE_FILE).is_file() and not (sessions["alice"].path / layout.STATE_DIR).exists()
    # the person's run sits in the simulated runs' group: load_group and compare read it as a run
    assert sessions["alice"].path.parent == baseline.path.parent
    group = load_group([baseline.path, sessions["alice"].path])
    comparison = compare_runs(group, num_resamples=20)
    assert [run.name for run in group.runs] == ["baseline", "bias@alice"]
    row = comparison.rows[1]  # against the stream's references, beside the baseline; HTER and effort apart
    assert row.values["ter"] == pytest.approx(summary["stream"]["corpus"]["ter"]) and row.values["ter"] != summary["corpus"]["ter"]
    effort, = comparison.people
    assert (effort.translators, effort.segments, effort.keystrokes, effort.seconds) == (["alice"], 3, 6, 6.0)
    assert effort.hter == pytest.approx(summary["human"]["hter"])


# ---------------------------------------------------------------- kill and restart
class Server:
    """``simpe serve run`` in a subprocess (through serve_stall.py), killed with SIGKILL."""

    def __init__(self, root: Path, token: str, stall: str = "", port: int | None = None, args: tuple[str, ...] = ()) -> None:
        self.port, self.token, self.marker = port or _free_port(), token, root / f"stalled-{stall.replace(':', '-')}"
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "SIMPE_TEST_STALL": stall,
               "SIMPE_TEST_MARKER": str(self.marker)}
        self.log = open(root / "server.log", "a")
        self.process = subprocess.Popen([sys.executable, str(STALL), "serve", "run", "study", "--projects-dir",
                                         str(root / "projects"), "--port", str(self.port), *args],
                                        cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.view = self.get()
                break
            except (urllib.error.URLError, ConnectionError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.log.flush()
                    raise AssertionError("the server did not start:\n" + (root / "server.log").read_text()[-3000:]) from None
                time.sleep(0.2)

    def request(self, path: str, body: Any = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def get(self) -> dict[str, Any]:
        return self.request("/api/segment")

    def submit(self, index: int, post_edit: str) -> dict[str, Any]:
        return self.request("/api/submit", {"index": index, "post_edit": post_edit, "seconds": 1.5, "keys": [[3, "i", "x"]]})

    def submit_and_kill_at_stall(self, index: int, post_edit: str) -> None:
        """Submit, wait until the server stalls where it was told to, kill it (the answer never comes)."""
        thread = threading.Thread(target=lambda: self._ignore(lambda: self.submit(index, post_edit)), daemon=True)
        thread.start()
        deadline = time.monotonic() + 120
        while not self.marker.exists():
            assert time.monotonic() < deadline and self.process.poll() is None, "the server never reached its stall"
            time.sleep(0.05)
        self.kill()
        thread.join(timeout=30)

    @staticmethod
    def _ignore(call) -> None:
        try:
            call()
        except (urllib.error.URLError, ConnectionError, OSError):
            pass  # the connection dies with the server

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.log.close()


def test_two_projects_never_share_a_translators_run_folder(tmp_path: Path, one_torch_thread):
    """Two projects with the same stream, preset and translator name map to one run folder (the run's name is
    ``<preset>@<translator>``): the second is refused in one line before it reads or loads anything, and the first's
    work is untouched and resumes."""
    from simpe.errors import RunDirError
    from simpe.rundir.state import RunState, state
    from simpe.serve.server import open_sessions
    from simpe.serve.session import OWNERS_FILE

    settings = ["data.segments=3", f"runs_dir={tmp_path / 'runs'}", "device=cpu"]
    first, _ = projects.create(tmp_path / "projects", "pilot", "bias", settings, ["anna"])
    second, _ = projects.create(tmp_path / "projects", "main", "bias", settings, ["anna"])
    sessions = open_sessions(first)
    run = sessions["anna"].path
    sessions["anna"].close()
    owners = json.loads((run.parent / OWNERS_FILE).read_text())
    assert owners == {"bias@anna": str((tmp_path / "projects" / "pilot").resolve())}
    assert state(run) is RunState.INCOMPLETE and not (run / layout.EVENTS_FILE).exists()  # the run format unchanged
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    with pytest.raises(RunDirError, match=rf"anna's run folder {run} holds the work of another project \(.*pilot\): "
                                          r"name this translator otherwise"):
        open_sessions(second)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    sessions = open_sessions(first)  # the first project goes on
    sessions["anna"].close()


# Slow (three server processes and two model loads: 25-40 s on 2 busy cores); in make test, the journal and the
# resume from it are covered in one process by the disk-full part of
# test_translators_adapt_apart_and_their_runs_sit_beside_simulated_runs. CI runs both.
@pytest.mark.slow
def test_killing_the_server_loses_and_repeats_nothing(tmp_path: Path, one_torch_thread):
    from simpe.serve.session import TranslatorSession
    from simpe.store.user import read_store

    settings = ["data.segments=5", f"runs_dir={tmp_path / 'runs'}", "device=cpu"]
    project, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice"])
    post_edits = {}

    def post_edit(view: dict[str, Any]) -> str:
        post_edits[view["index"]] = f"{view['hypothesis']} Quallenfisch {view['index']}"
        return post_edits[view["index"]]

    # Three starts. The first answers segment 0, then is killed during segment 1's update (the weights have moved,
    # nothing of segment 1 is on disk but its pending submission); the second learns segment 1 as it starts, answers
    # segment 2, and is killed between segment 3's record and its checkpoint; the third finishes. Each kill also
    # comes after answered submissions, which must survive it.
    server = Server(tmp_path, tokens["alice"], "update:2")
    assert server.view["index"] == 0
    assert server.submit(0, post_edit(server.view))["index"] == 1
    server.submit_and_kill_at_stall(1, post_edit(server.get()))

    server = Server(tmp_path, tokens["alice"], "checkpoint:3")  # checkpoint 1: segment 1, learnt at the start
    assert server.view["index"] == 2, "segment 1, submitted before the kill, is recorded at the restart"
    assert server.submit(2, post_edit(server.view))["index"] == 3
    server.submit_and_kill_at_stall(3, post_edit(server.get()))  # segment 3's record written, its checkpoint not

    server = Server(tmp_path, tokens["alice"])
    view = server.view
    assert view["index"] == 4
    # simpe serve token while the server process runs: the old token is refused at the next request, the new one works
    new = projects.reissue(tmp_path / "projects", "study", ["alice"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.get()
    assert refused.value.code == 401
    server.token = new["alice"]
    assert server.get()["index"] == 4
    while not view["done"]:
        view = server.submit(view["index"], post_edit(view))
    server.kill()

    path, = (tmp_path / "runs").glob("libreoffice-stream--demo-en-de--5seg--*/bias@alice")
    records = _records(path)
    assert [r["index"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["reference"] for r in records] == [post_edits[i] for i in range(5)]
    assert (path / layout.DONE_FILE).exists()

    # the same post-edits in one uninterrupted session: the same records, the same adapted model
    cfg = projects.Project("study", "bias", [*settings[:1], f"runs_dir={tmp_path / 'again'}", "device=cpu"]).run_config("alice")
    session = TranslatorSession(cfg, "alice")
    session.open()
    for index in range(5):
        assert session.view()["hypothesis"] == records[index]["hypothesis"]
        session.submit(index, post_edits[index], {"seconds": 1.5, "keys": [[3, "i", "x"]]})
    session.close()
    again = _records(session.path)
    for got, want in zip(records, again):
        _close(_comparable(got), _comparable(want))
    killed, whole = read_store(path / layout.STORE_FILE), read_store(session.path / layout.STORE_FILE)
    assert killed[0].keys() == whole[0].keys()
    for name, tensor in killed[0].items():
        torch.testing.assert_close(tensor, whole[0][name], rtol=1e-5, atol=1e-6)


def _close(got: Any, want: Any) -> bool:
    """Equal texts and decisions, numbers within a float tolerance (asserts, naming the first difference)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (got, want)
        return all(_close(got[k], want[k]) for k in want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (got, want)
        return all(_close(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-4, abs=1e-6), (got, want)
        return True
    assert got == want, (got, want)
    return True


# ---------------------------------------------------------------- a real browser
def _chromium() -> str | None:
    return next((b for b in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if b), None)


MARK = "data-pwned"
HOSTILE = f'<img src=x onerror="document.documentElement.setAttribute(\'{MARK}\',\'1\')">Click <b>OK</b>.'


@pytest.mark.skipif(_chromium() is None, reason="no Chromium (apt-get install -y chromium; .ci/run installs it)")
def test_a_translator_post_edits_in_chromium(tmp_path: Path, one_torch_thread):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    (tmp_path / "src.en").write_text(f"{HOSTILE}\nClick Cancel.\nOpen the file.\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("Klicken Sie auf OK.\nKlicken Sie auf Abbrechen.\nÖffnen Sie die Datei.\n", encoding="utf-8")
    settings = [f"runs_dir={tmp_path / 'runs'}", "device=cpu", "data.name=text", f"data.params.source={tmp_path / 'src.en'}",
                f"data.params.reference={tmp_path / 'ref.de'}"]
    _, tokens = projects.create(tmp_path / "projects", "study", "bias", settings, ["alice"])
    server = Server(tmp_path, tokens["alice"])
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.port}/#token={tokens['alice']}")
            page.wait_for_selector("#source:not(:empty)")
            assert page.inner_text("#source") == HOSTILE  # shown as text, never as markup
            # the panels show a text exactly as the editor has it (double spaces kept: white-space pre-wrap)
            assert page.eval_on_selector("#hypothesis", "e => getComputedStyle(e).whiteSpace") == "pre-wrap"
            assert page.get_attribute("html", MARK) is None and page.locator("#source img").count() == 0
            assert "token" not in page.url  # the fragment left the address bar
            hypothesis = page.inner_text("#hypothesis")
            assert page.input_value("#post-edit") == hypothesis
            editor = page.locator("#post-edit")
            editor.click()
            page.keyboard.press("Control+A")
            page.keyboard.press("Backspace")
            page.keyboard.type("Klicken  Sie auf OK.")  # two spaces, kept in the record and on the page
            page.click("#submit")  # QA warnings (the doubled space, the source's 1): a second click submits anyway
            playwright.expect(page.locator("#status")).to_contain_text("QA: 2 warnings")
            assert page.inner_text("#qa").splitlines() == ["numbers of the source missing: 1", "a doubled space"]
            page.click("#submit")
            # (the page's Content-Security-Policy forbids evaluating strings: wait through selectors, not scripts)
            playwright.expect(page.locator("#progress")).to_have_text("1 of 3 done")
            assert page.inner_text("#source") == "Click Cancel."
            assert page.inner_text("#before").startswith(HOSTILE) and "Klicken  Sie auf OK." in page.inner_text("#before")
            page.keyboard.type(" gut")
            page.keyboard.press("Control+Enter")  # no end punctuation: a QA warning, overridden
            playwright.expect(page.locator("#status")).to_contain_text("QA:")
            page.keyboard.press("Control+Enter")
            playwright.expect(page.locator("#progress")).to_have_text("2 of 3 done")
            browser.close()
    finally:
        server.kill()
    records = _records(next((tmp_path / "runs").glob("*/bias@alice")))
    assert [r["reference"] for r in records] == ["Klicken  Sie auf OK.", records[1]["hypothesis"] + " gut"]
    first = records[0]["human"]
    # typed, Ctrl+A (a selection), one deletion, a click; the QA warning it was submitted with
    assert first["keystrokes"] == len("Klicken  Sie auf OK.") + 2 and first["mouse"] == 1
    assert first["seconds"] > 0 and [op for _, op, _ in first["keys"]][:3] == ["m", "v", "d"]
    assert first["qa"] == [{"kind": "numbers", "text": "numbers of the source missing: 1"},
                           {"kind": "spaces", "text": "a doubled space"}]


# ---------------------------------------------------------------- the interactive protocol
def test_interactive_projects_complete_the_typed_prefix_and_log_the_persons_ksmr(tmp_path: Path, one_torch_thread):
    from starlette.testclient import TestClient

    from simpe.serve.app import create_app
    from simpe.serve.bind import allowed_names
    from simpe.serve.server import open_sessions

    settings = ["data.segments=2", f"runs_dir={tmp_path / 'runs'}", "device=cpu", "protocol.name=interactive",
                "decoder.params.beam_size=2"]
    project, tokens = projects.create(tmp_path / "projects", "imt", "bias", settings, ["alice"])
    sessions = open_sessions(project)
    try:
        client = TestClient(create_app(project, sessions, *allowed_names("127.0.0.1", 8765, False, [])),
                            base_url="http://127.0.0.1:8765")
        alice = {"Authorization": f"Bearer {tokens['alice']}"}
        view = client.get("/api/segment", headers=alice).json()
        assert view["protocol"] == "interactive"
        offered = client.post("/api/complete", headers=alice, json={"index": 0, "prefix": "Wie "}).json()
        assert offered["completion"].startswith("Wie ") and len(offered["completion"]) > len("Wie ")
        keys = [[10, "i", "W"], [20, "i", "i"], [30, "i", "e"], [40, "i", " "], [50, "c", 20], [60, "m", 0], [70, "d", 1]]
        answer = client.post("/api/submit", headers=alice, json={"index": 0, "post_edit": offered["completion"], "keys": keys})
        assert answer.status_code == 200 and answer.json()["index"] == 1
        wrong = client.post("/api/complete", headers=alice, json={"index": 0, "prefix": "x"})
        assert wrong.status_code == 400
    finally:
        for session in sessions.values():
            session.close()
    record = _records(sessions["alice"].path)[0]
    assert record["effort"]["char"]["keystrokes"] == 6 and record["effort"]["char"]["mouse"] == 1
    assert record["effort"]["char"]["completions"] == 1 and "word" not in record["effort"]
    assert record["stats"]["ksmr"] == [7, len(offered["completion"])]
