"""The report's section for a reviewer: what each difference means to people (Kocmi et al. 2024), the spread across
replicates (``simpe report --replicate``), and the learning-against-forgetting front, as HTML.

It formats what ``simpe.report.compare``, ``simpe.report.replicates`` and ``simpe.report.front`` computed; html.py
puts it on the page. It never reads runs of its own.
"""
from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

from simpe.errors import SimpeError
from simpe.report.compare import Comparison
from simpe.report.render import agreement_cell, agreement_description
from simpe.report.replicates import ReplicateTable, cell, description
from simpe.rundir.reader import RunGroup


def _agreement_html(comparison: Comparison) -> list[str]:
    if len(comparison.rows) < 2:
        return []
    head = "".join(f"<th>{html.escape(spec.label)}</th>" for spec in comparison.columns)
    lines = ["<h3>What the differences mean to people</h3>",
             f"<div class='tablebox'><table id='agreement' class='effort'><thead><tr><th>method</th>{head}</tr></thead><tbody>"]
    for row in comparison.rows[1:]:
        cells = "".join(f"<td>{html.escape(agreement_cell(row, spec))}</td>" for spec in comparison.columns)
        lines.append(f"<tr><th>{html.escape(row.run.label)}</th>{cells}</tr>")
    lines.append(f"</tbody></table></div><p class='small'>{html.escape(agreement_description(comparison))}</p>")
    if comparison.family_note:
        lines.append(f"<p class='warn'>{html.escape(comparison.family_note)}</p>")
    return lines


def _replicates_html(table: ReplicateTable | None) -> list[str]:
    if table is None:
        return ["<h3>Replicates</h3>", "<p class='small'>One stream, one order: the bootstrap above covers its segments, "
                "not the choice of the stream or of its document order. <code>make simulate REPLICATES=3</code> runs the "
                "presets on further document orders (<code>data.shuffle_documents</code>) and <code>simpe report GROUP "
                "--replicate GROUP2 ...</code> shows the spread here.</p>"]
    head = "".join(f"<th>{html.escape(spec.label)}</th>" for spec in table.columns)
    lines = ["<h3>Replicates</h3>", "<ol class='small'>" + "".join(f"<li>{html.escape(r)}</li>" for r in table.replicates) + "</ol>",
             f"<div class='tablebox'><table id='replicates' class='effort'><thead><tr><th>method</th>{head}</tr></thead><tbody>"]
    for name in table.methods:
        cells = "".join(f"<td>{html.escape(cell(table.spreads[(name, spec.key)], spec.decimals))}</td>" for spec in table.columns)
        lines.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    lines.append(f"</tbody></table></div><p class='small'>{html.escape(description(table))}</p>")
    lines += [f"<p class='small'>{html.escape(note)}</p>" for note in table.notes]
    return lines


def _front_html(group: RunGroup, comparison: Comparison) -> list[str]:
    from simpe.report.front import front, to_markdown
    from simpe.report.plotting import plot_front

    lines = ["<h3>Learning against forgetting</h3>"]
    if not any("forget.bleu" in s for s in group.baseline.snapshots):
        return lines + ["<p class='small'>The baseline took no forgetting probe: run with <code>--set "
                        "snapshots.forgetting=100</code> (sweeps/front.yaml) to draw each run's gain against its forgetting "
                        "(<code>simpe plot --front</code>).</p>"]
    try:
        result = front(group, "bleu", comparison)
    except SimpeError as err:
        return lines + [f"<p class='small'>No front: {html.escape(str(err))}</p>"]
    with tempfile.TemporaryDirectory() as tmp:
        png = next(p for p in plot_front(result, Path(tmp)) if p.suffix == ".png")
        data = base64.b64encode(png.read_bytes()).decode("ascii")
    text = to_markdown(result).split("\n", 2)[2]  # the table and its notes, without the title
    return lines + [f"<img alt='learning against forgetting' src='data:image/png;base64,{data}'>",
                    f"<pre class='small'>{html.escape(text)}</pre>"]


def review_html(group: RunGroup, comparison: Comparison, replicates: ReplicateTable | None = None) -> str:
    """The section: agreement levels, replicates (or how to make them), the front (or how to measure it)."""
    return "\n".join([*_agreement_html(comparison), *_replicates_html(replicates), *_front_html(group, comparison)])
