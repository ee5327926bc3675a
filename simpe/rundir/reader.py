"""Reading run directories: one run (``load_run``), or a comparable group of them (``load_group``).

A run directory (docs/run-format.md, names in layout.py) holds one adaptation method on one
stream. This module loads what a run logged, checks that a set of runs is comparable (same
stream, exactly one baseline, complete unless allowed otherwise) and groups them, and owns
the one JSON-lines reader (``read_jsonl``) that the writer uses too. It never writes
(writer.py does) and never translates or loads a model.
"""
from __future__ import annotations

import fcntl
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from simpe.errors import RunDirError
from simpe.rundir.layout import CONFIG_FILE, DONE_FILE, ENV_FILE, LOCK_FILE, SEGMENTS_FILE, SNAPSHOTS_FILE, STORE_FILE, SUMMARY_FILE, groups_named, is_run_dir
from simpe.rundir.record import SegmentRecord, check_schema, check_snapshot, check_summary
from simpe.textfile import read_bytes
from simpe.values import load_yaml

logger = logging.getLogger(__name__)

BASELINE = "baseline"  # the one baseline: the method every other run of a group is compared with, and the preset of
#   that name which `simpe sweep` adds per stream so that every group has it (simpe.sweep imports it from here)


@dataclass
class Run:
    """What one run directory logged.

    path: the run directory. name: the adapter name (legend and table label).
    method: the adaptation method (``baseline``, ``full``, ``lasso`` ...).
    config: config.yaml as a dict. summary: summary.json (None for an incomplete run
    that has not written it). segments: segments.jsonl records in stream order.
    snapshots: snapshots.jsonl records (empty when the run took none).
    complete: True when DONE exists. env: env.json (empty when absent).
    """

    path: Path
    name: str
    method: str
    config: dict[str, Any]
    summary: dict[str, Any] | None
    segments: list[dict[str, Any]]
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The adapter name, marked ``(incomplete)`` when the run has no DONE."""
        return self.name if self.complete else f"{self.name} (incomplete)"

    @property
    def num_segments(self) -> int:
        """Number of segments logged in segments.jsonl."""
        return len(self.segments)

    @property
    def stream_sha256(self) -> str | None:
        """The stream hash the loop wrote (summary.json at the end, env.json at the start), or None."""
        for source in (self.summary or {}, self.env):
            if source.get("stream_sha256"):
                return str(source["stream_sha256"])
        return None


@dataclass
class RunGroup:
    """Runs of several methods on one stream, checked to be comparable.

    baseline: the one run of method ``baseline``. methods: the other runs, in the order
    given (a group folder: sorted by name). num_segments: the segments every output uses,
    all of them when every run is complete, else the prefix every run has logged.
    stream_segments: the stream's length when a complete run tells it, else None.
    group_dir: the folder outputs go under by default (``compare/``, ``plots/``).
    """

    baseline: Run
    methods: list[Run]
    num_segments: int
    stream_segments: int | None
    group_dir: Path

    @property
    def runs(self) -> list[Run]:
        """The baseline first, then the other methods."""
        return [self.baseline, *self.methods]

    @property
    def truncated(self) -> bool:
        """True when outputs cover only a prefix of what some run logged (incomplete runs)."""
        return any(run.num_segments != self.num_segments or not run.complete for run in self.runs)

    @property
    def name(self) -> str:
        return self.group_dir.name


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} (not JSON)")


def parse_line(line: str) -> dict[str, Any]:
    """One record of a JSON-lines file, strictly: NaN and Infinity are refused (ValueError)."""
    record = json.loads(line, parse_constant=_reject_constant)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


def _lines(path: Path) -> list[bytes]:
    lines = read_bytes(path, "run log", error=RunDirError).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        return parse_line(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"invalid UTF-8 at byte {err.start}") from None
    except json.JSONDecodeError as err:
        raise ValueError(err.msg) from None


def read_jsonl(path: Path, tolerate_torn_tail: bool = False) -> list[dict[str, Any]]:
    """Records of a JSON-lines file (none when it does not exist).

    The one rule for a bad line: a torn *last* line (a writer killed mid-line) is dropped,
    with a warning, when ``tolerate_torn_tail`` (an incomplete run, or a run being resumed);
    any other line that is not valid strict JSON (NaN and Infinity are not) is a
    RunDirError naming it.
    """
    if not path.exists():
        return []
    records: list[dict[str, Any]] = []
    lines = _lines(path)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(_parse(line))
        except ValueError as err:
            if tolerate_torn_tail and number == len(lines):
                logger.warning("%s: dropped a torn last line %d (the run was interrupted while writing it)", path, number)
                break
            raise RunDirError(f"{path}: line {number} is not valid JSON ({err})") from None
    return records


def valid_prefix(path: Path, indexed: bool = False) -> list[dict[str, Any]]:
    """The records before the first bad line of a JSON-lines file (what a resume keeps), with a warning for what goes.

    indexed: a record whose ``index`` is not its position also ends the prefix (segments.jsonl).
    """
    if not path.exists():
        return []
    records: list[dict[str, Any]] = []
    lines = _lines(path)
    for number, line in enumerate(lines, 1):
        try:
            record = _parse(line)
            if indexed and record.get("index") != len(records):
                raise ValueError(f"index {record.get('index')!r} where {len(records)} was expected")
        except ValueError as err:
            logger.warning("%s: line %d is not a valid record (%s); it and the %d lines after it are dropped",
                           path, number, err, len(lines) - number)
            break
        records.append(record)
    return records


def lock_holder(path: Path) -> str | None:
    """Who is writing run ``path`` (what its lock file says), or None when no live process holds the lock.

    A lock file alone means nothing: a killed writer leaves it; the kernel lock goes with the process.
    """
    lock = Path(path) / LOCK_FILE
    if not lock.is_file():
        return None
    with open(lock, encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "another process"
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def find_runs(group_dir: Path) -> list[Path]:
    """Run directories directly under a group folder ``runs/<dataset>-<split>--<model>--<N>seg/``.

    Returns them sorted by folder name; raises RunDirError when the folder holds none.
    """
    group_dir = Path(group_dir)
    if not group_dir.is_dir():
        raise RunDirError(f"{group_dir} is not a folder")
    found = sorted(p for p in group_dir.iterdir() if is_run_dir(p))
    if not found:
        raise RunDirError(f"{group_dir} holds no run directories (subfolders with {SEGMENTS_FILE})")
    return found


def run_store(path: Path) -> Path:
    """The per-user store file of a complete run (its final adapted state); RunDirError when it has none."""
    store = Path(path) / STORE_FILE
    if not store.is_file():
        raise RunDirError(f"run {path} has no {STORE_FILE} (runs made before simpe wrote per-user stores have none; run it again)")
    return store


def run_env(path: Path) -> dict[str, Any]:
    """A run's env.json without reading its logs (empty when it is missing or not a JSON object)."""
    try:
        env = json.loads((Path(path) / ENV_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return env if isinstance(env, dict) else {}


def finished_at(path: Path) -> float | None:
    """When a complete run finished (its DONE file's modification time, seconds since the epoch), else None."""
    try:
        return (Path(path) / DONE_FILE).stat().st_mtime
    except OSError:
        return None


def load_run(path: Path, allow_incomplete: bool = False) -> Run:
    """Load one run directory; refuse an incomplete one (no DONE) unless ``allow_incomplete``.

    path: a run directory (holding segments.jsonl). Raises RunDirError naming the run for
    a missing or unreadable file, an incomplete run that is not allowed, or a complete run
    whose summary disagrees with its segments.
    """
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path} is not a run directory (no such folder)")
    if not (path / SEGMENTS_FILE).is_file():
        raise RunDirError(f"{path} is not a run directory (no {SEGMENTS_FILE})")
    complete = (path / DONE_FILE).exists()
    if not complete and not allow_incomplete:
        holder = lock_holder(path)
        writing = f" and is being written by {holder}" if holder else " and no process is writing it (it was interrupted)"
        raise RunDirError(
            f"run {path} is incomplete (no {DONE_FILE}){writing}; finish (resume) the simulation, "
            f"or pass --allow-incomplete to include it, marked (incomplete), compared on the segments every run has logged")

    config: dict[str, Any] = {}
    if (path / CONFIG_FILE).is_file():
        try:
            loaded = load_yaml((path / CONFIG_FILE).read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:
            raise RunDirError(f"{path / CONFIG_FILE} is not valid UTF-8 (byte {err.start})") from None
        except yaml.YAMLError as err:
            raise RunDirError(f"{path / CONFIG_FILE} is not valid YAML: {' '.join(str(err).split())}") from None
        config = loaded if isinstance(loaded, dict) else {}
    elif complete:
        raise RunDirError(f"complete run {path} has no {CONFIG_FILE}")

    summary: dict[str, Any] | None = None
    if (path / SUMMARY_FILE).is_file():
        try:
            summary = json.loads((path / SUMMARY_FILE).read_text(encoding="utf-8"), parse_constant=_reject_constant)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, a non-finite constant
            raise RunDirError(f"{path / SUMMARY_FILE} is not valid JSON ({err})") from None
        if not isinstance(summary, dict):
            raise RunDirError(f"{path / SUMMARY_FILE} is not a JSON object")
        check_summary(summary, str(path / SUMMARY_FILE))
    elif complete:
        raise RunDirError(f"complete run {path} has no {SUMMARY_FILE}")

    env: dict[str, Any] = {}
    if (path / ENV_FILE).is_file():
        try:
            loaded_env = json.loads((path / ENV_FILE).read_text(encoding="utf-8"))
            env = loaded_env if isinstance(loaded_env, dict) else {}
        except ValueError:  # JSONDecodeError, UnicodeDecodeError
            logger.warning("%s is not valid JSON; ignored", path / ENV_FILE)
    check_schema(env, path / ENV_FILE)  # a run of a newer record schema is refused; one without it is schema 1

    segments = read_jsonl(path / SEGMENTS_FILE, tolerate_torn_tail=not complete)
    if not segments:
        raise RunDirError(f"run {path} has logged no segments")
    for position, record in enumerate(segments):
        SegmentRecord.from_dict(record, f"{path / SEGMENTS_FILE}: record {position}")  # the types of what it holds
        if record.get("index") != position:
            raise RunDirError(f"{path / SEGMENTS_FILE}: record {position} has index {record.get('index')!r}; "
                              f"expected the segments in stream order from 0")
    if complete and summary is not None and summary.get("segments") not in (None, len(segments)):
        raise RunDirError(f"run {path}: summary.json says {summary['segments']} segments, "
                          f"{SEGMENTS_FILE} holds {len(segments)}")

    snapshots: list[dict[str, Any]] = []
    if (path / SNAPSHOTS_FILE).is_file():
        snapshots = read_jsonl(path / SNAPSHOTS_FILE, tolerate_torn_tail=not complete)
        for position, snapshot in enumerate(snapshots):
            check_snapshot(snapshot, f"{path / SNAPSHOTS_FILE}: snapshot {position}")

    # what the loop writes: summary adapter/method at the end, config adapter and method.name at the start
    name = str((summary or {}).get("adapter") or config.get("adapter") or path.name)
    section = config.get("method")
    method = str((summary or {}).get("method") or (section.get("name") if isinstance(section, dict) else None) or name)
    return Run(path=path, name=name, method=method, config=config, summary=summary,
               segments=segments, snapshots=snapshots, complete=complete, env=env)


def resolve_group(path: Path) -> Path:
    """``path``, or where it names a group by its readable name only (``runs/libreoffice-stream--demo-en-de--500seg``,
    as the Makefile's GROUP does) the one group folder ``<path>--<digest>``; RunDirError naming them when several
    groups (other data, models or memories) share that name."""
    path = Path(path)
    if path.exists():
        return path
    found = groups_named(path)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise RunDirError(f"{path} names {len(found)} groups of other data, models or memories: "
                          f"{', '.join(str(p) for p in found)}; give one of them")
    return path


def expand_run_paths(paths: Iterable[Path]) -> list[Path]:
    """Run directories from a mix of run directories and group folders (all runs inside; a group's readable name
    stands for its one folder, ``resolve_group``)."""
    expanded: list[Path] = []
    for path in map(resolve_group, paths):
        if is_run_dir(path):
            expanded.append(path)
        elif path.is_dir():
            expanded.extend(find_runs(path))
        else:
            raise RunDirError(f"{path} is neither a run directory (with {SEGMENTS_FILE}) nor a group folder of runs")
    return expanded


def _check_same_stream(runs: list[Run]) -> int | None:
    """Refuse runs made on different streams; return the stream length if a complete run tells it."""
    hashed = [(run, run.stream_sha256 or "") for run in runs if run.stream_sha256]
    for run, digest in hashed[1:]:
        first, first_digest = hashed[0]
        if digest != first_digest:
            raise RunDirError(
                f"runs {first.path} and {run.path} were made on different streams "
                f"(stream sha256 {first_digest[:12]}… vs {digest[:12]}…); compare only runs of one stream")
    complete = [run for run in runs if run.complete]
    for run in complete[1:]:
        if run.num_segments != complete[0].num_segments:
            raise RunDirError(f"runs {complete[0].path} ({complete[0].num_segments} segments) and {run.path} "
                              f"({run.num_segments} segments) were made on different streams (different lengths)")
    stream_segments = complete[0].num_segments if complete else None
    if stream_segments is not None:
        for run in runs:
            if run.num_segments > stream_segments:
                raise RunDirError(f"run {run.path} logged {run.num_segments} segments, more than the "
                                  f"{stream_segments} of the complete runs: different streams")
    # The hash covers the whole stream; the per-segment texts also catch an incomplete run
    # (possibly without a hash yet) and a loop that wrote no hash.
    reference = runs[0]
    for run in runs[1:]:
        for position in range(min(reference.num_segments, run.num_segments)):
            mine, theirs = run.segments[position], reference.segments[position]
            for key in ("source", "reference"):
                if key == "reference" and ("human" in mine or "human" in theirs):
                    continue  # a person's run (simpe serve): its references are their post-edits, not the stream's
                if mine.get(key) != theirs.get(key):
                    raise RunDirError(
                        f"runs {reference.path} and {run.path} were made on different streams: "
                        f"segment {position} has a different {key} ({theirs.get(key)!r:.60} vs {mine.get(key)!r:.60})")
    return stream_segments


def load_group(paths: Iterable[Path], allow_incomplete: bool = False, baseline: str | None = None) -> RunGroup:
    """Load and check runs for comparison: one stream, exactly one baseline, unique names.

    paths: run directories and/or group folders (a group folder means every run in it).
    allow_incomplete: include runs without DONE (marked ``(incomplete)``); every output
    then covers the segments all runs have logged. Raises RunDirError otherwise.
    baseline: the name of the run the others are compared with (default: the one run of method ``baseline``;
    among translators' runs only, the first); any
    other run of method ``baseline`` is then compared like a method (a baseline decoding under a glossary's constraints).
    """
    paths = [resolve_group(Path(path)) for path in paths]
    if not paths:
        raise RunDirError("no runs given")
    run_paths = expand_run_paths(paths)
    seen: dict[Path, Path] = {}
    for path in run_paths:
        if path.resolve() in seen:
            raise RunDirError(f"run {path} is given twice")
        seen[path.resolve()] = path
    runs = [load_run(path, allow_incomplete=allow_incomplete) for path in run_paths]

    names: dict[str, Run] = {}
    for run in runs:
        if run.name in names:
            raise RunDirError(f"two runs are named {run.name!r} ({names[run.name].path} and {run.path}); "
                              f"give runs with distinct adapter names")
        names[run.name] = run
    if baseline is not None:
        if baseline not in names:
            raise RunDirError(f"--baseline {baseline!r} names no run given; the runs: {', '.join(names)}")
        baselines = [names[baseline]]
    else:
        baselines = [run for run in runs if run.method == BASELINE]
        if not baselines and runs and all(run.segments and "human" in run.segments[0] for run in runs):
            baselines = [runs[0]]  # translators' runs only (simpe serve; e.g. a project of a partly filled XLIFF file)
    if len(baselines) != 1:
        given = ", ".join(f"{run.name} (method {run.method}, {run.path})" for run in runs)
        how_many = "no run" if not baselines else f"{len(baselines)} runs"
        raise RunDirError(f"exactly one run must be the baseline (method {BASELINE!r}); "
                          f"{how_many} of method {BASELINE!r} among the runs given: {given}"
                          + ("; --baseline NAME picks one" if baselines else ""))
    if len(runs) < 2:
        raise RunDirError(f"only the baseline ({runs[0].path}) was given; give at least one adapted run to compare")
    baseline = baselines[0]
    methods = [run for run in runs if run is not baseline]
    ordered = [baseline, *methods]
    stream_segments = _check_same_stream(ordered)
    _check_same_memory(ordered)
    models = {str((run.summary or {}).get("model")) for run in ordered if run.summary and run.summary.get("model")}
    files = {str(_identity(run).get("model")) for run in ordered if _identity(run).get("model")}  # two folders of one name
    if len(models) > 1 or len(files) > 1:
        named = sorted(models) + ([f"model files {digest}" for digest in sorted(files)] if len(files) > 1 else [])
        logger.warning("the runs use different models (%s); comparing them on the same stream anyway", ", ".join(named))

    num_segments = min(run.num_segments for run in ordered)
    group_dir = _group_dir(paths, ordered)
    group = RunGroup(baseline=baseline, methods=methods, num_segments=num_segments,
                     stream_segments=stream_segments, group_dir=group_dir)
    if group.truncated:
        total = f" of {stream_segments}" if stream_segments else ""
        logger.warning("incomplete runs included: every output covers the first %d%s segments", num_segments, total)
    return group


def _identity(run: Run) -> dict[str, Any]:
    """What the run's group compares, as its env.json records it (``simpe.loop.plan.group_identity``; {} before)."""
    found = (run.env or {}).get("group")
    return found if isinstance(found, dict) else {}


def _check_same_memory(runs: list[Run]) -> None:
    """Refuse runs warm-started on different translation memories (or one warm-started and one not): their
    difference would be the memories', not the methods'. Runs that record no group identity are not checked."""
    recorded = [(run, _identity(run).get("memory")) for run in runs if "memory" in _identity(run)]
    for run, memory in recorded[1:]:
        first, first_memory = recorded[0]
        if memory != first_memory:
            what = lambda m: f"memory {m[:12]}…" if m else "no warm start"  # noqa: E731
            raise RunDirError(f"runs {first.path} and {run.path} start from different translation memories "
                              f"({what(first_memory)} vs {what(memory)}); compare only runs of one group")


def _group_dir(paths: list[Path], runs: list[Run]) -> Path:
    """The folder outputs go under: the one group folder given, else the baseline's group folder."""
    if len(paths) == 1 and not is_run_dir(paths[0]):
        return paths[0]
    return runs[0].path.parent
