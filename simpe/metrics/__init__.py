"""Metrics: R0/R1/R0+1 (recall), BLEU/chrF/TER/SBLEU (sacre), COMET (comet), and the online scorer.

Importing the package registers the sentence metrics in ``METRICS`` (bleu, sbleu, chrf,
ter). Only cheap modules are imported here; ``comet`` imports unbabel-comet lazily, inside
``CometScorer``.
"""
from simpe.metrics import comet, recall, sacre  # noqa: F401  (registers the sentence metrics)
from simpe.metrics.base import METRICS, SentenceMetric
from simpe.metrics.online import MetricsConfig, OnlineScorer, cumulative_curves

__all__ = ["METRICS", "SentenceMetric", "MetricsConfig", "OnlineScorer", "cumulative_curves"]
