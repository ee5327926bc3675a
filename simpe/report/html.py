"""One self-contained HTML page per run group: the numbers and the examples behind them.

``simpe report GROUP`` writes ``GROUP/report.html`` (the name is ``rundir.layout``'s): the
method table with sacreBLEU signatures and bootstrap significance (compare.py), Figure 2
of Simianer et al. (2019) and the ranking snapshots (plotting.py, inline PNG), an interactive
cumulative-delta chart whose points open their segment, and a segment browser: source,
post-edit and every method's hypothesis with its content words marked as R0/R1 hits or
misses (marks.py), filters (methods disagree on a one-shot word; a method repeats a word it
was corrected on; text search) and sorting (largest per-segment sentence-BLEU or R0+1
change against the baseline). Rows are rendered lazily, a screenful at a time, so 15,000
segments x 8 methods stay responsive. Nothing is fetched from the network: data, styles,
script and figures are inside the page.

A translator's run (``simpe serve``) is shown as compare tables it (``simpe.report.people``): its figures, curves and
word marks against the stream's references, like every run's; under its hypothesis, the translator's own post-edit
with the segment's HTER; and the translators' tables (HTER and effort against their own post-edits).

``report_data`` returns what the page embeds (tests check it without a browser). This
module reads runs only; it never translates and never writes outside ``OutputDir``.
"""
from __future__ import annotations

import base64
import html
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from simpe.report.compare import SIGNIFICANCE_LEVEL, SIGNIFICANT_MARK, Comparison, compare_runs
from simpe.report.marks import as_json, group_marks, one_shot_disagreement, repeated_error_stats
from simpe.report.page import PAGE, SCRIPT
from simpe.report.people import EFFORT_KEYS, EFFORT_NOTE, OWN, POST_EDIT, Effort, is_person, revised_own, stream_group
from simpe.report.plotting import (
    cumulative_deltas,
    delta_panels,
    inexact_snapshots,
    method_colors,
    plot_cumulative_deltas,
    plot_snapshots,
    random_krg_references,
    snapshot_series,
)
from simpe.rundir.layout import REPORT_FILE
from simpe.rundir.output import OutputDir
from simpe.rundir.reader import RunGroup

MAX_CURVE_POINTS = 3000  # per curve in the interactive chart (every segment up to this many)
MATPLOTLIB_COLORS = {"black": "#000000", "navy": "#000080", "darkgoldenrod": "#b8860b", "teal": "#008080"}


def _css_color(name: str) -> str:
    from matplotlib.colors import to_hex

    return MATPLOTLIB_COLORS.get(name) or to_hex(name)


def _num(value: Any, digits: int = 4) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    number = float(value)
    return None if math.isnan(number) else round(number, digits)


def _repeated(run: Any, num_segments: int) -> dict[str, Any]:
    """The repeated-error rate over the compared segments: {"again", "shown", "rate"}."""
    stats = repeated_error_stats(run, num_segments)
    again, shown = sum(a for a, _ in stats), sum(s for _, s in stats)
    return {"again": again, "shown": shown, "rate": again / shown if shown else None}


def _table(comparison: Comparison) -> dict[str, Any]:
    columns = [{"key": c.key, "label": c.label, "decimals": c.decimals, "higher_is_better": c.higher_is_better}
               for c in comparison.columns]
    rows = []
    for row in comparison.rows:
        rows.append({"name": row.run.name, "label": row.run.label, "baseline": row.is_baseline,
                     "values": {k: _num(v) for k, v in row.values.items()},
                     "deltas": {k: _num(v) for k, v in row.deltas.items()},
                     "p": {k: _num(v) for k, v in row.p_values.items()},
                     "adapted_parameters": row.adapted_parameters, "store_bytes": row.store_bytes,
                     "repeated": _repeated(row.run, comparison.group.num_segments)})
    table = {"columns": columns, "rows": rows, "best": {k: sorted(v) for k, v in comparison.best.items()},
             "signatures": comparison.signatures, "notes": comparison.notes, "resamples": comparison.num_resamples,
             "seed": comparison.seed}
    if comparison.people:  # translators' runs: their effort against their own post-edits
        table["people"] = [_effort(e) for e in comparison.people]
        table["method_effort"] = [_effort(e) for e in comparison.method_effort]
    return table


def _effort(effort: Effort) -> dict[str, Any]:
    out: dict[str, Any] = {key: getattr(effort, key) for key in EFFORT_KEYS}
    return {**out, "seconds_per_segment": effort.seconds_per_segment,
            "keystrokes_per_segment": effort.keystrokes_per_segment, "actions_per_char": effort.actions_per_char}


def _curves(group: RunGroup) -> dict[str, Any]:
    panels = delta_panels(group, effort=False)  # Figure 2's, and a glossary run's term metrics
    curves = cumulative_deltas(group, tuple(key for key, _, _ in panels))
    n = len(curves.segment_index)
    stride = max(1, math.ceil(n / MAX_CURVE_POINTS))
    index = curves.segment_index[::stride]
    if n and index[-1] != n - 1:
        index = np.append(index, n - 1)
    return {"x": index.tolist(), "panels": [{"key": k, "title": t, "ylabel": y} for k, t, y in panels],
            "y": {run: {k: [None if math.isnan(v) else round(float(v), 3) for v in values[index]]
                        for k, values in metrics.items()} for run, metrics in curves.deltas.items()}}


def _segment_value(record: dict[str, Any], key: str) -> float | None:
    value = (record.get("metrics") or {}).get(key)
    if isinstance(value, list):
        return None if not value or not value[1] else value[0] / value[1]
    return _num(value, 2)


def report_data(group: RunGroup, comparison: Comparison) -> dict[str, Any]:
    """Everything the page embeds as JSON.

    ``runs``: name, label, method, colour (baseline first). ``table``: the comparison.
    ``curves``: cumulative deltas at ``x`` (every segment, or every n-th beyond
    MAX_CURVE_POINTS). ``snapshots``: logged series, random-kRG references, inexact ones.
    ``segments``: per segment ``[index, doc_id, seg_id, source, ref_tokens, ref_marks, r0, r1,
    hyps, disagree]`` with ``hyps`` per run ``[hyp_tokens, marks, sbleu, r0+1 num, r0+1 den]`` (a translator's run
    adds ``own post-edit, its TER``: the final version, and where it was revised after submitting a third item, the
    version the model learned from; every figure before them is against the stream's reference) and ``disagree``
    the one-shot words methods disagree on. ``people``: true when translators' runs are in (only then). ``mismatches``: segments whose
    marks do not reproduce the logged R counts (run name -> indices).
    """
    group = stream_group(group)[0]  # translators' runs against the stream's references, as compare tables them
    colors = method_colors(group.runs)
    marks = group_marks(group)
    revised = {run.name: revised_own(run) if is_person(run) else {} for run in group.runs}
    segments = []
    for index, seg_marks in enumerate(marks.segments):
        base = group.baseline.segments[index]
        hyps = []
        for run in group.runs:
            record = run.segments[index]
            r01 = (record.get("metrics") or {}).get("r0+1") or [0, 0]
            hyps.append([record.get("hyp_tokens") or "", seg_marks.hyp_marks[run.name],
                         _segment_value(record, "sbleu"), int(r01[0]), int(r01[1])])
            if OWN in record:  # a translator's: their own post-edit and this segment's HTER against it
                if index in revised[run.name]:  # revised later: the final version, and the one the model learned from
                    final, hter, learned = revised[run.name][index]
                    hyps[-1] += [final, _num(hter, 2), learned]
                else:
                    hyps[-1] += [record[OWN][POST_EDIT], _num((record[OWN].get("metrics") or {}).get("ter"), 2)]
        segments.append([index, base.get("doc_id") or "", base.get("seg_id") or "", base.get("source") or "",
                         base.get("ref_tokens") or "", seg_marks.ref_marks, seg_marks.r0, seg_marks.r1, hyps,
                         one_shot_disagreement(seg_marks)])
    series = snapshot_series(group)
    people = {"people": True} if comparison.people else {}
    return {
        **people,
        "group": group.name, "num_segments": group.num_segments, "truncated": group.truncated,
        "runs": [{"name": r.name, "label": r.label, "method": r.method, "color": _css_color(colors[r.name])}
                 for r in group.runs],
        "table": _table(comparison),
        "curves": _curves(group),
        "snapshots": {"series": {run: {k: [xy[0].tolist(), [None if math.isnan(v) else v for v in xy[1].tolist()]]
                                       for k, xy in s.items()} for run, s in series.items()},
                      "references": [{"source": s, "n": n, "gain": g, "value": v}
                                     for (s, n, g), v in random_krg_references(group).items()],
                      "inexact": inexact_snapshots(group)},
        "segments": segments,
        "mismatches": marks.mismatches,
        "example": as_json(marks.segments[0]) if marks.segments else None,
    }


def _png(paths: list[Path]) -> str | None:
    png = next((p for p in paths if p.suffix == ".png"), None)
    return None if png is None else base64.b64encode(png.read_bytes()).decode("ascii")


def _table_html(data: dict[str, Any]) -> str:
    table = data["table"]
    head = "".join(f"<th>{html.escape(c['label'])}{' ↑' if c['higher_is_better'] else ' ↓'}</th>" for c in table["columns"])
    lines = [f"<div class='tablebox'><table id='methods'><thead><tr><th>method</th>{head}<th>repeated errors ↓</th>"
             "<th>adapted parameters</th><th>per-user store</th></tr></thead><tbody>"]
    for row in table["rows"]:
        cells = []
        for c in table["columns"]:
            key, dec = c["key"], c["decimals"]
            value = row["values"].get(key)
            best = " class='best'" if row["name"] in table["best"].get(key, []) else ""
            if row["baseline"] or value is None:
                text = "–" if value is None else f"{value:.{dec}f}"
            else:
                delta, p = row["deltas"].get(key), row["p"].get(key)
                mark = SIGNIFICANT_MARK if p is not None and p < SIGNIFICANCE_LEVEL else ""
                text = f"{value:.{dec}f}<br><span class='delta'>({delta:+.{dec}f}{mark}"
                text += f", p={p:.3f})</span>" if p is not None else ")</span>"
            cells.append(f"<td{best}>{text}</td>")
        repeated = row.get("repeated") or {}
        cells.append(f"<td>{100 * repeated['rate']:.1f}%<br><span class='delta'>({repeated['again']} of {repeated['shown']})</span></td>"
                     if repeated.get("rate") is not None else "<td>–</td>")  # runs before simpe logged it: –
        params = "–" if row["adapted_parameters"] is None else f"{row['adapted_parameters']:,}"
        store = "–" if row["store_bytes"] is None else f"{row['store_bytes'] / 1000:,.1f} kB"
        lines.append(f"<tr><th>{html.escape(row['label'])}</th>{''.join(cells)}<td>{params}</td><td>{store}</td></tr>")
    lines.append("</tbody></table></div>")
    sigs = "".join(f"<li><b>{html.escape(k)}</b>: <code>{html.escape(v)}</code></li>" for k, v in table["signatures"].items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in table["notes"])
    reference = (" Reference: every column scores against the stream's references, translators' runs included; their "
                 "HTER and effort against their own post-edits are in the tables below, without differences or "
                 f"{SIGNIFICANT_MARK}." if table.get("people") else "")
    lines.append(f"<p class='small'>Baseline in absolute figures; each method absolute, with its difference to the "
                 f"baseline. {SIGNIFICANT_MARK} = p &lt; {SIGNIFICANCE_LEVEL} in a paired bootstrap test against the "
                 f"baseline ({table['resamples']} resamples, seed {table['seed']}). Bold: best per column. Repeated "
                 "errors: of the content words a post-edit showed after the system missed them, the share it missed "
                 f"again at their next occurrence (summary.json repeated_errors).{reference}</p>")
    lines.append(f"<ul class='small'>{sigs}{notes}</ul>")
    if table.get("people"):
        lines.append(_people_html(table))
    return "\n".join(lines)


def _people_html(table: dict[str, Any]) -> str:
    """The translators' tables: HTER and effort against their own post-edits, per translator and per method."""
    ksmr = any(e["ksmr"] is not None for e in table["people"])
    head = ("<th>segments</th><th>HTER ↓</th><th>editing time</th><th>s / segment</th><th>paused</th><th>keystrokes</th>"
            "<th>keys / segment</th><th>clicks</th><th>actions / char</th><th>unchanged (MT)</th><th>time unchanged</th>"
            "<th>revisions</th><th>matches (inserted)</th>"
            + ("<th>own KSMR ↓</th>" if ksmr else ""))

    def cells(e: dict[str, Any]) -> str:
        fmt = lambda v, d: "–" if v is None else f"{v:.{d}f}"  # noqa: E731
        out = [str(e["segments"]), f"{fmt(e['hter'], 1)} ({fmt(e.get('hter_mt'), 1)})", f"{e['seconds']:.1f} s",
               fmt(e["seconds_per_segment"], 1),
               f"{e.get('paused_seconds', 0.0):.1f} s", str(e["keystrokes"]), fmt(e["keystrokes_per_segment"], 1),
               str(e["mouse"]), fmt(e["actions_per_char"], 2), f"{e['unchanged']} ({e.get('unchanged_mt', '–')})",
               f"{e.get('unchanged_seconds', 0.0):.1f} s", str(e.get("revisions", 0)),
               f"{e.get('matches', 0)} ({e.get('inserts', 0)})"] + ([fmt(e["ksmr"], 1) + "%"] if ksmr else [])
        return "".join(f"<td>{html.escape(c)}</td>" for c in out)

    lines = ["<h3>Translators, against their own post-edits</h3>",
             f"<div class='tablebox'><table id='people' class='effort'><thead><tr><th>translator</th><th>run</th>{head}"
             "</tr></thead><tbody>"]
    lines += [f"<tr><th>{html.escape(', '.join(e['translators']))}</th><td>{html.escape(e['name'])}</td>{cells(e)}</tr>"
              for e in table["people"]]
    lines.append("</tbody></table></div><h3>Per method</h3>")
    lines.append(f"<div class='tablebox'><table id='method-effort' class='effort'><thead><tr><th>method</th>"
                 f"<th>translators</th>{head}</tr></thead><tbody>")
    lines += [f"<tr><th>{html.escape(e['name'])}</th><td>{html.escape(', '.join(e['translators']))}</td>{cells(e)}</tr>"
              for e in table["method_effort"]]
    lines.append(f"</tbody></table></div><p class='small'>{html.escape(EFFORT_NOTE)}</p>")
    return "\n".join(lines)


def render_report(group: RunGroup, comparison: Comparison, replicates: Any = None) -> str:
    """The HTML page of a run group (a string; nothing written); ``replicates``: a
    ``simpe.report.replicates.ReplicateTable`` whose spread the reviewer's section shows."""
    from simpe.report.review import review_html

    group = stream_group(group)[0]  # as compare tables it
    data = report_data(group, comparison)
    with tempfile.TemporaryDirectory() as tmp:
        delta_png = _png(plot_cumulative_deltas(group, Path(tmp)))
        snapshot_png = _png(plot_snapshots(group, Path(tmp)))
    figures = f"<img alt='Figure 2: cumulative difference to the baseline' src='data:image/png;base64,{delta_png}'>"
    snapshots = (f"<img alt='ranking snapshots' src='data:image/png;base64,{snapshot_png}'>" if snapshot_png else
                 "<p class='small'>No run took ranking snapshots (snapshots.every = 0).</p>")
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    coverage = f"{group.num_segments} segments" + (" (incomplete runs included)" if group.truncated else "")
    mismatch = ""
    if data["mismatches"]:
        listing = ", ".join(f"{name}: {len(v)}" for name, v in data["mismatches"].items())
        mismatch = (f"<p class='warn'>The word marks do not reproduce the logged R0/R1 counts in some segments ({listing}): "
                    f"the runs were scored with other content-word settings than their config says.</p>")
    return fill(PAGE, {"TITLE": html.escape(group.name), "COVERAGE": html.escape(coverage), "TABLE": _table_html(data),
                       "FIGURE2": figures, "SNAPSHOTS": snapshots, "MISMATCH": mismatch, "DATA": payload, "SCRIPT": SCRIPT,
                       "REVIEW": review_html(group, comparison, replicates)})


PLACEHOLDER = re.compile(r"%([A-Z0-9_]+)%")


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``%NAME%`` replaced by ``values[NAME]`` in one pass over the template.

    One pass, not a chain of ``str.replace``: a value is never scanned again, so a run or folder name that
    carries ``%DATA%`` stays text (a chain would put the raw JSON, unescaped, where the escaped name was).
    The template's placeholders and the values' names must be the same set: a typo fails here, not silently
    in the page.
    """
    wanted = set(PLACEHOLDER.findall(template))
    if wanted != set(values):
        raise ValueError(f"the page's placeholders {sorted(wanted)} and the values given {sorted(values)} differ")
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def write_report(group: RunGroup, out_dir: Path | None = None, seed: int | None = None,
                 num_resamples: int | None = None, replicates: list[Path] | None = None) -> Path:
    """Compare the group's runs and write its page; returns the path (``<out_dir or group folder>/report.html``).
    ``replicates``: further groups of the same presets (other streams or orders) whose spread the page shows."""
    kwargs: dict[str, Any] = {}
    if seed is not None:
        kwargs["seed"] = seed
    if num_resamples is not None:
        kwargs["num_resamples"] = num_resamples
    comparison = compare_runs(group, **kwargs)
    table = None
    if replicates:
        from simpe.report.replicates import compare_replicates

        table = compare_replicates(comparison, replicates)
    out = OutputDir(Path(out_dir) if out_dir is not None else group.group_dir, [REPORT_FILE])
    return out.write_text(REPORT_FILE, render_report(group, comparison, table))
