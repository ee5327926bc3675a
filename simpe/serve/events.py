"""A person's run's workbench events: revisions of submitted segments, comments and flags (``events.jsonl``).

The loop's records (``segments.jsonl``) hold each segment as it was first submitted: the version the model learned
from (the record's ``reference``; its ``human.version`` is 1). What the translator does afterwards goes to
``events.jsonl`` in the same run folder, one JSON object per line, never rewritten:

* ``{"event": "revision", "index": 3, "version": 2, "post_edit": "...", "previous": "...", "human": {...}}``: a
  revision of a submitted segment (``human`` as a submission's: editing time without pauses, the key log and its
  counts, pauses, matches inserted, terms left out). The model is neither rolled back nor updated again on it; the
  latest version is the segment's final post-edit, the reference of HTER and effort (``simpe.report.people``) and
  the target of an XLIFF export.
* ``{"event": "comment", "index": 3, "text": "..."}`` and ``{"event": "flag", "index": 3, "flagged": true}``.
* ``{"event": "draft", "index": 3, "version": 2, "post_edit": "...", "human": {...}}``: what the translator typed in
  a segment and has not saved yet (``version``: the version it would become, 1 for the segment on screen), with its
  editing time, key log, pauses and ``elapsed_ms`` (the time since the segment was first shown, pauses included), as
  the page last sent it (after a pause in typing, on leaving the segment, on leaving the page). The segment's view
  gives back the latest draft of its next version, so a reload or a killed server loses nothing typed; drafts are
  never figures (the report reads revisions only).

Every event is appended and synced (fsync of the file and its folder) before the server answers, so an answered
event survives a kill. A line torn by a kill while it was written (never answered: the page still holds it) is cut
off when the journal is opened again (``Journal.open``). The file is read by ``simpe.rundir.events`` (the report
reads it too). This module knows nothing of HTTP or of the loop.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from simpe.errors import RunDirError
from simpe.rundir.events import final_versions, read_events, revisions_of
from simpe.rundir.layout import EVENTS_FILE
from simpe.rundir.reader import read_jsonl

__all__ = ["Journal", "final_versions", "read_events", "revisions_of"]  # the readers are simpe.rundir.events

logger = logging.getLogger(__name__)

KINDS = ("revision", "comment", "flag", "draft")


def fsync_path(path: Path) -> None:
    """Flush a file (or a folder's entries) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The events of one person's run: read once, appended and synced one at a time."""

    def __init__(self, run_path: Path) -> None:
        self.path = Path(run_path) / EVENTS_FILE
        self.events: list[dict[str, Any]] = []

    def open(self) -> None:
        """Read the journal, cutting off a torn last line (an event never answered)."""
        if not self.path.exists():
            self.events = []
            return
        data = self.path.read_bytes()
        keep = data if data.endswith(b"\n") or not data else data[:data.rfind(b"\n") + 1]
        if keep != data:
            logger.warning("%s: cut off a torn last line (an event the server never answered)", self.path)
            with open(self.path, "r+b") as handle:
                handle.truncate(len(keep))
                handle.flush()
                os.fsync(handle.fileno())
        self.events = read_jsonl(self.path)

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """Append ``event`` and sync it to the disk (RunDirError when it cannot be written); returns it."""
        assert event.get("event") in KINDS, event
        line = json.dumps(event, ensure_ascii=False, allow_nan=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists()
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            if new:
                fsync_path(self.path.parent)
        except OSError as err:
            raise RunDirError(f"cannot write {self.path}: {err.strerror or err}") from None
        self.events.append(event)
        return event

    def versions(self, index: int) -> list[dict[str, Any]]:
        """The revision events of segment ``index``, in order."""
        return revisions_of(self.events).get(index, [])

    def comments(self, index: int) -> list[str]:
        return [e["text"] for e in self.events if e.get("event") == "comment" and e.get("index") == index]

    def flagged(self, index: int) -> bool:
        flags = [e["flagged"] for e in self.events if e.get("event") == "flag" and e.get("index") == index]
        return bool(flags and flags[-1])
