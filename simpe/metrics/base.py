"""The sentence-level metric contract and the ``METRICS`` registry (utilities for MBR and kQRG).

A ``SentenceMetric`` scores one hypothesis against one reference: ``sentence_score``
returns the metric on its usual scale (BLEU/chrF in [0, 100], TER >= 0, lower is
better) and ``utility`` returns a higher-is-better value in [0, 1] (for TER:
``1 - min(TER, 100) / 100``), which is what ranking metrics (kQRG) and MBR need.

Build one by name: ``METRICS.build("chrf")``. The corpus-level, streaming scorer that the
online loop uses is ``simpe.metrics.online.OnlineScorer``; COMET, which needs sources and
batches, is ``simpe.metrics.comet.CometScorer``. Neither is in this registry.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from simpe.registry import Registry


class SentenceMetric(ABC):
    """One hypothesis against one reference."""

    name: str = ""
    higher_is_better: bool = True

    @abstractmethod
    def sentence_score(self, hypothesis: str, reference: str) -> float:
        """The metric of one detokenised hypothesis against one detokenised reference, on its usual scale."""

    def utility(self, hypothesis: str, reference: str) -> float:
        """A higher-is-better value in [0, 1] (the score divided by 100, for TER 1 - min(TER, 100)/100)."""
        score = self.sentence_score(hypothesis, reference)
        if self.higher_is_better:
            return min(max(score / 100.0, 0.0), 1.0)
        return 1.0 - min(max(score, 0.0), 100.0) / 100.0

    def signature(self) -> str:
        """The sacreBLEU-style signature of the settings (empty when not applicable)."""
        return ""


METRICS: Registry[SentenceMetric] = Registry("metric")
