"""The segment record: one line of ``segments.jsonl``, as one dataclass with its schema version.

The loop builds a ``SegmentRecord`` per segment (``simpe.loop.run``, with the scorer's part from
``simpe.metrics.online.OnlineScorer.add``); ``RunDir.append_segment`` writes it (``to_dict``: the keys
in the order docs/run-format.md shows, the optional ones only when set); ``load_run`` checks every
logged line with ``from_dict`` (one line naming the file and the record for a wrong type).

``SCHEMA_VERSION`` is the record layout's version. It is written once per run, as
``segment_schema`` in ``env.json`` (so the records themselves are what they were: a run written
before the version existed has the same records and no ``segment_schema``, and reads as schema 1).
A run naming a newer schema than this simpe knows is refused in one line.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.errors import RunDirError

SCHEMA_VERSION = 1  # 1: the layout of docs/run-format.md (runs without ``segment_schema`` are schema 1)
SCHEMA_KEY = "segment_schema"  # the env.json key naming it


@dataclass
class SegmentRecord:
    """One segment of the stream: what was translated, its scores, the update and the loop's timings.

    ``index``, ``source``, ``reference`` and ``hypothesis`` are always there; ``doc_id`` ...
    ``seconds`` are written by every run of the loop (``null`` where unknown); ``mt`` ...
    ``non_finite`` only when set. Keys this simpe does not know are kept in ``extra`` (written last).
    """

    index: int
    source: str
    reference: str
    hypothesis: str
    doc_id: str | None = None
    seg_id: str | None = None
    mt: str | None = None  # the corpus's raw MT (autodesk)
    examples: int | None = None  # in-context examples of the prompt (icl)
    info: dict[str, Any] | None = None  # the corpus's facts (autodesk)
    hyp_score: float | None = None  # the decoder's log-probability of the hypothesis
    hyp_tokens: str | None = None
    ref_tokens: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # per-segment values (R as [matched, types])
    stats: dict[str, list] = field(default_factory=dict)  # each logged metric's sufficient statistics
    cumulative: dict[str, Any] = field(default_factory=dict)  # every metric over segments 0..index
    ref_pieces: list[str] | None = None  # metrics.subword: all
    update: dict[str, Any] | None = None
    seconds: dict[str, float] | None = None
    truncated: list[str] | None = None  # the sides cut to the model's limit
    reset: bool | None = None  # reset: document (the state returned to the base's before this segment)
    non_finite: list[str] | None = None
    effort: dict[str, Any] | None = None  # protocol interactive: each level's simulated translator (simpe.loop.interactive)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The record as written, keys in the documented order (the loop's records are byte for byte what they were)."""
        out: dict[str, Any] = {key: getattr(self, key) for key in _HEAD}
        out.update({key: getattr(self, key) for key in _OPTIONAL_MIDDLE if getattr(self, key) is not None})
        out["hyp_score"] = self.hyp_score
        out.update({key: getattr(self, key) for key in _SCORED})
        if self.ref_pieces is not None:
            out["ref_pieces"] = self.ref_pieces
        out.update({key: getattr(self, key) for key in _TAIL})
        out.update({key: getattr(self, key) for key in _OPTIONAL_TAIL if getattr(self, key) is not None})
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "record") -> SegmentRecord:
        """A logged record read back; ``RunDirError`` naming ``where`` for a missing key or a value of the wrong type."""
        if not isinstance(data, dict):
            raise RunDirError(f"{where} is not a JSON object")
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            kind = _TYPES.get(key)
            if kind is None:
                extra[key] = value
                continue
            if value is not None and not _is(value, kind):
                raise RunDirError(f"{where}: {key!r} should be {_NAMES[kind]}, got {str(value)[:60]!r}")
            values[key] = value
        missing = [key for key in _REQUIRED if values.get(key) is None]
        if missing:
            raise RunDirError(f"{where} lacks {', '.join(missing)}; a segment record names its index, source, reference and hypothesis")
        for key in ("metrics", "stats", "cumulative"):
            if values.get(key) is None:
                values.pop(key, None)
        return cls(**values, extra=extra)


_REQUIRED = ("index", "source", "reference", "hypothesis")
_HEAD = ("index", "doc_id", "seg_id", "source", "reference", "hypothesis")
_OPTIONAL_MIDDLE = ("mt", "examples", "info")
_SCORED = ("hyp_tokens", "ref_tokens", "metrics", "stats", "cumulative")
_TAIL = ("update", "seconds")
_OPTIONAL_TAIL = ("truncated", "reset", "non_finite", "effort")
_TYPES: dict[str, Any] = {f.name: f.type for f in dataclasses.fields(SegmentRecord) if f.name != "extra"}
_KINDS = {"int": int, "str": str, "float": (int, float), "bool": bool, "dict": dict, "list": list}
_NAMES = {"int": "an integer", "str": "a string", "float": "a number", "bool": "true or false", "dict": "a JSON object",
          "list": "a list"}
_TYPES = {name: next(k for k in _KINDS if str(kind).startswith(k)) for name, kind in _TYPES.items()}


def _is(value: Any, kind: str) -> bool:
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, _KINDS[kind])


def check_schema(env: dict[str, Any], path: Path) -> int:
    """The schema of a run's records from its env.json (1 when it names none); refuse one newer than this simpe's."""
    version = env.get(SCHEMA_KEY, 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RunDirError(f"{path}: {SCHEMA_KEY} should be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise RunDirError(f"{path} holds segment records of schema {version}; this simpe reads schema {SCHEMA_VERSION} "
                          "and older: update simpe to read it")
    return version
