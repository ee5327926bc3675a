"""Figures from logged runs: cumulative differences to the baseline, ranking snapshots.

Figure 2 of Simianer et al. (2019): for each segment index i, the metric over segments 0..i of a method
minus the same for the baseline, read from the ``cumulative`` values the loop logged (never
recomputed, never re-translated). Beside it, the periodic exact top-k ranking snapshots
(kRG, kQRG, empty-mode rate, beam search error rate) when the runs took them, with the
random-order kRG of each list length and gain (``simpe.ranking.measures.random_krg``) and
a red ring on every snapshot whose searches were not all exact. The curve
data come from functions of their own (``cumulative_deltas``, ``snapshot_series``) so they
can be checked without looking at images. Reads runs only; matplotlib is imported lazily
and drawn with the Agg canvas (no pyplot, no display).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simpe.ranking.measures import random_krg
from simpe.report.compare import column
from simpe.rundir.output import OutputDir
from simpe.rundir.reader import Run, RunGroup

logger = logging.getLogger(__name__)

# (metric key, panel title, y-axis label); the order of Simianer et al. (2019), Figure 2: R0, R1, R0+1, BLEU
DELTA_PANELS: list[tuple[str, str, str]] = [
    ("r0", "R0: recall of content words seen for the first time", "Δ R0 (percentage points)"),
    ("r1", "R1: recall of content words seen once before", "Δ R1 (percentage points)"),
    ("r0+1", "R0+1: R0 and R1 together", "Δ R0+1 (percentage points)"),
    ("bleu", "BLEU (corpus, from accumulated statistics)", "Δ BLEU (points)"),
]
# the interactive protocol's effort (simpe.loop.interactive), drawn beside them when every run logged it
EFFORT_PANELS: list[tuple[str, str, str]] = [
    ("ksmr", "KSMR: keystrokes and clicks per reference character (lower is better)", "Δ KSMR (percentage points)"),
    ("wsr", "WSR: typed words per reference word (lower is better)", "Δ WSR (percentage points)"),
]
# a glossary run's term metrics (simpe.terms.score), drawn beside them when every run logged them
TERM_PANELS: list[tuple[str, str, str]] = [
    ("term", "Term accuracy: counted glossary terms the output holds", "Δ term accuracy (percentage points)"),
    ("t0", "T0: terms at their first occurrence in the stream", "Δ T0 (percentage points)"),
    ("t1", "T1: terms at every later occurrence", "Δ T1 (percentage points)"),
    ("term-repeat", "Repeated term errors: a fixed term missed again (lower is better)", "Δ repeated term errors (percentage points)"),
]
# (snapshot metric, panel title, y-axis label), in panel order
SNAPSHOT_PANELS: list[tuple[str, str, str]] = [
    ("krg", "kRG: model ranking vs. quality ranking", "kRG (0–1, 1 = same order)"),
    ("kqrg", "kQRG: quality of the model's top-k", "kQRG (0–1)"),
    ("empty_rate", "Empty-mode rate: exact top-1 is the empty output", "share of segments (0–1)"),
    ("beam_error_rate", "Beam search error rate: beam scores below exact top-1", "share of segments (0–1)"),
    ("bleu", "Forgetting probe: BLEU on held-out other text", "BLEU"),
    ("chrf", "Forgetting probe: chrF on held-out other text", "chrF"),
]
SNAPSHOT_SOURCES = {"top": ("exact top-k", "-", "o"), "mc": ("Monte Carlo samples", "--", "s"),
                    "forget": ("held-out other text (snapshots.forgetting)", "-.", "D")}
METHOD_COLORS = {"baseline": "black", "full": "tab:blue", "bias": "tab:orange", "fixed": "tab:green",
                 "top": "tab:red", "lasso": "tab:purple", "lora": "tab:brown", "knn": "tab:cyan"}
SPARE_COLORS = ["tab:pink", "tab:olive", "tab:gray", "navy", "darkgoldenrod", "teal", "firebrick", "darkkhaki"]
BURN_IN_FRACTION = 0.05  # y range fitted to segments after the first 5 % (cumulative values swing early)


@dataclass
class DeltaCurves:
    """Cumulative differences to the baseline, per method and metric, in display units.

    segment_index: (n,) logged segment indices 0..n-1. deltas[run name][metric]: (n,)
    method minus baseline of the logged cumulative value (BLEU in points, R metrics in
    percentage points; NaN where either is undefined). labels[run name]: legend label.
    """

    segment_index: np.ndarray
    deltas: dict[str, dict[str, np.ndarray]]
    labels: dict[str, str]


def _cumulative(run: Run, key: str, num_segments: int) -> np.ndarray:
    values = []
    for seg in run.segments[:num_segments]:
        value = (seg.get("cumulative") or {}).get(key)
        values.append(math.nan if value is None else float(value))
    return np.asarray(values, dtype=float)  # (n,)


def cumulative_deltas(group: RunGroup, metrics: tuple[str, ...] = tuple(key for key, _, _ in DELTA_PANELS)) -> DeltaCurves:
    """Method minus baseline of the logged cumulative values at every segment index.

    Covers ``group.num_segments`` segments (the prefix all runs logged when incomplete runs
    are included). The value at the last index equals ``compare``'s delta for a complete
    group (both come from what the loop logged).
    """
    n = group.num_segments
    baseline = {key: _cumulative(group.baseline, key, n) for key in metrics}
    deltas: dict[str, dict[str, np.ndarray]] = {}
    for run in group.methods:
        deltas[run.name] = {key: (_cumulative(run, key, n) - baseline[key]) * column(key).scale for key in metrics}
    return DeltaCurves(segment_index=np.arange(n), deltas=deltas, labels={run.name: run.label for run in group.methods})


def snapshot_series(group: RunGroup) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Ranking snapshot series per run: ``{run name: {"top.krg": (segments, values), ...}}``.

    ``segment`` is what the loop logs: the number of segments done when the snapshot was
    taken. Only the metrics of SNAPSHOT_PANELS are kept; a null value becomes NaN; runs
    without snapshots are left out; snapshots after ``group.num_segments`` are dropped.
    """
    wanted = {key for key, _, _ in SNAPSHOT_PANELS}
    series: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for run in group.runs:
        points: dict[str, list[tuple[float, float]]] = {}
        for record in run.snapshots:
            segment = record.get("segment")
            if not isinstance(segment, (int, float)) or segment > group.num_segments:
                continue
            for name, value in record.items():
                source, _, metric = name.partition(".")
                if metric in wanted and (value is None or isinstance(value, (int, float))):
                    points.setdefault(name, []).append((float(segment), math.nan if value is None else float(value)))
        if points:
            series[run.name] = {name: (np.array([x for x, _ in pts]), np.array([y for _, y in pts]))
                                for name, pts in sorted(points.items())}
    return series


def random_krg_references(group: RunGroup) -> dict[tuple[str, int, str], float]:
    """The random-order kRG of every (source, list length, gain) the snapshots used, from ``measures.random_krg``.

    ``top``: the top-region size ``k`` of each snapshot record; ``mc``: its ``mc.samples``.
    Keyed ``(source, n, gain)``; records without a gain or size give none.
    """
    references: dict[tuple[str, int, str], float] = {}
    for run in group.runs:
        for record in run.snapshots:
            gain = record.get("gain")
            for source, size in (("top", record.get("k")), ("mc", record.get("mc.samples"))):
                if not isinstance(gain, str) or not isinstance(size, int) or f"{source}.krg" not in record:
                    continue
                value = random_krg(size, gain)
                if value is not None:
                    references[(source, size, gain)] = float(value)
    return dict(sorted(references.items()))


def inexact_snapshots(group: RunGroup) -> dict[str, list[tuple[int, float]]]:
    """Per run, the snapshots whose exact searches were not all exact: [(segment, top.exact_rate)]."""
    found: dict[str, list[tuple[int, float]]] = {}
    for run in group.runs:
        for record in run.snapshots:
            rate, segment = record.get("top.exact_rate"), record.get("segment")
            if isinstance(rate, (int, float)) and rate < 1.0 and isinstance(segment, (int, float)) \
                    and segment <= group.num_segments:
                found.setdefault(run.name, []).append((int(segment), float(rate)))
    return found


def method_colors(runs: list[Run]) -> dict[str, str]:
    """A color per run, fixed per method across figures (two adapters of one method get spare colors)."""
    colors: dict[str, str] = {}
    used: set[str] = set()
    spare = iter(SPARE_COLORS * 4)
    for run in runs:
        color = METHOD_COLORS.get(run.method)
        if color is None or color in used:
            color = next(spare)
        used.add(color)
        colors[run.name] = color
    return colors


def _y_limits(curves: list[np.ndarray], num_segments: int) -> tuple[tuple[float, float] | None, int]:
    """Y range fitted to the curves after the burn-in (and 0); returns (limits or None, burn-in)."""
    burn_in = int(num_segments * BURN_IN_FRACTION) if num_segments >= 100 else 0
    late = np.concatenate([c[burn_in:] for c in curves]) if curves else np.array([])
    late = late[~np.isnan(late)]
    if late.size == 0:
        return None, 0
    low, high = min(0.0, float(late.min())), max(0.0, float(late.max()))
    pad = 0.08 * (high - low) if high > low else 1.0
    return (low - pad, high + pad), burn_in


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, out_dir: Path, stem: str) -> list[Path]:
    out = OutputDir(out_dir, [])
    paths = [out.file(f"{stem}.png"), out.file(f"{stem}.pdf")]
    fig.savefig(paths[0], dpi=150)
    fig.set_layout_engine("none")  # keep the layout just computed: the PDF needs no second layout pass
    fig.savefig(paths[1])
    return paths


def _coverage(group: RunGroup) -> str:
    if not group.truncated:
        return f"{group.num_segments} segments"
    total = f" of {group.stream_segments}" if group.stream_segments else ""
    return f"first {group.num_segments}{total} segments: incomplete runs included"


def delta_panels(group: RunGroup, effort: bool = True) -> list[tuple[str, str, str]]:
    """The panels of the cumulative differences: Figure 2's, then (``effort``) KSMR and WSR, then the term metrics,
    each group when every run logged it."""
    def logged(panels: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        return [p for p in panels if all(p[0] in (run.segments[0].get("cumulative") or {}) for run in group.runs if run.segments)]

    return DELTA_PANELS + (logged(EFFORT_PANELS) if effort else []) + logged(TERM_PANELS)


def plot_cumulative_deltas(group: RunGroup, out_dir: Path) -> list[Path]:
    """Simianer et al. (2019), Figure 2, as ``cumulative_delta.png`` and ``.pdf``: one panel per metric, one line per method
    (KSMR and WSR, and a glossary's term metrics, beside them when every run logged them)."""
    panels = delta_panels(group)
    curves = cumulative_deltas(group, tuple(key for key, _, _ in panels))
    colors = method_colors(group.runs)
    cols = 2 if len(panels) <= 4 else 3 if len(panels) <= 6 else 4
    rows = math.ceil(len(panels) / cols)
    fig = _figure(5.5 * cols, 3.8 * rows)
    axes = fig.subplots(rows, cols, sharex=True).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    clipped_before = 0
    for ax, (key, title, ylabel) in zip(axes, panels):
        # drawn on top, dashed: a method identical to the baseline stays visible under it
        ax.axhline(0.0, color=colors[group.baseline.name], linewidth=1.1, linestyle=(0, (4, 3)), zorder=3,
                   label=f"{group.baseline.label} (zero line)")
        lines = []
        for run in group.methods:
            y = curves.deltas[run.name][key]
            lines.append(y)
            ax.plot(curves.segment_index, y, color=colors[run.name], linewidth=1.3, label=curves.labels[run.name],
                    linestyle="-" if run.complete else "--")
        limits, burn_in = _y_limits(lines, group.num_segments)
        if limits is not None:
            ax.set_ylim(*limits)
            early = np.concatenate([y[:burn_in] for y in lines]) if burn_in else np.array([])
            early = early[~np.isnan(early)]
            if early.size and (early.min() < limits[0] or early.max() > limits[1]):
                clipped_before = burn_in
                ax.axvspan(0, burn_in, color="0.9", zorder=0, linewidth=0)
        ax.set_title(title, fontsize=10.5)
        ax.set_ylabel(ylabel)
        ax.set_xlim(0, max(1, group.num_segments - 1))
        ax.grid(True, linewidth=0.4, alpha=0.5)
    for ax in axes[(rows - 1) * cols:]:  # the bottom row
        ax.set_xlabel("segment index (cumulative over segments 0..i)")
    handles, labels = axes[0].get_legend_handles_labels()
    if clipped_before:
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor="0.9", edgecolor="none"))
        labels.append(f"segments 0–{clipped_before - 1} (y range fitted to later ones)")
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 8), frameon=False, fontsize=10,
               columnspacing=1.4, handlelength=2.2)
    fig.suptitle(f"Cumulative difference to the baseline (method minus baseline)\n{group.name}, {_coverage(group)}",
                 fontsize=12)
    return _save(fig, Path(out_dir), "cumulative_delta")


def plot_snapshots(group: RunGroup, out_dir: Path) -> list[Path]:
    """Ranking snapshots against segment index as ``ranking_snapshots.png``/``.pdf``; [] when no run took any."""
    series = snapshot_series(group)
    if not series:
        return []
    present = [panel for panel in SNAPSHOT_PANELS
               if any(name.partition(".")[2] == panel[0] for run_series in series.values() for name in run_series)]
    sources = sorted({name.partition(".")[0] for run_series in series.values() for name in run_series},
                     key=lambda s: (list(SNAPSHOT_SOURCES).index(s) if s in SNAPSHOT_SOURCES else len(SNAPSHOT_SOURCES), s))
    colors = method_colors(group.runs)
    references = random_krg_references(group)
    inexact = inexact_snapshots(group)
    markers = max(len(xy[0]) for run_series in series.values() for xy in run_series.values()) <= 30  # few points: mark them
    columns = 2 if len(present) > 1 else 1
    rows = math.ceil(len(present) / columns)
    fig = _figure(5.5 * columns, 3.6 * rows + 0.9)
    axes = np.atleast_1d(fig.subplots(rows, columns, sharex=True, squeeze=False).ravel())
    for ax, (metric, title, ylabel) in zip(axes, present):
        for run in group.runs:
            for source in sources:
                xy = series.get(run.name, {}).get(f"{source}.{metric}")
                if xy is None:
                    continue
                _, style, marker = SNAPSHOT_SOURCES.get(source, (source, ":", "^"))
                ax.plot(xy[0], xy[1], color=colors[run.name], linestyle=style, linewidth=1.2,
                        marker=marker if markers else None, markersize=4)
            for segment, _ in inexact.get(run.name, []):
                xy = series.get(run.name, {}).get(f"top.{metric}")
                if xy is not None and segment in xy[0]:
                    y = xy[1][list(xy[0]).index(segment)]
                    ax.plot([segment], [y], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                            markeredgecolor="red", markeredgewidth=1.4, zorder=5)
        if metric == "krg":
            for (source, size, gain), value in references.items():
                style = SNAPSHOT_SOURCES.get(source, (source, ":", "^"))[1]
                ax.axhline(value, color="0.45", linestyle=style, linewidth=0.9, zorder=1)
                name = "k" if source == "top" else "samples"
                ax.annotate(f"random order ({name} = {size}, {gain} gain): {value:.3f}", (0.01, value),
                            xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 2),
                            fontsize=7.5, color="0.35")
        ax.set_title(title, fontsize=10.5)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, linewidth=0.4, alpha=0.5)
    for ax in axes[len(present):]:
        ax.set_visible(False)
    for ax in axes[max(0, len(present) - columns):len(present)]:
        ax.set_xlabel("segments adapted on when the snapshot was taken")
        ax.xaxis.set_tick_params(labelbottom=True)

    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[run.name], linewidth=2, label=run.label)
               for run in group.runs if run.name in series]
    handles += [Line2D([], [], color="dimgray", linestyle=SNAPSHOT_SOURCES.get(s, (s, ":", "^"))[1],
                       marker=SNAPSHOT_SOURCES.get(s, (s, ":", "^"))[2] if markers else None,
                       label=SNAPSHOT_SOURCES.get(s, (s,))[0])
                for s in sources]
    if references:
        handles.append(Line2D([], [], color="0.45", linewidth=0.9, label="random-order kRG (measures.random_krg)"))
    if inexact:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                              markeredgecolor="red", label="not exact: a search was cut short"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 8), frameon=False, fontsize=9.5,
               columnspacing=1.4)
    fig.suptitle(f"Snapshots while adapting (ranking, forgetting)\n{group.name}, {_coverage(group)}", fontsize=12)
    return _save(fig, Path(out_dir), "ranking_snapshots")


def plot_group(group: RunGroup, out_dir: Path) -> list[Path]:
    """Every figure of a run group into ``out_dir``; returns the files written. A translator's run is drawn against
    the stream's references, as every run (``simpe.report.people.stream_group``)."""
    from simpe.report.people import stream_group

    group = stream_group(group)[0]
    paths = plot_cumulative_deltas(group, out_dir)
    paths += plot_snapshots(group, out_dir)
    return paths


def plot_front(result: Any, out_dir: Path) -> list[Path]:
    """The learning-against-forgetting front (``simpe.report.front.Front``) as front.png/.pdf in ``out_dir``: each run
    a point with its two 95 % intervals, each method's points joined in the order of their learning rate, the
    baseline at (0, 0), dominated points hollow."""
    from simpe.metrics import metric_for

    fig = _figure(7.5, 5.5)
    ax = fig.add_subplot(1, 1, 1)
    colors = {method: METHOD_COLORS.get(method) or SPARE_COLORS[i % len(SPARE_COLORS)]
              for i, method in enumerate(result.methods())}
    for method, points in result.methods().items():
        drawn = [p for p in points if p.gain is not None and p.forgetting is not None]
        if not drawn:
            continue
        color = colors[method]
        ax.plot([p.forgetting for p in drawn], [p.gain for p in drawn], "-", color=color, alpha=0.6, label=method)
        for p in drawn:
            xerr = None if p.forgetting_ci is None else [[p.forgetting - p.forgetting_ci[0]], [p.forgetting_ci[1] - p.forgetting]]
            yerr = None if p.gain_ci is None else [[p.gain - p.gain_ci[0]], [p.gain_ci[1] - p.gain]]
            ax.errorbar([p.forgetting], [p.gain], xerr=xerr, yerr=yerr, fmt="o", color=color, ecolor=color, elinewidth=0.8,
                        capsize=2, markerfacecolor="white" if p.dominated_by else color, markersize=6)
            ax.annotate(f"{p.setting:g}", (p.forgetting, p.gain), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.plot([0], [0], "s", color="black", label="baseline")
    ax.axhline(0, color="gray", lw=0.6)
    ax.axvline(0, color="gray", lw=0.6)
    label, forget = metric_for(result.metric).label, metric_for(result.forget_metric).label
    ax.set_xlabel(f"forgetting: baseline − run, {forget} on held-out text (points; right = forgets more)")
    ax.set_ylabel(f"gain: Δ {label} on the stream (points)")
    ax.set_title(f"Learning against forgetting ({result.group.name})\nhollow: dominated; labels: learning rate; "
                 "bars: 95 % bootstrap intervals", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return _save(fig, out_dir, "front")
