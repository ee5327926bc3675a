"""The term metrics' names and their ``Metric``: term accuracy, T0, T1 and the repeated term error.

Every term value is a ratio of summed ``[numerator, denominator]`` statistics, like the R values: a corpus figure, a
cumulative curve and a paired bootstrap resample are ``score_from_stats`` of summed counts. ``simpe.terms.score``
counts them per segment (it finds terms with a glossary, which this layer never reads); here are only the names and
how summed counts score, so that ``metric_for`` finds them for every reader of the logs (compare, plots) as it finds
the effort metrics. The R values outside the glossary (``nonterm:r0`` ...) are ``RecallMetric``s.

They are not registered in ``METRICS``: they score no (hypothesis, reference) pair alone, only a stream with a glossary.
"""
from __future__ import annotations

from collections.abc import Sequence

from simpe.metrics.base import Metric
from simpe.metrics.recall import ratio

TERM, T0, T1, REPEAT = "term", "t0", "t1", "term-repeat"
NONTERM = "nonterm:"  # the prefix of the R values outside the glossary's target words
TERM_SIGNATURE = "term"  # the key of the term metrics' signature in a summary's ``signatures``


class TermMetric(Metric):
    """A term value of summed ``[numerator, denominator]`` statistics: their ratio (a fraction, shown in percent)."""

    percent = True

    def __init__(self, name: str, label: str, stat_names: tuple[str, str], higher_is_better: bool = True) -> None:
        self.name, self.label, self.stat_names, self.higher_is_better = name, label, stat_names, higher_is_better

    def score_from_stats(self, stats: Sequence[float]) -> float | None:
        return ratio(stats[0], stats[1])


TERM_METRICS: dict[str, TermMetric] = {metric.name: metric for metric in (
    TermMetric(TERM, "Term acc.", ("hits", "terms")),
    TermMetric(T0, "T0", ("hits", "terms")),
    TermMetric(T1, "T1", ("hits", "terms")),
    TermMetric(REPEAT, "Term rep.", ("missed_again", "fixed_before"), higher_is_better=False),
)}
