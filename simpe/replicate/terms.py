"""Terms and preferences beside the papers' methods (the ``terms`` part of ``simpe replicate``): measured.

On the first 2,000 scalc segments with the LibreOffice glossary (``data.glossary=dataset``: the UI strings the help
quotes, ``data/libreoffice/glossary.tsv``, docs/terms.md), each of ``TERMS_METHODS`` runs twice: decoded by plain beam
search and by glossary-constrained beam search (``constrained_beam``: every glossary term of the source in the
output). ``PREFER_METHODS`` (the post-edit preferred to the segment's own MT output, DPO beside the NLL) run with plain
beam search beside their parents. Every figure is a difference with a 95 % interval from the paired bootstrap over
segments that every row of the page uses (``verdicts.paired_effect``): a plain run against the plain baseline, a
constrained run against the same method unconstrained, a ``+prefer`` run against its parent. Term figures are in
points of the share of the reference's glossary terms the hypothesis holds (term accuracy; T0 at a term's first
occurrence in the stream, T1 at the later ones); the repeated term error is the share of terms the translator fixed
before that are missed again; nonterm R0+1 is R0+1 on the words outside the glossary's target terms (constraints
put reference terms in the output, which the plain R counts would reward). Nothing here is judged against a paper.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from simpe.replicate.field import effect, parent, preset
from simpe.replicate.verdicts import Effect, metric_score
from simpe.report.compare import segment_stats
from simpe.rundir.reader import Run, RunGroup

TERMS_METHODS = ("baseline", "full", "lora", "lasso", "knn")
PREFER_METHODS = ("full+prefer", "lora+prefer")  # each beside its parent (the method before the +)
CONSTRAINED = "constrained_beam"
# (column, metric key, relative): the effects each row shows
EFFECTS = (("bleu", "bleu", False), ("term", "term", False), ("t0", "t0", False), ("t1", "t1", False),
           ("repeat", "term-repeat", False), ("nonterm", "nonterm:r0+1", True))


def constrained(run: Run) -> bool:
    """Whether the run decoded with the glossary constraint."""
    return str((run.config.get("decoder") or {}).get("name")) == CONSTRAINED


def _score(run: Run, key: str, n: int) -> float | None:
    stats = segment_stats(run, key, n)
    if stats is None:
        return None
    value = float(metric_score(key)(stats.sum(0))[0])
    return None if math.isnan(value) else value


@dataclass
class TermsRow:
    """One run's figures and its effects against the run it is set against (``against``)."""

    label: str  # full, full + constraint, full+prefer
    against: str | None  # the run it is set against (None: the plain baseline itself)
    values: dict[str, float | None]  # column -> the run's own figure (points)
    effects: dict[str, Effect | None]  # column -> difference to ``against``
    seconds: float | None  # translate + update seconds per segment, as the run timed them


@dataclass
class TermsTable:
    segments: int
    glossary: str | None  # the glossary's label (summary terms.glossary)
    entries: int | None  # its entries
    occurrences: int | None  # the reference-used term occurrences in these segments (the baseline's term counts)
    rows: list[TermsRow]


def terms_table(group: RunGroup) -> TermsTable:
    """The comparison from the terms part's group: every plain run against the plain baseline, every constrained run
    against its plain self, every ``+prefer`` run against its parent."""
    n = group.num_segments
    plain: dict[str, Run] = {}
    bound: dict[str, Run] = {}
    for run in [group.baseline, *group.methods]:
        (bound if constrained(run) else plain)[preset(run)] = run
    if "baseline" not in plain:
        raise ValueError("the terms part's group has no plain baseline")
    order = [m for m in (*TERMS_METHODS, *PREFER_METHODS) if m in plain] + [m for m in plain if m not in TERMS_METHODS
                                                                             and m not in PREFER_METHODS]
    rows: list[TermsRow] = []

    def row(run: Run, label: str, against: Run | None, against_label: str | None) -> TermsRow:
        seconds = (run.summary or {}).get("seconds") or {}
        spent = seconds.get("translate", 0.0) + seconds.get("update", 0.0)
        return TermsRow(label, against_label, {col: _score(run, key, n) for col, key, _ in EFFECTS},
                        {col: effect(against, run, key, n, rel) if against is not None else None for col, key, rel in EFFECTS},
                        spent / run.num_segments if spent and run.num_segments else None)

    for name in order:
        run = plain[name]
        up = parent(run)
        if name == "baseline":
            rows.append(row(run, "baseline", None, None))
        elif up and up in plain:
            rows.append(row(run, name, plain[up], up))
        else:
            rows.append(row(run, name, plain["baseline"], "baseline"))
        if name in bound:
            rows.append(row(bound[name], f"{name} + constraint", run, name))
    facts = (group.baseline.summary or {}).get("terms") or {}
    counted = segment_stats(plain["baseline"], "term", n)
    return TermsTable(n, facts.get("glossary"), facts.get("entries"),
                      int(counted.sum(0)[1]) if counted is not None else None, rows)


def _cell(found: Effect | None) -> str:
    if found is None:
        return "–"
    return f"{found.value:+.1f} [{found.low:+.1f}, {found.high:+.1f}]" + ("" if found.significant else " n.s.")


def _value(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def to_markdown(table: TermsTable) -> list[str]:
    """The table's lines: each run's own figure, and under it its difference to the run it is set against."""
    glossary = f"`{table.glossary}`" if table.glossary else "the dataset's glossary"
    size = f" ({table.entries} entries)" if table.entries else ""
    out = [f"The first {table.segments} scalc segments with {glossary}{size}: {table.occurrences or '–'} term occurrences "
           "that the references use. Each cell: the run's figure, and below it the difference to the run named in "
           "*against* with a 95 % interval (paired bootstrap over segments; n.s.: the interval holds 0). Term accuracy, "
           "T0, T1 and repeated term errors in % of terms (differences in points); nonterm R0+1 in % (difference "
           "relative, %). Seconds: translate + update per segment as each run timed itself (runs two at a time). The "
           "glossary is selected from these very references (an entry is kept when the German help uses it, "
           "[terms](terms.md)), and the runs are scored against them: term accuracy under the constraint is an oracle "
           "bound, what a glossary that always matches the reference gives, not what a client's glossary would.", "",
           "| run | against | BLEU | term acc. | T0 | T1 | repeated term errors | nonterm R0+1 | s / segment |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in table.rows:
        cells = [f"{_value(row.values[col])}<br>{_cell(row.effects[col])}" if row.against else _value(row.values[col])
                 for col, _, _ in EFFECTS]
        seconds = "–" if row.seconds is None else f"{row.seconds:.3f}"
        out.append(f"| {row.label} | {row.against or '–'} | {' | '.join(cells)} | {seconds} |")
    return out


def summary(table: TermsTable) -> str:
    """One line for the claim's row: what the constraint does to term accuracy and BLEU, what prefer does to BLEU."""
    parts = []
    for row in table.rows:
        if row.label.endswith(" + constraint"):
            parts.append(f"{row.label}: term acc. {_cell(row.effects['term'])}, BLEU {_cell(row.effects['bleu'])}")
        elif row.label.endswith("+prefer"):
            parts.append(f"{row.label} vs {row.against}: BLEU {_cell(row.effects['bleu'])}, "
                         f"term acc. {_cell(row.effects['term'])}")
    base = next((r for r in table.rows if r.label == "baseline"), None)
    head = f"baseline term acc. {_value(base.values['term'])} %; " if base is not None else ""
    return (head + "; ".join(parts) + " (points; term accuracy under the constraint is an oracle bound: the glossary is "
            "selected from the references the runs are scored against; the table 'Terms and preferences' below has T0/T1, "
            "repeated term errors, nonterm R and cost)")
