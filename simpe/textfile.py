"""The one reader of line-oriented UTF-8 text files (corpora, hypotheses, word lists).

Lines are split on ``\\n`` only (as sacreBLEU reads them; ``str.splitlines`` would also
split on form feeds and Unicode line separators inside a segment), a final newline does not
start an empty line, a byte-order mark is dropped and a trailing ``\\r`` is removed.
Errors name the file, its role and, for bad UTF-8, the line.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from simpe.errors import DataError

# The largest file simpe reads whole (a corpus, a run's log, a config): received input cannot exhaust the memory.
# The whole scalc stream is 3 MB and the Autodesk corpus unpacked about 200 MB.
MAX_FILE_BYTES = 4 * 1024**3
_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def special_kind(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is when it is not a regular file ("a named pipe", ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES, error: type[Exception] = DataError) -> bytes:
    """The bytes of a regular file, read whole, refused in one line (``error``) when it is anything else.

    A named pipe, a device (``/dev/zero``) or a socket where a file is expected would hang the run or fill the
    memory: the file is opened without blocking (a pipe with no writer does not wait), checked on the open
    descriptor (no race between a check and the read), and read to at most ``limit`` bytes.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise error(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {str(path)!r} is a folder, not a file") from None
    except OSError as err:
        raise error(f"{what} {str(path)!r} cannot be read ({err.strerror})") from None
    info = os.fstat(fd)
    kind = special_kind(info.st_mode)
    if kind is not None:
        os.close(fd)
        raise error(f"{what} {str(path)!r} is {kind}, not a regular file" if kind != "a folder" else
                    f"{what} {str(path)!r} is a folder, not a file")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise error(f"{what} {str(path)!r} is {info.st_size:,} bytes; simpe reads files of at most {limit:,}")
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew while it was read
        raise error(f"{what} {str(path)!r} is more than {limit:,} bytes; simpe reads files of at most {limit:,}")
    return data


def read_lines(path: str | Path, what: str = "file", rstrip: bool = False) -> list[str]:
    """The lines of a UTF-8 text file.

    Args:
        path: the file.
        what: its role in error messages ("hypotheses file", "stopword list", ...).
        rstrip: also strip trailing whitespace of every line (sacreBLEU does for its inputs).
    Raises:
        DataError: the file does not exist, is a folder or a special file (a pipe, a device), is larger than
            MAX_FILE_BYTES, is not valid UTF-8, or holds a NUL byte.
    """
    path = Path(path)
    data = read_bytes(path, what)
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


def check_replaceable(path: str | Path, error: type[Exception] = DataError) -> None:
    """Refuse (``error``, one line) to write ``path`` by rename when something other than a regular file (or a link)
    is there: renaming a new file over ``/dev/null`` as root would replace the device with a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        return  # the rename replaces the link itself, never what it points to
    kind = special_kind(mode)
    if kind is not None:
        raise error(f"{path} is {kind}; simpe writes only regular files or new paths")
