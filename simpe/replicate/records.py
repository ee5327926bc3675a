"""The replication page's records: what ``simpe replicate`` keeps of its runs and studies, and the evidence read back.

The page is always judged from these records, never from ``runs/``, so that ``simpe replicate --report-only``
rebuilds it byte for byte from a clone. The folder (``docs/replication/records/`` for ``docs/replication.md``)::

    calls.json                  every call of ``simpe replicate`` that ran parts of the plan: the command line, the
                                commit, when it started, its wall time (null when it was cut off), the machine
    code.json                   {code fingerprint: {file: sha256[:16]}} for every fingerprint a record names
    <experiment>/<run>.json     one loop run: its resolved config, summary, snapshots, code fingerprint, the call
                                that ran it, and the per-segment counts the verdicts resample, one column per line
    studies.json, mbr-sensitivity.json, systems.json
                                a study's settings, figures (with their per-sentence values), code and call

A run's columns are the statistics of ``SEGMENT_KEYS`` (BLEU's and TER's, R's matched and types for words, novel
words and subwords, and with a glossary the term counts and R outside the glossary's terms) and the repeated-error
counts, and its segments' document ids (run-length encoded, so a bootstrap
can resample documents); no hypotheses, no weights. A column that follows from others is left out when it does for
every segment (BLEU's n-gram totals from the hypothesis length, R0+1 as R0 plus R1, sentence BLEU from BLEU's
statistics) and derived when read; ``export_run`` checks that the record gives back every statistic the verdicts read,
exactly. Records written before TER's columns and the document ids lack them (the page says what awaits them).
A run's record is written only when every run of its experiment is complete; otherwise the experiment's earlier
records stay. This module is the only code that writes or reads the folder; it runs nothing.
"""
from __future__ import annotations

import datetime
import json
import logging
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.errors import RunDirError
from simpe.paths import REPO_ROOT
from simpe.rundir.reader import Run, RunGroup

logger = logging.getLogger(__name__)

RECORD_VERSION = 1
CALLS_FILE = "calls.json"
CODE_FILE = "code.json"
STUDY_FILES = {"studies": "studies.json", "penalties": "penalties.json", "mbr-sensitivity": "mbr-sensitivity.json",
               "systems": "systems.json"}
EXPERIMENTS = ("scalc", "sdatabase", "forgetting", "sensitivity", "why-budget", "why-size", "field", "field-forgetting", "terms",
               "stream")
# the claims' main stream is scalc; a researcher's own data (simpe replicate --model/--dataset) records it as "stream"
MAIN, OWN_MAIN = "scalc", "stream"
# the per-segment statistics the verdicts resample (simpe.replicate.claims): BLEU and R of words, novel words, subwords
# and, for a run with a glossary (the terms part), the term metrics and R outside the glossary (simpe.metrics.terms)
SEGMENT_KEYS = ("bleu", "ter", "r0", "r1", "novel:r0", "novel:r1", "subword:r0", "subword:r1",
                "term", "t0", "t1", "term-repeat", "nonterm:r0", "nonterm:r1")
SBLEU = "sbleu"  # sentence BLEU: a function of the segment's BLEU statistics (the run's smoothing), derived when read
DERIVED_R = ("r0+1", "novel:r0+1", "subword:r0+1", "nonterm:r0+1")  # R0 plus R1 (a type's 1st and 2nd occurrences are disjoint)
REPEATED = "repeated"  # (missed again, shown after a miss) per segment: simpe.report.marks.repeated_error_stats
ENV_LEFT_OUT = ("code", "argv")  # the code is the record's fingerprint (code.json); a Ray worker's argv says nothing


def records_folder(page: Path) -> Path:
    """The records of a page: ``docs/replication/records/`` for ``docs/replication.md``."""
    return page.with_suffix("") / "records"


class RecordError(RunDirError):
    """A records folder that cannot be read (a file that is not a record of this version)."""


# ---------------------------------------------------------------------------------------- writing
def _json(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise RecordError(f"{path}: {err.strerror or err}") from None
    except ValueError as err:
        raise RecordError(f"{path} is not valid JSON ({err})") from None


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit(outputs: Path | None = None) -> str:
    """The short commit of the work tree, ``+changes`` when tracked files differ from it.

    ``outputs`` is the records folder of the call: what the replication itself writes (the folder's parent, e.g.
    ``docs/replication/``, and the page beside it, ``docs/replication.md`` and ``.json``) is not a change of the code
    that measured, so a call that resumes one cut off is not marked ``+changes`` for the records its predecessor left.
    """
    head = _git("rev-parse", "--short", "HEAD") or "unknown"
    excluded: list[str] = []
    if outputs is not None:
        try:
            own = outputs.resolve().parent.relative_to(REPO_ROOT.resolve()).as_posix()
            excluded = [f":(exclude){own}", f":(exclude,glob){own}.*"]  # the folder, and the page beside it
        except ValueError:  # records outside the repository: nothing of the repository is theirs
            pass
    changed = any(line and not line.startswith("??") for line in _git("status", "--porcelain", "--", *excluded).splitlines())
    return head + ("+changes" if changed else "")


def machine(device: str = "cpu") -> str:
    """This machine in one line: CPU model and cores, torch and its CPU kernel set, the device."""
    import torch

    from simpe.rundir.env import _cpu_model
    from simpe.sweep import cpu_count

    where = device if device == "cpu" or not torch.cuda.is_available() else f"{device} ({torch.cuda.get_device_name(0)})"
    return (f"{_cpu_model() or platform.processor() or 'unknown CPU'}, {cpu_count()} cores, {platform.system()}, "
            f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels), device {where}")


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def start_call(folder: Path, call: str, parts: list[str], device: str = "cpu") -> str:
    """Add this call to ``calls.json`` before it runs anything (a call cut off stays named); returns its id (its start)."""
    import time

    calls = read_calls(folder)
    now = time.time()
    ident = _utc(now)
    while any(c["id"] == ident for c in calls):  # two calls in one second: the second one a second later
        now += 1
        ident = _utc(now)
    calls.append({"id": ident, "call": call, "commit": commit(folder), "parts": sorted(parts), "wall_seconds": None,
                  "machine": machine(device)})
    _write(folder / CALLS_FILE, _json({"calls": calls}))
    return ident


def finish_call(folder: Path, ident: str, wall_seconds: float) -> None:
    """Record the call's wall time (just before the page is written)."""
    calls = read_calls(folder)
    for call in calls:
        if call["id"] == ident:
            call["wall_seconds"] = round(wall_seconds, 1)
    _write(folder / CALLS_FILE, _json({"calls": calls}))


def read_calls(folder: Path) -> list[dict[str, Any]]:
    path = folder / CALLS_FILE
    if not path.exists():
        return []
    data = _read(path)
    calls = data.get("calls") if isinstance(data, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls):
        raise RecordError(f"{path} is not a list of calls")
    return calls


def call_at(calls: list[dict[str, Any]], seconds: float | None) -> str | None:
    """The call that was running at ``seconds`` (the latest one started before), or None."""
    if seconds is None:
        return None
    started = [c["id"] for c in calls if _seconds(c["id"]) <= seconds + 1]
    return max(started) if started else None


def _add_code(folder: Path, code: dict[str, Any]) -> str:
    """Keep a code table in code.json; returns its fingerprint."""
    path = folder / CODE_FILE
    tables = _read(path) if path.exists() else {}
    fp = str(code["fingerprint"])
    if tables.get(fp) != code["files"]:
        tables[fp] = dict(sorted(code["files"].items()))
        _write(path, _json(dict(sorted(tables.items()))))
    return fp


def read_code(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / CODE_FILE
    return _read(path) if path.exists() else {}


def _columns(run: Run, n: int) -> dict[str, list[int | float]]:
    """The run's per-segment statistics as columns ``<key>.<stat>``, derived ones left out where they follow."""
    from simpe.metrics import metric_for
    from simpe.report.compare import segment_stats
    from simpe.report.marks import repeated_error_stats

    columns: dict[str, list[int | float]] = {}
    for key in SEGMENT_KEYS:
        stats = segment_stats(run, key, n)
        if stats is None:
            continue  # not logged (a run without novel-word or subword R)
        for j, name in enumerate(metric_for(key).stat_names):
            columns[f"{key}.{name}"] = [_number(v) for v in stats[:, j]]
    if "bleu.hyp_len" in columns:
        for order in range(1, 5):  # t_n = max(0, hyp_len - n + 1): left out when it holds for every segment
            if columns[f"bleu.t{order}"] == _bleu_totals(columns["bleu.hyp_len"], order):
                del columns[f"bleu.t{order}"]
    for key in DERIVED_R:  # kept only when it is not R0 plus R1 (it always is: checked)
        stats = segment_stats(run, key, n)
        r0, r1 = key.replace("r0+1", "r0"), key.replace("r0+1", "r1")
        if stats is not None and [list(map(_number, row)) for row in stats] != _sum_r(columns, r0, r1, n):
            for j, name in enumerate(metric_for(key).stat_names):
                columns[f"{key}.{name}"] = [_number(v) for v in stats[:, j]]
    repeated = repeated_error_stats(run, n)
    columns[f"{REPEATED}.again"] = [a for a, _ in repeated]
    columns[f"{REPEATED}.shown"] = [b for _, b in repeated]
    return columns


def _documents(run: Run, n: int) -> list[list[Any]] | None:
    """The segments' document ids as runs [[doc_id, segments], ...] in stream order (None when a segment has none)."""
    ids = [seg.get("doc_id") for seg in run.segments[:n]]
    if not ids or any(not isinstance(i, str) for i in ids):
        return None
    out: list[list[Any]] = []
    for doc in ids:
        if out and out[-1][0] == doc:
            out[-1][1] += 1
        else:
            out.append([doc, 1])
    return out


def _sbleu(config: dict[str, Any]) -> Any:
    """The run's sentence-BLEU metric (its smoothing), which gives each segment's SBLEU from its BLEU statistics."""
    from simpe.metrics.sacre import SbleuMetric

    return SbleuMetric(str((config.get("metrics") or {}).get("sbleu") or "nakov"))


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _bleu_totals(hyp_len: list[int | float], order: int) -> list[int | float]:
    return [_number(max(0, h - order + 1)) for h in hyp_len]


def _sum_r(columns: dict[str, list[int | float]], r0: str, r1: str, n: int) -> list[list[int | float]] | None:
    if f"{r0}.matched" not in columns or f"{r1}.matched" not in columns:
        return None
    return [[_number(columns[f"{r0}.{s}"][i] + columns[f"{r1}.{s}"][i]) for s in ("matched", "types")] for i in range(n)]


def _scalar_snapshots(run: Run) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if v is None or isinstance(v, (int, float, str, bool))} for s in run.snapshots]


def export_run(folder: Path, experiment: str, position: int, run: Run, call: str | None, into: Path | None = None) -> Path:
    """Write one complete run's record into ``into`` (default: the experiment's folder); returns its path. The record
    is read back and checked against the run first."""
    n = run.num_segments
    code = run.env.get("code") if isinstance(run.env.get("code"), dict) else None
    summary = {k: v for k, v in (run.summary or {}).items() if k != "segment_comet"}  # COMET per segment: no verdict reads it
    record = {
        "record": RECORD_VERSION, "experiment": experiment, "position": position, "run": f"{run.path.parent.name}/{run.path.name}",
        "name": run.name, "method": run.method, "code": _add_code(folder, code) if code else None, "call": call,
        "environment": {k: v for k, v in run.env.items() if k not in ENV_LEFT_OUT},
        "config": run.config, "summary": summary, "snapshots": _scalar_snapshots(run), "segments": n,
        "documents": _documents(run, n),
    }
    columns = _columns(run, n)
    path = (into or folder / experiment) / f"{run.path.name}.json"
    text = _json(record)[:-2] + ',\n "columns": {\n' + ",\n".join(
        f"  {json.dumps(name)}: {json.dumps(values, separators=(',', ':'))}" for name, values in columns.items()) + "\n }\n}\n"
    back = _run_from_record(json.loads(text), path)
    _check_same(run, back, n)
    _write(path, text)
    return path


def _check_same(run: Run, back: Run, n: int) -> None:
    """The record gives back every statistic the verdicts read (internal invariant)."""
    from simpe.report.compare import segment_stats
    from simpe.report.marks import repeated_error_stats

    for key in (*SEGMENT_KEYS, *DERIVED_R, SBLEU):
        a, b = segment_stats(run, key, n), segment_stats(back, key, n)
        assert a is None or (b is not None and (a == b).all()), f"the record of {run.path} changes {key}"
    if _documents(run, n) is not None:
        assert [s.get("doc_id") for s in back.segments] == [s.get("doc_id") for s in run.segments[:n]], f"the record of {run.path} changes documents"
    assert repeated_error_stats(run, n) == [tuple(s[REPEATED]) for s in back.segments], f"the record of {run.path} changes repeats"


def export_experiment(folder: Path, experiment: str, paths: list[Path], calls: list[dict[str, Any]]) -> str:
    """Replace an experiment's records with those of its runs when every run is complete; else keep the earlier ones.

    Returns what happened, in a few words, for the log."""
    from simpe.rundir.reader import finished_at, load_run

    try:
        runs = [load_run(path) for path in paths]
    except RunDirError as err:
        return f"{experiment}: not every run is complete ({err}); its earlier records stay"
    target = folder / experiment
    staging = folder / f".{experiment}.new"
    shutil.rmtree(staging, ignore_errors=True)
    for position, run in enumerate(runs):
        export_run(folder, experiment, position, run, call_at(calls, finished_at(run.path)), into=staging)
    shutil.rmtree(target, ignore_errors=True)
    staging.replace(target)
    return f"{experiment}: {len(runs)} run records"


def export_study(folder: Path, part: str, saved: dict[str, Any]) -> None:
    """Write a study's record: ``saved`` as its cache holds it (settings, figures, code, call)."""
    code = saved.get("code")
    record = {"record": RECORD_VERSION, "part": part, "code": _add_code(folder, code) if isinstance(code, dict) else None,
              "call": saved.get("call"), "settings": saved.get("settings"), "figures": saved.get("figures")}
    _write(folder / STUDY_FILES[part], _json(record))


# ---------------------------------------------------------------------------------------- reading
def _run_from_record(data: dict[str, Any], path: Path) -> Run:
    """A ``Run`` holding what the record keeps: per segment the statistics, R counts, repeats and cumulative values."""
    from simpe.metrics import metric_for
    from simpe.metrics.recall import ratio

    if not isinstance(data, dict) or data.get("record") != RECORD_VERSION or not isinstance(data.get("columns"), dict):
        raise RecordError(f"{path} is not a run record of version {RECORD_VERSION}")
    n, columns = int(data["segments"]), data["columns"]
    if any(not isinstance(v, list) or len(v) != n for v in columns.values()):
        raise RecordError(f"{path}: a column does not hold {n} values")
    if "bleu.hyp_len" in columns:
        for order in range(1, 5):
            columns.setdefault(f"bleu.t{order}", _bleu_totals(columns["bleu.hyp_len"], order))
    keys = [k for k in (*SEGMENT_KEYS, *DERIVED_R) if all(f"{k}.{s}" in columns for s in metric_for(k).stat_names)]
    for key in DERIVED_R:
        if key not in keys:
            summed = _sum_r(columns, key.replace("r0+1", "r0"), key.replace("r0+1", "r1"), n)
            if summed is not None:
                columns[f"{key}.matched"], columns[f"{key}.types"] = [r[0] for r in summed], [r[1] for r in summed]
                keys.append(key)
    bleu = metric_for("bleu")
    sbleu = _sbleu(data.get("config") or {}) if "bleu" in keys else None
    documents = data.get("documents")
    doc_ids = [str(doc) for doc, count in documents for _ in range(int(count))] if isinstance(documents, list) else None
    if doc_ids is not None and len(doc_ids) != n:
        raise RecordError(f"{path}: its document ids do not cover its {n} segments")
    logged = {k for k in keys if k in ("bleu", "ter")}  # the loop logs these under "stats", R under "metrics"
    totals: dict[str, list[float]] = {k: [0] * len(metric_for(k).stat_names) for k in keys}
    segments = []
    for i in range(n):
        stats, metrics, cumulative = {}, {}, {}
        for key in keys:
            row = [columns[f"{key}.{s}"][i] for s in metric_for(key).stat_names]
            totals[key] = [a + b for a, b in zip(totals[key], row)]
            if key in logged:
                stats[key] = row
                if key == "bleu":
                    cumulative[key] = bleu.score_from_stats(totals[key])  # as the loop: one function on summed statistics
            else:
                metrics[key] = row
                cumulative[key] = ratio(*totals[key])
        if sbleu is not None:
            metrics[SBLEU] = sbleu.score_of_bleu_stats(stats["bleu"])  # as the loop: from the segment's BLEU statistics
        segment = {"index": i, "stats": stats, "metrics": metrics, "cumulative": cumulative}
        if doc_ids is not None:
            segment["doc_id"] = doc_ids[i]
        if f"{REPEATED}.again" in columns:
            segment[REPEATED] = [columns[f"{REPEATED}.again"][i], columns[f"{REPEATED}.shown"][i]]
        segments.append(segment)
    return Run(path=Path(data["run"]), name=str(data["name"]), method=str(data["method"]), config=data.get("config") or {},
               summary=data.get("summary"), segments=segments, snapshots=data.get("snapshots") or [], complete=True)


@dataclass
class RunRecord:
    """One run's record: where it lies, its experiment and position, its code fingerprint and call, the run."""

    path: Path
    experiment: str
    position: int
    code: str | None
    call: str | None
    run: Run


@dataclass
class Records:
    """A records folder read back: the run groups by experiment, the studies, the calls and code tables."""

    folder: Path
    runs: dict[str, list[RunRecord]] = field(default_factory=dict)
    studies: dict[str, dict[str, Any]] = field(default_factory=dict)  # part -> its record (settings, figures, code, call)
    calls: list[dict[str, Any]] = field(default_factory=list)
    code: dict[str, dict[str, str]] = field(default_factory=dict)

    def resolve(self, part: str) -> str:
        """The experiment a part's records are under: the main stream of a researcher's data stands for scalc."""
        return OWN_MAIN if part == MAIN and MAIN not in self.runs and OWN_MAIN in self.runs else part

    def group(self, experiment: str) -> tuple[RunGroup | None, str | None]:
        """The experiment's runs as a group, or None and why."""
        experiment = self.resolve(experiment)
        records = self.runs.get(experiment)
        if not records and OWN_MAIN in self.runs and experiment in ("sdatabase", "sensitivity"):
            return None, (f"not run on your model and data: the {experiment} runs belong to the committed page's plan "
                          "(the demo model on LibreOffice's splits)")
        if not records:
            return None, (f"no records of the {experiment} runs in {self.folder.name}/{experiment}/ "
                          f"(`simpe replicate --only {experiment}` runs them and writes them)")
        runs = [r.run for r in records]
        baselines = [run for run in runs if run.method == "baseline"]
        if len(baselines) > 1:  # a baseline per decoder (the terms part's constrained one): the plain one leads the group
            baselines = [run for run in baselines if run.name == "baseline"] or baselines
        streams = {str((run.summary or {}).get("stream_sha256")) for run in runs}
        if len(baselines) != 1 or len(streams) != 1:
            return None, f"the records of the {experiment} runs are not one stream with one baseline"
        n = min(run.num_segments for run in runs)
        group_dir = Path(records[0].run.path.parent)
        return RunGroup(baseline=baselines[0], methods=[run for run in runs if run is not baselines[0]], num_segments=n,
                        stream_segments=n, group_dir=group_dir), None

    def figures(self, part: str) -> dict[str, Any] | None:
        record = self.studies.get(part)
        if record is None:
            return None
        figures = record.get("figures")
        return int_keys(figures) if part == "studies" and isinstance(figures, dict) else figures

    def evidence(self) -> Any:
        """What the claims read (``claims.Evidence``)."""
        from simpe.replicate.claims import Evidence

        groups, notes = {}, {}
        for experiment in EXPERIMENTS[:-1]:  # the claims' names; the own main stream stands for scalc (resolve)
            groups[experiment], note = self.group(experiment)
            if note:
                notes[experiment] = note
        return Evidence(groups, self.figures("studies"), notes, self.figures("mbr-sensitivity"), self.figures("systems"),
                        self.figures("penalties"))

    def part_records(self, part: str) -> list[tuple[str, str | None, str | None]]:
        """(name, code fingerprint, call) of every record behind a part of the plan."""
        if part in STUDY_FILES:
            record = self.studies.get(part)
            return [] if record is None else [(STUDY_FILES[part], record.get("code"), record.get("call"))]
        part = self.resolve(part)
        return [(f"{part}/{r.path.name}", r.code, r.call) for r in self.runs.get(part, [])]

    def size(self) -> int:
        """Bytes of every file in the folder."""
        return sum(p.stat().st_size for p in self.folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def int_keys(figures: dict[str, Any]) -> dict[str, Any]:
    """JSON turned the studies' beam sizes and ks into strings: back to ints."""
    for key in ("search_errors", "top_region", "cut", "search_flags", "bleu_stats", "bleu_stats_ln", "best_scores"):
        if key in figures:  # a studies file from before the per-sentence figures has fewer
            figures[key] = {int(k): v for k, v in figures[key].items()}
    wide = figures.get("beam_sizes")
    if isinstance(wide, dict) and "bleu_stats" in wide:  # the beam-size study on more sentences
        wide["bleu_stats"] = {int(k): v for k, v in wide["bleu_stats"].items()}
    return figures


def read_records(folder: Path) -> Records:
    """Read a records folder (an absent folder reads as no records)."""
    out = Records(Path(folder))
    if not out.folder.is_dir():
        return out
    out.calls, out.code = read_calls(out.folder), read_code(out.folder)
    for experiment in EXPERIMENTS:
        records = []
        for path in sorted((out.folder / experiment).glob("*.json")):
            data = _read(path)
            run = _run_from_record(data, path)
            records.append(RunRecord(path, experiment, int(data.get("position", 0)), data.get("code"), data.get("call"), run))
        if records:
            out.runs[experiment] = sorted(records, key=lambda r: r.position)
    for part, name in STUDY_FILES.items():
        path = out.folder / name
        if path.exists():
            data = _read(path)
            if not isinstance(data, dict) or data.get("record") != RECORD_VERSION:
                raise RecordError(f"{path} is not a study record of version {RECORD_VERSION}")
            out.studies[part] = data
    return out
