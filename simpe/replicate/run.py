"""``simpe replicate``: plan, run (resumable), study, judge, write the page."""
from __future__ import annotations

import json
import logging
import platform
import shutil
import time
from pathlib import Path
from typing import Any

from simpe.errors import SimpeError
from simpe.paths import REPO_ROOT
from simpe.replicate.claims import NEEDS, Evidence, Verdict, verdicts
from simpe.replicate.page import write_pages
from simpe.replicate.plan import Plan, Scale, describe, make_plan, parts_to_run

logger = logging.getLogger(__name__)
STUDIES_FILE = "studies.json"
SENSITIVITY_FILE = "sensitivity.json"
SYSTEMS_FILE = "systems.json"


def _groups(p: Plan) -> tuple[dict[str, Any], dict[str, str]]:
    """The complete run group of every experiment, or why there is none."""
    from simpe.rundir.reader import load_group

    groups: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for name, specs in p.experiments.items():
        missing = [spec.path for spec in specs if not spec.path.exists()]
        if missing:
            groups[name], notes[name] = None, f"the {name} runs have not run yet ({len(missing)} of {len(specs)}, e.g. {missing[0]})"
            continue
        try:
            groups[name] = load_group([spec.path for spec in specs])
        except SimpeError as err:
            groups[name], notes[name] = None, f"the {name} runs are not all complete ({err})"
    return groups, notes


def _studies(p: Plan, device: str, progress: bool) -> dict[str, Any]:
    """The decoding studies on the dev probe, cached in ``<runs_dir>/studies.json`` for the same settings."""
    from simpe.datasets import DATASETS
    from simpe.model import load_model
    from simpe.replicate.studies import decoding_studies

    s = p.scale
    settings = {"probe": s.probe, "beam_sizes": list(s.beam_sizes), "ks": list(s.ks), "max_expansions": s.max_expansions}
    cache = p.runs_dir / STUDIES_FILE
    if cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("settings") == settings:
            return _int_keys(saved["figures"])
    dev = [seg for seg in DATASETS.build("libreoffice").load("dev") if len(seg.source.split()) <= 20][: s.probe]
    loaded = load_model(None, device)
    report = (lambda text: logger.info("%s", text)) if progress else None
    figures = decoding_studies(loaded.model, loaded.tokenizer, [x.source for x in dev], [x.reference for x in dev],
                               s.beam_sizes, s.ks, s.max_expansions, progress=report)
    p.runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "figures": figures}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(cache)
    return _int_keys(json.loads(cache.read_text(encoding="utf-8"))["figures"])


def _mbr_sensitivity(p: Plan, device: str) -> dict[str, Any]:
    """Seed 001's MBR sensitivity of each utility on dev sentences with a number or a named entity, cached in
    ``<runs_dir>/sensitivity.json`` for the same settings."""
    from simpe.datasets import DATASETS
    from simpe.model import load_model
    from simpe.sensitivity import analyse, named_entities, numbers

    s = p.scale
    settings = {"sentences": s.sensitivity_sentences, "samples": s.sensitivity_samples, "utilities": list(s.utilities)}
    cache = p.runs_dir / SENSITIVITY_FILE
    if cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("settings") == settings:
            return saved["figures"]
    dev = [x for x in DATASETS.build("libreoffice").load("dev")
           if numbers(x.reference) or named_entities(x.reference, x.source)][: s.sensitivity_sentences]
    loaded = load_model(None, device)
    figures = {u: analyse(loaded.model, loaded.tokenizer, [x.source for x in dev], [x.reference for x in dev], u,
                          samples=s.sensitivity_samples, seed=0, lang="de") for u in s.utilities}
    p.runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "figures": figures}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(cache)
    return figures


def _systems(p: Plan, groups: dict[str, Any], device: str) -> dict[str, Any] | None:
    """Seed 000's Table 3 across systems: the demo model and the adapted state at the end of every forgetting run (its
    store: ``forgetting_segments`` scalc segments of each method), ranked on the dev probe of the studies; cached in
    ``<runs_dir>/systems.json`` for the same settings."""
    from simpe.config import defaults
    from simpe.datasets import DATASETS
    from simpe.paths import DEFAULT_MODEL
    from simpe.ranking.study import run_correlation
    from simpe.rundir.layout import STORE_FILE

    s, group = p.scale, groups.get("forgetting")
    if group is None:
        return None
    runs = [run for run in group.methods if (run.path / STORE_FILE).is_file()]
    stores = [run.path / STORE_FILE for run in runs]
    method = {run.path.name: run.method for run in runs}  # the systems by method: full, not full--forgetting=100
    settings = {"probe": s.probe, "samples": s.system_samples, "mbr_samples": s.mbr_samples,
                "segments": s.forgetting_segments, "systems": [DEFAULT_MODEL.name, *(run.method for run in runs)]}
    cache = p.runs_dir / SYSTEMS_FILE
    if cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("settings") == settings:
            return saved["figures"]
    dev = [seg for seg in DATASETS.build("libreoffice").load("dev") if len(seg.source.split()) <= 20][: s.probe]
    cfg = defaults("ranking", top_region=False, samples=s.system_samples)
    started = time.perf_counter()
    result = run_correlation([str(DEFAULT_MODEL), *map(str, stores)], [x.source for x in dev], [x.reference for x in dev],
                             cfg, p.runs_dir / "systems", device=device, mbr_samples=s.mbr_samples, overwrite=True)
    keep = ("name", "mc.kqrg", "mc.krg", "mc.mean_quality", "beam.quality", "mbr.quality")
    named = [{**row, "name": method.get(row["name"], row["name"])} for row in result["models"]]
    figures = {"models": [{k: row.get(k) for k in keep} for row in named], "correlation": result["correlation"],
               "settings": settings, "seconds": time.perf_counter() - started}
    tmp = cache.with_name(cache.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "figures": figures}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(cache)
    return figures


def _cached(path: Path, convert: Any) -> dict[str, Any] | None:
    """A studies file's figures as an earlier call left them, or None."""
    try:
        figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    except (OSError, ValueError, KeyError):
        return None
    return convert(figures) if convert else figures


def _int_keys(figures: dict[str, Any]) -> dict[str, Any]:
    """JSON turned the beam sizes and ks into strings: back to ints."""
    for key in ("search_errors", "top_region", "cut", "search_flags"):
        if key not in figures:  # a studies file from before the per-sentence figures
            continue
        figures[key] = {int(k): v for k, v in figures[key].items()}
    return figures


def _facts(p: Plan, groups: dict[str, Any], seconds: float) -> dict[str, Any]:
    import torch

    from simpe.model import model_name
    from simpe.paths import DEFAULT_MODEL

    s = p.scale
    cpu = None
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), None)
    except OSError:
        pass
    return {
        "model": f"{model_name(DEFAULT_MODEL)} (the embedded demo model; models/demo-en-de/README.md)",
        "data": (f"LibreOffice 7.4 help, en-US→de: scalc stream, first {s.segments} segments; sdatabase (reserved, "
                 f"{s.second_segments or 'all 1,742'} segments) in the role of Simianer et al. (2019)'s Table 5; "
                 + (f"sensitivity runs on the first {s.sensitivity_segments} scalc segments; " if s.sensitivity else "")
                 + f"decoding studies on {s.probe} dev (schart) sentences of at most 20 words; smath is never used"),
        "runs": f"{len(p.specs())} loop runs under {p.runs_dir}/ ({', '.join(f'{k}: {len(v)}' for k, v in p.experiments.items())})",
        "hardware": f"{cpu or platform.processor() or 'unknown CPU'}, torch {torch.__version__}, "
                    f"{torch.backends.cpu.get_cpu_capability()} kernels",
        "total time": _total_time(p, seconds),
    }


def _total_time(p: Plan, seconds: float) -> str:
    """The runs' own time (summed from their summaries, whichever call made them), the studies', and this call's wall time."""
    run_seconds = 0.0
    for spec in p.specs():
        try:
            summary = json.loads((spec.path / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        run_seconds += sum(float(v) for k, v in (summary.get("seconds") or {}).items()
                           if k in ("prepare", "translate", "score", "update"))
    studies = 0.0
    try:
        studies += float(json.loads((p.runs_dir / STUDIES_FILE).read_text(encoding="utf-8"))["figures"].get("seconds") or 0.0)
        for result in json.loads((p.runs_dir / SENSITIVITY_FILE).read_text(encoding="utf-8"))["figures"].values():
            studies += float(result.get("seconds") or 0.0)
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    try:
        studies += float(json.loads((p.runs_dir / SYSTEMS_FILE).read_text(encoding="utf-8"))["figures"].get("seconds") or 0.0)
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    return (f"{run_seconds / 3600:.1f} h of loop runs summed over the runs (one torch thread each, two at once), "
            f"{studies / 3600:.1f} h of decoding studies; this call took {seconds / 3600:.2f} h of wall time")


def _figure(groups: dict[str, Any], out: Path) -> str | None:
    """Seed 002's Figure 2 of the scalc group next to the page; its path relative to the page."""
    from simpe.report.plotting import plot_cumulative_deltas

    group = groups.get("scalc")
    if group is None:
        return None
    folder = out.parent / "replication"
    folder.mkdir(parents=True, exist_ok=True)
    made = [path for path in plot_cumulative_deltas(group, folder) if path.suffix == ".png"]
    if not made:
        return None
    target = folder / "figure2.png"
    shutil.move(str(made[0]), target)
    for path in folder.glob("cumulative_delta.*"):
        path.unlink()
    return f"replication/{target.name}"


def replicate(scale: Scale, runs_dir: Path, out: Path, workers: int | None = None, threads: int | None = None,
              dry_run: bool = False, progress: bool = True, device: str = "cpu", studies: bool = True,
              run: bool = True, only: list[str] | None = None) -> str:
    """Plan, run what is missing, judge every claim, write ``out`` and its HTML twin; returns the plan or the page path.

    ``run=False`` (``--report-only``) runs nothing: the page judges what is complete, and a claim whose runs are not
    says so (not testable here, with the reason). ``only`` (parts of ``PARTS``) runs those parts and what they need;
    a claim that needs another part keeps the row an earlier call measured (``<out>.json``, with when and at which
    commit), so the page can be brought up to date a part at a time."""
    from simpe.sweep import cpu_count, execute

    parts = parts_to_run(only)
    p = make_plan(scale, runs_dir)
    p.experiments = {name: specs for name, specs in p.experiments.items() if name in parts}
    at_once = workers or max(1, cpu_count() // (threads or 1))
    text = describe(p, at_once, parts if studies else parts - {"studies", "mbr-sensitivity", "systems"})
    if dry_run:
        return text
    print(text, flush=True)
    stamp = Record.stamp()  # the code this call runs, as it starts
    started = time.perf_counter()
    outcomes = execute(p.specs(), workers=workers, threads=threads, progress=progress) if run and p.specs() else []
    failed = [o for o in outcomes if o.status == "failed"]
    for outcome in failed:
        logger.error("run %s failed: %s", outcome.name, outcome.error)
    fresh = studies and run
    figures = (_studies(p, device, progress) if fresh and "studies" in parts
               else _cached(p.runs_dir / STUDIES_FILE, _int_keys))
    sensitivity = (_mbr_sensitivity(p, device) if fresh and "mbr-sensitivity" in parts
                   else _cached(p.runs_dir / SENSITIVITY_FILE, None))
    groups, notes = _groups(p)
    systems = (_systems(p, groups, device) if fresh and p.scale.systems and "systems" in parts
               else _cached(p.runs_dir / SYSTEMS_FILE, None))
    rows = verdicts(Evidence(groups, figures, notes, sensitivity, systems))
    first = groups.get("scalc") or next((g for g in groups.values() if g is not None), None)
    signatures = dict((first.baseline.summary or {}).get("signatures") or {}) if first is not None else {}
    record = Record(out.with_suffix(".json"))
    rows = record.merge(rows, parts, stamp)
    facts = _facts(p, groups, time.perf_counter() - started)
    record.save(rows, stamp, only, facts, signatures)
    figure = _figure(groups, out) or record.figure(out)
    html_out = runs_dir / "replication.html"
    write_pages(rows, record.page_facts(facts, stamp), signatures or record.signatures, out, html_out, figure)
    return f"{out} and {html_out} ({len(rows)} claims; {len(failed)} runs failed)"


class Record:
    """``docs/replication.json``: every claim's row as last measured, with the call (date, commit, parts) that measured it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
        self.rows: dict[str, dict[str, Any]] = saved.get("rows") or {}
        self.calls: dict[str, dict[str, Any]] = saved.get("calls") or {}
        self.signatures: dict[str, str] = saved.get("signatures") or {}
        self.measured: dict[str, str] = {}

    @staticmethod
    def stamp() -> str:
        """``<date> at commit <id>`` (``+changes`` when the work tree differs from it)."""
        import datetime
        import subprocess

        def git(*args: str) -> str:
            try:
                return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=10).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                return ""

        commit = git("rev-parse", "--short", "HEAD") or "unknown"
        changed = any(line and not line.startswith("??") for line in git("status", "--porcelain").splitlines())
        return f"{datetime.date.today().isoformat()} at commit {commit}{'+changes' if changed else ''}"

    def merge(self, rows: list[tuple[str, Verdict]], parts: set[str], stamp: str) -> list[tuple[str, Verdict]]:
        """This call's verdict of each claim whose parts all ran in it; an earlier call's row for the others."""
        out = []
        for cid, verdict in rows:
            saved = self.rows.get(cid)
            if not set(NEEDS.get(cid, ())) <= parts and saved is not None:
                fields = {k: v for k, v in saved.items() if k != "measured"}
                out.append((cid, Verdict(**fields)))
                self.measured[cid] = saved["measured"]
            else:
                out.append((cid, verdict))
                self.measured[cid] = stamp
        return out

    def save(self, rows: list[tuple[str, Verdict]], stamp: str, only: list[str] | None, facts: dict[str, Any],
             signatures: dict[str, str]) -> None:
        import dataclasses

        self.calls[stamp] = {"only": only, "facts": facts}
        used = set(self.measured.values())
        self.calls = {k: v for k, v in self.calls.items() if k in used}
        self.signatures = signatures or self.signatures
        data = {"generated_by": "simpe replicate (do not edit by hand)", "signatures": self.signatures, "calls": self.calls,
                "rows": {cid: {**dataclasses.asdict(v), "measured": self.measured[cid]} for cid, v in rows}}
        tmp = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    def page_facts(self, facts: dict[str, Any], stamp: str) -> dict[str, Any]:
        """This call's facts, and which rows each call measured when they are not all this call's."""
        counts: dict[str, list[str]] = {}
        for cid, when in self.measured.items():
            counts.setdefault(when, []).append(cid)
        if set(counts) == {stamp}:
            return {**facts, "measured": f"every row: {stamp}"}
        lines = []
        for when, cids in sorted(counts.items(), key=lambda item: item[0] != stamp):
            call = self.calls.get(when, {})
            what = "the whole plan" if not call.get("only") else "--only " + " ".join(call["only"])
            took = (call.get("facts") or {}).get("total time", "")
            lines.append(f"{when} ({what}; {took}): {', '.join(f'`{c}`' for c in cids)}")
        return {**facts, "measured": "; ".join(lines)}

    @staticmethod
    def figure(out: Path) -> str | None:
        """Figure 2 as an earlier call left it beside the page, when this call did not redraw it."""
        return "replication/figure2.png" if (out.parent / "replication" / "figure2.png").exists() else None


DEFAULT_OUT = REPO_ROOT / "docs" / "replication.md"
