"""The workbench's checks and helpers that need no model: QA warnings, XLIFF notes, drafts, the editor's start.

* ``qa_warnings``: what a post-edit may have got wrong, shown to the translator before they submit and recorded with
  the submission (``human.qa``) when they submit anyway: a tag of the source missing, a number of the source not in the
  post-edit (or one the source lacks), a glossary term left out, a doubled space, spaces at the ends, the end
  punctuation changed. Warnings, never refusals (a missing tag is refused by ``simpe.datasets.xliff.check_tags``).
* ``xliff_notes``: the notes of an XLIFF file's units (``<note>`` in 1.2, ``<notes><note>`` in 2.x), shown beside
  the segment.
* ``latest_draft``: a segment's unsubmitted text as the page saved it (a ``draft`` event of ``simpe.serve.events``),
  when it is a draft of the version the segment is at now.
* ``start_of``: the text the editor started from (``simpe.serve.keylog.check_start``; without one, the key log's last
  whole-text replacement, ``start_from_keys``), resolved by the server.
"""
from __future__ import annotations

import re
from typing import Any

from simpe.datasets.xliff import local, placeholders, plain

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
END = re.compile(r"[.!?:;…]$")
MAX_NOTES = 20  # notes of one unit shown
MAX_NOTE = 1000  # characters of a note shown


def numbers(text: str) -> list[str]:
    """The numbers of a text, separators ignored (``1,5`` and ``1.5`` are one number: languages write them apart)."""
    return sorted(re.sub(r"[.,]", "", n) for n in NUMBER.findall(plain(text)))


def qa_warnings(source: str, text: str, missing_terms: list[dict[str, str]]) -> list[dict[str, str]]:
    """The QA warnings of post-edit ``text`` of tagged ``source`` (``kind``: tags, numbers, terms, spaces,
    punctuation; ``text``: the warning as the page shows it), in that order."""
    out = []
    lost = [tag for tag in placeholders(source) if tag not in text]
    if lost:
        out.append({"kind": "tags", "text": "tags of the source missing: " + " ".join(lost)})
    src, tgt = numbers(source), numbers(text)
    absent = [n for n in dict.fromkeys(src) if src.count(n) > tgt.count(n)]
    extra = [n for n in dict.fromkeys(tgt) if tgt.count(n) > src.count(n)]
    if absent:
        out.append({"kind": "numbers", "text": "numbers of the source missing: " + ", ".join(absent)})
    if extra:
        out.append({"kind": "numbers", "text": "numbers not in the source: " + ", ".join(extra)})
    if missing_terms:
        out.append({"kind": "terms", "text": "glossary terms missing: " + ", ".join(
            f"{t['target']} ({t['source']})" for t in missing_terms)})
    if "  " in text:
        out.append({"kind": "spaces", "text": "a doubled space"})
    if text != text.strip():
        out.append({"kind": "spaces", "text": "a space at the start or the end"})
    src_end, tgt_end = END.search(plain(source).strip()), END.search(plain(text).strip())
    if (src_end.group(0) if src_end else "") != (tgt_end.group(0) if tgt_end else ""):
        out.append({"kind": "punctuation", "text": f"ends with {tgt_end.group(0) if tgt_end else 'no punctuation'!s}, "
                                                   f"the source with {src_end.group(0) if src_end else 'none'}"})
    return out


def xliff_notes(dataset: Any) -> dict[str, list[str]]:
    """Unit id -> its notes, for an XLIFF dataset (``simpe.datasets.xliff.XliffDataset``); {} for any other."""
    out: dict[str, list[str]] = {}
    for unit in getattr(dataset, "units", None) or []:
        holder = getattr(unit, "holder", None)
        if holder is None:
            continue
        owner = holder if local(holder.tag) == "trans-unit" else holder.getparent()  # 2.x: the segment's unit
        notes = []
        for element in owner.iter():
            if isinstance(element.tag, str) and local(element.tag) == "note":
                text = " ".join("".join(element.itertext()).split())
                if text:
                    notes.append(text[:MAX_NOTE])
        if notes:
            out[unit.id] = notes[:MAX_NOTES]
    return out


def latest_draft(events: list[dict[str, Any]], index: int, version: int) -> dict[str, Any] | None:
    """Segment ``index``'s latest draft event of ``version`` (1: the first submission), or None."""
    for event in reversed(events):
        if event.get("index") != index:
            continue
        if event.get("event") == "revision" and event.get("version", 0) >= version:
            return None  # saved since
        if event.get("event") == "draft" and event.get("version") == version:
            return event
    return None


def start_from_keys(keys: list[list[Any]]) -> dict[str, Any] | None:
    """The start a key log shows: its last whole-text replacement (t: a match, s: the source, r: the MT), else None
    (a page that does not send ``start``)."""
    for _, op, arg in reversed(keys):
        if op in ("t", "s", "r"):
            return {"origin": "match", "rank": arg} if op == "t" else {"origin": "source" if op == "s" else "mt"}
    return None


def start_of(start: dict[str, Any] | None, hypothesis: str, target: str | None, source: str,
             matches: list[Any]) -> dict[str, Any]:
    """The editor's start as a record keeps it (``origin``, ``rank`` for a match, ``text``: plain, as the post-edit
    the loop learns), from the page's ``start`` and what the server showed (``matches``: the offered ``Match``es);
    without one, the text the segment opened with (the file's target, else the MT)."""
    start = start or {"origin": "target" if target else "mt"}
    origin = start["origin"]
    if origin == "match":
        rank = start["rank"]
        if rank > len(matches):  # the page offered a match the server no longer has: the opening text instead
            return start_of(None, hypothesis, target, source, [])
        return {"origin": "match", "rank": rank, "text": plain(matches[rank - 1].target).strip()}
    text = {"mt": hypothesis, "target": target or hypothesis, "source": source}[origin]
    return {"origin": origin if origin != "target" or target else "mt", "text": plain(text)}
