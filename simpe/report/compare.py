"""Compare adaptation methods on one stream: one table, deltas to the baseline, significance.

Builds the comparison in the style of Simianer et al. (2019), Table 5, from what the runs logged (summary.json
corpus figures, or the cumulative figures of the last shared segment when incomplete runs
are included) and tests every method against the baseline with a paired bootstrap
(``simpe.stats``) over the logged per-segment statistics: each resample is scored by
the metric's own ``score_from_stats`` (``simpe.metrics``), on the statistics where
``logged_stats`` says the loop put them. The columns are Table 5's, then every other metric the runs logged
(``logged_columns``: term accuracy, T0/T1 and the repeated term error of a glossary run among them). render.py
writes the result. It never translates,
never loads a model and never writes a run.

A translator's run (``simpe serve``) is compared against the stream's references like every other run, through its
records' second scoring (``simpe.report.people.stream_group``); its HTER and effort against the person's own
post-edits are tabled apart (``Comparison.people``, ``Comparison.method_effort``), never tested against the baseline.
A group without a translator's run is compared exactly as before.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from simpe.errors import RunDirError, SimpeError
from simpe.metrics import Metric, logged_stats, metric_for
from simpe.metrics.effort import EFFORT_METRICS
from simpe.metrics.online import signature_label
from simpe.metrics.terms import TERM_SIGNATURE
from simpe.metrics.thresholds import Agreement, agreement, comet_model_of, one_family_note
from simpe.metrics.utility import COMET
from simpe.report.people import TIME_RULE_NOTE, TIME_RULES, Effort, group_effort, is_person, stream_group
from simpe.rundir.reader import Run, RunGroup
from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_scores, paired_test, resample_counts

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Column:
    """One table column: a metric of the stack and how it is shown.

    key: the name in summary ``corpus``, segment ``metrics`` and ``cumulative``.
    scale: displayed value = logged value * scale (R metrics are logged as fractions and
    shown in percent). unit: the displayed unit, differences are in the same unit.
    """

    metric: Metric
    decimals: int

    @property
    def key(self) -> str:
        return self.metric.name

    @property
    def label(self) -> str:
        return self.metric.label

    @property
    def higher_is_better(self) -> bool:
        return self.metric.higher_is_better

    @property
    def scale(self) -> float:
        return 100.0 if self.metric.percent else 1.0

    @property
    def unit(self) -> str:
        return "%" if self.metric.percent else "score" if self.key == COMET else "points"


def column(key: str) -> Column:
    """The column of metric ``key`` (COMET with four decimals, the rest with one)."""
    return Column(metric_for(key), 4 if key == COMET else 1)


# the columns of Simianer et al. (2019), Table 5, first and always; COMET, the effort ratios and every other metric the
# runs log (summary.json's corpus: chrF++, R2, novel:R0, term accuracy, ...) follow when every compared run logged them
TABLE_COLUMNS = ["bleu", "sbleu", "ter", "chrf", "r0+1", "r0", "r1"]
SIGNIFICANCE_LEVEL = 0.05
SIGNIFICANT_MARK = "†"
SIGNED_METRICS = ("bleu", "chrf", "ter", "sbleu", "r", COMET, TERM_SIGNATURE)  # the metrics whose signatures the runs log
RESCORED_METRICS = ("bleu", "chrf", "ter")  # figures compare recomputes from statistics with its own metric objects


@dataclass
class Row:
    """One run in the table; values and deltas (method minus baseline) in display units, keyed by metric.

    p_values: paired bootstrap p against the baseline (None for the baseline, or when not
    testable); delta_ci95: 2.5/97.5 percentiles of the resampled differences.
    """

    run: Run
    values: dict[str, float | None]
    is_baseline: bool = False
    deltas: dict[str, float | None] = field(default_factory=dict)
    p_values: dict[str, float | None] = field(default_factory=dict)
    delta_ci95: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    adapted_parameters: int | None = None
    store_bytes: int | None = None
    # the human agreement (Kocmi et al. 2024) of each difference, by metric (simpe.metrics.thresholds)
    agreement: dict[str, Agreement] = field(default_factory=dict)


@dataclass
class Comparison:
    """The comparison table and how it was made (inputs of the writers)."""

    group: RunGroup
    columns: list[Column]
    rows: list[Row]
    best: dict[str, set[str]]
    signatures: dict[str, str]
    seed: int | None
    num_resamples: int
    notes: list[str]
    # translators' runs (simpe serve): their effort against their own post-edits, per translator and per method
    people: list[Effort] = field(default_factory=list)
    method_effort: list[Effort] = field(default_factory=list)
    # where every compared metric is of one family (string matching), the line that says so under the table
    family_note: str | None = None


# ------------------------------------------------------------------ reading figures
def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _corpus_value(run: Run, key: str, group: RunGroup) -> float | None:
    """The logged corpus figure of ``key`` over the compared segments (logged units)."""
    last = run.segments[group.num_segments - 1]
    if not group.truncated and run.summary is not None:
        corpus = run.summary.get("corpus") or {}
        if key in corpus:
            return _num(corpus[key])
    if key == COMET:
        values = _segment_comet(run, group.num_segments)
        return None if values is None else float(np.mean(values))
    return _num((last.get("cumulative") or {}).get(key))


def _logged_names(run: Run, group: RunGroup) -> list[str]:
    """The metric names ``run`` logged over the compared segments, in its order: its summary's ``corpus`` (complete
    runs), else the ``cumulative`` figures of the last compared segment."""
    if not group.truncated and run.summary is not None and isinstance(run.summary.get("corpus"), dict):
        return list(run.summary["corpus"])
    return list(run.segments[group.num_segments - 1].get("cumulative") or {})


def logged_columns(group: RunGroup) -> tuple[list[str], list[str]]:
    """The metrics beyond Table 5's columns, COMET and the effort ratios that the compared runs logged, in the order
    the runs log them (a logged metric reaches the table without a list kept here): (the names every run logged, one
    note per name only some runs logged). A name no ``Metric`` scores is left out."""
    logged = {run.name: _logged_names(run, group) for run in group.runs}
    names: list[str] = []
    for run in group.runs:
        names += [name for name in logged[run.name] if name not in names]
    fixed = {*TABLE_COLUMNS, COMET, *EFFORT_METRICS}
    shared, notes = [], []
    for name in names:
        if name in fixed:
            continue
        try:
            label = metric_for(name).label
        except SimpeError:
            continue
        missing = [run.name for run in group.runs if name not in logged[run.name]]
        if not missing:
            shared.append(name)
        else:
            notes.append(f"{label} was logged by only some runs (not by {', '.join(missing)}); its column is left out")
    return shared, notes


def _segment_comet(run: Run, num_segments: int) -> list[float] | None:
    """Per-segment COMET of the first segments: summary ``segment_comet`` (what the loop logs),
    else ``metrics["comet"]`` of each segment; None when not logged for every segment."""
    logged = (run.summary or {}).get("segment_comet")
    if isinstance(logged, list) and len(logged) >= num_segments:
        values = [_num(v) for v in logged[:num_segments]]
    else:
        values = [_num((seg.get("metrics") or {}).get("comet")) for seg in run.segments[:num_segments]]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def segment_stats(run: Run, key: str, num_segments: int) -> np.ndarray | None:
    """Per-segment statistics of metric ``key`` over the first ``num_segments`` segments.

    Returns (num_segments, d) in the metric's declared layout (``Metric.stat_names``,
    read with ``simpe.metrics.logged_stats``; COMET from the summary's ``segment_comet``
    as [value, 1]); None when a segment lacks them.
    """
    if key == COMET:
        comet = _segment_comet(run, num_segments)
        return None if comet is None else np.stack([np.asarray(comet, dtype=np.float64), np.ones(num_segments)], axis=1)
    rows = [logged_stats(seg, key) for seg in run.segments[:num_segments]]
    if any(row is None for row in rows):
        return None
    names = metric_for(key).stat_names
    if any(len(row) != len(names) for row in rows):  # type: ignore[arg-type]
        raise RunDirError(f"run {run.path}: the logged {key} statistics are not {len(names)} numbers per segment "
                          f"({', '.join(names)})")
    return np.asarray(rows, dtype=np.float64)  # (n, d)


def _signatures(group: RunGroup) -> tuple[dict[str, str], list[str]]:
    """The runs' signatures (BLEU, chrF, TER, SBLEU, R, COMET when logged) and notes.

    Settings must agree apart from the version among the runs (else RunDirError), and for
    BLEU, chrF and TER also with the metric that rescores their statistics here. A run without
    an R signature (simpe 0.1, other stopword and token rules) is not compared with runs that
    have one. Differing COMET signatures are only noted (they may differ in batch size alone).
    """
    notes: list[str] = []
    chosen: dict[str, str] = {}
    for kind in SIGNED_METRICS:
        logged = {run.name: ((run.summary or {}).get("signatures") or {}).get(kind) for run in group.runs}
        seen: dict[str, Run] = {}
        for run in group.runs:
            if logged[run.name]:
                seen.setdefault(logged[run.name], run)
        if not seen:
            continue
        unsigned = [name for name, signature in logged.items() if not signature]
        if kind == "r" and unsigned:
            raise RunDirError(f"runs {', '.join(unsigned)} logged no R signature (simpe 0.1 counted content words with other "
                              "rules) while the others did; rerun them to compare R figures")
        label = signature_label(kind)
        stripped = {_without_version(sig) for sig in seen}
        if len(stripped) > 1 and kind != COMET:
            listing = "; ".join(f"{run.name}: {sig}" for sig, run in seen.items())
            raise RunDirError(f"the runs scored {label} with different settings ({listing}); "
                              f"their figures are not comparable")
        ours = _without_version(metric_for(kind).signature()) if kind in RESCORED_METRICS else None
        if ours is not None and stripped != {ours}:
            raise RunDirError(f"the runs scored {label} with settings {next(iter(seen))!r}, but simpe rescores their "
                              f"statistics with {ours!r}; their p-values would not be comparable")
        if len(seen) > 1:
            notes.append(f"{label} was scored with different signatures: "
                         + "; ".join(f"{run.name}: {sig}" for sig, run in seen.items()))
        chosen[kind] = next(iter(seen))
    return chosen, notes


def _without_version(signature: str) -> str:
    return "|".join(part for part in signature.split("|") if not part.startswith("version:"))


# ------------------------------------------------------------------ building
def compare_runs(group: RunGroup, seed: int | None = DEFAULT_SEED, num_resamples: int = DEFAULT_RESAMPLES,
                 time_rule: str = "none") -> Comparison:
    """The comparison table of a checked run group, with paired bootstrap p-values.

    seed, num_resamples: the bootstrap's numpy seed and resample count (p-values repeat
    exactly for the same seed). Every figure is in display units (R metrics in percent). A translator's run is
    compared through its scores against the stream's references (``Comparison.group`` holds that view); its effort
    with ``time_rule`` (``simpe.report.people.TIME_RULES``: ``matecat`` leaves out times outside 0.25-30 s a word).
    """
    people, method_effort = group_effort(group, time_rule)
    group, reference_notes = stream_group(group)
    num_segments = group.num_segments
    signatures, notes = _signatures(group)
    notes = reference_notes + notes
    if TIME_RULES.get(time_rule) and people:
        low, high = TIME_RULES[time_rule]
        notes.append(TIME_RULE_NOTE.format(low=low, high=high, count=sum(e.outliers for e in people)))
    columns = [column(key) for key in TABLE_COLUMNS]
    if all(_corpus_value(run, COMET, group) is not None for run in group.runs):
        columns.append(column(COMET))
    elif any(_corpus_value(run, COMET, group) is not None for run in group.runs):
        notes.append("COMET was scored for only some runs; its column is left out")
    # the interactive protocol's KSMR / WSR, when every simulated run logged them: a translator typed their own
    # post-edit, not the stream's reference, so their KSMR is in the translators' table, not here
    simulated = [run for run in group.runs if not is_person(run)]
    for key in EFFORT_METRICS:
        if simulated and all(_corpus_value(run, key, group) is not None for run in simulated):
            columns.append(column(key))
            if len(simulated) < len(group.runs):
                notes.append(f"{column(key).label}: a translator's run has none against the stream's references (they "
                             "typed their own post-edit); their own is in the translators' table")
    more, partial = logged_columns(group)
    columns += [column(key) for key in more]
    notes += partial

    counts = resample_counts(num_segments, num_resamples, seed).astype(np.float64)  # (B, n)
    rows: list[Row] = []
    for run in group.runs:
        summary = run.summary or {}
        rows.append(Row(run=run, values={}, is_baseline=run is group.baseline,
                        adapted_parameters=summary.get("adapted_parameters"),
                        store_bytes=summary.get("store_bytes")))
    for spec in columns:
        for row in rows:
            value = _corpus_value(row.run, spec.key, group)
            row.values[spec.key] = None if value is None else value * spec.scale
        _test_column(spec, rows, counts, num_segments, notes,
                     {run.name for run in group.runs if is_person(run)} if spec.key in EFFORT_METRICS else set())

    comet_model = comet_model_of(signatures.get(COMET))
    for row in rows:
        if not row.is_baseline:
            row.agreement = {spec.key: agreement(spec.key, row.deltas.get(spec.key), comet_model) for spec in columns}
    best: dict[str, set[str]] = {}
    for spec in columns:
        shown = {row.run.name: round(v, spec.decimals) for row in rows if (v := row.values[spec.key]) is not None}
        if len(shown) >= 2:
            target = max(shown.values()) if spec.higher_is_better else min(shown.values())
            best[spec.key] = {name for name, v in shown.items() if v == target}
    if group.truncated:
        total = f" of {group.stream_segments}" if group.stream_segments else ""
        incomplete = ", ".join(f"{run.name} ({run.num_segments} logged)" for run in group.runs if not run.complete)
        notes.insert(0, f"Incomplete runs included ({incomplete}): every figure covers the first {num_segments}{total} "
                        f"segments (cumulative figures of segment {num_segments - 1}), not the summaries.")
    return Comparison(group=group, columns=columns, rows=rows, best=best, signatures=signatures, seed=seed,
                      num_resamples=num_resamples, notes=notes, people=people, method_effort=method_effort,
                      family_note=one_family_note([spec.key for spec in columns]))


def _score_fn(spec: Column) -> Callable[[np.ndarray], np.ndarray]:
    """(k, d) summed statistics -> (k,) scores in display units."""
    return lambda summed: spec.metric.scores_from_stats(summed) * spec.scale


def _test_column(spec: Column, rows: list[Row], counts: np.ndarray, num_segments: int, notes: list[str],
                 exempt: set[str] | None = None) -> None:
    """Fill deltas (from the logged figures) and bootstrap p-values (from the logged stats); ``exempt``: runs that
    cannot have the column's statistics (named in a note of their own)."""
    baseline = rows[0]
    stats = {row.run.name: segment_stats(row.run, spec.key, num_segments) for row in rows}
    base_stats = stats[baseline.run.name]
    score = _score_fn(spec) if base_stats is not None else None
    base_resampled = bootstrap_scores(base_stats, score, counts) if score is not None and base_stats is not None else None
    base_observed = float(score(base_stats.sum(0))[0]) if score is not None and base_stats is not None else None
    missing: list[str] = [baseline.run.name] if base_stats is None else []
    mismatched: list[str] = []
    for row in rows:
        row_stats = stats[row.run.name]
        if row_stats is not None and score is not None:
            observed = float(score(row_stats.sum(0))[0])
            logged = row.values[spec.key]
            if logged is not None and not math.isnan(observed) and abs(observed - logged) > 0.5 * 10 ** -spec.decimals:
                mismatched.append(f"{row.run.name} (logged {logged:.{spec.decimals + 2}f}, from stats {observed:.{spec.decimals + 2}f})")
        if row is baseline:
            continue
        base_value, value = baseline.values[spec.key], row.values[spec.key]
        row.deltas[spec.key] = None if base_value is None or value is None else value - base_value
        row.p_values[spec.key], row.delta_ci95[spec.key] = None, None
        if row_stats is None:
            if row.run.name not in (exempt or set()):
                missing.append(row.run.name)
            continue
        if score is None or base_resampled is None or base_observed is None:
            continue
        result = paired_test(base_observed, float(score(row_stats.sum(0))[0]), base_resampled,
                             bootstrap_scores(row_stats, score, counts))
        row.p_values[spec.key] = None if math.isnan(result.p_value) else result.p_value
        row.delta_ci95[spec.key] = None if math.isnan(result.delta_ci95[0]) else result.delta_ci95
    if missing:
        notes.append(f"no per-segment {spec.label} statistics logged for {', '.join(missing)}: no p-value")
    if mismatched:
        notes.append(f"{spec.label}: the logged figure differs from the one recomputed from the logged statistics for "
                     + "; ".join(mismatched) + " (the table shows the logged figure, the test uses the statistics)")
        logger.warning(notes[-1])
