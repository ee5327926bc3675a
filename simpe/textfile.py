"""The one reader of line-oriented UTF-8 text files (corpora, hypotheses, word lists).

Lines are split on ``\\n`` only (as sacreBLEU reads them; ``str.splitlines`` would also
split on form feeds and Unicode line separators inside a segment), a final newline does not
start an empty line, a byte-order mark is dropped and a trailing ``\\r`` is removed.
Errors name the file, its role and, for bad UTF-8, the line.
"""
from __future__ import annotations

from pathlib import Path

from simpe.errors import DataError


def read_lines(path: str | Path, what: str = "file", rstrip: bool = False) -> list[str]:
    """The lines of a UTF-8 text file.

    Args:
        path: the file.
        what: its role in error messages ("hypotheses file", "stopword list", ...).
        rstrip: also strip trailing whitespace of every line (sacreBLEU does for its inputs).
    Raises:
        DataError: the file does not exist, is a folder, is not valid UTF-8, or holds a NUL byte.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise DataError(f"{what} {str(path)!r} is a folder, not a file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(f"{what} {str(path)!r} is not valid UTF-8 (line {line}, byte {err.start}: "
                        f"{data[err.start:err.start + 1]!r})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:  # a binary file, or one written wrongly (UTF-16): no segment holds a NUL
        raise DataError(f"{what} {str(path)!r} holds a NUL byte (line {text[: text.index(chr(0))].count(chr(10)) + 1}); "
                        "a UTF-8 text file holds none (is it UTF-16 or binary?)")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return [line.rstrip() if rstrip else line.rstrip("\r") for line in lines]
