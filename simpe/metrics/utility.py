"""Utilities: u(hypothesis, reference[, source]) in [0, 1], for MBR and the ranking quality Q.

Every sentence metric of the stack (``METRICS``: bleu, sbleu, chrf, chrf++, ter) is a
utility through its ``Metric.utility_of_score`` (score / 100; TER: 1 - min(TER, 100) / 100),
and ``comet`` is one through a COMET regression model (its own scale: roughly [0, 1] for
wmt22-comet-da). ``matrix`` scores every (hypothesis, reference) pair, preparing each
distinct sentence once: the metric's n-gram extraction (``prepare_hypothesis`` /
``prepare_reference``), or for COMET the sentence embedding (COMET's encode-once API:
``model.encoder.prepare_sample``, ``model.get_sentence_embedding``, ``model.estimate``, as
its own ``comet-mbr`` does; the COMET worker, in COMET's own environment, keeps the embeddings).
So ``matrix(h, [r])`` equals ``metric.utility(h, r)``. The COMET worker starts only when a COMET
model is given.

This module does not decode; decoders/mbr.py and ranking/evaluate.py use it.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simpe.errors import ConfigError
from simpe.metrics.base import METRICS, Metric

COMET = "comet"


def utility_names() -> list[str]:
    """Every name ``build_utility`` accepts."""
    return [*(name for name in METRICS.names() if name != COMET), COMET]


class Utility:
    """u(hypothesis, reference[, source]); ``matrix`` scores every (hypothesis, reference) pair."""

    name = ""

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        """(len(hypotheses), len(references)) float64 array of u(hypothesis_i, reference_j)."""
        raise NotImplementedError

    def scores(self, hypotheses: Sequence[str], reference: str, source: str | None = None) -> list[float]:
        """u(hypothesis_i, reference) for each hypothesis."""
        return self.matrix(hypotheses, [reference], source)[:, 0].tolist()

    def signature(self) -> str:
        """The settings of the underlying metric."""
        return ""


class MetricUtility(Utility):
    """A sentence metric of the stack as a utility; each distinct sentence is prepared once per side."""

    def __init__(self, metric: Metric) -> None:
        self.metric = metric
        self.name = metric.name
        self._hyp: dict[str, Any] = {}
        self._ref: dict[str, Any] = {}

    def _prepared(self, cache: dict[str, Any], prepare: Any, text: str) -> Any:
        found = cache.get(text)
        if found is None:
            found = cache[text] = prepare(text)
        return found

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        metric = self.metric
        refs = [self._prepared(self._ref, metric.prepare_reference, r) for r in references]
        out = np.zeros((len(hypotheses), len(references)))  # (hyps, refs)
        for i, hyp in enumerate(hypotheses):
            prepared = self._prepared(self._hyp, metric.prepare_hypothesis, hyp)
            for j, ref in enumerate(refs):
                score = metric.score_from_stats(metric.pair_stats(prepared, ref))
                out[i, j] = 0.0 if score is None else metric.utility_of_score(score)
        return out

    def signature(self) -> str:
        return self.metric.signature()


def comet_scorer_of(comet: Any) -> Any:
    """The ``simpe.metrics.comet.CometScorer`` of ``comet``: one already made, or a hub id / folder / checkpoint path
    (a scorer made here; its worker is the one every scorer of that model shares)."""
    if comet is None:
        check_utility(COMET, comet)
    if isinstance(comet, (str, Path)):
        from simpe.metrics.comet import CometScorer

        comet = CometScorer(str(comet))
    if not callable(getattr(comet, "matrix", None)):
        raise ConfigError(f"{type(comet).__name__} is not a COMET scorer (give a COMET model: a hub id, a model folder "
                          "or a model.ckpt, e.g. Unbabel/wmt22-comet-da)")
    return comet


class CometUtility(Utility):
    """COMET(source, hypothesis, reference), each distinct sentence embedded once (by the COMET worker)."""

    name = COMET

    def __init__(self, comet: Any, batch_size: int = 64) -> None:
        self.scorer = comet_scorer_of(comet)
        self.batch_size = batch_size

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        if source is None:
            raise ConfigError("the COMET utility needs the source sentence")
        if not len(hypotheses) or not len(references):
            return np.zeros((len(hypotheses), len(references)))  # (hyps, refs)
        return np.asarray(self.scorer.matrix(source, hypotheses, references, self.batch_size), dtype=np.float64)  # (hyps, refs)


def build_utility(name: str, comet: Any = None) -> Utility:
    """A utility by name: a sentence metric of ``METRICS`` or ``comet`` (which needs ``comet``, see ``comet_scorer_of``)."""
    if name == COMET:
        return CometUtility(comet)
    if name not in METRICS:
        raise ConfigError(f"unknown utility {name!r}; known: {', '.join(utility_names())}")
    return MetricUtility(METRICS.build(name))


def check_utility(name: str, comet: Any = None) -> None:
    """Refuse an unknown utility name, or ``comet`` without a COMET model, before anything loads."""
    if name not in utility_names():
        raise ConfigError(f"unknown utility {name!r}; known: {', '.join(utility_names())}")
    if name == COMET and comet is None:
        raise ConfigError("utility/quality 'comet' needs a COMET model (e.g. --comet Unbabel/wmt22-comet-da "
                          "or a local folder); the others need none: " + ", ".join(utility_names()[:-1]))
