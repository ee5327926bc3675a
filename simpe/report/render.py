"""The comparison table as Markdown, CSV and booktabs LaTeX, written with its signatures and notes.

Takes a ``Comparison`` (compare.py) and only formats it; ``write_comparison`` puts the three
files into an output folder (``simpe.rundir.OutputDir``, by default the group's
``compare/``).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from simpe.metrics.online import signature_label
from simpe.metrics.thresholds import THRESHOLDS
from simpe.report.compare import SIGNIFICANCE_LEVEL, SIGNIFICANT_MARK, Column, Comparison, Row
from simpe.report.people import EFFORT_NOTE, KEY_KINDS, Effort
from simpe.rundir.output import OutputDir

COMPARE_FILES = {"markdown": "compare.md", "csv": "compare.csv", "latex": "compare.tex"}


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


def _header(spec: Column) -> str:
    return f"{spec.label} ↓" if not spec.higher_is_better else spec.label


def _legend(comp: Comparison) -> str:
    units = ", ".join(f"{spec.label}" for spec in comp.columns if spec.unit == "points")
    percent = ", ".join(f"{spec.label}" for spec in comp.columns if spec.unit == "%")
    return (f"Baseline in absolute figures; each method as its absolute figure and, in parentheses, its difference "
            f"to the baseline; {SIGNIFICANT_MARK} marks p < {SIGNIFICANCE_LEVEL} in a paired bootstrap test against "
            f"the baseline ({comp.num_resamples} resamples, seed {comp.seed}; p-values below). Bold: best in the column "
            f"(TER: lowest). {units} in points; {percent} in percent, differences in percentage points."
            + (f" Reference: every column scores against the stream's references, translators' runs included; HTER and "
               f"effort against each translator's own post-edits are in the translators' tables, without differences "
               f"or {SIGNIFICANT_MARK}." if comp.people else ""))


EFFORT_HEADERS = ["segments", "HTER ↓ (MT)", "editing time", "s / segment", "paused", "keystrokes", "keys / segment", "clicks",
                  "actions / char", "unchanged (MT)", "time unchanged", "revisions", "matches (inserted)"]



def _effort_cells(effort: Effort, ksmr: bool) -> list[str]:
    """An effort row's cells after its name, as the Markdown and LaTeX tables show them."""
    cells = [str(effort.segments), f"{_fmt(effort.hter, 1)} ({_fmt(effort.hter_mt, 1)})", _fmt_seconds(effort.seconds),
             _fmt(effort.seconds_per_segment, 1), _fmt_seconds(effort.paused_seconds), str(effort.keystrokes),
             _fmt(effort.keystrokes_per_segment, 1), str(effort.mouse), _fmt(effort.actions_per_char, 2),
             f"{effort.unchanged} ({effort.unchanged_mt})", _fmt_seconds(effort.unchanged_seconds), str(effort.revisions),
             f"{effort.matches} ({effort.inserts})"]
    return cells + ([_fmt(effort.ksmr, 1)] if ksmr else [])


def _fmt_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.1f} s"


def _effort_markdown(comp: Comparison) -> list[str]:
    """The translators' tables (per translator, per method), or nothing without a translator's run."""
    if not comp.people:
        return []
    ksmr = any(e.ksmr is not None for e in comp.people)
    headers = EFFORT_HEADERS + (["own KSMR (%) ↓"] if ksmr else [])
    rule = "|:--|:--" + "|--:" * len(headers) + "|"
    lines = ["## Translators, against their own post-edits", "", EFFORT_NOTE, "",
             "| translator | run | " + " | ".join(headers) + " |", rule]
    lines += [f"| {', '.join(e.translators)} | {e.name} | " + " | ".join(_effort_cells(e, ksmr)) + " |" for e in comp.people]
    lines += ["", "### Per method", "", "| method | translators | " + " | ".join(headers) + " |", rule]
    lines += [f"| {e.name} | {', '.join(e.translators)} | " + " | ".join(_effort_cells(e, ksmr)) + " |"
              for e in comp.method_effort]
    kinds = [name for name in KEY_KINDS if any(name in e.keys_by for e in comp.people)]
    if kinds:  # the key log by kind (simpe.serve.keylog.CATEGORIES), revisions included
        lines += ["", "### Keystrokes by kind", "", "| translator | run | " + " | ".join(kinds) + " |",
                  "|:--|:--" + "|--:" * len(kinds) + "|"]
        lines += [f"| {', '.join(e.translators)} | {e.name} | " + " | ".join(str(e.keys_by.get(k, 0)) for k in kinds) + " |"
                  for e in comp.people]
    return [*lines, ""]


def agreement_cell(row: Row, spec: Column) -> str:
    """A difference's human-agreement level and estimated accuracy, e.g. ``80 % (83 %)``; ``not covered``; ``–``."""
    found = row.agreement.get(spec.key)
    if found is None or not found.covered:
        return "not covered"
    return "–" if found.accuracy is None else f"{found.label} ({found.accuracy:.0f} %)"


def agreement_description(comp: Comparison) -> str:
    """What the agreement levels are and which columns they do not cover (written under the agreement table)."""
    source = THRESHOLDS["source"]
    uncovered = [spec.label for spec in comp.columns
                 if all(not (found := row.agreement.get(spec.key)) or not found.covered for row in comp.rows[1:])]
    whys = sorted({found.why for row in comp.rows[1:] for found in row.agreement.values() if not found.covered})
    return (f"Human agreement of each difference (Kocmi et al. 2024, Navigating the Metrics Maze): the share of "
            f"system pairs on which humans agree with the metric's ranking, estimated from the difference as the "
            f"authors' code does (accuracy = a / (1 + e^(-b |Δ|)); their fits from {source['repository']}, "
            f"{source['file']} at {source['commit'][:12]}; simpe/metrics/thresholds.json). 90 % / 80 %: the difference "
            f"reaches the authors' 90 % / 80 % threshold (BLEU 2.34 for 80 %, never 90 %; chrF 1.63 / 3.05; COMET-22 "
            f"0.56 / 0.94 points of 100); below 80 %: it does not. In parentheses: the estimated agreement itself."
            + (f" Not covered: {', '.join(uncovered)} ({'; '.join(whys)})." if uncovered else ""))


def _agreement_markdown(comp: Comparison) -> list[str]:
    """The agreement table: one row per method, one column per metric."""
    if len(comp.rows) < 2:
        return []
    lines = ["## What the differences mean to people", "",
             "| method | " + " | ".join(spec.label for spec in comp.columns) + " |",
             "|:--" + "|--:" * len(comp.columns) + "|"]
    lines += ["| " + " | ".join([row.run.label, *(agreement_cell(row, spec) for spec in comp.columns)]) + " |"
              for row in comp.rows[1:]]
    return [*lines, "", agreement_description(comp), ""]


def bootstrap_description(comp: Comparison) -> str:
    """How the p-values were computed (written under every table)."""
    terms = " and term" if any(c.key == "term" for c in comp.columns) else ""
    return (f"Paired bootstrap, {comp.num_resamples} resamples, seed {comp.seed}: sacreBLEU 2.6.0's resampling "
            f"(numpy default_rng(seed).choice of segment indices, shared by all runs) applied to the logged "
            f"per-segment statistics; BLEU, chrF and TER rescored from summed sufficient statistics with sacreBLEU, "
            f"R{terms} metrics from summed [num, den] pairs, SBLEU{' and COMET' if any(c.key == 'comet' for c in comp.columns) else ''} "
            f"as means of the per-segment values. Two-sided p = (1 + #{{|Δ* − Δ| ≥ |Δ|}}) / (1 + resamples) "
            f"(not sacreBLEU's PairedTest p, which gives p ≈ 0.001 to a method identical to the baseline).")


def _title(comp: Comparison) -> str:
    group = comp.group
    total = group.stream_segments or group.num_segments
    covered = f"{group.num_segments} segments" if not group.truncated else f"first {group.num_segments} of {total} segments"
    return f"Adaptation methods on {group.name} ({covered}, {len(group.runs)} runs)"


def _cell_parts(row: Row, spec: Column, comp: Comparison) -> tuple[str, bool, str | None, bool]:
    """(value text, best in column, delta text or None for the baseline, significant)."""
    value = row.values.get(spec.key)
    best = value is not None and row.run.name in comp.best.get(spec.key, set())
    if row.is_baseline:
        return _fmt(value, spec.decimals), best, None, False
    p = row.p_values.get(spec.key)
    return (_fmt(value, spec.decimals), best, _fmt_delta(row.deltas.get(spec.key), spec.decimals),
            p is not None and p < SIGNIFICANCE_LEVEL)


def _markdown_cell(row: Row, spec: Column, comp: Comparison) -> str:
    value, best, delta, significant = _cell_parts(row, spec, comp)
    text = f"**{value}**" if best else value
    return text if delta is None else f"{text} ({delta}){SIGNIFICANT_MARK if significant else ''}"


def _latex_cell(row: Row, spec: Column, comp: Comparison) -> str:
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
    if comp.family_note:
        lines += ["", comp.family_note]
    lines += ["", "## p-values against the baseline", "",
              "| method | " + " | ".join(spec.label for spec in comp.columns) + " |",
              "|:--" + "|--:" * len(comp.columns) + "|"]
    for row in comp.rows[1:]:
        lines.append("| " + " | ".join([row.run.label, *(_fmt_p(row.p_values.get(spec.key)) for spec in comp.columns)]) + " |")
    lines += ["", bootstrap_description(comp), ""]
    lines += _agreement_markdown(comp)
    lines += _effort_markdown(comp)
    if comp.notes:
        lines += ["Notes:", "", *(f"- {note}" for note in comp.notes), ""]
    lines += ["Signatures:", ""]
    if comp.signatures:
        lines += [f"- {signature_label(kind)}: `{sig}`" for kind, sig in comp.signatures.items()]
    else:
        lines.append("- (none logged: the runs have no summary.json yet)")
    return "\n".join(lines) + "\n"


def to_csv(comp: Comparison) -> str:
    """The comparison as CSV, one row per run, unrounded, in display units (R metrics in percent)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["adapter", "method", "label", "complete", "segments"]
    for spec in comp.columns:
        header += [spec.key, f"{spec.key}_delta", f"{spec.key}_p", f"{spec.key}_delta_ci95_low", f"{spec.key}_delta_ci95_high",
                   f"{spec.key}_agreement"]
    header += ["adapted_parameters", "store_bytes", "path"]
    # with a translator's run: which reference the figures above use, and the person's own figures (empty otherwise)
    own = {e.name: e for e in comp.people}
    if own:
        header += ["reference", "translator", "own_hter", "own_seconds", "own_keystrokes", "own_clicks", "own_chars",
                   "own_actions_per_char", "own_unchanged", "own_ksmr", "own_paused_seconds", "own_revisions", "own_matches",
                   "own_hter_mt", "own_unchanged_mt", "own_unchanged_seconds", "own_inserts", "own_time_outliers"]
    writer.writerow(header)

    def out(value: float | None) -> str:
        return "" if value is None else f"{value:.6g}" if abs(value) < 1e-3 and value != 0 else f"{round(value, 6)}"

    for row in comp.rows:
        cells: list[Any] = [row.run.name, row.run.method, row.run.label, int(row.run.complete), comp.group.num_segments]
        for spec in comp.columns:
            ci = row.delta_ci95.get(spec.key)
            cells += [out(row.values.get(spec.key)), out(row.deltas.get(spec.key)), out(row.p_values.get(spec.key)),
                      out(ci[0] if ci else None), out(ci[1] if ci else None),
                      "" if row.is_baseline else agreement_cell(row, spec)]
        cells += ["" if row.adapted_parameters is None else row.adapted_parameters,
                  "" if row.store_bytes is None else row.store_bytes, str(row.run.path)]
        if own:
            e = own.get(row.run.name)
            cells += ["stream"] + ([""] * 17 if e is None else
                                   [", ".join(e.translators), out(e.hter), out(e.seconds), e.keystrokes, e.mouse, e.chars,
                                    out(e.actions_per_char), e.unchanged, out(e.ksmr), out(e.paused_seconds), e.revisions,
                                    e.matches, out(e.hter_mt), e.unchanged_mt, out(e.unchanged_seconds), e.inserts,
                                    e.outliers])
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
    if len(comp.rows) > 1:
        footnote.append(_tex(agreement_description(comp) + " " + "; ".join(
            f"{row.run.label}: " + ", ".join(f"{spec.label} {agreement_cell(row, spec)}" for spec in comp.columns
                                             if row.agreement.get(spec.key) and row.agreement[spec.key].covered)
            for row in comp.rows[1:])))
    if comp.family_note:
        footnote.append(_tex(comp.family_note))
    footnote += [f"{signature_label(kind)}: \\texttt{{{_tex(sig)}}}" for kind, sig in comp.signatures.items()]
    lines += [r"\bottomrule", r"\end{tabular}", "", r"\smallskip", r"\parbox{\linewidth}{\footnotesize",
              " \\\\\n".join(footnote)]
    lines += [r"}", f"\\caption{{{_tex(_title(comp))}. {_tex(_legend(comp))}}}",
              f"\\label{{tab:compare-{_tex(comp.group.name)}}}", r"\end{table}"]
    lines += _effort_latex(comp)
    return "\n".join(lines) + "\n"


def _effort_latex(comp: Comparison) -> list[str]:
    """The translators' table (per translator, then per method) as a second booktabs table, or nothing."""
    if not comp.people:
        return []
    ksmr = any(e.ksmr is not None for e in comp.people)
    headers = ["Translator", "Run", *EFFORT_HEADERS, *(["own KSMR (%) ↓"] if ksmr else [])]
    lines = ["", r"\begin{table}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
             r"\begin{tabular}{ll" + "r" * (len(headers) - 2) + "}", r"\toprule", " & ".join(_tex(h) for h in headers) + r" \\",
             r"\midrule"]
    lines += [" & ".join(_tex(c) for c in [", ".join(e.translators), e.name, *_effort_cells(e, ksmr)]) + r" \\" for e in comp.people]
    lines.append(r"\midrule")
    lines += [" & ".join(_tex(c) for c in [", ".join(e.translators), f"{e.name} (method)", *_effort_cells(e, ksmr)]) + r" \\"
              for e in comp.method_effort]
    lines += [r"\bottomrule", r"\end{tabular}",
              f"\\caption{{Translators on {_tex(comp.group.name)}, against their own post-edits. {_tex(EFFORT_NOTE)}}}",
              f"\\label{{tab:translators-{_tex(comp.group.name)}}}", r"\end{table}"]
    return lines


def write_comparison(comp: Comparison, out_dir: Path) -> dict[str, Path]:
    """Write compare.md, compare.csv and compare.tex into ``out_dir``; returns the paths by format."""
    out = OutputDir(out_dir, COMPARE_FILES.values())
    texts = {"markdown": to_markdown(comp), "csv": to_csv(comp), "latex": to_latex(comp)}
    return {kind: out.write_text(COMPARE_FILES[kind], texts[kind]) for kind in COMPARE_FILES}
