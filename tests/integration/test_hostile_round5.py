"""Hostile input, round 5 (issue 70): XLIFF, the export, glossaries and the workbench API, each class closed where it
enters: one line and exit 2, a 4xx from the API, or the right behaviour.

One project is made once from a hostile XLIFF file (two units with the same id, a source holding a literal ⟨1⟩, an
inline tag) and post-edited through the real API (``TestClient`` on ``simpe.serve.app``, the demo model): a body
nested 100,000 deep and overlapping pauses go through it. The export cases run the real command (``simpe serve
export``) against it; each pins the fragments of its one line and that nothing was written. The export on a full
disk runs in a child process under a file-size limit (``RLIMIT_FSIZE``, ``SIGXFSZ`` ignored, so the write fails with
EFBIG) and, where this process may mount one, on a 8 KiB tmpfs (ENOSPC).
"""
from __future__ import annotations

import json
import logging
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree
from messages import one_line_error, simulate_args

from simpe.rundir import layout
from simpe.serve import project as projects

REPO = Path(__file__).resolve().parents[2]
NS = "urn:oasis:names:tc:xliff:document:1.2"
HEAD = (f'<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" xmlns="{NS}">\n'
        ' <file original="guide.html" source-language="en" target-language="de" datatype="html">\n  <body>\n')
TAIL = "  </body>\n </file>\n</xliff>\n"
# two units named u1, the first with a literal ⟨1⟩ in its text (not a tag), the second with a real inline tag
HOSTILE = HEAD + ('   <trans-unit id="u1"><source>Press ⟨1⟩ to open the file.</source></trans-unit>\n'
                  '   <trans-unit id="u1"><source>Click <g id="1">OK</g> to save the file.</source></trans-unit>\n'
                  '   <trans-unit id="u2"><source>Close the file.</source></trans-unit>\n') + TAIL
POST_EDITS = ["Drücken Sie ⟨⟨1⟩, um die Datei zu öffnen.",  # the literal, escaped as the page shows it
              "Klicken Sie auf ⟨1⟩OK⟨/1⟩, um die Datei zu speichern.", "Schließen Sie die Datei."]
# overlapping and repeated pauses: 0-2.5 s twice, 1-4 s, 4-5 s: 9.0 s summed, 5.0 s paused
PAUSES = [[0, 2500], [0, 2500], [1000, 4000], [4000, 5000]]


def _one_line(args: list[str], capsys: pytest.CaptureFixture, *fragments: str, seconds: float = 60.0) -> str:
    return one_line_error(args, capsys, *fragments, seconds=seconds)


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> SimpleNamespace:
    """The hostile project, its three segments post-edited through the API (once per module)."""
    import torch
    from starlette.testclient import TestClient

    from simpe.serve.app import create_app
    from simpe.serve.bind import allowed_names
    from simpe.serve.server import open_sessions

    root = tmp_path_factory.mktemp("round5")
    source = root / "hostile.xlf"
    source.write_text(HOSTILE, encoding="utf-8")
    project, tokens = projects.create(root / "projects", "cat", "bias", [f"runs_dir={root / 'runs'}", "device=cpu"],
                                      ["anna"], xliff=source)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    logged: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = logged.append  # type: ignore[method-assign]
    logging.getLogger("simpe.serve").addHandler(handler)
    sessions = open_sessions(project)
    try:
        client = TestClient(create_app(project, sessions, *allowed_names("127.0.0.1", 8765, False, [])),
                            base_url="http://127.0.0.1:8765")
        anna = {"Authorization": f"Bearer {tokens['anna']}", "Content-Type": "application/json"}
        deep = client.post("/api/submit", headers=anna, content=b"[" * 100_000 + b"]" * 100_000)
        deep_object = client.post("/api/submit", headers=anna, content=b'{"a":' * 60_000 + b"1" + b"}" * 60_000)
        views = [client.get("/api/segment", headers=anna).json()]
        for index, post_edit in enumerate(POST_EDITS):
            answer = client.post("/api/submit", headers=anna, json={"index": index, "post_edit": post_edit, "seconds": 3.0,
                                                                    "keys": [], "pauses": PAUSES})
            assert answer.status_code == 200, answer.text
            views.append(answer.json())
        run = sessions["anna"].path
    finally:
        for session in sessions.values():
            session.close()
        logging.getLogger("simpe.serve").removeHandler(handler)
        torch.set_num_threads(threads)
    records = [json.loads(line) for line in (run / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]
    return SimpleNamespace(root=root, projects=root / "projects", project=project, run=run, records=records,
                           views=views, deep=deep, deep_object=deep_object, logged=logged)


def _export(served: SimpleNamespace, out: Path, *flags: str) -> list[str]:
    return ["serve", "export", "cat", "anna", "--xliff", str(out), "--projects-dir", str(served.projects), *flags]


def _targets(path: Path) -> list[tuple[str, str | None, str | None]]:
    """(unit id, target as XML text, state) per trans-unit, read with lxml (not with simpe's reader)."""
    out = []
    for unit in etree.parse(str(path)).getroot().iter(f"{{{NS}}}trans-unit"):
        target = unit.find(f"{{{NS}}}target")
        inner = None if target is None else (target.text or "") + "".join(
            etree.tostring(child, encoding="unicode").replace(f' xmlns="{NS}"', "") for child in target)
        out.append((unit.get("id"), inner, None if target is None else target.get("state")))
    return out


# ---------------------------------------------------------------- the workbench API
def test_a_body_nested_100000_deep_is_a_400_and_no_traceback(served):
    for answer in (served.deep, served.deep_object):
        assert answer.status_code == 400, answer.text
        assert answer.json() == {"error": "the request body nests JSON deeper than 16 levels"}
    assert not [r for r in served.logged if r.exc_info], [r.getMessage() for r in served.logged if r.exc_info]


def test_overlapping_and_repeated_pauses_are_counted_once(served):
    for record in served.records:
        assert record["human"]["pauses"] == [[0, 5000]]
        assert record["human"]["paused_seconds"] == 5.0  # was 9.0: every span summed as sent


# ---------------------------------------------------------------- XLIFF read as written
def test_a_literal_placeholder_reaches_the_model_as_written(served):
    assert served.views[0]["source"] == "Press ⟨⟨1⟩ to open the file." and served.views[0]["tags"] == []
    first, tagged, _ = served.records
    # the model reads and learns the text the user wrote (was "Press to open the file.")
    assert first["source"] == "Press ⟨1⟩ to open the file."
    assert first["reference"] == "Drücken Sie ⟨1⟩, um die Datei zu öffnen."
    assert tagged["source"] == "Click OK to save the file." and tagged["human"]["tagged"] == POST_EDITS[1]
    assert [r["info"]["position"] for r in served.records] == [0, 1, 2] and [r["seg_id"] for r in served.records] == [
        "u1", "u1", "u2"]


def test_export_gives_each_unit_its_own_post_edit_and_the_literal_back(served, tmp_path: Path, capsys):
    out = tmp_path / "anna.xlf"
    from simpe.cli import main

    assert main(_export(served, out)) == 0
    # two units named u1 each get their own post-edit (was: both the second's); the literal ⟨1⟩ is text again
    assert _targets(out) == [("u1", "Drücken Sie ⟨1⟩, um die Datei zu öffnen.", "translated"),
                             ("u1", 'Klicken Sie auf <g id="1">OK</g>, um die Datei zu speichern.', "translated"),
                             ("u2", "Schließen Sie die Datei.", "translated")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["anna.xlf"]  # no temporary file left


# ---------------------------------------------------------------- the export's OUT
def test_an_existing_file_is_replaced_only_with_overwrite(served, tmp_path: Path, capsys):
    out = tmp_path / "mine.xlf"
    out.write_text("the user's own file\n", encoding="utf-8")
    _one_line(_export(served, out), capsys, f"--xliff {out} exists", "give --overwrite to replace it")
    assert out.read_text(encoding="utf-8") == "the user's own file\n"
    from simpe.cli import main

    assert main(_export(served, out, "--overwrite")) == 0
    assert _targets(out)[2] == ("u2", "Schließen Sie die Datei.", "translated")


@pytest.mark.parametrize("name", [projects.XLIFF_FILE, projects.PROJECT_FILE])
def test_the_projects_own_files_are_never_replaced(served, capsys, name: str):
    own = served.projects / "cat" / name
    before = own.read_bytes()
    for flags in ([], ["--overwrite"]):
        _one_line(_export(served, own, *flags), capsys, f"--xliff {own}", "project cat's own files",
                  "never replaces; write elsewhere")
    _one_line(_export(served, served.run / "export.xlf"), capsys, "project cat's own files")
    assert own.read_bytes() == before and not (served.run / "export.xlf").exists()


def test_a_symbolic_link_is_never_written_through(served, tmp_path: Path, capsys):
    target, link = tmp_path / "target.txt", tmp_path / "link.xlf"
    target.write_text("keep me\n", encoding="utf-8")
    link.symlink_to(target)
    for flags in ([], ["--overwrite"]):
        _one_line(_export(served, link, *flags), capsys, f"--xliff {link} is a symbolic link",
                  "never writes through one")
    assert target.read_text(encoding="utf-8") == "keep me\n" and link.is_symlink()


@pytest.mark.parametrize("out, fragments", [
    ("{tmp}", ("is a folder, not a file", "give the path of the XLIFF file to write")),
    ("/dev/null", ("--xliff /dev/null is a character device, not a file",)),
    ("/proc/self/export.xlf", ("--xliff /proc/self/export.xlf is in /proc, a kernel file system",)),
    ("{tmp}/no/such/folder/x.xlf", ("the folder", "does not exist; create it first")),
])
def test_out_that_is_no_file_is_one_line(served, tmp_path: Path, capsys, out: str, fragments: tuple[str, ...]):
    _one_line(_export(served, Path(out.format(tmp=tmp_path)), "--overwrite"), capsys, *fragments)
    assert not (tmp_path / "no").exists()


def _limited(size: int):
    def limit() -> None:  # in the child: a write past `size` bytes fails with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_a_full_disk_leaves_nothing_behind_file_size_limit(served, tmp_path: Path):
    old = tmp_path / "old.xlf"
    old.write_text("the previous export\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for out, flags in ((tmp_path / "new.xlf", []), (old, ["--overwrite"])):
        done = subprocess.run([sys.executable, "-m", "simpe", *_export(served, out, *flags)], capture_output=True,
                              text=True, env=env, preexec_fn=_limited(600), cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert f"simpe: error: cannot write {out}: the file-size limit (ulimit -f) is reached (EFBIG); nothing was " \
               "written" in lines[0]
    # no partial file, no temporary file; the file --overwrite would have replaced is as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.xlf"]
    assert old.read_text(encoding="utf-8") == "the previous export\n"


def test_a_full_disk_leaves_nothing_behind_tmpfs(served, tmp_path: Path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root): the file-size limit test covers a full disk")
    try:
        (disk / "old.xlf").write_text("the previous export\n", encoding="utf-8")
        (disk / "filler").write_bytes(b"x" * 4096)  # two pages of two: full
        for out, flags in ((disk / "new.xlf", []), (disk / "old.xlf", ["--overwrite"])):
            _one_line(_export(served, out, *flags), capsys, f"cannot write {out}: the disk is full (ENOSPC)",
                      "nothing was written")
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "old.xlf"]
        assert (disk / "old.xlf").read_text(encoding="utf-8") == "the previous export\n"
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_revision_or_record_that_is_no_text_is_one_line(served, tmp_path: Path, capsys):
    events = served.run / layout.EVENTS_FILE
    kept = events.read_bytes() if events.exists() else None
    try:
        with open(events, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": "revision", "index": 0, "version": 2, "post_edit": 5, "previous": "x",
                                     "human": {}}) + "\n")
        _one_line(_export(served, tmp_path / "a.xlf"), capsys, f"{events}: the revision of segment 0's post_edit is '5' "
                  "(int), not the text of a post-edit")
    finally:
        events.unlink()
        if kept is not None:
            events.write_bytes(kept)
    assert not (tmp_path / "a.xlf").exists()


# ---------------------------------------------------------------- XLIFF refused in one line
def _xliff(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    path = tmp_path / "in.xlf"
    path.write_text(head + body + TAIL, encoding="utf-8")
    return path


def _init(tmp_path: Path, path: Path) -> list[str]:
    return ["serve", "init", "p", "--translators", "anna", "--xliff", str(path), "--projects-dir", str(tmp_path / "projects")]


def _simulate_xliff(tmp_path: Path, path: Path) -> list[str]:
    return simulate_args(tmp_path, "--preset", "baseline", "--dataset", "xliff", "--set", f"data.params.path={path}")


UNITS = '   <trans-unit id="u1"><source>Open the file.</source></trans-unit>\n'


@pytest.mark.usefixtures("no_model_load")
@pytest.mark.parametrize("body, head, fragments", [
    (UNITS + '   <trans-unit id="u2"><target>Schließen.</target></trans-unit>\n', HEAD,
     ("in.xlf line 6: trans-unit 'u2' has no <source>; every unit to translate needs one",)),
    ('   <trans-unit id="u1"><source></source></trans-unit>\n   <trans-unit id="u2"><source> <x id="1"/> </source>'
     '</trans-unit>\n', HEAD, ("in.xlf holds no translatable segment: its 2 segments hold no source text",)),
    (UNITS, HEAD.replace("document:1.2", "document:2.0"),
     ("the root element is '{urn:oasis:names:tc:xliff:document:2.0}xliff'", "an XLIFF 1.2 file's is <xliff> in the "
      "namespace urn:oasis:names:tc:xliff:document:1.2")),
    ('   <trans-unit id="u1" xmlns="urn:oasis:names:tc:xliff:document:2.0"><source>Open.</source></trans-unit>\n' + UNITS,
     HEAD, ("in.xlf line 5: <trans-unit> is in the XLIFF namespace urn:oasis:names:tc:xliff:document:2.0", "one file, "
            "one namespace")),
    ('   <trans-unit id="u1"><source>' + '<g id="1">' * 300 + "deep" + "</g>" * 300 + "</source></trans-unit>\n", HEAD,
     ("in.xlf nests elements deeper than 256 levels (the XML reader's limit)",)),
])
def test_xliff_that_breaks_the_rules_is_one_line_in_serve_init_and_simulate(tmp_path: Path, capsys, body: str, head: str,
                                                                            fragments: tuple[str, ...]):
    path = _xliff(tmp_path, body, head)
    _one_line(_init(tmp_path, path), capsys, *fragments)
    if "no translatable" not in fragments[0]:
        _one_line(_simulate_xliff(tmp_path, path), capsys, *fragments)
    assert not (tmp_path / "projects").exists() and not (tmp_path / "runs").exists()


@pytest.mark.usefixtures("no_model_load")
def test_a_200_mb_xliff_file_is_refused_before_it_is_read(tmp_path: Path, capsys):
    path = _xliff(tmp_path, UNITS)
    os.truncate(path, 200 * 1000**2)  # sparse: 200 MB as the file system says, nothing written
    for args in (_init(tmp_path, path), _simulate_xliff(tmp_path, path)):
        _one_line(args, capsys, f"XLIFF file '{path}' is 200,000,000 bytes; simpe reads files of at most 67,108,864",
                  seconds=10)


# ---------------------------------------------------------------- glossaries
@pytest.mark.usefixtures("no_model_load")
def test_a_glossary_of_a_million_lines_is_refused_at_once(tmp_path: Path, capsys):
    glossary = tmp_path / "big.tsv"
    with open(glossary, "w", encoding="utf-8") as handle:
        handle.write("#langs en de\n")
        handle.writelines(f"term{i}\tZiel{i}\n" for i in range(1_000_000))
    # was: a traceback after minutes at 2 GB; the line of the first entry past the limit, before any term is tokenised
    _one_line(simulate_args(tmp_path, "--preset", "baseline", "--glossary", str(glossary), "--set",
                            "decoder.name=constrained_beam"), capsys,
              f"glossary '{glossary}' line 100002: more than 100,000 entries; simpe takes glossaries of at most 100,000",
              seconds=30)
    os.truncate(glossary, 100 * 1000**2)
    _one_line(simulate_args(tmp_path, "--preset", "baseline", "--glossary", str(glossary)), capsys,
              f"glossary '{glossary}' is 100,000,000 bytes; simpe takes glossaries of at most 67,108,864 bytes", seconds=10)
