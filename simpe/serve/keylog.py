"""What a submission from the page may hold, checked, and the effort counted from its key log.

A submission (or a revision) is ``{"index": int, "post_edit": str, "seconds": number, "keys": [[ms, op, arg], ...],
"pauses": [[start_ms, end_ms], ...]}``: ``seconds`` is the editing time without the pauses, ``pauses`` the spans the
translator paused the timer (milliseconds after the segment was shown; merged where they overlap, so
``paused_seconds`` counts each paused moment once). The key log is compact: one short list per
editing event, ``ms`` after the segment was shown, ``op`` one letter:

====  =====================================================  ===========================
op    event                                                  arg
====  =====================================================  ===========================
i     text typed (one key; an input method may insert more)  the text inserted
d     a deletion (Backspace, Delete, a word deleted)         characters removed
p     a paste                                                characters pasted
x     a cut                                                  characters cut
n     the caret moved by keyboard (arrows, Home, End, Page   0
      Up/Down, with or without Ctrl: a word at a time)
v     a selection by keyboard (Shift with a move, Ctrl+     0
      Shift+arrows, Ctrl+A)
m     a click in the editor (moves the caret or selects)     0
c     a completion accepted (interactive protocol, Tab)      characters accepted
u     undo or redo                                           0
t     a translation-memory match inserted (Ctrl+1-3)         the match's rank, 1 to 3
s     the source copied into the editor (Ctrl+I)             characters inserted
r     the machine translation restored (Ctrl+M, the button)  characters inserted
g     a glossary term inserted at the caret (Alt+1-9)        characters inserted
k     a missing tag inserted at the caret (Alt+T)            characters inserted
====  =====================================================  ===========================

Counted (``counts``): ``keystrokes`` (every event but ``m``), ``mouse`` (``m``), ``pastes``, ``edits`` (runs of changes
separated by a caret move or a click: how many places the translator corrected), and the categories the effort tables
report (``CATEGORIES``: typing, deleting, moving, selecting, pasting and cutting, whole-text replacements, inserts of a
term or a tag, undo, completions), which add up to ``keystrokes``. ``inserts`` counts translation-memory matches
inserted (``t``); whether the post-edit *started* from a match is the submission's ``start`` (``check_start``).
Nothing here trusts the page: every value is checked for type and bounds, and a bad one is a ``DataError`` naming it.

A submission also says what the editor started from (``start``: ``{"origin": "mt"}``, ``"target"`` (the XLIFF file's
filled target), ``"source"`` (Ctrl+I) or ``{"origin": "match", "rank": 1-3}``): the last whole-text replacement, else
the text the segment opened with. The server turns it into the text itself (``simpe.serve.session``), so the page
cannot claim a start it did not have; HTER and "unchanged" are measured against it (``simpe.report.people``).
"""
from __future__ import annotations

import math
import unicodedata
from typing import Any

from simpe.errors import DataError

OPS = {"i", "d", "p", "x", "n", "v", "m", "c", "u", "t", "s", "r", "g", "k"}
CHANGES = {"i", "d", "p", "x", "c", "u", "t", "s", "r", "g", "k"}
# the key log's categories, as the effort tables report them (every op but m in exactly one)
CATEGORIES = {"typing": "i", "deleting": "d", "moving": "n", "selecting": "v", "pasting": "px", "replacing": "tsr",
              "inserting": "gk", "undoing": "u", "completing": "c"}
ORIGINS = ("mt", "target", "source", "match")
MAX_PAUSES = 1000
MAX_TEXT = 4000  # characters of a post-edit or a typed prefix (the stream's longest segments are ~1,500)
MAX_EVENTS = 20000
MAX_MS = 24 * 3600 * 1000  # a day


def check_text(value: Any, what: str, allow_empty: bool = False) -> str:
    """One line of text: a string of at most MAX_TEXT characters, no control characters (a segment is one line:
    the run's text files hold one per line), not empty unless ``allow_empty``; outer spaces are removed."""
    if not isinstance(value, str):
        raise DataError(f"{what} must be a string")
    if len(value) > MAX_TEXT:
        raise DataError(f"{what} is longer than {MAX_TEXT} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise DataError(f"{what} holds a line break or another control character; a segment is one line")
    value = value.strip() if not allow_empty else value
    if not value and not allow_empty:
        raise DataError(f"{what} is empty")
    return value


def check_index(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DataError("index must be a whole number >= 0")
    return value


def check_keys(value: Any) -> list[list[Any]]:
    """The key log, checked (see the module docstring)."""
    if not isinstance(value, list):
        raise DataError("keys must be a list")
    if len(value) > MAX_EVENTS:
        raise DataError(f"keys holds more than {MAX_EVENTS} events")
    out = []
    for event in value:
        if not (isinstance(event, list) and len(event) == 3):
            raise DataError("each key event is [ms, op, arg]")
        ms, op, arg = event
        if not isinstance(ms, int) or isinstance(ms, bool) or not 0 <= ms <= MAX_MS:
            raise DataError(f"a key event's time must be whole milliseconds from 0 to {MAX_MS}")
        if op not in OPS:
            raise DataError(f"unknown key event {str(op)[:8]!r}; known: {', '.join(sorted(OPS))}")
        if op == "i":
            if not isinstance(arg, str) or len(arg) > MAX_TEXT:
                raise DataError("a typed event's arg is the text typed")
        elif op == "t":
            if not isinstance(arg, int) or isinstance(arg, bool) or not 1 <= arg <= 3:
                raise DataError("a match event's arg is the match's rank, 1 to 3")
        elif not isinstance(arg, int) or isinstance(arg, bool) or not 0 <= arg <= 10 * MAX_TEXT:
            raise DataError(f"key event {op!r} takes a count from 0 to {10 * MAX_TEXT}")
        out.append([ms, op, arg])
    return out


def check_pauses(value: Any) -> list[list[int]]:
    """The pauses, ``[[start_ms, end_ms], ...]``, each within a day and not ending before it starts, merged: sorted,
    and overlapping or touching spans (a pause sent twice, a page that sent one inside another) joined into one, so
    no paused millisecond is counted twice."""
    if not isinstance(value, list) or len(value) > MAX_PAUSES:
        raise DataError(f"pauses must be a list of at most {MAX_PAUSES} [start_ms, end_ms] pairs")
    spans = []
    for pause in value:
        if not (isinstance(pause, list) and len(pause) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_MS for v in pause)
                and pause[0] <= pause[1]):
            raise DataError(f"each pause is [start_ms, end_ms], whole milliseconds from 0 to {MAX_MS}, start <= end")
        spans.append((pause[0], pause[1]))
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def check_submission(data: Any) -> tuple[int, str, dict[str, Any]]:
    """(index, post-edit, the human part of the record: seconds, keys and pauses) from a submission's JSON."""
    if not isinstance(data, dict):
        raise DataError("a submission is a JSON object")
    unknown = sorted(set(data) - {"index", "post_edit", "seconds", "keys", "pauses", "start"})
    if unknown:
        raise DataError(f"unknown field {unknown[0][:40]!r}; a submission holds index, post_edit, seconds, keys, pauses, "
                        "start")
    seconds = data.get("seconds", 0)
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds) \
            or not 0 <= seconds <= MAX_MS / 1000:
        raise DataError("seconds must be a number from 0 to 86400")
    human = {"seconds": round(float(seconds), 3), "keys": check_keys(data.get("keys", []))}
    pauses = check_pauses(data.get("pauses", []))
    if pauses:  # recorded only when the translator paused (records of sessions without a pause stay as they were)
        human["pauses"] = pauses
        human["paused_seconds"] = round(sum(end - start for start, end in pauses) / 1000, 3)
    if "start" in data:
        human["start"] = check_start(data["start"])
    return check_index(data.get("index")), check_text(data.get("post_edit"), "post_edit"), human


def check_start(value: Any) -> dict[str, Any]:
    """What the editor started from: ``{"origin": one of ORIGINS}``, a match with its ``rank`` (1 to 3)."""
    if not isinstance(value, dict) or value.get("origin") not in ORIGINS or set(value) - {"origin", "rank"}:
        raise DataError(f"start is {{\"origin\": ...}}, the origin one of {', '.join(ORIGINS)} (a match with its rank)")
    if value["origin"] == "match":
        rank = value.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= 3:
            raise DataError("a match start's rank is 1 to 3")
        return {"origin": "match", "rank": rank}
    if "rank" in value:
        raise DataError("only a match start has a rank")
    return {"origin": value["origin"]}


def check_draft(data: Any) -> tuple[int, str, dict[str, Any]]:
    """(index, text, the draft's human part) of a draft: a submission's fields (the text may be empty) and
    ``elapsed_ms``, the time since the segment was first shown, pauses included (the page's timer resumes from it)."""
    if not isinstance(data, dict):
        raise DataError("a draft is a JSON object")
    rest = {k: v for k, v in data.items() if k not in ("elapsed_ms", "post_edit")}
    index, _, human = check_submission({**rest, "post_edit": "x"})
    elapsed = data.get("elapsed_ms", 0)
    if not isinstance(elapsed, int) or isinstance(elapsed, bool) or not 0 <= elapsed <= MAX_MS:
        raise DataError(f"elapsed_ms must be whole milliseconds from 0 to {MAX_MS}")
    human["elapsed_ms"] = elapsed
    return index, check_text(data.get("post_edit"), "post_edit", allow_empty=True), human


MAX_COMMENT = 2000  # characters of a comment


def check_note(data: Any) -> tuple[int, str | None, bool | None]:
    """(index, comment, flag) of a note: ``{"index": int, "comment": str}`` and/or ``{"index": int, "flagged": bool}``."""
    if not isinstance(data, dict) or "index" not in data or not set(data) - {"index"} \
            or set(data) - {"index", "comment", "flagged"}:
        raise DataError("a note holds index and a comment, a flag (flagged: true or false) or both")
    comment = data.get("comment")
    if comment is not None:
        if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
            raise DataError(f"a comment is a string of at most {MAX_COMMENT} characters")
        if any(unicodedata.category(ch) in ("Cc", "Cs") and ch != "\n" for ch in comment) or not comment.strip():
            raise DataError("a comment is text: not empty, no control characters but line breaks")
    flagged = data.get("flagged")
    if flagged is not None and not isinstance(flagged, bool):
        raise DataError("flagged must be true or false")
    return check_index(data["index"]), comment, flagged


def counts(keys: list[list[Any]]) -> dict[str, Any]:
    """keystrokes, mouse actions, pastes and edits (runs of changes) of a checked key log, ``keys_by`` (the
    keystrokes per category of ``CATEGORIES``, those with any) and ``inserts`` (translation-memory matches inserted)
    when there are any."""
    keystrokes = mouse = pastes = edits = inserts = 0
    by: dict[str, int] = {}
    changing = False
    for _, op, _ in keys:
        if op == "m":
            mouse += 1
        else:
            keystrokes += 1
            name = next(name for name, ops in CATEGORIES.items() if op in ops)
            by[name] = by.get(name, 0) + 1
        pastes += op == "p"
        inserts += op == "t"
        if op in CHANGES:
            edits += not changing
            changing = True
        else:
            changing = False
    out: dict[str, Any] = {"keystrokes": keystrokes, "mouse": mouse, "pastes": pastes, "edits": edits}
    if by:
        out["keys_by"] = {name: by[name] for name in CATEGORIES if name in by}
    if inserts:
        out["inserts"] = inserts
    return out
