"""Utilities: u(hypothesis, reference[, source]) in [0, 1], for MBR and the ranking quality Q.

Every sentence metric of the stack (``METRICS``: bleu, sbleu, chrf, chrf++, ter) is a
utility through its ``Metric.utility_of_score`` (score / 100; TER: 1 - min(TER, 100) / 100),
and ``comet`` is one through a COMET regression model (its own scale: roughly [0, 1] for
wmt22-comet-da). ``matrix`` scores every (hypothesis, reference) pair, preparing each
distinct sentence once: the metric's n-gram extraction (``prepare_hypothesis`` /
``prepare_reference``), or for COMET the sentence embedding (COMET's encode-once API:
``model.encoder.prepare_sample``, ``model.get_sentence_embedding``, ``model.estimate``, as
its own ``comet-mbr`` does). So ``matrix(h, [r])`` equals ``metric.utility(h, r)``. COMET is
imported lazily, only when a COMET model is given.

This module does not decode; decoders/mbr.py and ranking/evaluate.py use it.
"""
from __future__ import annotations

from collections.abc import Sequence
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


def comet_model_of(comet: Any) -> Any:
    """The COMET regression model inside ``comet``: a loaded model, an object with ``.model``
    (``simpe.metrics.comet.CometScorer``), or a hub id / folder / checkpoint path (loaded here)."""
    if comet is None:
        check_utility(COMET, comet)
    if isinstance(comet, str):
        from simpe.metrics.comet import CometScorer

        comet = CometScorer(comet)
    model = getattr(comet, "model", comet) if not hasattr(comet, "get_sentence_embedding") else comet
    if not (hasattr(model, "get_sentence_embedding") and hasattr(model, "estimate") and hasattr(model, "encoder")):
        raise ConfigError(f"{type(comet).__name__} is not a COMET regression model (needs encoder.prepare_sample, "
                          "get_sentence_embedding and estimate, e.g. wmt22-comet-da)")
    return model


class CometUtility(Utility):
    """COMET(source, hypothesis, reference), each distinct sentence embedded once."""

    name = COMET

    def __init__(self, comet: Any, batch_size: int = 64) -> None:
        self.model = comet_model_of(comet)
        self.model.eval()  # no dropout: embeddings must not depend on (or draw from) the RNG
        self.batch_size = batch_size
        self._cache: dict[str, Any] = {}  # text -> (hidden,) embedding tensor

    def embed(self, texts: Sequence[str]) -> Any:
        """(len(texts), hidden) embeddings; new texts are encoded in batches, known ones reused."""
        import torch

        from simpe.metrics.comet import quiet_comet

        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        device = next(self.model.parameters()).device
        with quiet_comet(), torch.inference_mode():
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                inputs = self.model.encoder.prepare_sample(chunk)
                emb = self.model.get_sentence_embedding(inputs["input_ids"].to(device),
                                                        inputs["attention_mask"].to(device))  # (chunk, hidden)
                for text, row in zip(chunk, emb):
                    self._cache[text] = row
        return torch.stack([self._cache[t] for t in texts])  # (texts, hidden)

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        import torch

        if source is None:
            raise ConfigError("the COMET utility needs the source sentence")
        src = self.embed([source])  # (1, hidden)
        hyp = self.embed(hypotheses)  # (hyps, hidden)
        ref = self.embed(references)  # (refs, hidden)
        n_hyp, n_ref = hyp.shape[0], ref.shape[0]
        out = np.zeros((n_hyp, n_ref))  # (hyps, refs)
        pairs = [(i, j) for i in range(n_hyp) for j in range(n_ref)]
        rows = max(1, 1024)
        with torch.inference_mode():
            for start in range(0, len(pairs), rows):
                chunk = pairs[start:start + rows]
                hi = torch.tensor([i for i, _ in chunk], device=hyp.device)  # (chunk,)
                rj = torch.tensor([j for _, j in chunk], device=ref.device)  # (chunk,)
                scores = self.model.estimate(src.expand(len(chunk), -1), hyp[hi], ref[rj])["score"]  # (chunk,)
                for (i, j), value in zip(chunk, scores.view(-1).tolist()):
                    out[i, j] = value
        return out


def build_utility(name: str, comet: Any = None) -> Utility:
    """A utility by name: a sentence metric of ``METRICS`` or ``comet`` (which needs ``comet``, see ``comet_model_of``)."""
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
