"""What ``simpe replicate`` runs: the loop runs (as sweep specs) and the decoding studies, and what they cost.

The forgetting runs (``forgetting_segments`` of ``scalc``) take a snapshot every
``forgetting_every`` segments with the forgetting probe only (the last ``forgetting_size`` dev
segments, translated by the run's decoder).

Every loop run logs the R variants of Simianer et al. (2019)'s Tables 3 and 4 beside the regular ones
(``metrics.novel_vocab=train``, ``metrics.subword=all``: Table 4 counts all tokens), so one run per method answers
Tables 1-4 and Figure 2. Streams: ``scalc`` (the first ``segments``) and ``sdatabase`` (the
second, smaller data set in the role of the paper's Table 5); ``smath`` is never touched. The
sensitivity study runs on the first ``sensitivity_segments`` of ``scalc``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from simpe.sweep import RELATIVE_COST, RunSpec, plan

METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn"]
SEED_METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso"]  # Simianer et al. (2019)'s five and its baseline
LOGGED = ["metrics.novel_vocab=train", "metrics.subword=all", "snapshots.every=0"]  # Table 4 counts all tokens (its footnote 8)
# a baseline segment of a one-thread run, two runs at once, demo model (scaled by RELATIVE_COST): 0.074 s alone
# (docs/benchmarks.md, bench-loop); 0.185 s measured in the first `make replicate`, with the 2 cores also busy with other work
SECONDS_PER_SEGMENT = 0.09
SECONDS_PER_PROBE = {"exact": 1.5, "beam": 0.05}  # rough per sentence: exact top-k search, one beam size


@dataclass
class Scale:
    """How much ``simpe replicate`` runs (the defaults are the committed page's)."""

    segments: int = 2000  # scalc stream segments (Simianer et al. (2019)'s tables)
    second_segments: int | None = None  # sdatabase segments; None: all 1,742
    sensitivity_segments: int = 200
    probe: int = 50  # dev sentences (at most 20 words) for the decoding studies
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
    methods: list[str] = field(default_factory=lambda: list(METHODS))


# the parts of the plan, each runnable alone (simpe replicate --only): the four run experiments and the three studies;
# the systems study ranks the forgetting runs' final states, so it needs those runs
PARTS = ("scalc", "sdatabase", "forgetting", "sensitivity", "studies", "mbr-sensitivity", "systems")
DEPENDS = {"systems": ("forgetting",)}


def parts_to_run(only: list[str] | None) -> set[str]:
    """The parts a call runs: all, or ``only`` with what they depend on (unknown names refused)."""
    from simpe.errors import ConfigError

    if not only:
        return set(PARTS)
    unknown = [name for name in only if name not in PARTS]
    if unknown:
        raise ConfigError(f"unknown part {unknown[0]!r} of the replication; known: {', '.join(PARTS)}")
    return set(only) | {dep for name in only for dep in DEPENDS.get(name, ())}


@dataclass
class Plan:
    """The runs by experiment, and the decoding studies' size."""

    scale: Scale
    runs_dir: Path
    experiments: dict[str, list[RunSpec]]

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
        runs = sum(_segments(spec) * RELATIVE_COST.get(spec.cfg.method.name, 1.0) * SECONDS_PER_SEGMENT
                   for spec in self.specs() if spec.path not in reused)
        studies = self.scale.probe * (SECONDS_PER_PROBE["exact"] * (1 + len(self.scale.ks))
                                      + SECONDS_PER_PROBE["beam"] * sum(self.scale.beam_sizes) / 5 * 2)
        return runs / max(1, workers), (studies if with_studies else 0.0)


def _segments(spec: RunSpec) -> int:
    cfg = spec.cfg
    return cfg.data.segments if cfg.data.segments is not None else 1742  # sdatabase when all


def _stream(split: str, segments: int | None, runs_dir: Path) -> list[str]:
    return ["data.name=libreoffice", f"data.split={split}", f"data.segments={'null' if segments is None else segments}",
            f"runs_dir={runs_dir}", *LOGGED]


def make_plan(scale: Scale, runs_dir: Path) -> Plan:
    """The plan; every run's config is built and checked here, before anything runs."""
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
    return Plan(scale, Path(runs_dir), experiments)


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
    if "studies" in parts:
        lines.append(f"  {'studies':<12} {s.probe} dev sentences: exact top-1/top-k (k {', '.join(map(str, s.ks))}), "
                     f"beam and min-heap beam at {', '.join(map(str, s.beam_sizes))}")
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
