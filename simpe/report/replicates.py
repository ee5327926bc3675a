"""Replicates: the same presets on several streams, or on several document orders of one stream, compared as one.

One stream is one draw: the paired bootstrap of ``simpe.report.compare`` resamples that stream's segments, not the
choice of the stream or of its order (Simianer et al. (2019) report five streams, Table 5). Given one comparison per
replicate (each group against its own baseline), this module puts each method's differences side by side and counts,
per method and metric: the mean difference across replicates, their spread (sample standard deviation and range),
how many replicates agree with the sign of the mean, and how many find the difference significant in that direction
by their own bootstrap. render.py-style writers (Markdown, CSV) are here too; it reads no runs and writes no run.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from simpe.errors import RunDirError
from simpe.metrics.thresholds import Agreement, agreement, comet_model_of
from simpe.metrics.utility import COMET
from simpe.report.compare import SIGNIFICANCE_LEVEL, Column, Comparison
from simpe.rundir.output import OutputDir

REPLICATE_FILES = {"markdown": "replicates.md", "csv": "replicates.csv"}


@dataclass
class Spread:
    """One method on one metric across replicates (display units, method minus its replicate's baseline).

    deltas: one per replicate (None where not logged); mean, std (sample, ddof 1; None below two replicates),
    low/high: the smallest and largest; agree: replicates whose difference has the sign of the mean (a difference
    of exactly 0 agrees with neither); significant: replicates whose own bootstrap p < 0.05 with that sign.
    """

    deltas: list[float | None]
    mean: float | None = None
    std: float | None = None
    low: float | None = None
    high: float | None = None
    agree: int = 0
    significant: int = 0
    agreement: Agreement | None = None

    @property
    def count(self) -> int:
        return sum(d is not None for d in self.deltas)


@dataclass
class ReplicateTable:
    """Every method's spread per metric across the replicates (``replicate_table``)."""

    replicates: list[str]  # each replicate's description: its group folder and its document order
    columns: list[Column]
    methods: list[str]
    spreads: dict[tuple[str, str], Spread]  # (method, metric) -> spread
    comparisons: list[Comparison] = field(repr=False, default_factory=list)
    notes: list[str] = field(default_factory=list)


def spread(deltas: list[float | None], p_values: list[float | None] | None = None) -> Spread:
    """The statistics of one method's differences across replicates (``p_values``: each replicate's bootstrap p)."""
    found = Spread(list(deltas))
    values = [d for d in deltas if d is not None and not math.isnan(d)]
    if not values:
        return found
    found.mean = sum(values) / len(values)
    found.low, found.high = min(values), max(values)
    if len(values) > 1:
        found.std = math.sqrt(sum((v - found.mean) ** 2 for v in values) / (len(values) - 1))
    sign = (found.mean > 0) - (found.mean < 0)
    found.agree = sum(1 for v in values if sign and (v > 0) - (v < 0) == sign)
    found.significant = sum(1 for d, p in zip(deltas, p_values or [None] * len(deltas))
                            if d is not None and p is not None and p < SIGNIFICANCE_LEVEL and sign and (d > 0) - (d < 0) == sign)
    return found


def _order(comparison: Comparison) -> str:
    orders = {(run.config.get("data") or {}).get("shuffle_documents") for run in comparison.group.runs}
    if len(orders) > 1:
        raise RunDirError(f"the runs of {comparison.group.name} read the stream in different document orders "
                          f"({', '.join(map(str, orders))}); a group holds one order")
    order = next(iter(orders))
    return "documents as read" if order is None else f"documents shuffled with seed {order}"


def replicate_table(comparisons: list[Comparison]) -> ReplicateTable:
    """The replicates' table from one comparison per replicate (the first one's columns and methods lead).

    RunDirError when two replicates are the same stream in the same order (not a replicate) or fewer than two are
    given. A method or metric some replicate lacks is left out with a note.
    """
    if len(comparisons) < 2:
        raise RunDirError("replicates need at least two groups (streams, or orders of one stream)")
    seen: dict[str, str] = {}
    for comp in comparisons:
        stream = comp.group.baseline.stream_sha256 or comp.group.name
        if stream in seen:
            raise RunDirError(f"{comp.group.group_dir} and {seen[stream]} hold the same stream in the same order: not "
                              "two replicates (use another stream, or --set data.shuffle_documents=SEED)")
        seen[stream] = str(comp.group.group_dir)
    notes: list[str] = []
    first = comparisons[0]
    keys = [spec.key for spec in first.columns if all(spec.key in {c.key for c in comp.columns} for comp in comparisons)]
    left = [spec.label for spec in first.columns if spec.key not in keys]
    if left:
        notes.append(f"left out (not in every replicate's table): {', '.join(left)}")
    names = [row.run.name for row in first.rows[1:]]
    methods = [name for name in names if all(any(r.run.name == name for r in comp.rows[1:]) for comp in comparisons)]
    if len(methods) < len(names):
        notes.append(f"left out (not run in every replicate): {', '.join(n for n in names if n not in methods)}")
    columns = [spec for spec in first.columns if spec.key in keys]
    comet_model = comet_model_of(first.signatures.get(COMET))
    spreads: dict[tuple[str, str], Spread] = {}
    for name in methods:
        rows = [next(r for r in comp.rows[1:] if r.run.name == name) for comp in comparisons]
        for spec in columns:
            found = spread([row.deltas.get(spec.key) for row in rows], [row.p_values.get(spec.key) for row in rows])
            found.agreement = agreement(spec.key, found.mean, comet_model)
            spreads[(name, spec.key)] = found
    replicates = [f"{comp.group.name} ({_order(comp)}, {comp.group.num_segments} segments)" for comp in comparisons]
    return ReplicateTable(replicates, columns, methods, spreads, comparisons, notes)


def _signed(value: float | None, decimals: int) -> str:
    if value is None:
        return "–"
    rounded = round(value, decimals)
    return f"±{0:.{decimals}f}" if rounded == 0 else f"{rounded:+.{decimals}f}"


def cell(found: Spread, decimals: int) -> str:
    """``+1.2 ± 0.4 [0.8, 1.6], 3/3 (2†)``: mean ± std [range], sign agreement (significant in that sign)."""
    if found.mean is None:
        return "–"
    std = "" if found.std is None else f" ± {found.std:.{decimals}f}"
    return (f"{_signed(found.mean, decimals)}{std} [{_signed(found.low, decimals)}, {_signed(found.high, decimals)}], "
            f"{found.agree}/{found.count} ({found.significant}†)")


def description(table: ReplicateTable) -> str:
    """How the replicate statistics are made (written under the table)."""
    return (f"Each method's difference to its own replicate's baseline in {len(table.replicates)} replicates: mean ± "
            "sample standard deviation [smallest, largest], then how many replicates have the sign of the mean, and in "
            f"parentheses how many of them find it significant by their own paired bootstrap (p < {SIGNIFICANCE_LEVEL}). "
            "The bootstrap covers the segments of one stream; the spread here covers the choice of stream or of its "
            "document order. The per-replicate tables (each with its bootstrap intervals) follow.")


def to_markdown(table: ReplicateTable) -> str:
    """The replicates' table as Markdown: the spread per method and metric, then each replicate's differences."""
    lines = [f"# Replicates: {len(table.methods)} methods on {len(table.replicates)} streams or orders", ""]
    lines += [f"{i}. {name}" for i, name in enumerate(table.replicates, 1)]
    lines += ["", "| method | " + " | ".join(spec.label for spec in table.columns) + " |",
              "|:--" + "|--:" * len(table.columns) + "|"]
    for name in table.methods:
        lines.append("| " + " | ".join([name, *(cell(table.spreads[(name, spec.key)], spec.decimals) for spec in table.columns)]) + " |")
    lines += ["", description(table), "", "## Each replicate's difference and its 95 % bootstrap interval", "",
              "| method | metric | " + " | ".join(f"replicate {i}" for i in range(1, len(table.replicates) + 1)) + " | human agreement of the mean |",
              "|:--|:--" + "|--:" * (len(table.replicates) + 1) + "|"]
    for name in table.methods:
        for spec in table.columns:
            found = table.spreads[(name, spec.key)]
            cells = []
            for comp in table.comparisons:
                row = next(r for r in comp.rows[1:] if r.run.name == name)
                ci = row.delta_ci95.get(spec.key)
                interval = "" if ci is None else f" [{_signed(ci[0], spec.decimals)}, {_signed(ci[1], spec.decimals)}]"
                cells.append(_signed(row.deltas.get(spec.key), spec.decimals) + interval)
            level = "not covered" if found.agreement is None or not found.agreement.covered else found.agreement.label
            lines.append("| " + " | ".join([name, spec.label, *cells, level]) + " |")
    if table.notes:
        lines += ["", "Notes:", "", *(f"- {note}" for note in table.notes)]
    return "\n".join(lines) + "\n"


def to_csv(table: ReplicateTable) -> str:
    """One row per method and metric: the per-replicate differences and the statistics, unrounded."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    n = len(table.replicates)
    writer.writerow(["method", "metric", *(f"delta_{i}" for i in range(1, n + 1)), "mean", "std", "low", "high",
                     "sign_agree", "replicates", "significant", "agreement"])
    out = lambda v: "" if v is None else f"{round(v, 6)}"  # noqa: E731
    for name in table.methods:
        for spec in table.columns:
            found = table.spreads[(name, spec.key)]
            writer.writerow([name, spec.key, *(out(d) for d in found.deltas), out(found.mean), out(found.std), out(found.low),
                             out(found.high), found.agree, found.count, found.significant,
                             "not covered" if found.agreement is None or not found.agreement.covered else found.agreement.label])
    return buffer.getvalue()


def write_replicates(table: ReplicateTable, out_dir: Path) -> dict[str, Path]:
    """Write replicates.md and replicates.csv into ``out_dir`` (default: the first replicate's compare/)."""
    out = OutputDir(out_dir, REPLICATE_FILES.values())
    texts = {"markdown": to_markdown(table), "csv": to_csv(table)}
    return {kind: out.write_text(REPLICATE_FILES[kind], texts[kind]) for kind in REPLICATE_FILES}


def compare_replicates(first: Comparison, groups: list[Path], allow_incomplete: bool = False, baseline: str | None = None,
                       seed: int | None = None, num_resamples: int | None = None) -> ReplicateTable:
    """``first`` (a replicate's comparison) and the comparisons of the further replicates' ``groups`` (group folders,
    or readable names), with the same bootstrap seed and resamples, as one replicates' table."""
    from simpe.report.compare import compare_runs
    from simpe.rundir.reader import load_group

    comparisons = [first]
    for path in groups:
        group = load_group([path], allow_incomplete=allow_incomplete, baseline=baseline)
        comparisons.append(compare_runs(group, seed=first.seed if seed is None else seed,
                                        num_resamples=first.num_resamples if num_resamples is None else num_resamples))
    return replicate_table(comparisons)
