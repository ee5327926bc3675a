"""``simpe replicate``: plan, run what is missing or stale, study, keep the records, judge from them, write the page.

A call runs the parts of the plan it is asked for (all by default): the loop runs through the sweep executor
(a complete run whose code fingerprint matches the current code is reused, any other run is started again, an
incomplete current one resumed), then the studies (cached in the runs folder for the same settings and code).
It writes the records of what completed (``records.py``), and only then judges every claim *from the records*
and writes the page: ``--report-only`` does that last step alone, so it rewrites the page (and its json) byte for
byte from a clone that has the records and no runs. ``--status`` says which rows are stale against the code.
"""
from __future__ import annotations

import json
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError
from simpe.paths import DEFAULT_MODEL, REPO_ROOT
from simpe.replicate import records as rec
from simpe.replicate.page import write_page
from simpe.replicate.plan import Plan, Scale, check_source, describe, make_plan, parts_to_run, stale_runs
from simpe.replicate.provenance import study_code

logger = logging.getLogger(__name__)
STUDIES_FILE = "studies.json"  # the studies' caches in the runs folder (the records keep what the page reads)
SENSITIVITY_FILE = "sensitivity.json"
PENALTIES_FILE = "penalties.json"
SYSTEMS_FILE = "systems.json"
DEFAULT_OUT = REPO_ROOT / "docs" / "replication.md"


def command_line() -> str:
    """This process's command line as a reader would type it (``python -m simpe replicate ...``)."""
    argv = sys.argv
    if argv and Path(argv[0]).name == "__main__.py" and Path(argv[0]).parent.name == "simpe":
        return "python -m simpe " + shlex.join(argv[1:])
    return shlex.join([Path(argv[0]).name if argv else "python", *argv[1:]])


def _cache(path: Path, settings: dict[str, Any], code: dict[str, Any]) -> dict[str, Any] | None:
    """A study's cache as an earlier call left it, when it has the same settings and code."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = saved.get("settings") == settings and (saved.get("code") or {}).get("fingerprint") == code["fingerprint"]
    return saved if same and "figures" in saved else None


def _save(path: Path, settings: dict[str, Any], figures: Any, code: dict[str, Any], call: str) -> dict[str, Any]:
    saved = {"settings": settings, "figures": figures, "code": code, "call": call}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return json.loads(path.read_text(encoding="utf-8"))  # as the record will hold it (JSON's string keys)


def _model_and_dev(p: Plan, device: str) -> tuple[Any, list[Any]]:
    """The plan's model (loaded, with its family's settings) and its dataset's dev split, as the runs' configs name them."""
    from simpe.datasets import DATASETS
    from simpe.model import load_model, model_family

    cfg = next(iter(p.experiments.values()))[0].cfg if p.experiments else None
    if cfg is None:  # a call with only the studies: the plan's main stream says which model and data
        from simpe.replicate.plan import make_plan

        cfg = next(iter(make_plan(p.scale, p.runs_dir, p.source).experiments.values()))[0].cfg
    dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
    dev = dataset.load("dev", cfg.data.skip_empty)
    family = model_family(cfg.model.path, cfg.model.family, cfg.model.family_settings())
    loaded = load_model(cfg.model.path, device, family, cfg.model.dtype, family_name=cfg.model.family,
                        settings=cfg.model.family_settings())
    return loaded, dev


def _penalties(p: Plan, device: str, progress: bool, call: str) -> dict[str, Any]:
    """The penalty study on the studies' probe sentences (Yan et al. (2021), Table 2 reduced), cached in
    ``<runs_dir>/penalties.json`` for the same settings and code."""
    from simpe.replicate.penalties import penalty_study

    s = p.scale
    settings = {"probe": s.probe, "k": max(s.ks), "max_expansions": s.max_expansions}
    code = study_code("penalties", s.model, dataset=s.dataset)
    cached = _cache(p.runs_dir / PENALTIES_FILE, settings, code)
    if cached is not None:
        return cached
    loaded, dev_split = _model_and_dev(p, device)
    dev = [seg for seg in dev_split if len(seg.source.split()) <= 20][: s.probe]
    report = (lambda text: logger.info("%s", text)) if progress else None
    figures = penalty_study(loaded.model, loaded.tokenizer, [x.source for x in dev], [x.reference for x in dev], max(s.ks),
                            s.max_expansions, progress=report)
    return _save(p.runs_dir / PENALTIES_FILE, settings, figures, code, call)


def _studies(p: Plan, device: str, progress: bool, call: str) -> dict[str, Any]:
    """The decoding studies on the dev probe, cached in ``<runs_dir>/studies.json`` for the same settings and code."""
    from simpe.replicate.studies import beam_size_study, decoding_studies

    s = p.scale
    settings = {"probe": s.probe, "beam_sizes": list(s.beam_sizes), "ks": list(s.ks), "max_expansions": s.max_expansions,
                "beam_probe": s.beam_probe}
    if s.own:
        settings.update({"model": s.model, "dataset": s.dataset, "sets": list(s.sets)})
    code = study_code("studies", s.model, dataset=s.dataset)
    cached = _cache(p.runs_dir / STUDIES_FILE, settings, code)
    if cached is not None:
        return cached
    loaded, dev_split = _model_and_dev(p, device)
    short = [seg for seg in dev_split if len(seg.source.split()) <= 20]
    dev = short[: s.probe]
    report = (lambda text: logger.info("%s", text)) if progress else None
    figures = decoding_studies(loaded.model, loaded.tokenizer, [x.source for x in dev], [x.reference for x in dev],
                               s.beam_sizes, s.ks, s.max_expansions, progress=report)
    if s.beam_probe:  # plain beam alone on more sentences: Figure 1b and 1c
        wide = short[: s.beam_probe]
        figures["beam_sizes"] = beam_size_study(loaded.model, loaded.tokenizer, [x.source for x in wide],
                                                [x.reference for x in wide], s.beam_sizes, progress=report)
    return _save(p.runs_dir / STUDIES_FILE, settings, figures, code, call)


def _mbr_sensitivity(p: Plan, device: str, call: str) -> dict[str, Any]:
    """Amrhein and Sennrich (2022)'s MBR sensitivity of each utility on dev sentences with a number or a named entity,
    cached in ``<runs_dir>/sensitivity.json`` for the same settings and code."""
    from simpe.datasets import DATASETS
    from simpe.measure.sensitivity import analyse, named_entities, numbers
    from simpe.model import load_model

    s = p.scale
    settings = {"sentences": s.sensitivity_sentences, "samples": s.sensitivity_samples, "utilities": list(s.utilities)}
    code = study_code("mbr-sensitivity")
    cached = _cache(p.runs_dir / SENSITIVITY_FILE, settings, code)
    if cached is not None:
        return cached
    dev = [x for x in DATASETS.build("libreoffice").load("dev")
           if numbers(x.reference) or named_entities(x.reference, x.source)][: s.sensitivity_sentences]
    loaded = load_model(None, device)
    figures = {u: analyse(loaded.model, loaded.tokenizer, [x.source for x in dev], [x.reference for x in dev], u,
                          samples=s.sensitivity_samples, seed=0, lang="de") for u in s.utilities}
    return _save(p.runs_dir / SENSITIVITY_FILE, settings, figures, code, call)


PER_SENTENCE = ("krg", "random_krg", "kqrg", "mean_quality")  # each system's Monte Carlo figures kept per sentence


def _per_sentence(path: Path) -> list[dict[str, Any]]:
    """A system's per-sentence Monte Carlo figures (``PER_SENTENCE``) from its ranking records (``simpe rank``'s
    records.jsonl), what the verdicts' intervals resample (Yan et al. (2022)'s sampled ranking against the random line)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        mc = (json.loads(line) or {}).get("mc") if line.strip() else None
        if isinstance(mc, dict):
            rows.append({k: mc.get(k) for k in PER_SENTENCE})
    return rows


def _systems(p: Plan, device: str, call: str) -> dict[str, Any] | None:
    """Yan et al. (2022)'s Table 3 across systems: the demo model and the adapted state at the end of every forgetting
    run (its store), ranked on the dev probe of the studies; cached in ``<runs_dir>/systems.json`` for the same
    settings and code (the forgetting runs' included). None when a forgetting run is not complete."""
    from simpe.config.files import defaults
    from simpe.datasets import DATASETS
    from simpe.measure.rank import run_correlation
    from simpe.rundir.layout import DONE_FILE, RANK_RECORDS_FILE, STORE_FILE
    from simpe.rundir.reader import run_env

    s, specs = p.scale, p.experiments.get("forgetting") or []
    if not specs or not all((spec.path / DONE_FILE).exists() for spec in specs):
        return None
    adapted = [spec for spec in specs if spec.cfg.method.name != "baseline" and (spec.path / STORE_FILE).is_file()]
    method = {spec.path.name: spec.cfg.method.name for spec in adapted}  # the systems by method: full, not full--forgetting=100
    settings = {"probe": s.probe, "samples": s.system_samples, "mbr_samples": s.mbr_samples,
                "segments": s.forgetting_segments, "systems": [DEFAULT_MODEL.name, *(spec.cfg.method.name for spec in adapted)],
                "per_sentence": list(PER_SENTENCE)}
    runs = {spec.name: str((run_env(spec.path).get("code") or {}).get("fingerprint")) for spec in specs}
    code = study_code("systems", runs=runs)
    cached = _cache(p.runs_dir / SYSTEMS_FILE, settings, code)
    if cached is not None:
        return cached
    dev = [seg for seg in DATASETS.build("libreoffice").load("dev") if len(seg.source.split()) <= 20][: s.probe]
    cfg = defaults("ranking", top_region=False, samples=s.system_samples)
    started = time.perf_counter()
    result = run_correlation([str(DEFAULT_MODEL), *(str(spec.path / STORE_FILE) for spec in adapted)],
                             [x.source for x in dev], [x.reference for x in dev],
                             cfg, p.runs_dir / "systems", device=device, mbr_samples=s.mbr_samples, overwrite=True)
    keep = ("name", "mc.kqrg", "mc.krg", "mc.random_krg", "mc.mean_quality", "beam.quality", "mbr.quality")
    models = []
    for row in result["models"]:
        kept = {k: row.get(k) for k in keep}
        kept["per_sentence"] = _per_sentence(p.runs_dir / "systems" / row["name"] / RANK_RECORDS_FILE)
        kept["name"] = method.get(row["name"], row["name"])
        models.append(kept)
    figures = {"models": models, "correlation": result["correlation"], "settings": settings,
               "seconds": time.perf_counter() - started}
    return _save(p.runs_dir / SYSTEMS_FILE, settings, figures, code, call)


def _readme(out: Path) -> None:
    """The committed page's tally into README.md (its generated block); another page leaves README alone."""
    from simpe.replicate.page import write_readme_tally

    if out.resolve() == DEFAULT_OUT.resolve():
        write_readme_tally(out, REPO_ROOT / "README.md", "docs/replication.md")


# ---------------------------------------------------------------------------------------- the call
def replicate(scale: Scale, runs_dir: Path, out: Path, workers: int | None = None, threads: int | None = None,
              dry_run: bool = False, progress: bool = True, device: str = "cpu", studies: bool = True,
              run: bool = True, only: list[str] | None = None, records_dir: Path | None = None, call: str | None = None) -> str:
    """Plan, run what is missing or stale, keep the records, judge every claim from them, write ``out`` and its twins.

    ``run=False`` (``--report-only``) runs nothing and reads no run: the page comes from the records alone
    (``records_dir``, default beside the page). ``only`` (parts of ``PARTS``) runs those parts and what they need;
    the other parts' records stay as earlier calls left them. ``call``: the command line the calls' log records
    (default: this process's). Returns the plan (``dry_run``) or what was written."""
    from simpe.sweep import cpu_count, execute

    folder = records_dir or rec.records_folder(out)
    html_out = runs_dir / "replication.html"
    if not run and not dry_run:
        if not folder.is_dir():  # never turn a page into rows of "not testable" for want of a folder
            raise ConfigError(f"no records folder {folder}: `simpe replicate` (make replicate) writes the records the page is "
                              "judged from; --report-only reads only them (--records DIR names another folder)")
        rows = write_page(folder, out, html_out)
        _readme(out)
        return f"{out} and {html_out} ({rows} claims, judged from the records in {folder})"
    parts = parts_to_run(only, scale.own)
    source = check_source(scale) if scale.own else None  # a bad model or dataset: one line, before a model loads
    if source is not None and not source.dev:
        parts -= {"forgetting", "studies"}
    p = make_plan(scale, runs_dir, source)
    p.experiments = {name: specs for name, specs in p.experiments.items() if name in parts}
    stale = stale_runs(p)
    at_once = workers or max(1, cpu_count() // (threads or 1))
    text = describe(p, at_once, parts if studies else parts - {"studies", "penalties", "mbr-sensitivity", "systems"}, stale)
    if dry_run:
        return text
    print(text, flush=True)
    for path, why in stale.items():
        logger.info("run %s starts again: %s", path, why)
    started = time.perf_counter()
    ident = rec.start_call(folder, call or command_line(), sorted(parts), device)
    outcomes = execute(p.specs(), workers=workers, threads=threads, progress=progress, restart=set(stale)) if p.specs() else []
    failed = [o for o in outcomes if o.status == "failed"]
    for outcome in failed:
        logger.error("run %s failed: %s", outcome.name, outcome.error)
    calls = rec.read_calls(folder)
    for name, specs in p.experiments.items():
        logger.info("records: %s", rec.export_experiment(folder, name, [spec.path for spec in specs], calls))
    if studies:
        if "studies" in parts:
            rec.export_study(folder, "studies", _studies(p, device, progress, ident))
        if "penalties" in parts and not p.scale.own:
            rec.export_study(folder, "penalties", _penalties(p, device, progress, ident))
        if "mbr-sensitivity" in parts:
            rec.export_study(folder, "mbr-sensitivity", _mbr_sensitivity(p, device, ident))
        if p.scale.systems and "systems" in parts:
            saved = _systems(p, device, ident)
            if saved is not None:
                rec.export_study(folder, "systems", saved)
    rec.finish_call(folder, ident, time.perf_counter() - started)
    rows = write_page(folder, out, html_out)
    _readme(out)
    return f"{out} and {html_out} ({rows} claims; {len(failed)} runs failed)"
