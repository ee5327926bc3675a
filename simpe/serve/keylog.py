"""What a submission from the page may hold, checked, and the effort counted from its key log.

A submission is ``{"index": int, "post_edit": str, "seconds": number, "keys": [[ms, op, arg], ...]}``. The key log
is compact: one short list per editing event, ``ms`` after the segment was shown, ``op`` one letter:

====  =====================================================  ===========================
op    event                                                  arg
====  =====================================================  ===========================
i     text typed (one key; an input method may insert more)  the text inserted
d     a deletion (Backspace, Delete, a word deleted)         characters removed
p     a paste                                                characters pasted
x     a cut                                                  characters cut
n     the caret moved by keyboard (arrows, Home, End)        0
m     a click in the editor (moves the caret or selects)     0
c     a completion accepted (interactive protocol, Tab)      characters accepted
u     undo or redo                                           0
====  =====================================================  ===========================

Counted: ``keystrokes`` (every event but ``m``), ``mouse`` (``m``), ``pastes``, ``edits`` (runs of changes
separated by a caret move or a click: how many places the translator corrected). Nothing here trusts the page: every
value is checked for type and bounds, and a bad one is a ``DataError`` naming it.
"""
from __future__ import annotations

import math
import unicodedata
from typing import Any

from simpe.errors import DataError

OPS = {"i", "d", "p", "x", "n", "m", "c", "u"}
CHANGES = {"i", "d", "p", "x", "c", "u"}
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
        elif not isinstance(arg, int) or isinstance(arg, bool) or not 0 <= arg <= 10 * MAX_TEXT:
            raise DataError(f"key event {op!r} takes a count from 0 to {10 * MAX_TEXT}")
        out.append([ms, op, arg])
    return out


def check_submission(data: Any) -> tuple[int, str, dict[str, Any]]:
    """(index, post-edit, the human part of the record: seconds and keys) from a submission's JSON."""
    if not isinstance(data, dict):
        raise DataError("a submission is a JSON object")
    unknown = sorted(set(data) - {"index", "post_edit", "seconds", "keys"})
    if unknown:
        raise DataError(f"unknown field {unknown[0][:40]!r}; a submission holds index, post_edit, seconds, keys")
    seconds = data.get("seconds", 0)
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds) \
            or not 0 <= seconds <= MAX_MS / 1000:
        raise DataError("seconds must be a number from 0 to 86400")
    human = {"seconds": round(float(seconds), 3), "keys": check_keys(data.get("keys", []))}
    return check_index(data.get("index")), check_text(data.get("post_edit"), "post_edit"), human


def counts(keys: list[list[Any]]) -> dict[str, int]:
    """keystrokes, mouse actions, pastes and edits (runs of changes) of a checked key log."""
    keystrokes = mouse = pastes = edits = 0
    changing = False
    for _, op, _ in keys:
        if op == "m":
            mouse += 1
        else:
            keystrokes += 1
        pastes += op == "p"
        if op in CHANGES:
            edits += not changing
            changing = True
        else:
            changing = False
    return {"keystrokes": keystrokes, "mouse": mouse, "pastes": pastes, "edits": edits}
