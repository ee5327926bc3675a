"""The metric contract and the ``METRICS`` registry, in the manner of sacreBLEU's ``Metric``.

A ``Metric`` is defined by its per-segment sufficient statistics: ``segment_stats`` computes
them for one (hypothesis, reference) pair, in the layout ``stat_names`` declares (what
``segments.jsonl`` logs), and ``score_from_stats`` turns the sum over any set of segments
into the score. A corpus figure, a cumulative curve and a bootstrap resample are all that
one function on summed statistics, so they cannot disagree. ``sentence_score`` is the score
of one segment's statistics; ``utility`` maps it to a higher-is-better value in [0, 1] (for
MBR and the ranking quality Q); ``signature`` says which settings produced it.

For the pairwise matrices of MBR and ranking, a metric splits ``segment_stats`` into
``prepare_hypothesis`` / ``prepare_reference`` (the per-sentence part, cached by
``simpe.metrics.utility``) and ``pair_stats`` (the per-pair part).

Stream-dependent metrics (R0/R1, whose classes depend on earlier references) have no
``segment_stats`` of their own (``simpe.metrics.recall.RecallCounter`` computes them), but
share ``score_from_stats``. Build one by name: ``METRICS.build("chrf")``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from simpe.registry import Registry


class Metric(ABC):
    """Per-segment sufficient statistics and the score of their sum.

    name: the one name (YAML, records, tables). label: how tables and plots show it.
    higher_is_better: False for TER. percent: logged as a fraction, shown in percent (R).
    stat_names: the layout of one segment's statistics.
    """

    name: str = ""
    label: str = ""
    higher_is_better: bool = True
    percent: bool = False
    stat_names: tuple[str, ...] = ()

    # ---------------------------------------------------------------- statistics
    def prepare_hypothesis(self, text: str) -> Any:
        """The per-sentence part of the statistics of ``text`` as a hypothesis (default: the text)."""
        return text

    def prepare_reference(self, text: str) -> Any:
        """The per-sentence part of the statistics of ``text`` as a reference (default: as a hypothesis)."""
        return self.prepare_hypothesis(text)

    def pair_stats(self, hypothesis: Any, reference: Any) -> list[float]:
        """Statistics of one pair from its prepared sides."""
        raise NotImplementedError(f"metric {self.name!r} has no per-segment statistics of its own")

    def segment_stats(self, hypothesis: str, reference: str) -> list[float]:
        """Sufficient statistics of one detokenised segment, laid out as ``stat_names``."""
        return self.pair_stats(self.prepare_hypothesis(hypothesis), self.prepare_reference(reference))

    # ---------------------------------------------------------------- scores
    @abstractmethod
    def score_from_stats(self, stats: Sequence[float]) -> float | None:
        """The score of (summed) statistics; None where undefined (an R value with no reference types)."""

    def scores_from_stats(self, stats: np.ndarray) -> np.ndarray:
        """(rows,) scores of a (rows, len(stat_names)) array of summed statistics; NaN where undefined."""
        rows = np.atleast_2d(stats)  # (rows, stats)
        values = [self.score_from_stats(row.tolist()) for row in rows]
        return np.array([np.nan if v is None else v for v in values], dtype=float)  # (rows,)

    def sentence_score(self, hypothesis: str, reference: str) -> float | None:
        """The metric of one detokenised hypothesis against one reference, on its usual scale."""
        return self.score_from_stats(self.segment_stats(hypothesis, reference))

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[str]) -> float | None:
        """The score of a whole corpus: ``score_from_stats`` of the summed segment statistics
        (what sacreBLEU's ``corpus_score`` computes, for its metrics bit for bit)."""
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
        totals: list[float] = [0] * len(self.stat_names)
        for hypothesis, reference in zip(hypotheses, references):
            for j, value in enumerate(self.segment_stats(hypothesis, reference)):
                totals[j] += value
        return self.score_from_stats(totals)

    def utility_of_score(self, score: float) -> float:
        """A higher-is-better value in [0, 1]: score / 100, or for lower-is-better 1 - min(score, 100) / 100."""
        if self.higher_is_better:
            return min(max(score / 100.0, 0.0), 1.0)
        return 1.0 - min(max(score, 0.0), 100.0) / 100.0

    def utility(self, hypothesis: str, reference: str) -> float:
        """``utility_of_score`` of the sentence score."""
        score = self.sentence_score(hypothesis, reference)
        return 0.0 if score is None else self.utility_of_score(score)

    def signature(self) -> str:
        """The settings that produced the score (sacreBLEU's signature where it has one)."""
        return ""


class MeanMetric(Metric):
    """A metric reported as the mean of per-segment values (SBLEU, COMET): statistics [value, 1]."""

    stat_names = ("value", "count")

    def score_from_stats(self, stats: Sequence[float]) -> float | None:
        return stats[0] / stats[1] if stats[1] else None


METRICS: Registry[Metric] = Registry("metric")
