"""The run directory: the only code that writes under ``runs/`` (format: docs/run-format.md).

It creates and locks a run folder, saves the resolved config and the environment, appends
per-segment and snapshot records, writes resume checkpoints atomically, truncates the logs
back to the last checkpoint on resume (so no segment is lost or duplicated), and marks the
run complete by writing ``DONE`` last. It does not translate, score or adapt.
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
from importlib import metadata
from pathlib import Path
from typing import Any

from simpe.config import RunConfig, save_config
from simpe.errors import RunDirError

PACKAGES = ("torch", "transformers", "sentencepiece", "sacrebleu", "sacremoses", "numpy", "unbabel-comet", "tqdm", "pyyaml")


def group_name(dataset: str, split: str, model: str, segments: int | None) -> str:
    """The folder shared by runs on the same stream: ``<dataset>-<split>--<model>--<N>seg``."""
    return f"{dataset}-{split}--{model}--{segments if segments else 'all'}seg"


def environment(device: Any) -> dict[str, Any]:
    """Package versions, device, git commit and dirty flag, host facts."""
    import torch

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    repo = Path(__file__).resolve().parent.parent
    commit, dirty = None, None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo, capture_output=True, text=True, timeout=10).stdout
        dirty = bool(status.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        pass
    env = {
        "python": sys.version.split()[0], "packages": versions, "device": str(device),
        "cuda": torch.cuda.get_device_name(device) if getattr(device, "type", "") == "cuda" else None,
        "torch_threads": torch.get_num_threads(), "git_commit": commit, "git_dirty": dirty,
        "host": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv,
    }
    return env


class RunDir:
    """One run's folder. Use as a context manager: the lock is held until exit."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_file: Any = None
        self._segments: Any = None
        self._snapshots: Any = None

    # ------------------------------------------------------------ files
    @property
    def done_file(self) -> Path:
        return self.path / "DONE"

    @property
    def segments_file(self) -> Path:
        return self.path / "segments.jsonl"

    @property
    def snapshots_file(self) -> Path:
        return self.path / "snapshots.jsonl"

    @property
    def checkpoint_file(self) -> Path:
        return self.path / "state" / "checkpoint.pt"

    def is_complete(self) -> bool:
        return self.done_file.exists()

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
        self._segments = open(self.segments_file, "a", encoding="utf-8")
        self._snapshots = open(self.snapshots_file, "a", encoding="utf-8")

    def _lock(self) -> None:
        if self._lock_file is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        handle = open(self.path / ".lock", "a+")
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
            if child.name == ".lock":
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()

    def close(self) -> None:
        for handle in (self._segments, self._snapshots):
            if handle is not None:
                handle.close()
        self._segments = self._snapshots = None
        self._unlock()

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ writing
    def write_config(self, cfg: RunConfig) -> None:
        save_config(cfg, self.path / "config.yaml")

    def write_json(self, name: str, data: Any) -> None:
        tmp = self.path / (name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path / name)

    def append_segment(self, record: dict[str, Any]) -> None:
        self._segments.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._segments.flush()

    def append_snapshot(self, record: dict[str, Any]) -> None:
        self._snapshots.write(json.dumps(record, ensure_ascii=False) + "\n")
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
        """Truncate the logs to the first ``segments_done`` segments; return those records."""
        records = read_jsonl(self.segments_file)[:segments_done]
        if len(records) < segments_done:
            raise RunDirError(f"{self.segments_file} has {len(records)} records but the checkpoint says {segments_done}; the run cannot be resumed, pass --overwrite")
        snapshots = [s for s in read_jsonl(self.snapshots_file) if s.get("segment", 0) <= segments_done]
        for handle in (self._segments, self._snapshots):
            handle.close()
        for path, rows in ((self.segments_file, records), (self.snapshots_file, snapshots)):
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
            tmp.replace(path)
        self._segments = open(self.segments_file, "a", encoding="utf-8")
        self._snapshots = open(self.snapshots_file, "a", encoding="utf-8")
        return records

    def write_lines(self, name: str, lines: list[str]) -> None:
        tmp = self.path / (name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        tmp.replace(self.path / name)

    def finish(self, summary: dict[str, Any], records: list[dict[str, Any]], lang: str) -> None:
        """Write the summary and the tokenised text files, drop the resume state, then DONE."""
        self.write_json("summary.json", summary)
        self.write_lines(f"hyp.tok.{lang}", [r["hyp_tokens"] for r in records])
        self.write_lines(f"ref.tok.{lang}", [r["ref_tokens"] for r in records])
        self.write_lines(f"hyp.{lang}", [r["hypothesis"] for r in records])
        shutil.rmtree(self.path / "state", ignore_errors=True)
        for handle in (self._segments, self._snapshots):
            handle.flush()
            os.fsync(handle.fileno())
        self.done_file.write_text("complete\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read complete JSON lines; a torn last line (a crash mid-write) is dropped."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows
