"""The front page and the manual: every command the README names exists, and the manual builds strict.

The README's code blocks are parsed: each ``make TARGET`` must be a Makefile target and each
``simpe SUBCOMMAND`` a subcommand of simpe's parser. ``mkdocs build --strict`` fails on a broken
link, an anchor that does not exist or a page missing from the nav.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _code_lines(text: str) -> list[str]:
    blocks = re.findall(r"```(?:bash)?\n(.*?)```", text, re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_the_readme_is_a_front_page():
    words = len(README.read_text(encoding="utf-8").split())
    assert words < 1200, f"README.md has {words} words; the manual (docs/) is where detail goes"


def test_every_command_in_the_readme_exists():
    from simpe.cli import build_parser

    targets = set(re.findall(r"(?m)^([a-zA-Z][\w-]*):", (REPO / "Makefile").read_text(encoding="utf-8")))
    subcommands = set(build_parser()._subparsers._group_actions[0].choices)  # noqa: SLF001 - argparse keeps them here
    lines = _code_lines(README.read_text(encoding="utf-8"))
    made = [m for line in lines for m in re.findall(r"\bmake ([a-z][\w-]*)", line)]
    called = [m for line in lines for m in re.findall(r"\bsimpe ([a-z][\w-]*)", line)]
    assert made and called
    assert set(made) <= targets, f"README names make targets that do not exist: {sorted(set(made) - targets)}"
    assert set(called) <= subcommands, f"README names simpe commands that do not exist: {sorted(set(called) - subcommands)}"


def test_the_manual_builds_strict(tmp_path: Path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail("mkdocs is missing from the virtualenv: `make venv` installs it (pyproject's dev extras)")
    out = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "site" / "getting-started.html").exists()
