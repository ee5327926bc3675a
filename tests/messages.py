"""Error messages are checked by their key fragments (the key or flag, the bad value, the valid values), not whole
sentences: rewording a message keeps the tests, dropping what the user needs to fix the input fails them."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def raises_naming(exc_type: type[BaseException], *fragments: str) -> Iterator[pytest.ExceptionInfo]:
    """``pytest.raises(exc_type)`` whose message must hold every fragment (plain substrings, no regular expressions)."""
    with pytest.raises(exc_type) as info:
        yield info
    message = str(info.value)
    missing = [fragment for fragment in fragments if fragment not in message]
    assert not missing, f"{missing} not in {message!r}"


def one_line_error(args: list[str], capsys: pytest.CaptureFixture, *fragments: str, seconds: float) -> str:
    """``simpe ARGS`` (``simpe.cli.main``) refuses in one ``simpe: error:`` line on stderr holding every fragment, exits
    2 (the parser's refusals too) and takes less than ``seconds``; returns the line."""
    from simpe.cli import main

    capsys.readouterr()
    start = time.perf_counter()
    try:
        code = main(args)
    except SystemExit as exit:  # the parser's refusal: its one line, then exit 2
        code = exit.code
    took = time.perf_counter() - start
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("simpe: error: "), lines
    assert [f for f in fragments if f not in lines[0]] == [], lines[0]
    assert took < seconds, f"took {took:.1f} s"
    return lines[0]


def simulate_args(tmp_path: Path, *args: str) -> list[str]:
    """``simpe simulate ARGS`` on 2 segments of the CPU, its runs under ``tmp_path``/runs, no progress bar."""
    return ["simulate", *args, "--segments", "2", "--no-progress", "--runs-dir", str(tmp_path / "runs"), "--device", "cpu"]
