"""Sentence-level similarity of hypotheses for MBR utilities and ranking qualities.

``chrf`` (sacrebleu chrF, char order 6, beta 2), ``chrf++`` (word order 2), ``sbleu``
(sacrebleu sentence BLEU with effective order, exp smoothing) and ``comet`` (a COMET
regression model). chrF and BLEU are scaled to [0, 1]; COMET scores are the model's own
(roughly [0, 1] for wmt22-comet-da, unbounded z-scores for wmt20-comet-da).

Everything is computed once per distinct sentence and reused for every pair: the chrF and
BLEU n-gram statistics of each sentence (through sacrebleu's own extraction and scoring
functions, so the numbers equal ``sentence_chrf`` / ``BLEU(effective_order=True).sentence_score``;
the tests check it), and for COMET the sentence embeddings (COMET's encode-once API:
``model.encoder.prepare_sample``, ``model.get_sentence_embedding``, ``model.estimate``, as
its own ``comet-mbr`` does). COMET is imported lazily, only when a COMET model is given.

This module does not decode; mbr.py and ranking.py use it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from simpe.errors import ConfigError

UTILITIES = ("chrf", "chrf++", "sbleu", "comet")


class Utility:
    """u(hypothesis, reference[, source]); ``matrix`` scores every (hypothesis, reference) pair."""

    name = ""

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        """(len(hypotheses), len(references)) float64 array of u(hypothesis_i, reference_j)."""
        raise NotImplementedError

    def scores(self, hypotheses: Sequence[str], reference: str, source: str | None = None) -> list[float]:
        """u(hypothesis_i, reference) for each hypothesis."""
        return self.matrix(hypotheses, [reference], source)[:, 0].tolist()


class ChrfUtility(Utility):
    """chrF (``word_order=0``) or chrF++ (``word_order=2``) / 100, n-grams extracted once per sentence."""

    def __init__(self, word_order: int = 0) -> None:
        from sacrebleu.metrics import CHRF

        self.name = "chrf++" if word_order else "chrf"
        self.metric = CHRF(word_order=word_order)
        self._cache: dict[str, list[Counter]] = {}

    def _ngrams(self, text: str) -> list[Counter]:
        found = self._cache.get(text)
        if found is None:
            pre = self.metric._preprocess_segment(text)
            found = self.metric._extract_reference_info([pre])["ref_ngrams"][0]
            self._cache[text] = found
        return found

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        out = np.zeros((len(hypotheses), len(references)))  # (hyps, refs)
        ref_ngrams = [self._ngrams(r) for r in references]
        match = self.metric._get_match_statistics
        for i, hyp in enumerate(hypotheses):
            hyp_ngrams = self._ngrams(hyp)
            for j, ref in enumerate(ref_ngrams):
                stats: list[int] = []
                for h, r in zip(hyp_ngrams, ref):
                    stats.extend(match(h, r))
                out[i, j] = self.metric._compute_f_score(stats) / 100.0
        return out


class SentenceBleuUtility(Utility):
    """sacrebleu sentence BLEU (effective order, exp smoothing, 13a) / 100, n-grams extracted once per sentence."""

    name = "sbleu"

    def __init__(self) -> None:
        from sacrebleu.metrics import BLEU

        self.metric = BLEU(effective_order=True)
        self._cache: dict[str, tuple[Counter, int]] = {}

    def _ngrams(self, text: str) -> tuple[Counter, int]:
        found = self._cache.get(text)
        if found is None:
            from sacrebleu.metrics.helpers import extract_all_word_ngrams

            found = extract_all_word_ngrams(self.metric._preprocess_segment(text), 1, self.metric.max_ngram_order)
            self._cache[text] = found
        return found

    def matrix(self, hypotheses: Sequence[str], references: Sequence[str], source: str | None = None) -> np.ndarray:
        order = self.metric.max_ngram_order
        out = np.zeros((len(hypotheses), len(references)))  # (hyps, refs)
        refs = [self._ngrams(r) for r in references]
        for i, hyp in enumerate(hypotheses):
            hyp_ngrams, hyp_len = self._ngrams(hyp)
            totals = [0] * order
            for ngram, count in hyp_ngrams.items():
                totals[len(ngram) - 1] += count
            for j, (ref_ngrams, ref_len) in enumerate(refs):
                correct = [0] * order
                for ngram, count in hyp_ngrams.items():
                    if ngram in ref_ngrams:
                        correct[len(ngram) - 1] += min(count, ref_ngrams[ngram])
                stats = [hyp_len, ref_len] + correct + totals
                out[i, j] = self.metric._compute_score_from_stats(stats).score / 100.0
        return out


def comet_model_of(comet: Any) -> Any:
    """The COMET regression model inside ``comet``: a loaded model, an object with ``.model``
    (``simpe.metrics.comet.CometScorer``), or a hub id / folder / checkpoint path (loaded here)."""
    if comet is None:
        raise ConfigError("utility/quality 'comet' needs a COMET model (e.g. --comet-model Unbabel/wmt22-comet-da "
                          "or a local folder); the others need none: chrf, chrf++, sbleu")
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

    name = "comet"

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
    """A utility by name: chrf, chrf++, sbleu or comet (which needs ``comet``, see ``comet_model_of``)."""
    if name == "chrf":
        return ChrfUtility(0)
    if name == "chrf++":
        return ChrfUtility(2)
    if name == "sbleu":
        return SentenceBleuUtility()
    if name == "comet":
        return CometUtility(comet)
    raise ConfigError(f"unknown utility {name!r}; known: {', '.join(UTILITIES)}")
