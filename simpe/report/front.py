"""Learning against forgetting: each run a point, each method's points a curve, the dominated ones named.

A run's *gain* is its corpus difference to the baseline on the stream on a chosen metric (``compare``'s delta, with
its paired bootstrap interval over the stream's segments). Its *forgetting* is the baseline's score on the forgetting
probe (``snapshots.forgetting``: held-out dev text) minus the run's, at the last snapshot both took (positive: the run
got worse on other text), with a paired bootstrap interval over the probe's sentences from the per-sentence statistics
the probe logs (``forget.stats``; runs written before it have no interval). A point is dominated when another run
(the baseline at (0, 0) included) gains at least as much and forgets no more, one of them strictly (Biderman et al.
(2024) draw LoRA and full fine-tuning on such a learning-against-forgetting curve). The points of one method across a
sweep's settings (its learning rates) are joined in the order of the setting. This module computes and writes the
table (front.md); plotting.plot_front draws it. It never translates and never writes a run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simpe.errors import ConfigError
from simpe.metrics import metric_for
from simpe.report.compare import Comparison, compare_runs
from simpe.rundir.reader import Run, RunGroup
from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_scores, paired_test, resample_counts

FORGET_METRICS = ("bleu", "chrf")  # what the forgetting probe scores (simpe.loop.probes)
FRONT_FILE = "front.md"


@dataclass
class FrontPoint:
    """One run: ``gain`` (display units of the chosen metric, method minus baseline on the stream) with its 95 %
    interval, ``forgetting`` (points of the probe's metric, baseline minus method) with its interval (None without
    per-sentence statistics), ``setting``: the run's learning rate (what joins a method's points)."""

    name: str
    method: str
    setting: float
    gain: float | None
    gain_ci: tuple[float, float] | None
    forgetting: float | None
    forgetting_ci: tuple[float, float] | None
    dominated_by: list[str] = field(default_factory=list)


@dataclass
class Front:
    """The front of a group: its points, the metrics, at which snapshot, and the notes."""

    group: RunGroup
    metric: str
    forget_metric: str
    probe_segment: int | None
    probe_size: int | None
    points: list[FrontPoint]
    notes: list[str]

    def methods(self) -> dict[str, list[FrontPoint]]:
        """Each method's points in the order of their setting (the curve)."""
        curves: dict[str, list[FrontPoint]] = {}
        for point in sorted(self.points, key=lambda p: (p.method, p.setting)):
            curves.setdefault(point.method, []).append(point)
        return curves

    def dominated_methods(self) -> list[str]:
        """The methods every one of whose points is dominated."""
        return [method for method, points in self.methods().items()
                if points and all(p.dominated_by for p in points if p.gain is not None and p.forgetting is not None)
                and any(p.gain is not None and p.forgetting is not None for p in points)]


def _last_probe(run: Run) -> dict[str, Any] | None:
    found = [s for s in run.snapshots if isinstance(s.get("forget.bleu"), (int, float))]
    return found[-1] if found else None


def _forgetting(base: dict[str, Any], probe: dict[str, Any], key: str, counts: np.ndarray | None) -> tuple[float, tuple[float, float] | None]:
    """(baseline minus run on the probe, its 95 % interval or None) from two snapshot records."""
    value = float(base[f"forget.{key}"]) - float(probe[f"forget.{key}"])
    stats_b, stats_r = ((s.get("forget.stats") or {}).get(key) for s in (base, probe))
    if counts is None or not stats_b or not stats_r or len(stats_b) != len(stats_r):
        return value, None
    metric = metric_for(key)
    score = metric.scores_from_stats
    b, r = np.asarray(stats_b, dtype=np.float64), np.asarray(stats_r, dtype=np.float64)  # (probe, d)
    # the test's delta is run minus baseline; forgetting is its negative
    result = paired_test(float(score(b.sum(0))[0]), float(score(r.sum(0))[0]), bootstrap_scores(b, score, counts),
                         bootstrap_scores(r, score, counts))
    low, high = result.delta_ci95
    return value, None if math.isnan(low) else (-high, -low)


def _setting(run: Run) -> float:
    lr = (run.config.get("update") or {}).get("lr")
    return float(lr) if isinstance(lr, (int, float)) else math.nan


def front(group: RunGroup, metric: str = "bleu", comparison: Comparison | None = None,
          seed: int | None = DEFAULT_SEED, num_resamples: int = DEFAULT_RESAMPLES) -> Front:
    """The learning-against-forgetting front of a checked run group on ``metric`` (a column of ``compare``).

    The forgetting probe is scored in ``metric`` when the probe logs it (BLEU, chrF), else in BLEU. ConfigError
    when ``metric`` is not a column of the group's comparison.
    """
    comparison = comparison or compare_runs(group, seed=seed, num_resamples=num_resamples)
    keys = [spec.key for spec in comparison.columns]
    if metric not in keys:
        raise ConfigError(f"--front-metric {metric!r} is not a column of this group's table; known: {', '.join(keys)}")
    forget_metric = metric if metric in FORGET_METRICS else "bleu"
    notes: list[str] = []
    base_probe = _last_probe(group.baseline)
    probes = {run.name: _last_probe(run) for run in group.methods}
    segment = None
    if base_probe is None:
        notes.append("the baseline took no forgetting probe (snapshots.forgetting): no forgetting figures; run with "
                     "--set snapshots.forgetting=100 (sweeps/front.yaml)")
    else:
        segment = int(base_probe["segment"])
    counts = None
    if base_probe is not None and (base_probe.get("forget.stats") or {}).get(forget_metric):
        counts = resample_counts(len(base_probe["forget.stats"][forget_metric]), num_resamples, seed).astype(np.float64)
    elif base_probe is not None:
        notes.append("the forgetting probe logged no per-sentence statistics (runs before forget.stats): forgetting "
                     "has no interval")
    points = []
    for row in comparison.rows[1:]:
        run = row.run
        forgetting, forgetting_ci = None, None
        probe = probes.get(run.name)
        if base_probe is not None and probe is not None and int(probe["segment"]) == segment:
            forgetting, forgetting_ci = _forgetting(base_probe, probe, forget_metric, counts)
        elif base_probe is not None:
            notes.append(f"{run.name}: no forgetting probe after segment {segment}; left off the figure")
        points.append(FrontPoint(run.name, run.method, _setting(run), row.deltas.get(metric), row.delta_ci95.get(metric),
                                 forgetting, forgetting_ci))
    higher = metric_for(metric).higher_is_better
    _mark_dominated(points, higher)
    probe_size = None if base_probe is None else base_probe.get("forget.size")
    return Front(group, metric, forget_metric, segment, probe_size, points, notes)


def _mark_dominated(points: list[FrontPoint], higher_is_better: bool) -> None:
    """Fill ``dominated_by``: runs (and the baseline at (0, 0)) with at least the gain and at most the forgetting."""
    sign = 1.0 if higher_is_better else -1.0
    measured = [(p.name, sign * p.gain, p.forgetting) for p in points if p.gain is not None and p.forgetting is not None]
    others = [("baseline", 0.0, 0.0), *measured]
    for point in points:
        if point.gain is None or point.forgetting is None:
            continue
        gain = sign * point.gain
        point.dominated_by = [name for name, g, f in others if name != point.name and g >= gain and f <= point.forgetting
                              and (g > gain or f < point.forgetting)]


def _fmt(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    text = f"{value:+.2f}"
    return text if interval is None else f"{text} [{interval[0]:+.2f}, {interval[1]:+.2f}]"


def to_markdown(result: Front, figure: str | None = None) -> str:
    """The front as Markdown: one row per run, its gain, forgetting, and what dominates it."""
    label, forget_label = metric_for(result.metric).label, metric_for(result.forget_metric).label
    where = (f"after segment {result.probe_segment}, {result.probe_size} held-out sentences"
             if result.probe_segment is not None else "not measured")
    lines = [f"# Learning against forgetting: {result.group.name}", ""]
    if figure:
        lines += [f"Figure: `{figure}`", ""]
    lines += [f"Gain: Δ {label} on the stream against the baseline (95 % paired bootstrap interval over the stream's "
              f"segments). Forgetting: the baseline's {forget_label} on the forgetting probe minus the run's ({where}; "
              "positive = worse on other text; 95 % paired bootstrap interval over the probe's sentences). Dominated: "
              "another run, or the baseline at (0, 0), gains at least as much and forgets no more, judged on the point "
              "estimates (the intervals say how firm each comparison is).", "",
             "| run | method | lr | gain | forgetting | dominated by |", "|:--|:--|--:|--:|--:|:--|"]
    for point in sorted(result.points, key=lambda p: (p.method, p.setting)):
        dominated = ", ".join(point.dominated_by) if point.dominated_by else ("–" if point.forgetting is None else "no (on the front)")
        lines.append(f"| {point.name} | {point.method} | {point.setting:g} | {_fmt(point.gain, point.gain_ci)} | "
                     f"{_fmt(point.forgetting, point.forgetting_ci)} | {dominated} |")
    dominated = result.dominated_methods()
    lines += ["", "Methods whose every point is dominated: " + (", ".join(dominated) if dominated else "none") + "."]
    if result.notes:
        lines += ["", "Notes:", "", *(f"- {note}" for note in result.notes)]
    return "\n".join(lines) + "\n"


def write_front(group: RunGroup, out_dir: Any, metric: str = "bleu") -> list[Any]:
    """front.png, front.pdf and front.md of ``group`` into ``out_dir``; returns the paths (the table last)."""
    from simpe.report.plotting import plot_front
    from simpe.rundir.output import OutputDir

    result = front(group, metric)
    paths = plot_front(result, out_dir)
    paths.append(OutputDir(out_dir, [FRONT_FILE]).write_text(FRONT_FILE, to_markdown(result, str(paths[0]))))
    return paths
