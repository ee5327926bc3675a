"""Reading a person's run's workbench events (``events.jsonl``: revisions, comments, flags; written by
``simpe.serve.events``), for the report and the export. Reads only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from simpe.rundir.layout import EVENTS_FILE
from simpe.rundir.reader import read_jsonl


def read_events(run_path: Path) -> list[dict[str, Any]]:
    """The events of the run folder ``run_path`` in order (none without a journal); a torn last line is dropped."""
    return read_jsonl(Path(run_path) / EVENTS_FILE, tolerate_torn_tail=True)


def revisions_of(events: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Segment index -> its revision events, in order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        if event.get("event") == "revision" and isinstance(event.get("index"), int):
            out.setdefault(event["index"], []).append(event)
    return out


def final_versions(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Segment index -> its latest revision event (segments never revised are absent)."""
    return {index: versions[-1] for index, versions in revisions_of(events).items()}
