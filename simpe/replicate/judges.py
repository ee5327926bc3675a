"""A claim of the papers as data (``Claim``), what the claims read (``Evidence``) and give (``Verdict``), and the steps
every claim shares.

A ``Claim`` holds the finding, the paper's figures, its rule, what it reads (a ``Lookup``: a run group such as the
scalc runs, the decoding studies, the systems study; the parts of the plan they come from; the note a row gives when
they are absent) and its judge. ``Claim.verdict`` looks the evidence up, turns absent evidence into a row that is not
testable here, and hands what it found to the judge: that shape stands here once. A judge is a small function of
what it found (``simianer.py``, ``yan.py``, ``amrhein.py``, ``beyond.py``) or the judge of parts built here from
parameters (``factor_parts``: each part against the paper's effect within a factor band, or in a null band where the
paper says a method has no effect). The claims themselves, in the page's order, are the table of ``claims.py``.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpe.replicate.papers import PAPERS, POINTS, RELATIVE
from simpe.replicate.verdicts import (
    DIRECTION_ONLY,
    MEASURED,
    NOT_TESTABLE,
    Band,
    Effect,
    Judged,
    band_around,
    block_sums,
    combine,
    direction_only,
    judge,
    judge_not_above,
    judge_null,
    leave_one_out,
    metric_score,
    paired_effect,
)
from simpe.report.compare import segment_stats
from simpe.rundir.reader import RunGroup

FACTOR_RULE = "each part: simpe's effect against the paper's, band = within a factor of 2 of the paper's effect (verdicts.py)"
PROBE = "a probe beyond the papers"  # the why of a measured row


@dataclass
class Verdict:
    claim: str  # the finding, in one line
    source: str  # the paper (authors, year) and its table / figure / section
    paper: str  # the paper's figures, each with its table, unit and line
    simpe: str  # simpe's figures
    verdict: str
    why: str  # the rule's numbers, or the reason it cannot be tested
    rule: str  # how the verdict follows from the figures
    linked: str | None = None  # the claim whose per-sentence evidence this row's is (counted once, there)
    label: str = ""  # beside the verdict: "direction only" (partly on direction alone, the size not established)
    # not on the page: the parts the verdict combines, and a digest of the per-unit evidence it judged (for linking)
    parts: list[Judged] = field(default_factory=list, repr=False, compare=False)
    evidence: str | None = field(default=None, repr=False, compare=False)

    def shown(self) -> dict[str, Any]:
        """What the page's json keeps of the row (not the parts, not the digest)."""
        return {k: getattr(self, k) for k in ("claim", "source", "paper", "simpe", "verdict", "label", "why", "rule", "linked")}


AWAITS = "awaits the next from-scratch call (`make replicate`)"


def digest(*arrays: Any) -> str:
    """A fingerprint of the per-unit values a verdict judged (rounded to 9 digits): two rows with the same digest rest
    on the same evidence."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.round(np.asarray(a, dtype=np.float64), 9).tobytes() + b"|")
    return h.hexdigest()[:16]


@dataclass
class Evidence:
    """What the claims read: run groups by experiment (None when absent), the studies' figures, the settings."""

    groups: dict[str, RunGroup | None]
    studies: dict[str, Any] | None
    notes: dict[str, str] = field(default_factory=dict)  # experiment -> why it is absent
    sensitivity: dict[str, Any] | None = None  # utility -> simpe.measure.sensitivity.analyse's result
    systems: dict[str, Any] | None = None  # Yan et al. (2022) Table 3: {"models": [...], "correlation": {...}, "settings": {...}}
    penalties: dict[str, Any] | None = None  # Yan et al. (2021) Table 2 reduced: ``simpe.replicate.penalties.penalty_study``


@dataclass(frozen=True)
class Lookup:
    """What a claim reads: ``find`` gives it from the ``Evidence`` (None when absent); ``parts``: the parts of the plan
    it comes from (``simpe.replicate.plan.PARTS``); when absent, the row says the note of the first experiment of
    ``noted`` that has one (``Evidence.notes``), else ``missing``, and then ``hint``."""

    find: Callable[[Evidence], Any]
    parts: tuple[str, ...]
    missing: str = ""
    noted: tuple[str, ...] = ()
    hint: str = ""

    def note(self, ev: Evidence) -> str:
        return next((ev.notes[name] for name in self.noted if name in ev.notes), self.missing) + self.hint


def group(name: str) -> Lookup:
    """Run group ``name``."""
    return Lookup(lambda ev: ev.groups.get(name), (name,), f"the {name} runs are missing", (name,))


def groups(*names: str, noted: str, hint: str = "") -> Lookup:
    """The whole ``Evidence`` when every run group of ``names`` is there; absent, the row says ``noted``'s note."""
    return Lookup(lambda ev: ev if all(ev.groups.get(n) is not None for n in names) else None, names,
                  f"the {noted} runs are missing", (noted,), hint)


def whole(*parts: str) -> Lookup:
    """The whole ``Evidence``, whose judge says itself what is missing; ``parts``: those of the plan it reads."""
    return Lookup(lambda ev: ev, parts)


Judge = Callable[["Claim", Any], "Verdict | None"]


@dataclass(frozen=True)
class Claim:
    """One finding as a row of the page: its text, the paper's figures, its rule, what it reads and its judge.

    ``judge(claim, found)`` gets what ``reads`` found and gives the row, or None when what it found lacks what it
    needs (the row then says what is missing as an absent lookup does); no ``reads``: the claim reads nothing."""

    id: str
    claim: str  # the finding, in one line
    source: str  # the paper (authors, year) and its table / figure / section
    paper: str  # the paper's figures (papers.show)
    rule: str  # how the verdict follows from the figures ("–": none is judged)
    judge: Judge
    reads: Lookup | None = None
    probe: bool = False  # beyond the papers (or of one model's level): measured, never counted in the headline

    @property
    def needs(self) -> tuple[str, ...]:
        """The parts of the plan this row's evidence comes from (``claims.NEEDS``)."""
        return self.reads.parts if self.reads else ()

    def verdict(self, ev: Evidence) -> Verdict:
        found = self.reads.find(ev) if self.reads is not None else None
        row = None if self.reads is not None and found is None else self.judge(self, found)
        if row is None:
            assert self.reads is not None, f"{self.id}: a claim that reads nothing always has a row"
            return self.missing(self.reads.note(ev))
        return row

    def row(self, simpe: str, verdict: str, why: str) -> Verdict:
        return Verdict(self.claim, self.source, self.paper, simpe, verdict, why, self.rule)

    def missing(self, why: str) -> Verdict:
        return self.row("–", NOT_TESTABLE, why)

    def measured(self, simpe: str, why: str = PROBE) -> Verdict:
        return self.row(simpe, MEASURED, why)

    def of_parts(self, parts: list[Judged]) -> Verdict:
        """One row of several parts (each required or optional): their verdicts combined (``verdicts.combine``), simpe's
        figure of each."""
        simpe = "; ".join(f"{p.why.split(':')[0]} {p.why.split('simpe ', 1)[1].split(' against')[0]}" for p in parts
                          if p.verdict != NOT_TESTABLE and "simpe " in p.why)
        verdict = combine(parts)
        out = self.row(simpe or "–", verdict, " | ".join(p.show() for p in parts))
        out.parts = list(parts)
        out.label = DIRECTION_ONLY if direction_only(parts, verdict) else ""
        return out

    def judged(self, simpe: str, one: Judged, label: str = "") -> Verdict:
        """A row of one part: its verdict and why, and the part kept for the page's tests (its effect and band)."""
        out = self.row(simpe, one.verdict, one.why)
        out.parts = [one]
        out.label = label or (DIRECTION_ONLY if one.direction_only else "")
        return out


def cite(paper: str, where: str) -> str:
    return f"{PAPERS[paper].cite}, {where}"


def not_testable(why: str) -> Judge:
    """The judge of a claim simpe cannot test: ``why``, and what would fill it."""
    return lambda c, _: c.missing(why)


# ---------------------------------------------------------------------------------------- parts against the paper
def runs(group: RunGroup) -> dict[str, Any]:
    return {run.name: run for run in group.runs}


def documents(group: RunGroup) -> list[str] | None:
    """The document id of each of the group's segments, when its runs recorded them (None otherwise)."""
    ids = [seg.get("doc_id") for seg in group.baseline.segments[: group.num_segments]]
    return None if not ids or any(not isinstance(i, str) for i in ids) else ids  # type: ignore[return-value]


DOCUMENTS_AWAITED = ("document blocks: the records hold no document ids (each run's segments.jsonl has them; the export "
                     "keeps them since, so the next from-scratch call gives this bootstrap)")
# how a stream row's interval resamples (the rule of docs/replicate.md, "Intervals over what was sampled")
ON_DOCUMENTS = ("judged on the bootstrap over document blocks (R1 counts a word's second occurrence, often in the same "
                "document: segments cluster), the bootstrap over segments beside it, and the figure without the document "
                "that moves it most; a stream whose records hold no document ids is judged over segments, and the row says so")


def _without(ids: list[str], base: Any, system: Any, score: Any, relative: bool) -> str:
    """The effect without the document block whose absence moves it most: 'without document D (segments a-b): x'."""
    import numpy as np

    starts = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]
    if len(starts) < 2:
        return ""
    whole_effect = paired_value(base, system, score, relative)
    values = leave_one_out(block_sums(base, ids), block_sums(system, ids), score, relative)  # (blocks,)
    moved = np.where(np.isfinite(values), np.abs(values - whole_effect), -1.0)
    j = int(np.argmax(moved))
    end = starts[j + 1] if j + 1 < len(starts) else len(ids)
    return f"without document {ids[starts[j]].rsplit('/', 1)[-1]} (segments {starts[j] + 1}-{end}): {values[j]:+.1f}"


def paired_value(base: Any, system: Any, score: Any, relative: bool) -> float:
    """system minus base from summed statistics, points or relative % (no interval)."""
    b, s = float(score(base.sum(0))[0]), float(score(system.sum(0))[0])
    if not relative:
        return s - b
    return 100.0 * (s / b - 1.0) if b else float("nan")


def effect(group: RunGroup, key: str, name: str, against: str | None = None, relative: bool = True,
           blocks: bool = True) -> Effect | None:
    """Run ``name``'s ``key`` against ``against`` (default: the baseline), relative % or points. Where the runs
    recorded document ids (and ``blocks``), the interval is the bootstrap over document blocks, with the segment
    bootstrap's interval beside it and the effect without the document that moves it most (``ON_DOCUMENTS``); else the
    interval is over segments."""
    found, n = runs(group), group.num_segments
    if name not in found or (against is not None and against not in found):
        return None
    base = segment_stats(found[against] if against else group.baseline, key, n)
    system = segment_stats(found[name], key, n)
    if base is None or system is None:
        return None
    score, unit = metric_score(key), RELATIVE if relative else POINTS
    out = paired_effect(base, system, score, relative, unit)
    if math.isnan(out.value):
        return None
    ids = documents(group) if blocks else None
    if ids is not None:
        over = paired_effect(block_sums(base, ids), block_sums(system, ids), score, relative, unit, of="document blocks")
        if not math.isnan(over.low):
            beside = f"over {out.n} segments: {out.low:+.1f} to {out.high:+.1f}"
            alone = _without(ids, base, system, score, relative)
            out = dataclasses.replace(over, beside=beside + (f"; {alone}" if alone else ""))
    return out


def part(label: str, found: Effect | None, paper: float, band: Band | None = None, required: bool = True) -> Judged:
    """One part of a claim: against the paper's effect within ``band`` (default: a factor of 2 of it), or, where the
    paper's effect is 0 (no effect), inside a null band of ±2."""
    if found is None:
        return Judged(NOT_TESTABLE, f"{label}: not measured", required)
    band = (band or band_around(paper)) if paper else Band(-2.0, 2.0)
    verdict, why = judge(found, paper, band) if paper else judge_null(found, 2.0)
    return Judged(verdict, f"{label}: {why}", required, found, band)


def not_above(label: str, found: Effect | None, margin: float, required: bool = True) -> Judged:
    """One part "not above the baseline", judged with a margin (``verdicts.judge_not_above``)."""
    if found is None:
        return Judged(NOT_TESTABLE, f"{label}: not measured", required)
    verdict, why = judge_not_above(found, margin)
    return Judged(verdict, f"{label}: {why}", required, found, Band(-math.inf, margin))


@dataclass(frozen=True)
class Part:
    """A part of a claim on one run group: run ``name``'s metric ``key``, relative % to ``against`` (the baseline when
    None), against the paper's effect ``paper`` (``part``); ``required``: the claim needs it (else optional)."""

    label: str
    key: str
    name: str
    paper: float
    against: str | None = None
    required: bool = True


def judge_parts(group: RunGroup, parts: tuple[Part, ...]) -> list[Judged]:
    return [part(p.label, effect(group, p.key, p.name, p.against), p.paper, required=p.required) for p in parts]


def factor_parts(*parts: Part, none: str | None = None) -> Judge:
    """The judge of a claim made of ``parts`` of one run group, each against the paper's effect (``part``); ``none``:
    the row's note when no part could be measured (else the row is one of parts none of which is measured)."""
    def judge_it(c: Claim, found: RunGroup) -> Verdict:
        judged = judge_parts(found, parts)
        if none is not None and all(p.verdict == NOT_TESTABLE for p in judged):
            return c.missing(none)
        return c.of_parts(judged)

    return judge_it
