"""Term metrics beside R0/R1, streamed segment by segment: term accuracy, its first (T0) and later (T1)
occurrences, the repeated term error, and R0/R1 on the words outside the glossary.

Per segment i, with the glossary's entries found by ``simpe.terms.match`` (whole Moses tokens; source case exact,
target case ignored):

- S_i: entries whose source term the source holds; U_i: entries whose target term the reference holds;
  H_i: entries whose target term the hypothesis holds. The segment's **counted terms** are C_i = S_i ∩ U_i: a term
  counts only where the reference uses it (the LibreOffice references are independent translations, and a
  reference that says it otherwise gives no evidence about the term). Each entry counts once per segment, as the R
  metrics count a word type once per segment, however often it occurs.
- ``term`` (term accuracy): ``[|C_i ∩ H_i|, |C_i|]``, hits and counted terms.
- ``t0`` / ``t1``: the same split by the entry's occurrence number in the stream, counting the segments in which it
  was counted so far: T0 its first, T1 **every later** one (unlike R1, which is exactly the second occurrence:
  terms are few, and "after the translator has used it once" is what T1 asks). ``t0`` + ``t1`` = ``term``.
- ``term-repeat`` (the repeated term error): ``[missed again, fixed before]``. An entry is *fixed* in segment j when
  it is counted there, the hypothesis misses it and the post-edit holds it (the post-edit is the reference unless
  the protocol gives another). At the entry's next counted occurrence it is in the second number, and in the first
  when the hypothesis misses it again. Only the next occurrence after a fix is asked (then the entry is fixed again
  or not), as ``simpe.metrics.recall.repeated_errors`` asks of content words. Lower is better.
- ``nonterm:r0``, ``nonterm:r1``, ``nonterm:r0+1`` (and ``nonterm:r0..j`` for ``max_k`` > 1): the R values of
  ``simpe.metrics.recall`` on the reference's content types that are not a token of any glossary target term
  (compared case-folded; every target term's tokens, not only this segment's), so that a constraint that copies
  reference terms into the output does not lift the R values of the other words.

Every value is ``[numerator, denominator]``: a corpus figure, a cumulative curve and a paired bootstrap resample
are the ratio of summed statistics (``TermMetric.score_from_stats``), as for the R values. ``restart`` forgets the
occurrence counts and the pending fixes (a document boundary under ``metrics.scope: document``); the sums are kept.

This module counts; finding terms is ``simpe.terms.match``'s, reading glossaries ``simpe.terms.glossary``'s, the
word pipeline (tokens, truecasing, content types) ``simpe.metrics.text``'s.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simpe.errors import DataError
from simpe.metrics.recall import RecallCounter, ratio
from simpe.metrics.terms import NONTERM, REPEAT, T0, T1, TERM, TERM_METRICS, TermMetric
from simpe.terms.glossary import Glossary
from simpe.terms.match import SOURCE_CASE, TARGET_CASE, TermMatcher
from simpe.textfile import read_bytes

# the names and their Metric live below the loop's scorer (simpe.metrics.terms), where metric_for finds them
__all__ = ["NONTERM", "REPEAT", "T0", "T1", "TERM", "TERM_METRICS", "TermCounter", "TermMetric", "TermSegment",
           "glossary_counter", "term_corpus", "term_signature"]


@dataclass
class TermSegment:
    """One segment's term figures.

    counts: ``{name: [numerator, denominator]}`` for ``term``, ``t0``, ``t1``, ``term-repeat`` and the ``nonterm:``
        R values (when content types were given).
    terms: per counted term, ``[source term, occurrence number in the stream (1 = first), hit (bool)]``, in glossary
        order: which terms the hypothesis missed.
    fixed: the source terms the post-edit fixed in this segment (missed by the hypothesis, held by the post-edit).
    """

    counts: dict[str, list[int]]
    terms: list[list[Any]] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)


class TermCounter:
    """Streaming occurrence counts, pending fixes and sums of the term metrics of one glossary."""

    def __init__(self, matcher: TermMatcher, max_k: int = 1) -> None:
        """
        Args:
            matcher: the glossary's terms (``TermMatcher(glossary.pairs(), source_lang, target_lang)``).
            max_k: the highest k of the ``nonterm:`` R values (``metrics.r_max_k``).
        """
        self.matcher = matcher
        self.target_words = matcher.target_words()
        self.nonterm = RecallCounter(max_k, prefix=NONTERM)
        self.names = [TERM, T0, T1, REPEAT, *self.nonterm.names]
        self.occurrences: dict[int, int] = {}  # entry -> segments it was counted in so far
        self.pending: set[int] = set()  # entries fixed at their last counted occurrence
        self.totals: dict[str, list[int]] = {name: [0, 0] for name in (TERM, T0, T1, REPEAT)}
        self.signature: str | None = None  # term_signature of the glossary (``glossary_counter`` sets it)

    def outside(self, types: Iterable[str]) -> set[str]:
        """The content types that are no token of a glossary target term (compared case-folded)."""
        return {word for word in types if word.casefold() not in self.target_words}

    def add(self, source_tokens: Sequence[str], hyp_tokens: Sequence[str], ref_tokens: Sequence[str],
            post_edit_tokens: Sequence[str] | None = None, hyp_types: Iterable[str] | None = None,
            ref_types: Iterable[str] | None = None) -> TermSegment:
        """Score one segment and advance the stream.

        Args:
            source_tokens: the source's Moses tokens (``matcher.source_tokens``).
            hyp_tokens, ref_tokens: the hypothesis' and the reference's tokens (the R pipeline's, truecased or not).
            post_edit_tokens: the post-edit's tokens when it is not the reference (None: the reference).
            hyp_types, ref_types: the R metrics' content types of both; given, the ``nonterm:`` R values are counted.
        """
        matcher = self.matcher
        source = matcher.in_source(source_tokens)
        used = set(matcher.in_target(ref_tokens)) if source else set()
        counted = [entry for entry in source if entry in used]
        hits = set(matcher.in_target(hyp_tokens)) if counted else set()
        post_edit = used if post_edit_tokens is None else set(matcher.in_target(post_edit_tokens)) if counted else set()
        counts = {name: [0, 0] for name in (TERM, T0, T1, REPEAT)}
        terms: list[list[Any]] = []
        fixed: list[str] = []
        for entry in counted:
            occurrence = self.occurrences.get(entry, 0) + 1
            self.occurrences[entry] = occurrence
            hit = entry in hits
            for name in (TERM, T0 if occurrence == 1 else T1):
                counts[name][0] += hit
                counts[name][1] += 1
            if entry in self.pending:
                counts[REPEAT][0] += not hit
                counts[REPEAT][1] += 1
                self.pending.discard(entry)
            if not hit and entry in post_edit:
                self.pending.add(entry)
                fixed.append(matcher.pairs[entry][0])
            terms.append([matcher.pairs[entry][0], occurrence, hit])
        for name, (num, den) in counts.items():
            self.totals[name][0] += num
            self.totals[name][1] += den
        if hyp_types is not None and ref_types is not None:
            counts.update(self.nonterm.add(set(hyp_types), self.outside(ref_types)))
        return TermSegment(counts, terms, fixed)

    def observe(self, logged: Mapping[str, Sequence[int]], *args: Any, **kwargs: Any) -> TermSegment:
        """Advance the stream by a logged segment (resuming a run): ``add`` on its logged texts' tokens, checked
        against its logged ``{name: [numerator, denominator]}``; one line when they differ."""
        segment = self.add(*args, **kwargs)
        for name, values in segment.counts.items():
            if name not in logged:
                raise DataError(f"logged segment has no {name!r} value to resume from (has: {', '.join(sorted(logged))}); "
                                "resume with the glossary and metrics the run was started with")
            if [int(v) for v in logged[name]] != values:
                raise DataError(f"logged {name} {list(logged[name])} differs from {values} recomputed from the logged text "
                                "(another glossary, tokeniser or segment order?)")
        return segment

    def restart(self) -> None:
        """Forget the occurrence counts and pending fixes (a document boundary); keep the sums."""
        self.occurrences.clear()
        self.pending.clear()
        self.nonterm.restart()

    def all_totals(self) -> dict[str, list[int]]:
        """Summed ``[numerator, denominator]`` per name, the ``nonterm:`` R values included."""
        return {**{name: list(v) for name, v in self.totals.items()}, **{n: list(v) for n, v in self.nonterm.totals.items()}}

    def cumulative(self) -> dict[str, float | None]:
        """Sum of numerators / sum of denominators so far, per name (None while a denominator is 0)."""
        return {name: ratio(num, den) for name, (num, den) in self.all_totals().items()}


def glossary_counter(glossary: Glossary, max_k: int = 1, scope: str = "stream") -> TermCounter:
    """The counter of a loaded glossary (``simpe.terms.glossary.load_glossary``), with its signature: what the loop's
    scorer and ``simpe score --glossary`` count with. ``max_k``, ``scope``: ``metrics.r_max_k``, ``metrics.scope``."""
    from simpe import __version__

    counter = TermCounter(TermMatcher(glossary.pairs(), glossary.source_lang, glossary.target_lang), max_k)
    counter.signature = term_signature(glossary.path.name, read_bytes(glossary.path, "glossary"), len(glossary),
                                       source_lang=glossary.source_lang, target_lang=glossary.target_lang, scope=scope,
                                       version=__version__)
    return counter


def term_corpus(counter: TermCounter, sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str],
                post_edits: Sequence[str] | None = None, pipeline: Any = None, content: Any = None) -> list[TermSegment]:
    """The term figures of a whole stream of detokenised texts, in stream order (``counter`` advances).

    Args:
        pipeline: the R metrics' target pipeline (``simpe.metrics.text.TextPipeline``, truecaser included); default:
            the matcher's Moses tokeniser (the same term figures: the target side ignores case).
        content: the R metrics' ``ContentWords``; given, the ``nonterm:`` R values are counted on its types.
    """
    if not len(sources) == len(hypotheses) == len(references) or (post_edits is not None and len(post_edits) != len(sources)):
        raise DataError(f"{len(sources)} sources, {len(hypotheses)} hypotheses, {len(references)} references"
                        + ("" if post_edits is None else f", {len(post_edits)} post-edits") + ": give as many of each")
    tokens = (pipeline or counter.matcher.target_pipeline).tokens
    out = []
    for i, (source, hypothesis, reference) in enumerate(zip(sources, hypotheses, references)):
        hyp, ref = tokens(hypothesis), tokens(reference)
        post_edit = None if post_edits is None else tokens(post_edits[i])
        types = {} if content is None else {"hyp_types": content(hyp), "ref_types": content(ref)}
        out.append(counter.add(counter.matcher.source_tokens(source), hyp, ref, post_edit, **types))
    return out


def term_signature(glossary_name: str, glossary_bytes: bytes, entries: int, *, source_lang: str, target_lang: str,
                   scope: str, version: str) -> str:
    """The term metrics' settings in sacreBLEU's manner, e.g.
    ``gl:glossary.tsv.1a2b3c4d|n:467|src:exact|tgt:insensitive|tok:moses.en-de|unit:term-per-segment|scope:stream|version:0.2.0``.

    Two term figures are comparable only when their signatures agree (the version aside).
    """
    digest = hashlib.sha256(glossary_bytes).hexdigest()[:8]
    return "|".join([f"gl:{glossary_name}.{digest}", f"n:{entries}", f"src:{SOURCE_CASE}", f"tgt:{TARGET_CASE}",
                     f"tok:moses.{source_lang}-{target_lang}", "unit:term-per-segment", f"scope:{scope}",
                     f"version:{version}"])
