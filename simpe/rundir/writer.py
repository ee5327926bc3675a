"""Writing one run's folder under ``runs/`` (``RunDir``); its environment is ``env.py``'s, the outputs derived from
runs ``output.py``'s.

``RunDir`` checks that a run folder can be written (``check``, before the model loads),
creates and locks it, saves the resolved config and the environment, appends per-segment
and snapshot records, writes resume checkpoints atomically, truncates the logs back to the
last valid record covered by the checkpoint on resume (so no segment is lost or
duplicated), and marks the run complete by writing ``DONE`` last, only once every record
reads back as valid. A run that fails before its first record leaves no folder behind.
Every file is written as strict JSON (``strict_json``: a non-finite number is written as
null and its key listed under ``non_finite``), and every write goes through ``open_file``;
a failed write (a full disk) is one RunDirError naming the file, with no ``.tmp`` left. It never translates, scores or
adapts.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import shutil
import socket
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from simpe.config.files import dump_config
from simpe.config.tree import RunConfig
from simpe.errors import RunDirError
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl, valid_prefix
from simpe.rundir.record import SCHEMA_KEY, SCHEMA_VERSION, SegmentRecord
from simpe.rundir.state import RunState, foreign_files, foreign_message, state
from simpe.storefile import StoreMetadata, write_store_file
from simpe.textfile import check_replaceable

NON_FINITE_KEY = "non_finite"  # lists the dotted keys whose non-finite number was written as null


def _finite(value: Any, key: str, flagged: list[str]) -> Any:
    """``value`` with every NaN/Infinity replaced by None, their dotted keys appended to ``flagged``."""
    if isinstance(value, float) and not math.isfinite(value):
        flagged.append(key)
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{key}.{k}" if key else str(k), flagged) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{key}.{i}", flagged) for i, v in enumerate(value)]
    return value


def strict_json(data: Any, indent: int | None = None) -> str:
    """``data`` as strict JSON (RFC 8259): NaN and Infinity become null, flagged in a mapping's ``non_finite`` list.

    Example: ``{"update": {"loss_after": nan}}`` -> ``{"update": {"loss_after": null}, "non_finite": ["update.loss_after"]}``.
    """
    flagged: list[str] = []
    clean = _finite(data, "", flagged)
    if flagged and isinstance(clean, dict):
        clean[NON_FINITE_KEY] = flagged
    return json.dumps(clean, ensure_ascii=False, indent=indent, allow_nan=False)


def _jsonl_line(record: dict[str, Any]) -> str:
    return strict_json(record) + "\n"


def open_file(path: Path, mode: str) -> IO[Any]:
    """Open a file for writing: the one place this module opens files, but for the store, which safetensors writes
    itself (``write_store``; tests wrap it to inject a full disk)."""
    return open(path, mode, buffering=0) if "b" in mode else open(path, mode, encoding="utf-8")


class _WholeWrites:
    """A file for ``torch.save`` over an unbuffered handle: torch takes every write as whole, and a raw write may write
    less."""

    def __init__(self, handle: IO[Any]) -> None:
        self.handle = handle

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        while view:
            view = view[self.handle.write(view):]
        return len(data)

    def flush(self) -> None:
        self.handle.flush()


def write_error(path: Path, err: OSError, then: str = "") -> RunDirError:
    """The one-line error of a failed write: the file, the reason, what to do."""
    what = "the disk is full" if err.errno in (errno.ENOSPC, errno.EDQUOT) else (err.strerror or str(err))
    return RunDirError(f"cannot write {path}: {what} ({errno.errorcode.get(err.errno or 0, 'error')}); "
                       f"{then or 'free space or fix the folder, then run the command again'}")


def _os_error(err: Exception) -> OSError:
    """The OSError inside a library's error (safetensors says "I/O error: ... (os error 28)"), for ``write_error``."""
    import re

    found = re.search(r"os error (\d+)", str(err))
    code = int(found.group(1)) if found else errno.EIO
    return OSError(code, os.strerror(code) if found else str(err).splitlines()[0])


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half of it (RunDirError when it fails)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        check_replaceable(path, RunDirError)
        with open_file(tmp, "w") as handle:
            handle.write(text)
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise write_error(path, err) from None


def check_writable(path: Path) -> None:
    """Refuse (RunDirError) when folder ``path`` cannot be created and written; leaves nothing behind.

    Probes with a temporary folder in the nearest existing ancestor, since permission bits
    say nothing for root and nothing of read-only or full file systems.
    """
    path = Path(path)
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise RunDirError(f"cannot create run folder {path}: {ancestor} is a file, not a folder; choose another --runs-dir")
    try:
        probe = tempfile.mkdtemp(prefix=".simpe-probe-", dir=ancestor)
        os.rmdir(probe)
    except OSError as err:
        raise RunDirError(f"cannot create run folder {path}: {ancestor} is not writable ({err.strerror or err}); "
                          "choose another --runs-dir") from None


class RunDir:
    """One run's folder. Use as a context manager: the lock is held until exit."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_file: Any = None
        self._segments: Any = None
        self._snapshots: Any = None
        self._created: Path | None = None  # the topmost folder open() created (removed again if nothing gets logged)

    @staticmethod
    def check(path: Path, resume: bool, overwrite: bool) -> bool:
        """Before the model loads: refuse what ``open`` would refuse; return True when there is a run to resume.

        Checks that the folder can be created and written, is not locked by another
        process, and is not a complete run (without ``overwrite``) or an incomplete one
        (without ``resume`` or ``overwrite``). Creates nothing.
        """
        path = Path(path)
        check_writable(path)
        found = state(path)
        if found is RunState.FOREIGN:
            raise RunDirError(foreign_message(path))
        if found is RunState.EMPTY:
            return False
        probe = RunDir(path)
        probe._lock()
        try:
            if overwrite:
                return False
            if probe.is_complete():
                raise RunDirError(f"{path} is a complete run; pass --overwrite to run it again")
            if not resume:
                raise RunDirError(f"{path} holds an incomplete run; pass --resume to continue it or --overwrite to start again")
            return True
        finally:
            probe._unlock()

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
        found = state(self.path)
        if found is RunState.FOREIGN and not overwrite:  # (with overwrite, _clear refuses it)
            raise RunDirError(foreign_message(self.path))
        if found is not RunState.EMPTY:
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
            created = self.path
            while not created.parent.exists() and created.parent != created.parent.parent:
                created = created.parent
            self._created = None if created.exists() else created
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise write_error(self.path, err, "choose another --runs-dir") from None
            self._lock()
        self._open_logs()

    def _open_logs(self) -> None:
        try:
            self._segments = open_file(self.segments_file, "ab")
            self._snapshots = open_file(self.snapshots_file, "ab")
        except OSError as err:
            raise write_error(self.path, err) from None

    def _lock(self) -> None:
        if self._lock_file is not None:
            return
        lock = self.path / layout.LOCK_FILE
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            handle = open(lock, "a+")
        except OSError as err:
            raise write_error(lock, err) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunDirError(f"{self.path} is being written by {holder}; wait for it to finish or stop it") from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
            handle.flush()
        except OSError as err:  # a disk full at the very start: nothing of the new run stays behind
            with contextlib.suppress(OSError):  # closing flushes the same bytes again
                handle.close()
            if self._created is not None:
                shutil.rmtree(self._created, ignore_errors=True)
            raise write_error(lock, err) from None
        self._lock_file = handle

    def _unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _clear(self) -> None:
        """Empty the run folder for --overwrite: only a folder that holds nothing but a run's files (a foreign file or
        folder, another group's runs, a user's notes: refused, nothing removed)."""
        if foreign_files(self.path):
            self._unlock()
            raise RunDirError(foreign_message(self.path))
        for child in self.path.iterdir():
            if child.name == layout.LOCK_FILE:
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()

    def close(self) -> None:
        for handle in (self._segments, self._snapshots):
            if handle is not None:
                try:
                    handle.close()
                except OSError:
                    pass  # a write already failed and was reported; closing must not add a second error
        self._segments = self._snapshots = None
        self._unlock()

    def _logged_nothing(self) -> bool:
        return not self.segments_file.exists() or self.segments_file.stat().st_size == 0

    def __enter__(self) -> RunDir:
        return self

    def abandon(self) -> None:
        """Close after a failure; before the first record, remove what ``open`` created (no folder blocks a rerun).
        A lockstep group calls it for the run that fails while the others go on (``simpe.loop.group``)."""
        remove = self._lock_file is not None and self._logged_nothing()
        self.close()
        if remove:
            shutil.rmtree(self._created or self.path, ignore_errors=True)

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is not None:
            self.abandon()
        else:
            self.close()

    # ------------------------------------------------------------ writing
    def write_config(self, cfg: RunConfig) -> None:
        write_text_atomic(self.config_file, dump_config(cfg))

    def write_json(self, name: str, data: Any) -> None:
        write_text_atomic(self.path / name, strict_json(data, indent=1) + "\n")

    def write_env(self, env: dict[str, Any]) -> None:
        """env.json: ``env`` and the schema version of the run's segment records (``simpe.rundir.record``)."""
        self.write_json(layout.ENV_FILE, {**env, SCHEMA_KEY: SCHEMA_VERSION})

    def _append(self, handle: Any, path: Path, record: dict[str, Any]) -> None:
        """Write one line; when that fails, cut the file back to the line's start and report it in one line."""
        data = _jsonl_line(record).encode("utf-8")
        start = handle.tell()
        try:
            view = memoryview(data)
            while view:
                written = handle.write(view)
                view = view[written:]
        except OSError as err:
            try:
                handle.truncate(start)
            except OSError:
                pass  # a torn last line is dropped on resume anyway
            raise write_error(path, err, "free space, then continue with --resume") from None

    def append_segment(self, record: SegmentRecord) -> dict[str, Any]:
        """Append one segment record to segments.jsonl; return it as written (before non-finite numbers become null)."""
        data = record.to_dict()
        self._append(self._segments, self.segments_file, data)
        return data

    def append_snapshot(self, record: dict[str, Any]) -> None:
        self._append(self._snapshots, self.snapshots_file, record)

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write the resume state atomically, after the logs it refers to are on disk."""
        import torch

        tmp = self.checkpoint_file.with_suffix(".tmp")
        try:
            for handle in (self._segments, self._snapshots):
                os.fsync(handle.fileno())
            self.checkpoint_file.parent.mkdir(exist_ok=True)
            with open_file(tmp, "wb") as out:  # streamed: serialising into memory first cost one more copy of the state
                try:
                    torch.save(state, _WholeWrites(out))
                except RuntimeError as err:  # torch's writer turns the OSError of a full disk into a RuntimeError
                    if isinstance(err.__context__, OSError):
                        raise err.__context__ from None
                    raise
            tmp.replace(self.checkpoint_file)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise write_error(self.checkpoint_file, err, "free space, then continue with --resume") from None

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The resume state, read with ``torch.load(weights_only=True)``: tensors, numbers, strings and containers only.

        A run folder can come from anyone (a colleague, a cluster): its checkpoint is never unpickled with code, and
        one that holds anything else (a crafted payload, garbage, a cut file) is refused in one line."""
        import torch

        if not self.checkpoint_file.exists():
            return None
        try:
            with warnings.catch_warnings():  # torch's own warnings about a refused file are noise beside our one line
                warnings.simplefilter("ignore")
                state = torch.load(self.checkpoint_file, map_location="cpu", weights_only=True)
        except Exception as err:  # UnpicklingError, RuntimeError (not a zip), EOFError...: all one answer
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise RunDirError(f"{self.checkpoint_file} is not a checkpoint simpe can read safely ({detail[:160]}); "
                              "it was not loaded. Start the run again with --overwrite") from None
        problem = _checkpoint_problem(state, torch.get_rng_state())
        if problem:
            raise self.bad_checkpoint(problem)
        return state

    def bad_checkpoint(self, problem: str) -> RunDirError:
        """The one-line refusal of a checkpoint whose contents (not its file format) are wrong."""
        return RunDirError(f"{self.checkpoint_file} {problem}; it was not loaded. Start the run again with --overwrite")

    def rewind(self, segments_done: int) -> list[dict[str, Any]]:
        """Truncate the logs to the first ``segments_done`` segments; return those records.

        Only the valid records before the first bad line count (``reader.valid_prefix``: a
        torn or non-JSON line and everything after it go); fewer than ``segments_done`` of
        them is a RunDirError (the checkpoint is ahead of the logs).
        """
        records = valid_prefix(self.segments_file, indexed=True)[:segments_done]
        if len(records) < segments_done:
            raise RunDirError(f"{self.segments_file} has {len(records)} valid records but the checkpoint says {segments_done}; "
                              "the run cannot be resumed, pass --overwrite")
        snapshots = [s for s in valid_prefix(self.snapshots_file) if s.get("segment", 0) <= segments_done]
        for handle in (self._segments, self._snapshots):
            handle.close()
        write_text_atomic(self.segments_file, "".join(map(_jsonl_line, records)))
        write_text_atomic(self.snapshots_file, "".join(map(_jsonl_line, snapshots)))
        self._open_logs()
        return records

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        write_text_atomic(self.path / name, "".join(line + "\n" for line in lines))

    def write_store(self, tensors: dict[str, Any], metadata: StoreMetadata) -> Path:
        """Write the per-user store (``simpe.storefile``: ``tensors`` and ``metadata``) atomically; return its path."""
        from safetensors import SafetensorError

        path = self.path / layout.STORE_FILE
        tmp = path.with_name(path.name + ".tmp")
        try:  # safetensors opens the file itself (streamed, no copy in memory), not through open_file
            check_replaceable(path, RunDirError)
            write_store_file(tmp, tensors, metadata)
            tmp.replace(path)
        except (OSError, SafetensorError) as err:
            tmp.unlink(missing_ok=True)
            raise write_error(path, err if isinstance(err, OSError) else _os_error(err)) from None
        return path

    def finish(self, summary: dict[str, Any], records: list[dict[str, Any]], lang: str) -> None:
        """Check that the logs read back as ``records``, write the summary and the text files (mt.<lang> when the
        records carry the raw MT), then DONE; drop the resume state."""
        for handle in (self._segments, self._snapshots):
            try:
                os.fsync(handle.fileno())
            except OSError as err:
                raise write_error(self.segments_file, err, "free space, then continue with --resume") from None
        logged = read_jsonl(self.segments_file)  # strict: any bad line is a RunDirError and no DONE
        if len(logged) != len(records) or any(r.get("index") != i for i, r in enumerate(logged)):
            raise RunDirError(f"{self.segments_file} holds {len(logged)} records, not the {len(records)} of the run in order; "
                              "the run is not marked complete: continue it with --resume")
        self.write_json(layout.SUMMARY_FILE, summary)
        self.write_lines(layout.hyp_tok_file(lang), (r["hyp_tokens"] for r in records))
        self.write_lines(layout.ref_tok_file(lang), (r["ref_tokens"] for r in records))
        self.write_lines(layout.hyp_file(lang), (r["hypothesis"] for r in records))
        if records and all("mt" in r for r in records):
            self.write_lines(layout.mt_file(lang), (r["mt"] for r in records))
        write_text_atomic(self.path / layout.DONE_FILE, "complete\n")
        shutil.rmtree(self.path / layout.STATE_DIR, ignore_errors=True)


CHECKPOINT_KEYS = {"segments_done", "method", "torch_rng"}  # what Loop.run saves; "method_name" since it is checked


def _checkpoint_problem(state: Any, rng: Any) -> str | None:
    """What is wrong with a loaded checkpoint's structure (None: nothing): the keys ``save_checkpoint``'s caller
    writes, a whole number of segments, a mapping of method state, and an RNG state of this torch's size. The
    method's own state is checked by the method (``Method.check_state``), which knows its tensors."""
    import torch

    if not isinstance(state, dict) or not CHECKPOINT_KEYS <= set(state):
        got = ", ".join(sorted(map(str, state))) if isinstance(state, dict) else type(state).__name__
        return f"holds {got or 'nothing'}; a checkpoint holds {', '.join(sorted(CHECKPOINT_KEYS))}"
    done = state["segments_done"]
    if not isinstance(done, int) or isinstance(done, bool) or done < 1:
        return f"says {done!r} segments are done; a checkpoint is taken after a whole number of at least 1"
    if not isinstance(state["method"], dict):
        return f"holds the method's state as {type(state['method']).__name__}; it is a mapping of tensors"
    if not isinstance(state.get("method_name", ""), str):
        return "names its method with something other than a string"
    saved = state["torch_rng"]
    if not isinstance(saved, torch.Tensor) or saved.dtype != torch.uint8 or saved.shape != rng.shape:
        described = f"{saved.dtype} of shape {tuple(saved.shape)}" if isinstance(saved, torch.Tensor) else type(saved).__name__
        return f"holds the random generator's state as {described}; this torch's is uint8 of shape {tuple(rng.shape)}"
    return None
