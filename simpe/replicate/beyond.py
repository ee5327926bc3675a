"""The judges of the probes beyond the papers: measured rows, never counted in the headline. What adapting costs on
other text (forgetting), how often a corrected word is missed again (the repeated-error rate), and the field's methods
beside the papers' (``field.py``). The why rows, which judge Simianer et al. (2019)'s claims again on other runs, are
in ``claims.py`` beside the table they judge."""
from __future__ import annotations

from simpe.replicate.field import FieldTable, field_table, held_out_bleu, repeated_rate, repeated_stats
from simpe.replicate.field import summary as field_summary
from simpe.replicate.judges import Claim, Evidence, Lookup, Verdict
from simpe.replicate.papers import POINTS
from simpe.replicate.terms import TermsTable, terms_table
from simpe.replicate.terms import summary as terms_summary
from simpe.replicate.verdicts import paired_effect
from simpe.rundir.reader import RunGroup


def field_evidence(ev: Evidence) -> FieldTable | None:
    """The field's methods beside the papers' (``field.field_table``), or None without the scalc or field runs."""
    main, field = ev.groups.get("scalc"), ev.groups.get("field")
    if main is None or field is None:
        return None
    return field_table(main, field, ev.groups.get("forgetting"), ev.groups.get("field-forgetting"))


FIELD = Lookup(field_evidence, ("scalc", "field", "forgetting", "field-forgetting"), "the field runs are missing", ("field", "scalc"))


def terms_evidence(ev: Evidence) -> TermsTable | None:
    """The terms part's comparison (``terms.terms_table``), or None without its runs."""
    group = ev.groups.get("terms")
    return None if group is None else terms_table(group)


TERMS = Lookup(terms_evidence, ("terms",), "the terms runs are missing", ("terms",),
               " (`simpe replicate --only terms` runs them)")


def repeated(c: Claim, group: RunGroup) -> Verdict:
    """Each method's repeated-error rate minus the baseline's, points, paired over segments."""
    n = group.num_segments
    base = repeated_stats(group.baseline, n)
    parts = [f"baseline {repeated_rate(base.sum(0))[0]:.1f}%"]
    for run in group.methods:
        found = paired_effect(base, repeated_stats(run, n), repeated_rate, False, POINTS)
        parts.append(f"{run.name} {found.show()}")
    return c.measured("; ".join(parts) + f" (of {int(base.sum(0)[1])} words shown after a miss, baseline)")


def forgetting(c: Claim, group: RunGroup) -> Verdict:
    """Each method's BLEU on the held-out text at the last snapshot against the baseline's."""
    base = held_out_bleu(group.baseline, group.num_segments)
    values = {run.method: held_out_bleu(run, group.num_segments) for run in group.methods}  # names carry the grid key: by method
    if base is None:
        return c.missing("the runs took no forgetting snapshot")
    size = next((s.get("forget.size") for s in group.baseline.snapshots if s.get("forget.size")), "?")
    return c.measured(f"BLEU on {size} held-out dev segments after {group.num_segments} stream segments: baseline {base:.1f}; "
                      + ", ".join(f"{n} {v:.1f} ({v - base:+.1f})" for n, v in values.items() if v is not None))


def field_methods(c: Claim, table: FieldTable) -> Verdict:
    return c.measured(field_summary(table))


def terms_methods(c: Claim, table: TermsTable) -> Verdict:
    return c.measured(terms_summary(table))
