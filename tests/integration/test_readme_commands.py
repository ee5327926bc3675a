"""Every `simpe` command of the README runs, as written, in a test.

"Your own data": on a three-unit TMX and three-line text files of the test's own, each command
ends as complete runs, and `simpe compare` and `simpe track` find the group the README names (so a group name
that does not match what `simulate` writes fails here). One change: `--workers 2` becomes
`--workers 1` (the same runs one after another; the Ray executor has its own tests in test_sweep.py).
"Your own model": no hub is reachable here, so each command must end, with the hub cut off
(HF_HUB_OFFLINE=1), as one line and exit 2 naming how to get the model; after `--truecaser none`
nothing else in the command may be at fault.
`make simulate` and `make test` are the CI's own commands (test_docs.py checks every make target named exists).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from simpe.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
TMX = ('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
       + "".join(f'<tu><tuv xml:lang="en"><seg>{s}</seg></tuv><tuv xml:lang="de"><seg>{r}</seg></tuv></tu>\n'
                 for s, r in [("Click OK.", "Klicken Sie auf OK."), ("Save the file.", "Speichern Sie die Datei."),
                              ("Open the file.", "Öffnen Sie die Datei.")])
       + "</body></tmx>\n")


def readme_commands(section: str) -> list[list[str]]:
    """The `simpe` command lines of the first bash block under the README heading ``section``, comments dropped."""
    text = README.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [shlex.split(line.split("  #")[0])[1:] for line in block.splitlines() if line.startswith("simpe ")]


def test_your_own_data_commands_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, one_torch_thread):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "memory.tmx").write_text(TMX, encoding="utf-8")
    (tmp_path / "doc.en").write_text("Click OK.\nSave the file.\n", encoding="utf-8")
    (tmp_path / "doc.de").write_text("Klicken Sie auf OK.\nSpeichern Sie die Datei.\n", encoding="utf-8")
    commands = readme_commands("Your own data")
    assert [c[0] for c in commands] == ["simulate", "simulate", "compare", "track"]
    for args in commands:
        args = ["1" if a == "2" and args[i - 1] == "--workers" else a for i, a in enumerate(args)]
        if args[0] == "simulate":
            args += ["--no-progress", "--threads", "1"]
        code = main(args)
        assert code == 0, (args, capsys.readouterr().err)
    # the README names a group by its readable name; its one folder adds the digest of the stream, model and memory
    tmx, = (tmp_path / "runs").glob("tmx-stream--demo-en-de--allseg--*")
    assert re.fullmatch(r"tmx-stream--demo-en-de--allseg--[0-9a-f]{8}", tmx.name)
    tmx_runs = sorted(p.parent.name for p in tmx.glob("*/DONE"))
    assert tmx_runs == ["baseline", "full", "lasso"]
    text, = (tmp_path / "runs").glob("text-stream--demo-en-de--allseg--*")
    assert (text / "full" / "DONE").exists()
    assert (tmx / "compare").is_dir()
    tracked = sorted(p.parent.name for p in (tmx / "tensorboard").glob("*/simpe-run.json"))
    assert tracked == ["baseline", "full", "lasso"]


def test_your_own_model_commands_name_how_to_get_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commands = readme_commands("Your own model")
    assert [c[0] for c in commands] == ["simulate", "simulate", "select-fixed"]
    for args in commands:
        capsys.readouterr()
        code = main(args)
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (args, lines)
        assert "huggingface-cli download" in lines[0] and "opus-mt-en-de" in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()
