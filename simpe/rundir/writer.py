"""Writing under ``runs/``: one run's folder (``RunDir``) and the outputs derived from runs (``OutputDir``).

``RunDir`` creates and locks a run folder, saves the resolved config and the environment,
appends per-segment and snapshot records, writes resume checkpoints atomically, truncates
the logs back to the last checkpoint on resume (so no segment is lost or duplicated), and
marks the run complete by writing ``DONE`` last. ``OutputDir`` is where ``simpe compare``,
``simpe plot`` and ``simpe rank`` write: it refuses to replace earlier outputs unless told
to, and writes every file atomically. Neither translates, scores or adapts.
"""
from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from simpe.config import RunConfig, save_config
from simpe.errors import ConfigError, RunDirError
from simpe.paths import REPO_ROOT
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl

PACKAGES = ("torch", "transformers", "sentencepiece", "sacrebleu", "sacremoses", "numpy", "unbabel-comet", "tqdm", "pyyaml")


def environment(device: Any) -> dict[str, Any]:
    """Package versions, device, git commit and dirty flag, host facts."""
    import torch

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    commit, dirty = None, None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout
        dirty = bool(status.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "python": sys.version.split()[0], "packages": versions, "device": str(device),
        "cuda": torch.cuda.get_device_name(device) if getattr(device, "type", "") == "cuda" else None,
        "torch_threads": torch.get_num_threads(), "git_commit": commit, "git_dirty": dirty,
        "host": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv,
    }


def _jsonl_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


class RunDir:
    """One run's folder. Use as a context manager: the lock is held until exit."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_file: Any = None
        self._segments: Any = None
        self._snapshots: Any = None

    # ------------------------------------------------------------ files
    @property
    def segments_file(self) -> Path:
        return self.path / layout.SEGMENTS_FILE

    @property
    def snapshots_file(self) -> Path:
        return self.path / layout.SNAPSHOTS_FILE

    @property
    def config_file(self) -> Path:
        return self.path / layout.CONFIG_FILE

    @property
    def log_file(self) -> Path:
        return self.path / layout.LOG_FILE

    @property
    def checkpoint_file(self) -> Path:
        return self.path / layout.STATE_DIR / layout.CHECKPOINT_FILE

    def is_complete(self) -> bool:
        return (self.path / layout.DONE_FILE).exists()

    # ------------------------------------------------------------ lifecycle
    def open(self, resume: bool, overwrite: bool) -> None:
        """Create (or reopen for ``resume``) the folder and take its lock."""
        if self.path.exists() and any(self.path.iterdir()):
            self._lock()  # never delete or reuse a folder another process is writing
            if overwrite:
                self._clear()
            elif self.is_complete():
                self._unlock()
                raise RunDirError(f"{self.path} is a complete run; pass --overwrite to run it again")
            elif not resume:
                self._unlock()
                raise RunDirError(f"{self.path} holds an incomplete run; pass --resume to continue it or --overwrite to start again")
        else:  # a new run (also under --resume: nothing to resume yet)
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock()
        self._open_logs()

    def _open_logs(self) -> None:
        self._segments = open(self.segments_file, "a", encoding="utf-8")
        self._snapshots = open(self.snapshots_file, "a", encoding="utf-8")

    def _lock(self) -> None:
        if self._lock_file is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        handle = open(self.path / layout.LOCK_FILE, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunDirError(f"{self.path} is being written by {holder}; wait for it to finish or stop it") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        self._lock_file = handle

    def _unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _clear(self) -> None:
        for child in self.path.iterdir():
            if child.name == layout.LOCK_FILE:
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()

    def close(self) -> None:
        for handle in (self._segments, self._snapshots):
            if handle is not None:
                handle.close()
        self._segments = self._snapshots = None
        self._unlock()

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ writing
    def write_config(self, cfg: RunConfig) -> None:
        save_config(cfg, self.config_file)

    def write_json(self, name: str, data: Any) -> None:
        write_text_atomic(self.path / name, json.dumps(data, indent=1, ensure_ascii=False) + "\n")

    def write_env(self, env: dict[str, Any]) -> None:
        self.write_json(layout.ENV_FILE, env)

    def append_segment(self, record: dict[str, Any]) -> None:
        self._segments.write(_jsonl_line(record))
        self._segments.flush()

    def append_snapshot(self, record: dict[str, Any]) -> None:
        self._snapshots.write(_jsonl_line(record))
        self._snapshots.flush()

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write the resume state atomically, after the logs it refers to are on disk."""
        import torch

        for handle in (self._segments, self._snapshots):
            handle.flush()
            os.fsync(handle.fileno())
        self.checkpoint_file.parent.mkdir(exist_ok=True)
        tmp = self.checkpoint_file.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(self.checkpoint_file)

    def load_checkpoint(self) -> dict[str, Any] | None:
        import torch

        if not self.checkpoint_file.exists():
            return None
        return torch.load(self.checkpoint_file, map_location="cpu", weights_only=False)

    def rewind(self, segments_done: int) -> list[dict[str, Any]]:
        """Truncate the logs to the first ``segments_done`` segments (a torn last line goes too); return those records."""
        records = read_jsonl(self.segments_file, tolerate_torn_tail=True)[:segments_done]
        if len(records) < segments_done:
            raise RunDirError(f"{self.segments_file} has {len(records)} records but the checkpoint says {segments_done}; "
                              "the run cannot be resumed, pass --overwrite")
        snapshots = [s for s in read_jsonl(self.snapshots_file, tolerate_torn_tail=True) if s.get("segment", 0) <= segments_done]
        for handle in (self._segments, self._snapshots):
            handle.close()
        write_text_atomic(self.segments_file, "".join(map(_jsonl_line, records)))
        write_text_atomic(self.snapshots_file, "".join(map(_jsonl_line, snapshots)))
        self._open_logs()
        return records

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        write_text_atomic(self.path / name, "".join(line + "\n" for line in lines))

    def write_store(self, tensors: dict[str, Any], metadata: dict[str, str]) -> Path:
        """Write the per-user store (safetensors: ``tensors`` and string ``metadata``) atomically; return its path."""
        from safetensors.torch import save_file

        path = self.path / layout.STORE_FILE
        tmp = path.with_name(path.name + ".tmp")
        save_file(tensors, str(tmp), metadata=metadata)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # like every other file of the run (safetensors creates it private)
        tmp.replace(path)
        return path

    def finish(self, summary: dict[str, Any], records: list[dict[str, Any]], lang: str) -> None:
        """Write the summary and the text files (mt.<lang> when the records carry the raw MT), drop the resume state, then DONE."""
        self.write_json(layout.SUMMARY_FILE, summary)
        self.write_lines(layout.hyp_tok_file(lang), (r["hyp_tokens"] for r in records))
        self.write_lines(layout.ref_tok_file(lang), (r["ref_tokens"] for r in records))
        self.write_lines(layout.hyp_file(lang), (r["hypothesis"] for r in records))
        if records and all("mt" in r for r in records):
            self.write_lines(layout.mt_file(lang), (r["mt"] for r in records))
        shutil.rmtree(self.path / layout.STATE_DIR, ignore_errors=True)
        for handle in (self._segments, self._snapshots):
            handle.flush()
            os.fsync(handle.fileno())
        (self.path / layout.DONE_FILE).write_text("complete\n")


class OutputDir:
    """A folder of outputs derived from runs (tables, figures, ranking records).

    ``names`` are the files it will hold; when any exists and ``overwrite`` is false, the
    constructor refuses (ConfigError) before anything is computed or written.
    """

    def __init__(self, path: Path, names: Iterable[str], overwrite: bool = True) -> None:
        self.path = Path(path)
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
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

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
