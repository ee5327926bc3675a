"""The field's methods beside the papers' (the ``field`` and ``field-forgetting`` parts of ``simpe replicate``): measured.

ModernMT's retrieve-tune-reset (``tune-retrieve``), forgetting fought by replay and elastic weight consolidation
(``full+replay``, ``full+ewc``, ``lasso+ewc``) and a parametric method composed with kNN-MT (``full+knn``), each run on
the same 2,000 scalc segments as the papers' methods and on the 500 segments of the forgetting runs. Every figure is
a difference to the baseline (and to the method a composition modifies, its *parent*: full for ``full+replay``) with
a 95 % interval from the paired bootstrap over segments that every row of the page uses (``verdicts.paired_effect``);
forgetting is one snapshot per run (no interval). Nothing here is judged against a paper: the rows are measured.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simpe.replicate.papers import POINTS, RELATIVE
from simpe.replicate.verdicts import Effect, metric_score, paired_effect
from simpe.report.compare import segment_stats
from simpe.rundir.reader import Run, RunGroup

# the papers' methods the field's are set against, and the field's methods (the presets of adapters/)
AGAINST = ("full", "lasso", "knn")
# (EWC's Fisher reads the shipped train-sample split, so every clone runs all of them)
FIELD_METHODS = ("tune-retrieve", "full+replay", "full+ewc", "lasso+ewc", "full+knn")


def preset(run: Run) -> str:
    """The preset a run ran (``full+replay``): a sweep names a run, and its ``adapter``, after the preset and its grid
    values joined by ``--`` (``full+replay--forgetting=100``, ``simpe.sweep.plan``)."""
    return str((run.summary or {}).get("adapter") or run.config.get("adapter") or run.name).split("--", 1)[0]


def parent(run: Run) -> str | None:
    """The method a composition modifies (``full`` for ``full+replay``); None for a method of its own."""
    section = run.config.get("method") or {}
    return str(section.get("name")) if section.get("modifiers") else None


def repeated_stats(run: Run, n: int) -> np.ndarray:
    """(n, 2) per-segment (missed again, shown after a miss): as a record keeps them (``records.REPEATED``), else from
    the run's logged tokens."""
    from simpe.report.marks import repeated_error_stats

    segments = run.segments[:n]
    if segments and all("repeated" in s for s in segments):
        return np.asarray([s["repeated"] for s in segments], dtype=np.float64).reshape(-1, 2)
    return np.asarray(repeated_error_stats(run, n), dtype=np.float64).reshape(-1, 2)


def repeated_rate(summed: np.ndarray) -> np.ndarray:
    """The repeated-error rate (%) from summed (missed again, shown after a miss) rows."""
    summed = np.atleast_2d(summed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * summed[:, 0] / summed[:, 1]


def effect(base: Run, system: Run, key: str, n: int, relative: bool) -> Effect | None:
    """``system`` minus ``base`` on metric ``key`` (or the repeated-error rate) over the first ``n`` segments, with its
    paired-bootstrap interval; None when a run did not log it or the difference is undefined."""
    if key == "repeated":
        b, s = repeated_stats(base, n), repeated_stats(system, n)
        found = paired_effect(b, s, repeated_rate, False, POINTS)
    else:
        b, s = segment_stats(base, key, n), segment_stats(system, key, n)
        if b is None or s is None:
            return None
        found = paired_effect(b, s, metric_score(key), relative, RELATIVE if relative else POINTS)
    return None if math.isnan(found.value) else found


def held_out_bleu(run: Run | None, n: int) -> float | None:
    """BLEU on the held-out dev text at the run's last forgetting snapshot within ``n`` segments (the forgetting claim's
    figure too)."""
    if run is None:
        return None
    points = [s for s in run.snapshots if s.get("forget.bleu") is not None and s.get("segment", 0) <= n]
    return float(points[-1]["forget.bleu"]) if points else None


@dataclass
class FieldRow:
    """One method's figures on the scalc stream (and its forgetting run)."""

    method: str
    parent: str | None
    bleu: Effect | None  # points against the baseline
    bleu_parent: Effect | None  # points against the parent
    r0: Effect | None  # relative % against the baseline
    r1: Effect | None
    repeated: Effect | None  # points of the repeated-error rate against the baseline
    forgetting: float | None  # BLEU on the held-out dev text after the forgetting run's segments
    forgetting_parent: float | None  # the parent's (None: no parent, or no parent run)
    seconds: float | None  # translate + update seconds per segment, as the run timed them
    store_bytes: int | None


@dataclass
class FieldTable:
    baseline_bleu: float
    baseline_repeated: float
    baseline_forgetting: float | None
    segments: int
    forgetting_segments: int | None
    rows: list[FieldRow]


def field_table(main: RunGroup, field: RunGroup, forgetting: RunGroup | None,
                field_forgetting: RunGroup | None) -> FieldTable:
    """The comparison: the papers' methods of ``AGAINST`` (from the scalc and forgetting runs) and the field's (from the
    field and field-forgetting runs), each against the scalc baseline and its parent, on the segments both groups hold."""
    n = min(main.num_segments, field.num_segments)
    base = main.baseline
    runs = {preset(r): r for r in main.methods if preset(r) in AGAINST}
    runs.update({preset(r): r for r in field.methods})
    forgets: dict[str, Run] = {}
    f_n = None
    for group in (forgetting, field_forgetting):
        if group is not None:
            forgets.update({preset(r): r for r in group.methods})
            f_n = group.num_segments if f_n is None else min(f_n, group.num_segments)
    f_base = held_out_bleu(forgetting.baseline if forgetting is not None else None, f_n or 0)
    rows = []
    for name in [m for m in AGAINST if m in runs] + [m for m in runs if m not in AGAINST]:
        run = runs[name]
        up = parent(run)
        up_run = runs.get(up) if up else None
        seconds = (run.summary or {}).get("seconds") or {}
        spent = seconds.get("translate", 0.0) + seconds.get("update", 0.0)
        rows.append(FieldRow(
            method=name, parent=up,
            bleu=effect(base, run, "bleu", n, False),
            bleu_parent=effect(up_run, run, "bleu", n, False) if up_run is not None else None,
            r0=effect(base, run, "r0", n, True), r1=effect(base, run, "r1", n, True),
            repeated=effect(base, run, "repeated", n, False),
            forgetting=held_out_bleu(forgets.get(name), f_n or 0),
            forgetting_parent=held_out_bleu(forgets.get(up), f_n or 0) if up else None,
            seconds=spent / run.num_segments if spent and run.num_segments else None,
            store_bytes=(run.summary or {}).get("store_bytes")))
    bleu = float(metric_score("bleu")(segment_stats(base, "bleu", n).sum(0))[0])  # type: ignore[union-attr]
    rate = float(repeated_rate(repeated_stats(base, n).sum(0))[0])
    return FieldTable(bleu, rate, f_base, n, f_n, rows)


def _cell(found: Effect | None) -> str:
    if found is None:
        return "–"
    mark = "" if found.significant else " (n.s.)"
    return f"{found.value:+.1f} [{found.low:+.1f}, {found.high:+.1f}]{mark}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1e6:.1f} MB" if value >= 1e6 else f"{value / 1e3:.1f} kB"


def to_markdown(table: FieldTable) -> list[str]:
    """The table's lines: one row per method, every effect with its 95 % interval ("n.s.": the interval holds 0)."""
    base_f = "–" if table.baseline_forgetting is None else f"{table.baseline_forgetting:.1f}"
    out = [f"Differences to the baseline (BLEU {table.baseline_bleu:.1f}, repeated-error rate {table.baseline_repeated:.1f} %, "
           f"held-out BLEU {base_f} after {table.forgetting_segments or '–'} segments) on the first {table.segments} scalc "
           "segments, with 95 % intervals (paired bootstrap over segments; n.s.: the interval holds 0). *vs parent*: against "
           "the method a composition modifies. Held-out BLEU: the forgetting runs' last snapshot (no interval). Seconds: "
           "translate + update per segment as each run timed itself (runs two at a time; ratios, not absolute speed)."
           + (" tune-retrieve's held-out BLEU is the baseline's by construction: it resets the model after every segment, "
              "and the forgetting probe decodes without retrieval or tuning." if any(r.method == "tune-retrieve" for r in table.rows)
              else ""), "",
           "| method | BLEU (points) | BLEU vs parent | R0 (rel %) | R1 (rel %) | repeated errors (points) | held-out BLEU "
           "(vs baseline; vs parent) | s / segment | store |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in table.rows:
        if row.forgetting is None:
            forget = "–"
        else:
            forget = f"{row.forgetting:.1f}"
            if table.baseline_forgetting is not None:
                forget += f" ({row.forgetting - table.baseline_forgetting:+.1f}"
                forget += f"; {row.forgetting - row.forgetting_parent:+.1f})" if row.forgetting_parent is not None else ")"
        vs_parent = f"{_cell(row.bleu_parent)} (vs {row.parent})" if row.parent else "–"
        seconds = "–" if row.seconds is None else f"{row.seconds:.2f}"
        out.append(f"| {row.method} | {_cell(row.bleu)} | {vs_parent} | {_cell(row.r0)} | {_cell(row.r1)} | "
                   f"{_cell(row.repeated)} | {forget} | {seconds} | {_bytes(row.store_bytes)} |")
    return out


def summary(table: FieldTable) -> str:
    """One line for the claim's row: each field method's BLEU against the baseline and its parent."""
    parts = []
    for row in table.rows:
        if row.method in AGAINST:
            continue
        text = f"{row.method} BLEU {_cell(row.bleu)}"
        if row.parent and row.bleu_parent is not None:
            text += f", vs {row.parent} {_cell(row.bleu_parent)}"
        parts.append(text)
    return "; ".join(parts) + " (points; the table below has R0/R1, repeated errors, forgetting and cost)"
