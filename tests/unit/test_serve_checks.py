"""simpe serve without a model: the key log and submission checks, the bind rules, projects and tokens, the guards.

The sessions, the records and the kill-and-restart tests are in tests/integration/test_serve.py."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from messages import one_line_error
from starlette.testclient import TestClient

from simpe.cli import main
from simpe.errors import ConfigError, DataError
from simpe.serve import project as projects
from simpe.serve.app import MAX_BODY, Guard, check_depth
from simpe.serve.bind import allowed_names, check_bind, link, listen
from simpe.serve.keylog import check_keys, check_pauses, check_submission, check_text, counts


def test_counts_of_a_key_log():
    # typed "ab", a backspace, a click elsewhere, an arrow, a paste, typed "c": two runs of changes (edits)
    keys = [[10, "i", "a"], [20, "i", "b"], [30, "d", 1], [40, "m", 0], [50, "n", 0], [60, "p", 5], [70, "i", "c"]]
    assert counts(check_keys(keys)) == {"keystrokes": 6, "mouse": 1, "pastes": 1, "edits": 2,
                                        "keys_by": {"typing": 3, "deleting": 1, "moving": 1, "pasting": 1}}


@pytest.mark.parametrize("keys, message", [
    ("abc", "keys must be a list"),
    ([[1, "i"]], r"\[ms, op, arg\]"),
    ([[-1, "i", "a"]], "whole milliseconds"),
    ([[1, "z", 0]], "unknown key event 'z'"),
    ([[1, "d", "x"]], "takes a count"),
    ([[1, "i", 3]], "the text typed"),
    ([[True, "i", "a"]], "whole milliseconds"),
])
def test_bad_key_logs_are_refused(keys, message):
    with pytest.raises(DataError, match=message):
        check_keys(keys)


def test_submissions_are_checked():
    index, text, human = check_submission({"index": 2, "post_edit": "  Hallo Welt ", "seconds": 3.5, "keys": [[1, "i", "x"]]})
    assert (index, text, human) == (2, "Hallo Welt", {"seconds": 3.5, "keys": [[1, "i", "x"]]})
    for bad, message in [({"index": 0, "post_edit": "a\nb"}, "one line"), ({"index": 0, "post_edit": "  "}, "empty"),
                         ({"index": -1, "post_edit": "a"}, "index"), ({"index": 0, "post_edit": "a", "x": 1}, "unknown field"),
                         ({"index": 0, "post_edit": "a" * 5000}, "longer than"), ({"index": 0, "post_edit": 3}, "a string"),
                         ({"index": 0, "post_edit": "a", "seconds": float("nan")}, "seconds"), ([], "JSON object")]:
        with pytest.raises(DataError, match=message):
            check_submission(bad)
    assert check_text("Wählen ", "prefix", allow_empty=True) == "Wählen "  # a typed prefix keeps its space


@pytest.mark.parametrize("pauses, merged, seconds", [
    ([[0, 5000], [0, 5000]], [[0, 5000]], 5.0),  # the same pause sent twice
    ([[1000, 4000], [0, 2500], [4000, 5000], [0, 2500]], [[0, 5000]], 5.0),  # overlapping and touching: 9.0 s summed
    ([[6000, 7000], [0, 1000], [500, 800]], [[0, 1000], [6000, 7000]], 2.0),  # one inside another, out of order
    ([[10, 10]], [[10, 10]], 0.0),
])
def test_pauses_are_merged_so_none_is_counted_twice(pauses, merged, seconds):
    assert check_pauses(pauses) == merged
    human = check_submission({"index": 0, "post_edit": "a", "pauses": pauses})[2]
    assert (human["pauses"], human["paused_seconds"]) == (merged, seconds)


def test_a_body_nested_deeper_than_16_is_refused_before_it_is_parsed():
    check_depth(b'{"keys": [[1, "i", "[[[[[[[[[[[[[[[[[[[[{{{{"]], "post_edit": "\\\"[[[[[[[[[[[[[[[[[["}')  # in strings
    check_depth(b"[" * 16 + b"]" * 16)
    for body in (b"[" * 17 + b"]" * 17, b"[" * 100_000, b'{"a":' * 20 + b"1" + b"}" * 20):
        with pytest.raises(DataError, match="nests JSON deeper than 16 levels"):
            check_depth(body)


def test_a_wider_bind_needs_tls(tmp_path: Path):
    check_bind("127.0.0.1", None, None)
    check_bind("::1", None, None)
    with pytest.raises(ConfigError, match="--host 0.0.0.0 would serve beyond this machine; give --tls-cert"):
        check_bind("0.0.0.0", None, None)
    with pytest.raises(ConfigError, match="go together"):
        check_bind("0.0.0.0", tmp_path / "cert.pem", None)
    (tmp_path / "cert.pem").write_text("x")
    (tmp_path / "key.pem").write_text("x")
    check_bind("0.0.0.0", tmp_path / "cert.pem", tmp_path / "key.pem")
    hosts, origins = allowed_names("127.0.0.1", 8765, False, [])
    assert hosts == {"127.0.0.1:8765", "localhost:8765"} and "http://localhost:8765" in origins
    hosts, origins = allowed_names("10.0.0.5", 443, True, ["mt.example.org"])
    assert {"mt.example.org", "mt.example.org:443", "10.0.0.5"} <= hosts and "https://mt.example.org" in origins
    assert link("::1", 80, False, "t") == "http://[::1]:80/#token=t"


def test_tokens_are_stored_hashed_and_reissued(tmp_path: Path):
    project, tokens = projects.create(tmp_path, "study", "bias", ["data.segments=3"], ["alice", "bob"])
    stored = (tmp_path / "study" / projects.PROJECT_FILE).read_text()
    assert tokens["alice"] not in stored and projects.token_hash(tokens["alice"]) in stored
    loaded = projects.load(tmp_path / "study")
    assert loaded.translator_of(tokens["bob"]) == "bob" and loaded.translator_of("guess") is None
    assert loaded.run_config("alice").adapter == "bias@alice"
    assert loaded.run_config("alice").snapshots.every == 0 and loaded.run_config("alice").checkpoint_every == 1
    new = projects.reissue(tmp_path, "study", ["alice"])
    loaded = projects.load(tmp_path / "study")
    assert loaded.translator_of(tokens["alice"]) is None and loaded.translator_of(new["alice"]) == "alice"
    with pytest.raises(ConfigError, match="exists"):
        projects.create(tmp_path, "study", "bias", [], ["carol"])
    with pytest.raises(ConfigError, match="translator name 'Bob!' is not valid"):
        projects.create(tmp_path, "other", "bias", [], ["Bob!"])
    with pytest.raises(ConfigError, match="no preset 'nope'"):
        projects.create(tmp_path, "other", "nope", [], ["bob"])
    assert not (tmp_path / "other").exists()


def test_a_loaded_project_reads_replaced_tokens_at_once(tmp_path: Path):
    """The server holds the project it loaded; simpe serve token (another process) replaces project.json: the next
    lookup refuses the old token and takes the new one. A file that no longer reads refuses everyone."""
    _, tokens = projects.create(tmp_path, "study", "bias", ["data.segments=3"], ["alice", "bob"])
    held = projects.load(tmp_path / "study")
    assert held.translator_of(tokens["alice"]) == "alice"
    new = projects.reissue(tmp_path, "study", ["alice", "carol"])
    assert held.translator_of(tokens["alice"]) is None and held.translator_of(new["alice"]) == "alice"
    assert held.translator_of(tokens["bob"]) == "bob" and held.translator_of(new["carol"]) == "carol"
    path = tmp_path / "study" / projects.PROJECT_FILE
    good = path.read_text()
    path.write_text("{not json")
    assert held.translator_of(tokens["bob"]) is None
    path.write_text(good)
    assert held.translator_of(tokens["bob"]) == "bob"


def test_links_show_the_address_the_project_is_served_on(tmp_path: Path, capsys: pytest.CaptureFixture):
    projects_dir = str(tmp_path / "projects")
    assert main(["serve", "init", "study", "--preset", "bias", "--segments", "3", "--translators", "anna", "--port", "9123",
                 "--projects-dir", projects_dir]) == 0
    out = capsys.readouterr().out
    assert "  anna: http://127.0.0.1:9123/#token=" in out and "it listens on http://127.0.0.1:9123/" in out
    assert json.loads((tmp_path / "projects" / "study" / projects.PROJECT_FILE).read_text())["port"] == 9123
    assert main(["serve", "token", "study", "anna", "--projects-dir", projects_dir]) == 0
    out = capsys.readouterr().out
    assert "  anna: http://127.0.0.1:9123/#token=" in out and "a running server takes the new tokens at once" in out
    old = {"format": projects.FORMAT, "name": "old", "preset": "bias", "overrides": [], "translators": {}}
    (tmp_path / "projects" / "old").mkdir()
    (tmp_path / "projects" / "old" / projects.PROJECT_FILE).write_text(json.dumps(old))  # before host and port
    assert projects.load(tmp_path / "projects" / "old").address == "http://127.0.0.1:8765/"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A real certificate and its key (openssl), or a skip."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=simpe-test", "-days", "1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


def test_startup_errors_are_one_line_before_the_models_load(tmp_path: Path, capsys: pytest.CaptureFixture):
    """A port in use (a real socket listens on it), the project's own port in use, a port out of range, a certificate
    that does not load, an address that is not this machine's: one line, exit 2, and no run folder (the models,
    which load before a run folder is written, never loaded)."""
    runs = tmp_path / "runs"
    projects.create(tmp_path / "projects", "study", "bias", ["data.segments=3", f"runs_dir={runs}"], ["anna"])
    serve = ["serve", "run", "study", "--projects-dir", str(tmp_path / "projects")]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_line_error([*serve, "--port", str(port)], capsys, f"port {port} is in use on 127.0.0.1", "--port", seconds=30)
        projects.create(tmp_path / "projects", "busy", "bias", [f"runs_dir={runs}"], ["anna"], port=port)
        one_line_error([*serve[:2], "busy", *serve[3:]], capsys, f"port {port} is in use", seconds=30)
        with pytest.raises(ConfigError, match=f"port {port} is in use"):
            listen("127.0.0.1", port)
    one_line_error([*serve, "--port", "70000"], capsys, "--port must be from 1 to 65535, got 70000", seconds=30)
    (tmp_path / "bad.pem").write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    one_line_error([*serve, "--host", "0.0.0.0", "--tls-cert", str(tmp_path / "bad.pem"), "--tls-key", str(tmp_path / "bad.pem")],
                   capsys, f"--tls-cert {tmp_path / 'bad.pem'}", "do not load as a PEM certificate", seconds=30)
    cert, key = _self_signed(tmp_path)
    one_line_error([*serve, "--host", "203.0.113.7", "--tls-cert", str(cert), "--tls-key", str(key)], capsys,
                   "203.0.113.7", "is not an address of this machine", seconds=30)  # TEST-NET-3: never a local address
    assert not runs.exists()


def test_interactive_projects_log_the_persons_effort_at_character_level(tmp_path: Path):
    project, _ = projects.create(tmp_path, "imt", "bias", ["protocol.name=interactive"], ["alice"])
    cfg = project.run_config("alice")
    assert (cfg.protocol.name, cfg.protocol.level) == ("interactive", "char")


@pytest.fixture
def guarded():
    async def app(scope, receive, send):  # echoes the body's length
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"bytes": len(body)}).encode()})

    hosts, origins = allowed_names("127.0.0.1", 8765, False, [])
    return TestClient(Guard(app, hosts, origins), base_url="http://127.0.0.1:8765")


def test_the_guard_refuses_other_hosts_other_sites_and_big_bodies(guarded):
    ok = guarded.post("/api/submit", content=b"{}", headers={"Origin": "http://127.0.0.1:8765", "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 200 and ok.json() == {"bytes": 2}
    for header in ("content-security-policy", "x-content-type-options", "referrer-policy", "cache-control"):
        assert header in ok.headers
    assert "script-src 'self'" in ok.headers["content-security-policy"]
    assert guarded.get("/", headers={"Host": "attacker.example:8765"}).status_code == 421  # DNS rebinding
    assert guarded.post("/api/submit", content=b"{}", headers={"Origin": "http://attacker.example"}).status_code == 403
    assert guarded.post("/api/submit", content=b"{}", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert guarded.post("/api/submit", content=b"x" * (MAX_BODY + 1)).status_code == 413
    assert guarded.request("PUT", "/api/submit", content=b"{}").status_code == 405
    refused = guarded.post("/api/submit", content=b"{}", headers={"Origin": "null"})
    assert refused.status_code == 403 and "content-security-policy" in refused.headers
