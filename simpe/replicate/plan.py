"""What ``simpe replicate`` runs: the loop runs (as sweep specs) and the decoding studies, and what they cost.

The forgetting runs (``forgetting_segments`` of ``scalc``) take a snapshot every
``forgetting_every`` segments with the forgetting probe only (the last ``forgetting_size`` dev
segments, translated by the run's decoder).

Every loop run logs the R variants of Simianer et al. (2019)'s Tables 3 and 4 beside the regular ones
(``metrics.novel_vocab=train``, ``metrics.subword=all``: Table 4 counts all tokens), so one run per method answers
Tables 1-4 and Figure 2. Streams: ``scalc`` (the first ``segments``) and ``sdatabase`` (the
second, smaller data set in the role of the paper's Table 5); ``smath`` is never touched. The
sensitivity study runs on the first ``sensitivity_segments`` of ``scalc``.

A researcher's own model and data (``Scale.model``, ``Scale.dataset``, ``Scale.sets``) get the parts that need
only a model and a stream (``OWN_PARTS``): ``stream`` (the methods on the dataset's stream: Simianer et al. (2019)'s
Tables 1-4, Figure 2, the repeated errors), ``forgetting`` and ``studies`` when the dataset has a dev split (text,
TSV and TMX hold one out with ``data.params.dev=N``). ``check_source`` reads the data and the model's config (not
its weights) and refuses bad input in one line before anything loads a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.paths import REPO_ROOT
from simpe.replicate.field import FIELD_METHODS
from simpe.replicate.terms import CONSTRAINED, PREFER_METHODS, TERMS_METHODS
from simpe.sweep import RunSpec, plan, relative_cost

METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn"]
SEED_METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso"]  # Simianer et al. (2019)'s five and its baseline
LOGGED = ["metrics.novel_vocab=train", "metrics.subword=all", "snapshots.every=0"]  # Table 4 counts all tokens (its footnote 8)
# a baseline segment of a one-thread run, two runs at once, demo model (scaled by simpe.sweep.relative_cost): 0.092 s
# in the from-scratch `make replicate WORKERS=2` of 2026-11-27 (2,000 scalc segments in 183 s beside another run; the
# call took 1.87 h against an estimate of 1.53 h: knn's cost grows with its datastore, and the systems study is not
# in the studies' figure)
SECONDS_PER_SEGMENT = 0.09
SECONDS_PER_PROBE = {"exact": 1.5, "beam": 0.05}  # rough per sentence: exact top-k search, one beam size
# The "why" part (issue: "why, measured"): explanations of the Simianer et al. (2019) rows the demo model does not
# reproduce, each a change of one thing on the scalc stream.
# * the model's size: the same methods on a second, smaller model of the demo's family, trained from the same data
#   (`make demo-model-small`: 3 + 2 layers, d_model 128, vocabulary 4,000; models/demo-en-de-small/README.md);
SMALL_MODEL = "models/demo-en-de-small"
WHY_SIZE_METHODS = ["baseline", "full", "lasso", "top"]
# * lasso's budget: the paper's 1M + 1M parameters (line 100) scaled to the demo model part by part. Its model (lines
#   92-93: 6 + 3 layers, dimension 256, distinct input and output embeddings of about 40,000 types) has about 7.9M
#   parameters outside the embeddings (with a 1,024 feed-forward) and about 3 x 40,000 x 256 = 30.7M in them: 1M is
#   12.7 % of the former and 3.3 % of the latter. The demo model (10.2M: 8.1M outside, one 8,000 x 256 = 2.0M tied
#   embedding) gets 12.7 % x 8.1M = 1.03M tensor parameters (0.10 of the model, lasso's unit) and 3.3 % x 2.0M = 67k
#   embedding rows (0.0066); and, as an upper probe, 25 % + 25 %. The default 0.025 + 0.025 is the paper's share of
#   its whole model.
WHY_BUDGETS = (("0.1", "0.0066"), ("0.25", "0.25"))
# The field part (beyond the papers, measured): the methods production adaptive MT and continual learning use
# (simpe/replicate/field.py: ModernMT's retrieve-tune-reset, replay, EWC, a composition with kNN-MT) on the scalc
# stream beside the papers' full, lasso and knn, and again on the forgetting runs' segments with their probe.


@dataclass
class Scale:
    """How much ``simpe replicate`` runs (the defaults are the committed page's)."""

    segments: int = 2000  # scalc stream segments (Simianer et al. (2019)'s tables)
    second_segments: int | None = None  # sdatabase segments; None: all 1,742
    sensitivity_segments: int = 200
    probe: int = 50  # dev sentences (at most 20 words) for the decoding studies
    # dev sentences (at most 20 words) for plain beam search alone at every beam size (Yan et al. (2021), Figure 1b/1c):
    # on the 50 probe sentences only 5 outputs changed between beam 5 and 100; ten times as many sentences give ~50
    beam_probe: int = 500
    beam_sizes: tuple[int, ...] = (5, 10, 20, 50, 100)
    ks: tuple[int, ...] = (5, 10)
    max_expansions: int = 20000
    sensitivity_sentences: int = 100  # dev sentences with a number or a named entity (Amrhein and Sennrich (2022)'s MBR sensitivity)
    sensitivity_samples: int = 50
    utilities: tuple[str, ...] = ("chrf++", "sbleu")
    sensitivity: bool = True
    systems: bool = True  # Yan et al. (2022)'s Table 3 across systems: the demo model and the forgetting runs' adapted states
    system_samples: int = 100  # Monte Carlo samples per sentence for each system's sampled kQRG
    mbr_samples: int = 100  # MBR samples per sentence (the paper's 100)
    forgetting_segments: int = 500  # scalc segments of the forgetting runs (0: none)
    forgetting_every: int = 250
    forgetting_size: int = 100  # held-out dev segments (snapshots.forgetting)
    why: bool = True  # the why-budget and why-size parts: lasso's budgets and the smaller model on the scalc stream
    field_methods: bool = True  # the field and field-forgetting parts: the field's methods (FIELD_METHODS) beside the papers'
    terms: bool = True  # the terms part: the methods with the glossary, plain and constrained, and +prefer (replicate/terms.py)
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    model: str | None = None  # a researcher's model (folder or hub id); None: the demo model
    dataset: str = "libreoffice"  # a researcher's dataset (autodesk, text, tsv, tmx, hf ...)
    sets: tuple[str, ...] = ()  # KEY=VALUE for every run: data.params.*, model.src_lang, metrics.lang ...

    @property
    def own(self) -> bool:
        """A researcher's model or data: the parts of ``OWN_PARTS`` on them, not the committed page's plan."""
        return self.model is not None or self.dataset != "libreoffice"


# the parts of the plan, each runnable alone (simpe replicate --only): the four run experiments and the three studies;
# the systems study ranks the forgetting runs' final states, so it needs those runs
PARTS = ("scalc", "sdatabase", "forgetting", "sensitivity", "studies", "penalties", "mbr-sensitivity", "systems", "why-budget",
         "why-size", "field", "field-forgetting", "terms")
OWN_PARTS = ("stream", "forgetting", "studies")  # what needs only a model and a stream (--model, --dataset)
# lasso's budgets are judged against the scalc runs, the field's methods against the scalc and forgetting runs
DEPENDS = {"systems": ("forgetting",), "why-budget": ("scalc",), "field": ("scalc",), "field-forgetting": ("forgetting",)}


def parts_to_run(only: list[str] | None, own: bool = False) -> set[str]:
    """The parts a call runs: all, or ``only`` with what they depend on (unknown names refused)."""
    from simpe.errors import ConfigError

    known = OWN_PARTS if own else PARTS
    if not only:
        return set(known)
    unknown = [name for name in only if name not in known]
    if unknown:
        raise ConfigError(f"unknown part {unknown[0]!r} of the replication{' of your model and data' if own else ''}; "
                          f"known: {', '.join(known)}")
    return set(only) | {dep for name in only for dep in DEPENDS.get(name, ())}


@dataclass
class Source:
    """What ``check_source`` found of a researcher's model and data, for the plan and the page."""

    stream: int  # segments of the stream split
    dev: int  # segments of the dev split (0: none)
    novel: bool  # the dataset has a train vocabulary (novel-word R, Simianer et al. (2019)'s Table 3)
    fixed: bool  # a fixed-selection.json beside the model (the `fixed` method)
    notes: list[str] = field(default_factory=list)  # what the plan leaves out, and why


def check_source(scale: Scale) -> Source:
    """Check a researcher's model and data before any model loads: the settings (``sets``), the model's folder and
    family (its config.json, not its weights), the dataset's files and splits, and the segments asked for; a bad one
    raises a SimpeError naming it (one line, exit 2)."""
    from simpe.config.files import load_config
    from simpe.datasets import DATASETS
    from simpe.errors import DataError
    from simpe.model import model_family
    from simpe.paths import DEFAULT_MODEL

    cfg = load_config("baseline", [f"data.name={scale.dataset}", *([f"model.path={scale.model}"] if scale.model else []),
                                   *scale.sets])
    model_family(cfg.model.path, cfg.model.family, cfg.model.family_settings())
    dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
    stream = dataset.load("stream", cfg.data.skip_empty)
    if scale.segments > len(stream):
        raise DataError(f"--segments {scale.segments}, but the stream of {cfg.data.name} has {len(stream)} segments; "
                        f"pass --segments {len(stream)} or fewer")
    dev = len(dataset.load("dev", cfg.data.skip_empty)) if "dev" in dataset.splits else 0
    vocab = dataset.train_vocab(cfg.metrics.lang)
    folder = Path(cfg.model.path) if cfg.model.path else DEFAULT_MODEL
    found = Source(len(stream), dev, vocab is not None and Path(vocab).is_file(), (folder / "fixed-selection.json").is_file())
    if not dev:
        found.notes.append(f"no forgetting runs and no decoding studies: {cfg.data.name} has no dev split"
                           + (" (--set data.params.dev=N holds out the stream's last N segments)" if "dev" in
                              DATASETS.resolve(cfg.data.name, {}) else ""))
    if not found.novel:
        found.notes.append("no novel-word R (Table 3): the dataset has no train vocabulary "
                           "(--set metrics.novel_vocab=FILE of '<count> <word>' lines gives one)")
    if not found.fixed and "fixed" in scale.methods:
        found.notes.append("no `fixed` runs: no fixed-selection.json beside the model (`simpe select-fixed` writes it)")
    return found


@dataclass
class Plan:
    """The runs by experiment, and the decoding studies' size."""

    scale: Scale
    runs_dir: Path
    experiments: dict[str, list[RunSpec]]
    source: Any = None  # Source, for a researcher's model and data
    notes: list[str] = field(default_factory=list)  # what the committed page's plan leaves out here, and why

    def specs(self) -> list[RunSpec]:
        """Every run once (experiments share their baselines and some runs)."""
        seen: dict[Path, RunSpec] = {}
        for specs in self.experiments.values():
            for spec in specs:
                seen.setdefault(spec.path, spec)
        return list(seen.values())

    def estimate(self, workers: int, with_studies: bool = True, reused: frozenset[Path] | set[Path] = frozenset()) -> tuple[float, float]:
        """(seconds of the loop runs, of the studies, 0 without ``with_studies``) expected on this kind of machine
        with ``workers`` at once; the runs in ``reused`` cost nothing."""
        runs = sum(_segments(spec) * relative_cost(spec.cfg) * SECONDS_PER_SEGMENT
                   for spec in self.specs() if spec.path not in reused)
        studies = (self.scale.probe * (SECONDS_PER_PROBE["exact"] * (1 + len(self.scale.ks))
                                       + SECONDS_PER_PROBE["beam"] * sum(self.scale.beam_sizes) / 5 * 2)
                   + self.scale.beam_probe * SECONDS_PER_PROBE["beam"] * sum(self.scale.beam_sizes) / 5)
        return runs / max(1, workers), (studies if with_studies else 0.0)


def _segments(spec: RunSpec) -> int:
    cfg = spec.cfg
    return cfg.data.segments if cfg.data.segments is not None else 1742  # sdatabase when all


def _stream(split: str, segments: int | None, runs_dir: Path, scale: Scale | None = None, novel: bool = True) -> list[str]:
    own: list[str] = []
    if scale is not None:
        own = [f"data.name={scale.dataset}", *([f"model.path={scale.model}"] if scale.model else []), *scale.sets]
    return ["data.name=libreoffice", f"data.split={split}", f"data.segments={'null' if segments is None else segments}",
            f"runs_dir={runs_dir}", *(LOGGED if novel else [x for x in LOGGED if not x.startswith("metrics.novel_vocab")]),
            *own]


def _own_plan(scale: Scale, runs_dir: Path, source: Source) -> Plan:
    """The parts of ``OWN_PARTS`` on a researcher's model and data."""
    methods = [m for m in scale.methods if m != "fixed" or source.fixed]
    experiments = {"stream": plan(methods, overrides=_stream("stream", scale.segments, runs_dir, scale, source.novel))}
    if scale.forgetting_segments and source.dev:
        segments = min(scale.forgetting_segments, source.stream)  # a short stream: all of it, a snapshot at its end
        probe = [*_stream("stream", segments, runs_dir, scale, source.novel),
                 f"snapshots.every={min(scale.forgetting_every, segments)}", "snapshots.ranking=false"]
        experiments["forgetting"] = plan(methods, grid={"snapshots.forgetting": [min(scale.forgetting_size, source.dev)]},
                                         overrides=probe)
    return Plan(scale, Path(runs_dir), experiments, source)


def make_plan(scale: Scale, runs_dir: Path, source: Source | None = None) -> Plan:
    """The plan; every run's config is built and checked here, before anything runs (``source``: what
    ``check_source`` found of a researcher's model and data)."""
    if scale.own:
        return _own_plan(scale, runs_dir, source or check_source(scale))
    main = _stream("stream", scale.segments, runs_dir)
    experiments = {
        "scalc": plan(scale.methods, overrides=main),
        "sdatabase": plan([m for m in scale.methods if m in SEED_METHODS or m in ("lora", "knn")],
                          overrides=_stream("sdatabase", scale.second_segments, runs_dir)),
    }
    if scale.forgetting_segments:
        probe = [*_stream("stream", scale.forgetting_segments, runs_dir),  # then its own snapshots:
                 f"snapshots.every={scale.forgetting_every}", "snapshots.ranking=false"]
        # the grid key names the runs (full--forgetting=200): never the folder of a scalc run of the same length
        experiments["forgetting"] = plan(scale.methods, grid={"snapshots.forgetting": [scale.forgetting_size]},
                                         overrides=probe)
    if scale.sensitivity:
        small = _stream("stream", scale.sensitivity_segments, runs_dir)
        specs = plan(["lasso"], grid={"method.params.penalty": [0.0001, 0.001, 0.01]}, overrides=small)
        for budget in ("0.1", "0.25"):  # the paper's 1M + 1M is 0.025 + 0.025 of the model; two larger budgets
            specs += plan(["lasso"], grid={"method.params.penalty": [0.0001, 0.001], "method.params.budget_nonembedding": [budget],
                                           "method.params.budget_embedding": [budget]}, overrides=small, baseline=False)
        specs += plan(["full"], grid={"update.lr": [0.002, 0.005, 0.02]}, overrides=small, baseline=False)
        for variant in ("update.max_repeats=1", "update.ppl_threshold=1.0", "update.clip_norm=0"):
            key, value = variant.split("=")
            specs += plan(["full", "lasso"], grid={key: [value]}, overrides=small, baseline=False)
        specs += plan(["full"], overrides=small, baseline=False)
        experiments["sensitivity"] = specs
    if scale.why:
        specs = []
        for i, (tensors, rows) in enumerate(WHY_BUDGETS):  # the pairs, not their product; the scalc baseline once
            specs += plan(["lasso"], grid={"method.params.budget_nonembedding": [tensors], "method.params.budget_embedding": [rows]},
                          overrides=main, baseline=i == 0)
        experiments["why-budget"] = specs
        if (REPO_ROOT / SMALL_MODEL / "config.json").is_file():
            experiments["why-size"] = plan(WHY_SIZE_METHODS, overrides=[*main, f"model.path={SMALL_MODEL}"])
    notes = []
    if scale.field_methods:  # the baselines are the scalc and forgetting runs' own (the same folders)
        methods = list(FIELD_METHODS)
        experiments["field"] = plan(methods, overrides=main)
        if scale.forgetting_segments:
            experiments["field-forgetting"] = plan(methods, grid={"snapshots.forgetting": [scale.forgetting_size]},
                                                   overrides=probe)
    if scale.terms and "baseline" in scale.methods:  # its own group: the glossary is part of a group's identity (its baseline is not scalc's)
        glossed = [*main, "data.glossary=dataset"]
        methods = [m for m in TERMS_METHODS if m in scale.methods]
        specs = plan(methods, overrides=glossed)
        specs += plan(methods, grid={"decoder.name": [CONSTRAINED]}, overrides=glossed)
        prefer = [m for m in PREFER_METHODS if m.split("+", 1)[0] in methods]
        if prefer:
            specs += plan(prefer, overrides=glossed, baseline=False)
        experiments["terms"] = specs
    return Plan(scale, Path(runs_dir), experiments, notes=notes)


def stale_runs(p: Plan) -> dict[Path, str]:
    """The plan's runs that exist but are not to be reused, {folder: why}: their code fingerprint (env.json, written
    when the run started) differs from the one the current code gives their config, or they recorded none.

    Such a run starts again from nothing (complete or not); a run whose code matches is reused when complete and
    resumed when not. The fingerprint covers the source files the run depends on and the model's files
    (``simpe.fingerprint.run_code``); the config itself is compared by the sweep (a complete run of other settings
    is refused)."""
    from simpe.fingerprint import changed_files, run_code
    from simpe.rundir.reader import run_env

    stale: dict[Path, str] = {}
    for spec in p.specs():
        env = run_env(spec.path)
        if not env:  # nothing ran there yet, or a run that died before it wrote env.json (it starts from nothing anyway)
            continue
        code = env.get("code")
        now = run_code(spec.cfg.to_dict())
        if not isinstance(code, dict) or not isinstance(code.get("files"), dict):
            stale[spec.path] = "it recorded no code fingerprint (made before simpe recorded one)"
        elif code.get("fingerprint") != now["fingerprint"]:
            changed = changed_files(code["files"], now["files"]) or ["the same files, another fingerprint"]
            stale[spec.path] = f"its code changed ({', '.join(changed[:3])}{' …' if len(changed) > 3 else ''})"
    return stale


def describe(p: Plan, workers: int, parts: set[str] | frozenset[str] = frozenset(PARTS), stale: dict[Path, str] | None = None) -> str:
    """The plan as text: runs per experiment, segments, the studies among ``parts``, what is reused and what runs
    again (``stale``: ``stale_runs``), and the expected time (``--dry-run``)."""
    from simpe.rundir.state import RunState, state

    studies = bool({"studies", "mbr-sensitivity"} & set(parts))
    lines = [f"simpe replicate: {len(p.specs())} loop runs under {p.runs_dir}/" + (", plus the decoding studies" if studies else "")]
    reused: list[Path] = []
    if stale is not None:
        found = {spec.path: state(spec.path) for spec in p.specs()}
        reused = [path for path, st in found.items() if st is RunState.COMPLETE and path not in stale]
        resumed = [path for path, st in found.items() if st is RunState.INCOMPLETE and path not in stale]
        lines.append(f"  reused: {len(reused)} complete runs whose code matches the current code; resumed: {len(resumed)}; "
                     f"started again: {len(stale)} whose code changed" + (f" (e.g. {next(iter(stale)).name}: {next(iter(stale.values()))})"
                                                                          if stale else ""))
    for name, specs in p.experiments.items():
        segments = sorted({_segments(s) for s in specs})
        lines.append(f"  {name:<12} {len(specs):>3} runs x {'/'.join(map(str, segments))} segments: "
                     + ", ".join(s.name for s in specs))
    s = p.scale
    if p.source is not None:
        lines.insert(0, f"your model and data: {s.model or 'the demo model'} on {s.dataset} ({p.source.stream} stream segments, "
                        f"{p.source.dev} dev segments)")
        lines += [f"  left out: {note}" for note in p.source.notes]
    lines += [f"  left out: {note}" for note in p.notes]
    if "studies" in parts and (p.source is None or p.source.dev):
        lines.append(f"  {'studies':<12} {s.probe} dev sentences: exact top-1/top-k (k {', '.join(map(str, s.ks))}), "
                     f"beam and min-heap beam at {', '.join(map(str, s.beam_sizes))}; plain beam alone at the same sizes on "
                     f"{s.beam_probe} dev sentences")
    if "penalties" in parts and p.source is None:
        lines.append(f"  {'penalties':<12} the exact top-{max(s.ks)} of the {s.probe} studies' sentences reranked by each search "
                     "penalty of Yan et al. (2021)'s Table 2")
    if "mbr-sensitivity" in parts:
        lines.append(f"  {'mbr-sens.':<12} MBR sensitivity of {', '.join(s.utilities)} on {s.sensitivity_sentences} dev sentences "
                     f"({s.sensitivity_samples} samples each)")
    if s.systems and "systems" in parts and "forgetting" in p.experiments:
        lines.append(f"  {'systems':<12} Yan et al. (2022)'s Table 3: the demo model and every forgetting run's final adapted state, "
                     f"sampled kQRG ({s.system_samples} samples) and MBR quality ({s.mbr_samples} samples) on the {s.probe} dev sentences")
    runs, studies = p.estimate(workers, studies, set(reused))
    lines.append(f"  expected: about {runs / 3600:.1f} h of loop runs ({workers} at once) + {studies / 3600:.1f} h of studies "
                 "on a 2-core CPU (complete runs whose code matches are reused, so a second call costs only what is missing "
                 "or stale)")
    return "\n".join(lines)
