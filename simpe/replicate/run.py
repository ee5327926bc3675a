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
from simpe.replicate.claims import Evidence, verdicts
from simpe.replicate.page import write_pages
from simpe.replicate.plan import Plan, Scale, describe, make_plan

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
    """Seed 000's Table 3 across systems: the demo model and the adapted state at the end of every scalc run (its
    store), ranked on the dev probe of the studies; cached in ``<runs_dir>/systems.json`` for the same settings."""
    from simpe.config import defaults
    from simpe.datasets import DATASETS
    from simpe.paths import DEFAULT_MODEL
    from simpe.ranking.study import run_correlation
    from simpe.rundir.layout import STORE_FILE

    s, group = p.scale, groups.get("scalc")
    if group is None:
        return None
    stores = [run.path / STORE_FILE for run in group.methods if (run.path / STORE_FILE).is_file()]
    settings = {"probe": s.probe, "samples": s.system_samples, "mbr_samples": s.mbr_samples,
                "systems": [DEFAULT_MODEL.name, *(path.parent.name for path in stores)]}
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
    figures = {"models": [{k: row.get(k) for k in keep} for row in result["models"]], "correlation": result["correlation"],
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
    for key in ("search_errors", "top_region", "cut"):
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
                 f"{s.second_segments or 'all 1,742'} segments) in the role of seed 002's Table 5; "
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
              run: bool = True) -> str:
    """Plan, run what is missing, judge every claim, write ``out`` and its HTML twin; returns the plan or the page path.

    ``run=False`` (``--report-only``) runs nothing: the page judges what is complete, and a claim whose runs are not
    says so (not testable here, with the reason)."""
    from simpe.sweep import cpu_count, execute

    p = make_plan(scale, runs_dir)
    at_once = workers or max(1, cpu_count() // (threads or 1))
    text = describe(p, at_once)
    if dry_run:
        return text
    print(text, flush=True)
    started = time.perf_counter()
    outcomes = execute(p.specs(), workers=workers, threads=threads, progress=progress) if run else []
    failed = [o for o in outcomes if o.status == "failed"]
    for outcome in failed:
        logger.error("run %s failed: %s", outcome.name, outcome.error)
    figures = _studies(p, device, progress) if studies and run else _cached(p.runs_dir / STUDIES_FILE, _int_keys)
    sensitivity = _mbr_sensitivity(p, device) if studies and run else _cached(p.runs_dir / SENSITIVITY_FILE, None)
    groups, notes = _groups(p)
    systems = (_systems(p, groups, device) if studies and run and p.scale.systems
               else _cached(p.runs_dir / SYSTEMS_FILE, None))
    rows = verdicts(Evidence(groups, figures, notes, sensitivity, systems))
    first = groups.get("scalc") or next((g for g in groups.values() if g is not None), None)
    signatures = dict((first.baseline.summary or {}).get("signatures") or {}) if first is not None else {}
    figure = _figure(groups, out)
    html_out = runs_dir / "replication.html"
    write_pages(rows, _facts(p, groups, time.perf_counter() - started), signatures, out, html_out, figure)
    return f"{out} and {html_out} ({len(rows)} claims; {len(failed)} runs failed)"


DEFAULT_OUT = REPO_ROOT / "docs" / "replication.md"
