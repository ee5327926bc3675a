"""What a tracker logs of a run: its config as flat parameters, its figures as (name, step, value) points, its tags.

Every tracker logs the same names (docs/tracking.md lists them), derived here from what the run logged
(``simpe.rundir.reader.Run``; the files: docs/run-format.md):

* per segment, step = the segment's ``index``: ``segment/<metric>`` (the record's ``metrics``; an R metric's
  ``[matched, types]`` as their ratio, left out where ``types`` is 0, as the figure is undefined there),
  ``segment/hyp_score``, ``segment/examples``, ``segment/comet`` (summary.json's ``segment_comet``),
  ``cumulative/<metric>``, ``update/<field>``, ``seconds/<phase>`` and ``effort/<level>/<count>``;
* per ranking snapshot, step = the snapshot's ``segment`` (the segments done when it was taken):
  ``snapshot/<figure>`` (``top.krg``, ``mc.kqrg``, ``forget.bleu`` ...; not its settings, which are the config's);
* once, step = the run's number of segments: ``corpus/<metric>`` (summary.json's ``corpus``) and
  ``summary/<dotted key>`` for the summary's other numbers (``adapted_parameters``, ``seconds.translate`` ...).

A ``null`` (undefined, or a non-finite number the writer replaced) is not a point. Names keep simpe's metric names
but for the characters MLflow refuses in a name (it allows letters, digits, ``_ - . : /`` and spaces): ``+`` is
spelt ``plus`` (``r0+1`` -> ``r0plus1``, ``chrf++`` -> ``chrfplusplus``), any other becomes ``_``.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.rundir.layout import CONFIG_FILE, DONE_FILE, SEGMENTS_FILE, SNAPSHOTS_FILE, SUMMARY_FILE
from simpe.rundir.reader import Run

SEGMENT_SECTIONS = {"metrics": "segment", "cumulative": "cumulative", "update": "update", "seconds": "seconds",
                    "effort": "effort"}  # a record's section -> its names' prefix
SEGMENT_NUMBERS = {"hyp_score": "segment/hyp_score", "examples": "segment/examples"}  # a record's top-level numbers
SNAPSHOT_SETTINGS = {"segment", "repeats", "probe_size", "k", "mc.samples"}  # a snapshot's keys that are not figures
SUMMARY_OWN = {"corpus", "signatures", "segment_comet", "segments"}  # summary keys logged otherwise, or the step
SUMMARY_TAGS = ("method", "adapter", "dataset", "split", "model", "reset", "stream_sha256")
ENV_TAGS = ("git_commit", "git_dirty", "device", "cuda", "torch_threads", "cpu_capability", "cpu", "host", "python",
            "platform", "segment_schema")
DIGEST_FILES = (CONFIG_FILE, SEGMENTS_FILE, SNAPSHOTS_FILE, SUMMARY_FILE)
_REFUSED = re.compile(r"[^\w.\- :/]")


@dataclass(frozen=True)
class Point:
    """One value of one figure: ``name`` at ``step``."""

    name: str
    step: int
    value: float


def tracker_name(name: str) -> str:
    """``name`` as every tracker logs it: ``+`` spelt ``plus``, any other character MLflow refuses as ``_``."""
    return _REFUSED.sub("_", name.replace("+", "plus"))


def _number(value: Any) -> float | None:
    """A JSON number as a float; None for null, booleans, strings and containers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _leaves(prefix: str, value: Any, separator: str = "/") -> Iterator[tuple[str, float]]:
    """The numeric leaves under ``value`` as (``prefix<separator>key...``, number); lists are not leaves."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(f"{prefix}{separator}{key}" if prefix else str(key), inner, separator)
        return
    number = _number(value)
    if number is not None:
        yield prefix, number


def segment_value(value: Any) -> float | None:
    """A record's per-segment metric: a number, or an R metric's ``[matched, types]`` as their ratio (None at 0 types)."""
    if isinstance(value, list) and len(value) == 2:
        matched, types = _number(value[0]), _number(value[1])
        return None if matched is None or not types else matched / types
    return _number(value)


def segment_points(record: dict[str, Any]) -> Iterator[Point]:
    """The figures of one segments.jsonl record, at step = its index."""
    step = int(record["index"])
    for key, name in SEGMENT_NUMBERS.items():
        number = _number(record.get(key))
        if number is not None:
            yield Point(name, step, number)
    for section, prefix in SEGMENT_SECTIONS.items():
        values = record.get(section)
        if not isinstance(values, dict):
            continue
        if section == "metrics":
            for metric, value in values.items():
                number = segment_value(value)
                if number is not None:
                    yield Point(tracker_name(f"{prefix}/{metric}"), step, number)
        else:
            for name, number in _leaves(prefix, values):
                yield Point(tracker_name(name), step, number)


def snapshot_points(snapshot: dict[str, Any]) -> Iterator[Point]:
    """The figures of one ranking snapshot (snapshots.jsonl), at step = the segments done when it was taken."""
    step = int(snapshot["segment"])
    for key, number in _leaves("", {k: v for k, v in snapshot.items() if k not in SNAPSHOT_SETTINGS}, "."):
        yield Point(tracker_name(f"snapshot/{key}"), step, number)


def summary_points(summary: dict[str, Any], num_segments: int) -> Iterator[Point]:
    """summary.json's figures: ``corpus/*`` and ``summary/*`` at step = the run's segments, ``segment/comet`` per segment."""
    for name, number in _leaves("corpus", summary.get("corpus") or {}):
        yield Point(tracker_name(name), num_segments, number)
    comet = summary.get("segment_comet")
    if isinstance(comet, list):
        for step, value in enumerate(comet):
            number = _number(value)
            if number is not None:
                yield Point("segment/comet", step, number)
    rest = {key: value for key, value in summary.items() if key not in SUMMARY_OWN}
    for key, number in _leaves("", rest, "."):
        yield Point(tracker_name(f"summary/{key}"), num_segments, number)


def points(run: Run) -> list[Point]:
    """Every figure of a complete run: its segments', its snapshots' and its summary's, in that order."""
    out = [point for record in run.segments for point in segment_points(record)]
    out += [point for snapshot in run.snapshots for point in snapshot_points(snapshot)]
    out += list(summary_points(run.summary or {}, run.num_segments))
    return out


def flat_config(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The resolved config as dotted keys (``update.lr``) -> scalar values (str, int, float, bool or None).

    A list, and an empty mapping (``method.params: {}``), is one value, as compact JSON (``["bleu","chrf","ter"]``).
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_config(value, f"{name}."))
        elif isinstance(value, (dict, list, tuple)):
            out[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            out[name] = value
    return out


def param_text(value: Any) -> str:
    """A config value as a parameter's text, spelt as YAML and ``--set`` spell it (``true``, ``null``, ``0.01``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def params(config: dict[str, Any]) -> dict[str, str]:
    """The resolved config as flat parameters: tracker names of the dotted keys -> their values' text."""
    return {tracker_name(key): param_text(value) for key, value in flat_config(config).items()}


def run_digest(path: Path) -> str:
    """16 hex digits of the SHA-256 of what a run logged (config, segments, snapshots, summary): the same digest
    means the same run, so logging it again is skipped; a run made again gets another digest."""
    digest = hashlib.sha256()
    for name in DIGEST_FILES:
        file = Path(path) / name
        digest.update(name.encode() + b"\0")
        if file.is_file():
            digest.update(file.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def signatures(run: Run) -> dict[str, str]:
    """The metric signatures of summary.json (sacreBLEU's, SBLEU's, R's; the raw MT's TER as ``raw_mt``), by name."""
    summary = run.summary or {}
    out = {str(name): str(sig) for name, sig in (summary.get("signatures") or {}).items() if sig}
    raw_mt = summary.get("raw_mt")
    if isinstance(raw_mt, dict) and raw_mt.get("signature"):
        out["raw_mt"] = str(raw_mt["signature"])
    return out


def tags(run: Run, digest: str) -> dict[str, str]:
    """A run's tags: ``signature.<metric>``, the run's identity (``simpe.run_path``, ``simpe.run_digest``), what
    summary.json names (method, dataset, model, stream hash ...) and env.json's facts (commit, device, code
    fingerprint, ``simpe.package.<name>`` versions)."""
    out = {tracker_name(f"signature.{name}"): sig for name, sig in signatures(run).items()}
    out["simpe.run_path"] = str(Path(run.path).resolve())
    out["simpe.run_digest"] = digest
    out["simpe.segments"] = str(run.num_segments)
    summary, env = run.summary or {}, run.env
    out.update({f"simpe.{key}": param_text(summary[key]) for key in SUMMARY_TAGS if key in summary})
    out.update({f"simpe.{key}": param_text(env[key]) for key in ENV_TAGS if key in env})
    code = env.get("code")
    if isinstance(code, dict) and code.get("fingerprint"):
        out["simpe.code_fingerprint"] = str(code["fingerprint"])
    packages = env.get("packages")
    if isinstance(packages, dict):
        out.update({tracker_name(f"simpe.package.{name}"): str(version) for name, version in packages.items()})
    return out


def times(run: Run) -> tuple[float, float]:
    """When the run started (its config.yaml written, before the first segment) and finished (its DONE), in seconds."""
    path = Path(run.path)
    end = (path / DONE_FILE).stat().st_mtime
    start = (path / CONFIG_FILE).stat().st_mtime if (path / CONFIG_FILE).is_file() else end
    return min(start, end), end
