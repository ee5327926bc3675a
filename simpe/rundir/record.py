"""The segment record: one line of ``segments.jsonl``, as one dataclass with its schema version.

The loop builds a ``SegmentRecord`` per segment (``simpe.loop.run``, with the scorer's part from
``simpe.metrics.online.OnlineScorer.add``); ``RunDir.append_segment`` writes it (``to_dict``: the keys
in the order docs/run-format.md shows, the optional ones only when set); ``load_run`` checks every
logged line with ``from_dict`` (one line naming the file and the record for a wrong type).

``SCHEMA_VERSION`` is the record layout's version. It is written once per run, as
``segment_schema`` in ``env.json`` (so the records themselves are what they were: a run written
before the version existed has the same records and no ``segment_schema``, and reads as schema 1).
A run naming a newer schema than this simpe knows is refused in one line.

What compare, plot and report read is type-checked when a run is loaded, so a record edited or damaged by hand is
named in one line instead of read as a blank cell or a traceback: a segment record's scores (``metrics``,
``cumulative``, ``stats``, ``seconds`` and the update's numbers: ``check_scores``), ``summary.json``
(``check_summary``) and each ranking snapshot (``check_snapshot``).
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
    terms: list[Any] | None = None  # data.glossary: [source term, occurrence, hit] per counted term (simpe.terms.score)
    terms_fixed: list[str] | None = None  # data.glossary: the source terms the post-edit fixed (missed, then given)
    constrained: dict[str, Any] | None = None  # constrained_beam: the target terms constrained ("terms") and "dropped"
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
        check_scores(values, where)
        for key in ("metrics", "stats", "cumulative"):
            if values.get(key) is None:
                values.pop(key, None)
        return cls(**values, extra=extra)


_REQUIRED = ("index", "source", "reference", "hypothesis")
_HEAD = ("index", "doc_id", "seg_id", "source", "reference", "hypothesis")
_OPTIONAL_MIDDLE = ("mt", "examples", "info")
_SCORED = ("hyp_tokens", "ref_tokens", "metrics", "stats", "cumulative")
_TAIL = ("update", "seconds")
_OPTIONAL_TAIL = ("truncated", "reset", "non_finite", "effort", "terms", "terms_fixed", "constrained")
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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    return repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."


def _check_numbers(mapping: Any, where: str, key: str, lists: bool = False) -> None:
    """Every value of ``mapping`` (``where``'s ``key``) a number or null (``lists``: or a list of them)."""
    if mapping is None:
        return
    if not isinstance(mapping, dict):
        raise RunDirError(f"{where}: {key!r} should be a JSON object, got {_show(mapping)}")
    for name, value in mapping.items():
        ok = value is None or _number(value) or (lists and isinstance(value, list) and all(v is None or _number(v) for v in value))
        if not ok:
            wanted = "a number, null or a list of numbers" if lists else "a number or null"
            raise RunDirError(f"{where}: {key}.{name} should be {wanted}, got {_show(value)}")


UPDATE_NUMBERS = ("loss_before", "ppl_before", "loss_after", "ppl_after", "repetitions", "penalty", "replayed",
                  "preference_loss", "preference_margin")


def check_scores(record: dict[str, Any], where: str) -> None:
    """A segment record's figures as compare, plot and report read them: ``metrics`` numbers or R's [matched, types]
    lists, ``stats`` lists of numbers, ``cumulative`` and ``seconds`` numbers, the update's own numbers; RunDirError
    naming ``where`` and the key otherwise."""
    _check_numbers(record.get("metrics"), where, "metrics", lists=True)
    _check_numbers(record.get("cumulative"), where, "cumulative")
    _check_numbers(record.get("seconds"), where, "seconds")
    stats = record.get("stats")
    _check_numbers(stats, where, "stats", lists=True)
    for name, value in (stats or {}).items():
        if not isinstance(value, list):
            raise RunDirError(f"{where}: stats.{name} should be a list of numbers, got {_show(value)}")
    update = record.get("update") or {}
    _check_numbers({k: update[k] for k in UPDATE_NUMBERS if k in update}, where, "update")


# summary.json: what compare, plot, report and the replication read, by kind (other keys are the run's facts)
_SUMMARY_STRINGS = ("method", "adapter", "dataset", "split", "model", "stream_sha256", "reset")
_SUMMARY_COUNTS = ("segments", "adapted_parameters", "store_bytes", "store_file_bytes")


def check_summary(summary: dict[str, Any], where: str) -> None:
    """``summary.json``'s figures: ``corpus`` numbers (or null), ``segment_comet`` a list of numbers, ``signatures``
    strings, the counts integers, the names strings, ``seconds`` and ``updates`` numbers; RunDirError otherwise."""
    for key in _SUMMARY_STRINGS:
        if summary.get(key) is not None and not isinstance(summary[key], str):
            raise RunDirError(f"{where}: {key} should be a string, got {_show(summary[key])}")
    for key in _SUMMARY_COUNTS:
        value = summary.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise RunDirError(f"{where}: {key} should be an integer >= 0, got {_show(value)}")
    for key in ("corpus", "seconds", "updates"):
        _check_numbers(summary.get(key), where, key)
    comet = summary.get("segment_comet")
    if comet is not None and not (isinstance(comet, list) and all(v is None or _number(v) for v in comet)):
        raise RunDirError(f"{where}: segment_comet should be a list of numbers, got {_show(comet)}")
    signatures = summary.get("signatures")
    if signatures is not None and not (isinstance(signatures, dict) and all(isinstance(v, str) for v in signatures.values())):
        raise RunDirError(f"{where}: signatures should map each metric to its signature string, got {_show(signatures)}")


_SNAPSHOT_STRINGS = ("quality", "gain", "ties")  # the ranking settings a snapshot names; every other value is a figure
_SNAPSHOT_STATS = "forget.stats"  # the forgetting probe's per-sentence statistics: {metric: [[numbers], ...]}


def check_snapshot(snapshot: Any, where: str) -> None:
    """One line of ``snapshots.jsonl``: ``segment`` an integer >= 0, every figure a number, true/false or null (the
    ranking settings strings); RunDirError otherwise."""
    if not isinstance(snapshot, dict):
        raise RunDirError(f"{where} is not a JSON object")
    segment = snapshot.get("segment")
    if not (isinstance(segment, int) and not isinstance(segment, bool) and segment >= 0):
        raise RunDirError(f"{where}: segment should be an integer >= 0 (the segments done), got {_show(segment)}")
    for key, value in snapshot.items():
        if key in _SNAPSHOT_STRINGS:
            if value is not None and not isinstance(value, str):
                raise RunDirError(f"{where}: {key} should be a string, got {_show(value)}")
        elif key == _SNAPSHOT_STATS:
            if not (isinstance(value, dict) and all(isinstance(rows, list) and all(
                    isinstance(row, list) and all(_number(v) for v in row) for row in rows) for rows in value.values())):
                raise RunDirError(f"{where}: {key} should map each metric to per-sentence lists of numbers, got {_show(value)}")
        elif not (value is None or isinstance(value, bool) or _number(value)):
            raise RunDirError(f"{where}: {key} should be a number, got {_show(value)}")
