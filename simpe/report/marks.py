"""Per-word R0/R1 marks of logged runs: which content words of each post-edit a method hit or missed.

The R metrics (``simpe.metrics.recall``) count types per segment; a reader of a report wants
the words behind the counts. This module replays a group's stream through the metric
stack's own pieces: the content-word filter (``simpe.metrics.text.ContentWords`` with the
run's stopword list, case rule and token filter) on the logged ``ref_tokens`` / ``hyp_tokens``, and a
``RecallCounter``, whose ``occurrences`` before ``add`` give each reference type's
occurrence number (1 = R0, 2 = R1; restarted per document under ``metrics.scope:
document``) and whose ``add`` gives the [hits, types] the loop
logged, so the marks can be checked against the records (``mismatches``).

It also finds what a method repeats after a correction: a content word that a method's
hypothesis held in an earlier segment whose post-edit did not (the translator removed it),
and that the method outputs again where the post-edit again lacks it.

It reads records only; it never translates and never writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simpe.config.files import defaults
from simpe.config.tree import MetricsConfig
from simpe.metrics.recall import RecallCounter, repeated_errors
from simpe.metrics.stopwords import load_stopwords
from simpe.metrics.text import ContentWords, split_tokens
from simpe.rundir.reader import Run, RunGroup

# one character per token: what the page colours
PLAIN, CONTENT, R0, R1, LATER = ".", "c", "0", "1", "k"  # post-edit tokens: not content / content, occurrence class
HIT0, HIT1, HIT_LATER, EXTRA, REPEAT = "A", "B", "K", "x", "r"  # hypothesis tokens


@dataclass
class SegmentMarks:
    """The marks of one segment.

    ref_marks: one character per ``ref_tokens`` token (PLAIN, R0, R1, LATER = seen twice or
    more before). hyp_marks[run]: one character per ``hyp_tokens`` token (PLAIN, HIT0,
    HIT1, HIT_LATER, EXTRA = a content word not in the post-edit, REPEAT = such a word the
    method was corrected on before). missed[run]: {"r0": [...], "r1": [...]} reference types
    the method did not output. repeats[run]: the repeated corrected words.
    """

    ref_marks: str
    r0: list[str]
    r1: list[str]
    hyp_marks: dict[str, str] = field(default_factory=dict)
    missed: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    repeats: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class GroupMarks:
    """Marks of every segment of a group, and the segments where they disagree with the logged R counts."""

    segments: list[SegmentMarks]
    mismatches: dict[str, list[int]]  # run name -> segment indices whose logged r0/r1 [num, den] differ


MARK_SETTINGS = ("stopwords", "stopword_case", "token_filter", "scope")  # the metric settings the marks follow


def metric_settings(run: Run) -> MetricsConfig:
    """The run's ``metrics`` settings that decide content words and occurrences (adapters/defaults.yaml for the rest)."""
    logged = run.config.get("metrics") or {}
    return defaults("metrics", **{key: logged[key] for key in MARK_SETTINGS if logged.get(key) is not None})


def content_filter(cfg: MetricsConfig) -> ContentWords:
    """The metric stack's content-word filter for these settings (stopword list, case rule, token filter)."""
    return ContentWords(load_stopwords(cfg.stopwords), cfg.stopword_case, cfg.token_filter)


def repeated_error_stats(run: Run, num_segments: int) -> list[tuple[int, int]]:
    """Per segment, (missed again, shown after a miss) of ``run``'s first ``num_segments``, from its logged tokens
    with its own content-word settings (``simpe.metrics.recall.repeated_errors``); runs written before simpe
    logged ``repeated_errors`` in their summary get the same figures."""
    content = content_filter(metric_settings(run))
    segments = run.segments[:num_segments]
    return repeated_errors([content(split_tokens(str(s.get("hyp_tokens") or ""))) for s in segments],
                           [content(split_tokens(str(s.get("ref_tokens") or ""))) for s in segments])


def group_marks(group: RunGroup) -> GroupMarks:
    """Mark every segment of ``group`` (the first ``group.num_segments``) for every run."""
    cfg = metric_settings(group.baseline)
    content = content_filter(cfg)
    counter = RecallCounter(1)
    document: Any = object()  # no document yet
    corrected: dict[str, set[str]] = {run.name: set() for run in group.runs}
    mismatches: dict[str, list[int]] = {}
    segments: list[SegmentMarks] = []
    for index in range(group.num_segments):
        base = group.baseline.segments[index]
        if cfg.scope == "document" and base.get("doc_id") != document:
            counter.restart()  # as the loop does under metrics.scope: document
        document = base.get("doc_id")
        ref_tokens = split_tokens(str(base.get("ref_tokens") or ""))
        ref_types = content(ref_tokens)
        occurrence = {t: counter.occurrences.get(t, 0) + 1 for t in ref_types}
        r0 = sorted(t for t, occ in occurrence.items() if occ == 1)
        r1 = sorted(t for t, occ in occurrence.items() if occ == 2)
        ref_class = {1: R0, 2: R1}
        marks = SegmentMarks(
            ref_marks="".join(ref_class.get(occurrence[t], LATER) if t in occurrence else PLAIN for t in ref_tokens),
            r0=r0, r1=r1)
        logged_counts: dict[str, list[int]] = {}
        for run in group.runs:
            record = run.segments[index]
            hyp_tokens = split_tokens(str(record.get("hyp_tokens") or ""))
            hyp_types = content(hyp_tokens)
            extra = hyp_types - ref_types
            repeated = extra & corrected[run.name]
            hit_mark = {1: HIT0, 2: HIT1}
            marks.hyp_marks[run.name] = "".join(
                hit_mark.get(occurrence[t], HIT_LATER) if t in occurrence else
                REPEAT if t in repeated else EXTRA if t in extra else PLAIN
                for t in hyp_tokens)
            marks.missed[run.name] = {"r0": [t for t in r0 if t not in hyp_types],
                                      "r1": [t for t in r1 if t not in hyp_types]}
            marks.repeats[run.name] = sorted(repeated)
            corrected[run.name] |= extra
            logged_counts[run.name] = [len(hyp_types & set(r0)), len(r0), len(hyp_types & set(r1)), len(r1)]
        counter.add(frozenset(), ref_types)  # advance the stream: occurrence counts are shared by every run
        for run in group.runs:
            metrics = run.segments[index].get("metrics") or {}
            logged = [*(metrics.get("r0") or [None, None]), *(metrics.get("r1") or [None, None])]
            if "r0" in metrics and [int(v) for v in logged] != logged_counts[run.name]:
                mismatches.setdefault(run.name, []).append(index)
        segments.append(marks)
    return GroupMarks(segments=segments, mismatches=mismatches)


def one_shot_disagreement(marks: SegmentMarks) -> list[str]:
    """R1 (one-shot) words some methods output and others missed, in this segment."""
    runs = list(marks.missed)
    return [t for t in marks.r1
            if 0 < sum(t in marks.missed[run]["r1"] for run in runs) < len(runs)]


def as_json(marks: SegmentMarks) -> dict[str, Any]:
    """A JSON-able dict of one segment's marks."""
    return {"ref_marks": marks.ref_marks, "r0": marks.r0, "r1": marks.r1, "hyp_marks": marks.hyp_marks,
            "missed": marks.missed, "repeats": marks.repeats}
