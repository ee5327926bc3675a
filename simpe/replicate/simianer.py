"""The judges of Simianer et al. (2019)'s claims that are more than parts against the paper's effect
(``judges.factor_parts``), and of the sensitivity sweep beside them. Each is a function of the run group the claim
reads (or of the whole ``Evidence`` where it reads several), with its figures as parameters; the claims' text and
rules are the table of ``claims.py``.

Simianer et al. (2019) print most figures as changes relative to the baseline (Table 5): a method's change relative
to another's is ``rel`` of the two.
"""
from __future__ import annotations

import numpy as np

from simpe.replicate.judges import Claim, Evidence, Judge, Part, Verdict, effect, judge_parts, not_above, part, runs
from simpe.replicate.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, Band, Judged, judge_null
from simpe.report.plotting import cumulative_deltas
from simpe.rundir.reader import RunGroup


def rel(a: float, b: float) -> float:
    """The relative change (%) of a method at a % against one at b %, both relative to the same baseline."""
    return round(100 * ((1 + a / 100) / (1 + b / 100) - 1), 1)


def no_effect_against(against: str, names: tuple[str, ...], keys: dict[str, float],
                      awaited: dict[str, str] | None = None) -> Judge:
    """Each of ``names`` against run ``against``: no effect on each metric of ``keys`` (relative %) when the interval
    lies inside ±its band (every part required); ``awaited``: {key: what the records lack} for a metric whose
    per-segment statistics the records do not hold yet."""
    def judge_it(c: Claim, group: RunGroup) -> Verdict:
        parts = []
        for key, band in keys.items():
            label = "" if len(keys) == 1 else f"{key.upper()} "
            for n in names:
                found = effect(group, key, n, against=against)
                if found is None:
                    ran = n in runs(group) and against in runs(group)  # the runs are there: their records lack the statistics
                    lacks = (awaited or {}).get(key, "not measured") if ran else "not measured"
                    parts.append(Judged(NOT_TESTABLE, f"{label}{n} vs {against}: {lacks}"))
                    continue
                verdict, why = judge_null(found, band)
                parts.append(Judged(verdict, f"{label}{n} vs {against}: {why}", True, found, Band(-band, band)))
        return c.of_parts(parts)

    return judge_it


def only_improves(one: Part, others: tuple[str, ...], margin: float) -> Judge:
    """``one`` against the paper's effect, and each of ``others`` not above the baseline, judged with ``margin`` (the
    paper's smallest effect of interest: ``verdicts.judge_not_above``); every part required."""
    def judge_it(c: Claim, group: RunGroup) -> Verdict:
        parts = judge_parts(group, (one,))
        parts += [not_above(n, effect(group, one.key, n), margin) for n in others]
        return c.of_parts(parts)

    return judge_it


def on_all_tokens(*parts: Part) -> Judge:
    """``parts`` of subword R, judged only where the runs counted every subword token (Table 4's unit)."""
    def judge_it(c: Claim, group: RunGroup) -> Verdict:
        signature = ((group.baseline.summary or {}).get("signatures") or {}).get("subword:r", "")
        if not signature:
            return c.missing("the runs logged no subword R (metrics.subword)")
        if "unit:subword-content" in signature:
            return c.missing("the runs counted the subwords of content words only; Table 4 counts all tokens: rerun with "
                             "metrics.subword=all (the replication plan's default now)")
        return c.of_parts(judge_parts(group, parts))

    return judge_it


def figure2(c: Claim, group: RunGroup) -> Verdict | None:
    """Figure 2, both curves the paper draws: the share of the segments after the first 10 % where full's cumulative
    ΔR0 < 0 and ΔBLEU > 0, and where lasso's ΔR0 > 0 (the paper's lasso ends +3 % in R0). A shape over the stream has
    no interval, and its end points are the contrasts of ``simianer2019-r0-degrade`` and ``simianer2019-bleu``: the row
    is linked to them and not counted."""
    found = runs(group)
    if "full" not in found:
        return None
    curves = cumulative_deltas(group, ("r0", "bleu"))
    start = group.num_segments // 10

    def share(mask: np.ndarray) -> float:
        return float(np.mean(mask)) if mask.size else 0.0

    def verdict(value: float) -> str:
        return REPRODUCED if value >= 0.8 else PARTLY if value >= 0.5 else NOT_REPRODUCED

    r0, bleu = curves.deltas["full"]["r0"][start:], curves.deltas["full"]["bleu"][start:]
    full = share((r0 < 0) & (bleu > 0))
    parts = [Judged(verdict(full), f"full: ΔR0 < 0 and ΔBLEU > 0 at {100 * full:.1f}% of segments after segment {start}")]
    figures = (f"after segment {start}: full's ΔR0 < 0 and ΔBLEU > 0 at {100 * full:.1f}% of segments (at the end ΔR0 "
               f"{r0[-1]:+.1f}, ΔBLEU {bleu[-1]:+.1f} points)")
    if "lasso" in found:
        lasso_r0 = curves.deltas["lasso"]["r0"][start:]
        above = share(lasso_r0 > 0)
        parts.append(Judged(verdict(above), f"lasso: ΔR0 > 0 at {100 * above:.1f}% of segments after segment {start} (below "
                                            f"the baseline at {100 * share(lasso_r0 < 0):.1f}%)"))
        figures += f"; lasso's ΔR0 > 0 at {100 * above:.1f}% (at the end {lasso_r0[-1]:+.1f} points)"
    out = c.of_parts(parts)
    out.simpe = figures + " (figure: replication/figure2.png)"
    out.linked = "simianer2019-r0-degrade"
    out.why += ("; a shape with no interval, whose end points are the contrasts of `simianer2019-r0-degrade` and "
                "`simianer2019-bleu` (and lasso's of `simianer2019-r0-lasso`): linked to them, not counted")
    return out


def on_each_stream(streams: tuple[str, ...], paper: float, band: Band) -> Judge:
    """R0 of lasso relative to full on each run group of ``streams`` against the paper's ``paper`` within ``band``."""
    def judge_it(c: Claim, ev: Evidence) -> Verdict:
        parts = []
        for name in streams:
            group = ev.groups.get(name)
            if group is None:
                parts.append(Judged(NOT_TESTABLE, f"{name}: {ev.notes.get(name, 'runs missing')}"))
                continue
            parts.append(part(name, effect(group, "r0", "lasso", against="full"), paper, band))
        if all(p.verdict == NOT_TESTABLE for p in parts):
            return c.missing("; ".join(p.why for p in parts))
        return c.of_parts(parts)

    return judge_it


def settings(c: Claim, group: RunGroup) -> Verdict:
    """The sensitivity sweep: every setting's R0 and BLEU, relative % to the baseline with 95 % intervals."""
    rows = []
    for name in sorted(runs(group)):
        if name == group.baseline.name:
            continue
        r0, bleu = effect(group, "r0", name, blocks=False), effect(group, "bleu", name, blocks=False)
        if r0 is not None and bleu is not None:
            rows.append(f"{name}: R0 {r0.value:+.1f} [{r0.low:+.1f}, {r0.high:+.1f}], BLEU {bleu.value:+.1f} [{bleu.low:+.1f}, {bleu.high:+.1f}]")
    return c.measured("; ".join(rows) + f" (relative %, n={group.num_segments} segments)", "a probe of settings the papers do not report")
