"""Compare adaptation methods on one stream: one table, deltas to the baseline, significance.

Builds the seed-002 Table 5 style comparison from what the runs logged (summary.json
corpus figures, or the cumulative figures of the last shared segment when incomplete runs
are included), tests every method against the baseline with a paired bootstrap over the
logged per-segment statistics (``simpe.significance``), and writes it as Markdown, CSV and
a booktabs LaTeX table. It never translates, never loads a model and never writes a run.
"""
from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simpe.errors import RunDirError
from simpe.runs import Run, RunGroup
from simpe.significance import (DEFAULT_RESAMPLES, DEFAULT_SEED, ScoreFn, bootstrap_scores, paired_test,
                                ratio_score, resample_counts, sacrebleu_score)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetricSpec:
    """One table column.

    key: the name in summary ``corpus``, segment ``metrics`` and ``cumulative``.
    scale: displayed value = logged value * scale (R metrics are logged as fractions and
    shown in percent). unit: the displayed unit, differences are in the same unit.
    """

    key: str
    label: str
    higher_is_better: bool
    scale: float
    unit: str
    decimals: int


METRICS: dict[str, MetricSpec] = {spec.key: spec for spec in (
    MetricSpec("bleu", "BLEU", True, 1.0, "points", 1),
    MetricSpec("sbleu", "SBLEU", True, 1.0, "points", 1),
    MetricSpec("ter", "TER", False, 1.0, "points", 1),
    MetricSpec("chrf", "chrF", True, 1.0, "points", 1),
    MetricSpec("r0+1", "R0+1", True, 100.0, "%", 1),
    MetricSpec("r0", "R0", True, 100.0, "%", 1),
    MetricSpec("r1", "R1", True, 100.0, "%", 1),
    MetricSpec("comet", "COMET", True, 1.0, "score", 4),
)}
TABLE_COLUMNS = ["bleu", "sbleu", "ter", "chrf", "r0+1", "r0", "r1"]  # COMET appended when scored
SIGNIFICANCE_LEVEL = 0.05
SIGNIFICANT_MARK = "†"
SACREBLEU_METRICS = ("bleu", "chrf", "ter")
_SIGNATURE_NAMES = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER", "sbleu": "SBLEU", "comet": "COMET"}


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


@dataclass
class Comparison:
    """The comparison table and how it was made (inputs of the writers)."""

    group: RunGroup
    columns: list[MetricSpec]
    rows: list[Row]
    best: dict[str, set[str]]
    signatures: dict[str, str]
    seed: int | None
    num_resamples: int
    notes: list[str]


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
    if key == "comet":
        values = _segment_comet(run, group.num_segments)
        return None if values is None else float(np.mean(values))
    return _num((last.get("cumulative") or {}).get(key))


def _segment_comet(run: Run, num_segments: int) -> list[float] | None:
    """Per-segment COMET of the first segments: summary ``segment_comet`` (what the loop logs),
    else ``metrics["comet"]`` of each segment; None when not logged for every segment."""
    logged = (run.summary or {}).get("segment_comet")
    if isinstance(logged, list) and len(logged) >= num_segments:
        values = [_num(v) for v in logged[:num_segments]]
    else:
        values = [_num((seg.get("metrics") or {}).get("comet")) for seg in run.segments[:num_segments]]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def parse_signature(signature: str) -> dict[str, str]:
    """``"nrefs:1|case:mixed|eff:no"`` -> ``{"nrefs": "1", "case": "mixed", "eff": "no"}``."""
    fields = {}
    for part in signature.split("|"):
        if ":" in part:
            name, value = part.split(":", 1)
            fields[name.strip()] = value.strip()
    return fields


def _sacrebleu_metric(kind: str, signature: str | None, width: int) -> Any:
    """A sacreBLEU metric object matching a logged signature, for scoring summed statistics.

    width: the length of one segment's statistics (gives BLEU's n-gram order).
    """
    from sacrebleu.metrics import BLEU, CHRF, TER

    fields = parse_signature(signature or "")
    if kind == "bleu":
        smooth = fields.get("smooth", "exp")
        method, _, value = smooth.partition("[")
        return BLEU(smooth_method=method, smooth_value=float(value.rstrip("]")) if value else None,
                    effective_order=fields.get("eff", "no") == "yes", max_ngram_order=(width - 2) // 2)
    if kind == "chrf":
        # chrF's signature does not carry beta; the loop uses sacreBLEU's default (chrF2).
        return CHRF(char_order=int(fields.get("nc", 6)), word_order=int(fields.get("nw", 0)),
                    eps_smoothing=fields.get("eff", "yes") == "no")
    if kind == "ter":
        return TER()
    raise AssertionError(kind)


def _bleu_to_sacrebleu_order(stats: np.ndarray, run: Run) -> np.ndarray:
    """Logged BLEU stats -> sacreBLEU's [hyp_len, ref_len, m1.., t1..] order.

    docs/run-format.md logs [m1..m4, t1..t4, hyp_len, ref_len]; sacreBLEU's own list is
    [hyp_len, ref_len, m1..m4, t1..t4]. Unigram total = hypothesis length tells them apart.
    """
    width = stats.shape[1]
    order = (width - 2) // 2
    summed = stats.sum(0)
    if summed[order] == summed[width - 2]:  # documented order: t1 == hyp_len
        return np.concatenate([stats[:, width - 2:], stats[:, :width - 2]], axis=1)
    if summed[2 + order] == summed[0]:  # sacreBLEU's order: t1 == hyp_len
        return stats
    raise RunDirError(f"run {run.path}: the logged BLEU stats fit neither [m1..m4, t1..t4, hyp_len, ref_len] "
                      f"nor sacreBLEU's [hyp_len, ref_len, m1..m4, t1..t4]")


def segment_stats(run: Run, key: str, num_segments: int) -> np.ndarray | None:
    """Per-segment statistics of metric ``key`` over the first ``num_segments`` segments.

    Returns (num_segments, d): BLEU in sacreBLEU's order, chrF and TER as logged, R metrics
    as [num, den], SBLEU and COMET as [value, 1]; None when a segment lacks them.
    """
    segments = run.segments[:num_segments]
    if key == "comet":
        comet = _segment_comet(run, num_segments)
        return None if comet is None else np.stack([np.asarray(comet, dtype=np.float64), np.ones(num_segments)], axis=1)
    rows: list[list[float]] = []
    for seg in segments:
        if key in SACREBLEU_METRICS:
            value = (seg.get("stats") or {}).get(key)
        else:
            value = (seg.get("metrics") or {}).get(key)
            if key == "sbleu":
                value = None if _num(value) is None else [value, 1.0]
        if not isinstance(value, (list, tuple)) or not value:
            return None
        rows.append([float(v) for v in value])
    if len({len(r) for r in rows}) != 1:
        raise RunDirError(f"run {run.path}: the logged {key} statistics have varying lengths")
    stats = np.asarray(rows, dtype=np.float64)  # (n, d)
    return _bleu_to_sacrebleu_order(stats, run) if key == "bleu" else stats


def _signatures(group: RunGroup) -> tuple[dict[str, str], list[str]]:
    """The runs' signatures (BLEU, chrF, TER, SBLEU, COMET when logged) and notes.

    sacreBLEU settings must agree apart from the version (else RunDirError); differing COMET
    signatures are only noted (they may differ in batch size alone).
    """
    notes: list[str] = []
    chosen: dict[str, str] = {}
    for kind in _SIGNATURE_NAMES:
        seen: dict[str, Run] = {}
        for run in group.runs:
            signature = ((run.summary or {}).get("signatures") or {}).get(kind)
            if signature:
                seen.setdefault(signature, run)
        if not seen:
            continue
        stripped = {"|".join(p for p in sig.split("|") if not p.startswith("version:")) for sig in seen}
        if len(stripped) > 1 and kind != "comet":
            listing = "; ".join(f"{run.name}: {sig}" for sig, run in seen.items())
            raise RunDirError(f"the runs scored {_SIGNATURE_NAMES[kind]} with different settings ({listing}); "
                              f"their figures are not comparable")
        if len(seen) > 1:
            notes.append(f"{_SIGNATURE_NAMES[kind]} was scored with different signatures: "
                         + "; ".join(f"{run.name}: {sig}" for sig, run in seen.items()))
        chosen[kind] = next(iter(seen))
    return chosen, notes


# ------------------------------------------------------------------ building
def compare_runs(group: RunGroup, seed: int | None = DEFAULT_SEED, num_resamples: int = DEFAULT_RESAMPLES) -> Comparison:
    """The comparison table of a checked run group, with paired bootstrap p-values.

    seed, num_resamples: the bootstrap's numpy seed and resample count (p-values repeat
    exactly for the same seed). Every figure is in display units (R metrics in percent).
    """
    num_segments = group.num_segments
    signatures, notes = _signatures(group)
    columns = [METRICS[key] for key in TABLE_COLUMNS]
    if all(_corpus_value(run, "comet", group) is not None for run in group.runs):
        columns.append(METRICS["comet"])
    elif any(_corpus_value(run, "comet", group) is not None for run in group.runs):
        notes.append("COMET was scored for only some runs; its column is left out")

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
        _test_column(spec, rows, signatures, counts, num_segments, notes)

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
                      num_resamples=num_resamples, notes=notes)


def _score_fn(spec: MetricSpec, signatures: dict[str, str], width: int) -> ScoreFn:
    if spec.key in SACREBLEU_METRICS:
        return sacrebleu_score(_sacrebleu_metric(spec.key, signatures.get(spec.key), width))
    return ratio_score(spec.scale)


def _test_column(spec: MetricSpec, rows: list[Row], signatures: dict[str, str], counts: np.ndarray,
                 num_segments: int, notes: list[str]) -> None:
    """Fill deltas (from the logged figures) and bootstrap p-values (from the logged stats)."""
    baseline = rows[0]
    stats = {row.run.name: segment_stats(row.run, spec.key, num_segments) for row in rows}
    base_stats = stats[baseline.run.name]
    score = _score_fn(spec, signatures, base_stats.shape[1]) if base_stats is not None else None
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


# ------------------------------------------------------------------ formatting
def _fmt(value: float | None, decimals: int) -> str:
    return "–" if value is None else f"{value:.{decimals}f}"


def _fmt_delta(delta: float | None, decimals: int) -> str:
    if delta is None:
        return "–"
    rounded = round(delta, decimals)
    if rounded == 0:
        return f"±{0:.{decimals}f}"
    return f"+{rounded:.{decimals}f}" if rounded > 0 else f"-{abs(rounded):.{decimals}f}"


def _fmt_p(p: float | None) -> str:
    return "–" if p is None else f"{p:.3f}"


def _fmt_count(n: int | None) -> str:
    if n is None:
        return "–"
    if n >= 1_000_000:
        return f"{n / 1e6:.2f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return f"{n:,}"


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _header(spec: MetricSpec) -> str:
    return f"{spec.label} ↓" if not spec.higher_is_better else spec.label


def _legend(comp: Comparison) -> str:
    units = ", ".join(f"{spec.label}" for spec in comp.columns if spec.unit == "points")
    percent = ", ".join(f"{spec.label}" for spec in comp.columns if spec.unit == "%")
    return (f"Baseline in absolute figures; each method as its absolute figure and, in parentheses, its difference "
            f"to the baseline; {SIGNIFICANT_MARK} marks p < {SIGNIFICANCE_LEVEL} in a paired bootstrap test against "
            f"the baseline ({comp.num_resamples} resamples, seed {comp.seed}; p-values below). Bold: best in the column "
            f"(TER: lowest). {units} in points; {percent} in percent, differences in percentage points.")


def bootstrap_description(comp: Comparison) -> str:
    """How the p-values were computed (written under every table)."""
    return (f"Paired bootstrap, {comp.num_resamples} resamples, seed {comp.seed}: sacreBLEU 2.6.0's resampling "
            f"(numpy default_rng(seed).choice of segment indices, shared by all runs) applied to the logged "
            f"per-segment statistics; BLEU, chrF and TER rescored from summed sufficient statistics with sacreBLEU, "
            f"R metrics from summed [num, den] pairs, SBLEU{' and COMET' if any(c.key == 'comet' for c in comp.columns) else ''} "
            f"as means of the per-segment values. Two-sided p = (1 + #{{|Δ* − Δ| ≥ |Δ|}}) / (1 + resamples) "
            f"(not sacreBLEU's PairedTest p, which gives p ≈ 0.001 to a method identical to the baseline).")


def _title(comp: Comparison) -> str:
    group = comp.group
    total = group.stream_segments or group.num_segments
    covered = f"{group.num_segments} segments" if not group.truncated else f"first {group.num_segments} of {total} segments"
    return f"Adaptation methods on {group.name} ({covered}, {len(group.runs)} runs)"


def _cell_parts(row: Row, spec: MetricSpec, comp: Comparison) -> tuple[str, bool, str | None, bool]:
    """(value text, best in column, delta text or None for the baseline, significant)."""
    value = row.values.get(spec.key)
    best = value is not None and row.run.name in comp.best.get(spec.key, set())
    if row.is_baseline:
        return _fmt(value, spec.decimals), best, None, False
    p = row.p_values.get(spec.key)
    return (_fmt(value, spec.decimals), best, _fmt_delta(row.deltas.get(spec.key), spec.decimals),
            p is not None and p < SIGNIFICANCE_LEVEL)


def _markdown_cell(row: Row, spec: MetricSpec, comp: Comparison) -> str:
    value, best, delta, significant = _cell_parts(row, spec, comp)
    text = f"**{value}**" if best else value
    return text if delta is None else f"{text} ({delta}){SIGNIFICANT_MARK if significant else ''}"


def _latex_cell(row: Row, spec: MetricSpec, comp: Comparison) -> str:
    value, best, delta, significant = _cell_parts(row, spec, comp)
    text = rf"\textbf{{{value}}}" if best else _tex(value)
    if delta is None:
        return text
    delta_tex = _tex(delta.replace("-", "−"))
    return rf"{text} {{\footnotesize ({delta_tex})}}" + (r"$^\dagger$" if significant else "")


def to_markdown(comp: Comparison) -> str:
    """The comparison as Markdown: the table, the p-values, the notes and the signatures."""
    headers = ["method", *(_header(spec) for spec in comp.columns), "adapted params", "storage / user"]
    lines = [f"# {_title(comp)}", "", _legend(comp), "",
             "| " + " | ".join(headers) + " |", "|:--" + "|--:" * (len(headers) - 1) + "|"]
    for row in comp.rows:
        cells = [row.run.label, *(_markdown_cell(row, spec, comp) for spec in comp.columns),
                 _fmt_count(row.adapted_parameters), _fmt_bytes(row.store_bytes)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## p-values against the baseline", "",
              "| method | " + " | ".join(spec.label for spec in comp.columns) + " |",
              "|:--" + "|--:" * len(comp.columns) + "|"]
    for row in comp.rows[1:]:
        lines.append("| " + " | ".join([row.run.label, *(_fmt_p(row.p_values.get(spec.key)) for spec in comp.columns)]) + " |")
    lines += ["", bootstrap_description(comp), ""]
    if comp.notes:
        lines += ["Notes:", "", *(f"- {note}" for note in comp.notes), ""]
    lines += ["Signatures:", ""]
    if comp.signatures:
        lines += [f"- {_SIGNATURE_NAMES[kind]}: `{sig}`" for kind, sig in comp.signatures.items()]
    else:
        lines.append("- (none logged: the runs have no summary.json yet)")
    return "\n".join(lines) + "\n"


def to_csv(comp: Comparison) -> str:
    """The comparison as CSV, one row per run, unrounded, in display units (R metrics in percent)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["adapter", "method", "label", "complete", "segments"]
    for spec in comp.columns:
        header += [spec.key, f"{spec.key}_delta", f"{spec.key}_p", f"{spec.key}_delta_ci95_low", f"{spec.key}_delta_ci95_high"]
    header += ["adapted_parameters", "store_bytes", "path"]
    writer.writerow(header)

    def out(value: float | None) -> str:
        return "" if value is None else f"{value:.6g}" if abs(value) < 1e-3 and value != 0 else f"{round(value, 6)}"

    for row in comp.rows:
        cells: list[Any] = [row.run.name, row.run.method, row.run.label, int(row.run.complete), comp.group.num_segments]
        for spec in comp.columns:
            ci = row.delta_ci95.get(spec.key)
            cells += [out(row.values.get(spec.key)), out(row.deltas.get(spec.key)), out(row.p_values.get(spec.key)),
                      out(ci[0] if ci else None), out(ci[1] if ci else None)]
        cells += ["" if row.adapted_parameters is None else row.adapted_parameters,
                  "" if row.store_bytes is None else row.store_bytes, str(row.run.path)]
        writer.writerow(cells)
    return buffer.getvalue()


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
                "–": "--", "±": r"$\pm$", "†": r"$^\dagger$", "≥": r"$\geq$", "≈": r"$\approx$", "Δ": r"$\Delta$",
                "−": "$-$", "<": "$<$", ">": "$>$", "↓": r"$\downarrow$"}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def to_latex(comp: Comparison) -> str:
    """The comparison as a booktabs LaTeX table (needs ``\\usepackage{booktabs}``), signatures under it."""
    num_cols = len(comp.columns) + 3
    headers = ["Method", *(_tex(_header(spec)) for spec in comp.columns), "Params", "Storage"]
    lines = [f"% {_tex(_title(comp))} -- written by simpe compare; needs \\usepackage{{booktabs}}",
             r"\begin{table}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
             r"\begin{tabular}{l" + "r" * (num_cols - 1) + "}", r"\toprule", " & ".join(headers) + r" \\", r"\midrule"]
    for row in comp.rows:
        cells = [_tex(row.run.label), *(_latex_cell(row, spec, comp) for spec in comp.columns)]
        cells += [_tex(_fmt_count(row.adapted_parameters)), _tex(_fmt_bytes(row.store_bytes))]
        lines.append(" & ".join(cells) + r" \\")
        if row.is_baseline:
            lines.append(r"\midrule")
    lines += [r"\bottomrule", r"\end{tabular}", "", r"\medskip",
              r"\begin{tabular}{l" + "r" * len(comp.columns) + "}", r"\toprule",
              "$p$ vs.\\ baseline & " + " & ".join(_tex(spec.label) for spec in comp.columns) + r" \\", r"\midrule"]
    for row in comp.rows[1:]:
        lines.append(" & ".join([_tex(row.run.label), *(_tex(_fmt_p(row.p_values.get(spec.key))) for spec in comp.columns)]) + r" \\")
    footnote = [_tex(bootstrap_description(comp)) + "".join(f" {_tex(note)}" for note in comp.notes)]
    footnote += [f"{_SIGNATURE_NAMES[kind]}: \\texttt{{{_tex(sig)}}}" for kind, sig in comp.signatures.items()]
    lines += [r"\bottomrule", r"\end{tabular}", "", r"\smallskip", r"\parbox{\linewidth}{\footnotesize",
              " \\\\\n".join(footnote)]
    lines += [r"}", f"\\caption{{{_tex(_title(comp))}. {_tex(_legend(comp))}}}",
              f"\\label{{tab:compare-{_tex(comp.group.name)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_comparison(comp: Comparison, out_dir: Path) -> dict[str, Path]:
    """Write compare.md, compare.csv and compare.tex into ``out_dir``; returns the paths by format."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "compare.md", "csv": out_dir / "compare.csv", "latex": out_dir / "compare.tex"}
    paths["markdown"].write_text(to_markdown(comp), encoding="utf-8")
    paths["csv"].write_text(to_csv(comp), encoding="utf-8")
    paths["latex"].write_text(to_latex(comp), encoding="utf-8")
    return paths
