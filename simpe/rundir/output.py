"""Where the outputs derived from runs go (``simpe compare``, ``simpe plot``, ``simpe rank``, the report): a folder that
refuses to replace earlier outputs unless told to, each file written atomically as the run folder's are."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from simpe.errors import ConfigError
from simpe.rundir.writer import _jsonl_line, strict_json, write_text_atomic


class OutputDir:
    """A folder of outputs derived from runs (tables, figures, ranking records).

    ``names`` are the files it will hold; when any exists and ``overwrite`` is false, the
    constructor refuses (ConfigError) before anything is computed or written.
    """

    def __init__(self, path: Path, names: Iterable[str], overwrite: bool = True) -> None:
        self.path, names = Path(path), list(names)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"-o {self.path} is a file; the outputs ({', '.join(names)}) go into a folder: give its name")
        existing = [name for name in names if (self.path / name).exists()]
        if existing and not overwrite:
            raise ConfigError(f"{self.path} already holds {', '.join(existing)}; pass --overwrite to replace them")

    def file(self, name: str) -> Path:
        """The path of output ``name`` (its folder created); for writers that need a path (matplotlib)."""
        self.path.mkdir(parents=True, exist_ok=True)
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        path = self.file(name)
        write_text_atomic(path, text)
        return path

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, strict_json(data, indent=2) + "\n")

    @contextmanager
    def jsonl(self, name: str) -> Iterator[Any]:
        """A writer of JSON lines, flushed after each: ``with out.jsonl("records.jsonl") as write: write(record)``."""
        handle: IO[str] = self.file(name).open("w", encoding="utf-8")
        try:
            def write(record: dict[str, Any]) -> None:
                handle.write(_jsonl_line(record))
                handle.flush()

            yield write
        finally:
            handle.close()
