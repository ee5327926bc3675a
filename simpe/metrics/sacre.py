"""BLEU, sentence BLEU, chrF, chrF++ and TER through sacreBLEU, as ``Metric`` variants.

Every number comes from sacreBLEU's own code: per segment the metric's
``_preprocess_segment`` and n-gram extraction, and per pair exactly the statistics its
``_compute_segment_statistics`` computes against one reference (what ``corpus_score`` does
per line); for any set of segments ``_compute_score_from_stats`` on the summed statistics
(what ``corpus_score`` does on the whole corpus). So a corpus or a cumulative score from
summed statistics equals sacreBLEU's ``corpus_score`` on the same lines, bit for bit, and a
sentence score equals ``sentence_score``.

Settings: sacreBLEU's defaults, the same as its command line: BLEU ``tok:13a``,
``smooth:exp``, mixed case; chrF2 (character order 6, word order 0, beta 2); chrF++ (word
order 2); TER case-insensitive, no normalisation. ``signature()`` gives each one's.

Sentence BLEU (``sbleu``, the SBLEU of Simianer et al. (2019)), from the segment's own 13a BLEU statistics;
over many segments the mean of the sentence scores (statistics [score, 1]). Two smoothings:

- ``nakov`` (default): BLEU+1 of Nakov et al. (2012) as the authors of Simianer et al. (2019) implement it, cdec
  dtrain's ``NakovBleuScorer`` (fix = 1): 0 when the hypothesis or reference is empty or no
  unigram matches; order M = min(4, reference length), weights 1/M; 1 added to matches and
  totals of every order n > 1; brevity penalty 1 when hyp_len > ref_len + 1, else
  exp(1 - (ref_len + 1) / hyp_len). Signature ``smooth:nakov``.
- ``exp``: sacreBLEU's ``sentence_bleu`` (exp smoothing, effective order).

Declared layouts (``stat_names``; what segments.jsonl logs under ``stats``):
BLEU ``[m1..m4, t1..t4, hyp_len, ref_len]`` (matches, totals, lengths; sacreBLEU keeps
``[hyp_len, ref_len, m1..m4, t1..t4]`` internally, converted here); chrF sacreBLEU's
[hyp, ref, match] counts per order (18 numbers for chrF2); TER ``[edits, ref_words]``.

This module does not tokenise for the R metrics (``simpe.metrics.text``) and does no COMET.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.helpers import extract_all_char_ngrams, extract_all_word_ngrams, extract_word_ngrams

from simpe.config.tree import SBLEU_SMOOTHINGS
from simpe.errors import ConfigError
from simpe.metrics.base import METRICS, MeanMetric, Metric


def _one_reference(metric: Any) -> Any:
    metric.num_refs = 1  # signatures need it; simpe always scores against one reference
    return metric


class _Sacre(Metric):
    """A sacreBLEU metric object behind the Metric contract."""

    sacre: Any

    def score_from_stats(self, stats: Sequence[float]) -> float:
        return self.sacre._compute_score_from_stats(list(stats)).score

    def signature(self) -> str:
        return self.sacre.get_signature().format()


@METRICS.add("bleu")
class BleuMetric(_Sacre):
    """Corpus BLEU (13a, exp smoothing, mixed case); a sentence score is BLEU of one segment."""

    label = "BLEU"

    def __init__(self) -> None:
        self.sacre = _one_reference(BLEU())
        self.order = self.sacre.max_ngram_order
        self.stat_names = (*(f"m{n}" for n in range(1, self.order + 1)), *(f"t{n}" for n in range(1, self.order + 1)),
                           "hyp_len", "ref_len")

    def prepare_hypothesis(self, text: str) -> tuple[Any, int]:
        """(n-gram counts of orders 1..4, token count) of the 13a-tokenised text."""
        return extract_all_word_ngrams(self.sacre._preprocess_segment(text), 1, self.order)

    def pair_stats(self, hypothesis: tuple[Any, int], reference: tuple[Any, int]) -> list[float]:
        # sacreBLEU's BLEU._compute_segment_statistics against one reference (closest length = its length)
        hyp_ngrams, hyp_len = hypothesis
        ref_ngrams, ref_len = reference
        correct = [0] * self.order
        total = [0] * self.order
        for ngram, count in hyp_ngrams.items():
            n = len(ngram) - 1
            total[n] += count
            if ngram in ref_ngrams:
                correct[n] += min(count, ref_ngrams[ngram])
        return [*correct, *total, hyp_len, ref_len]

    def to_sacre(self, stats: Sequence[float]) -> list[int]:
        """simpe's layout -> sacreBLEU's ``[hyp_len, ref_len, m1..m4, t1..t4]``."""
        return [int(stats[-2]), int(stats[-1])] + [int(v) for v in stats[:-2]]

    def score_from_stats(self, stats: Sequence[float]) -> float:
        return self.sacre._compute_score_from_stats(self.to_sacre(stats)).score


def nakov_bleu_plus_one(stats: Sequence[float]) -> float:
    """BLEU+1 (0-100) of one segment from its BLEU statistics (``BleuMetric``'s layout), as cdec's NakovBleuScorer."""
    order = (len(stats) - 2) // 2
    matches, totals = stats[:order], stats[order:2 * order]
    hyp_len, ref_len = stats[-2], stats[-1]
    if hyp_len == 0 or ref_len == 0 or totals[0] == 0 or matches[0] == 0:
        return 0.0
    m = int(min(order, ref_len))
    log_precision = sum(math.log((matches[n] + (n > 0)) / (totals[n] + (n > 0))) for n in range(m)) / m
    brevity = 1.0 if hyp_len > ref_len + 1 else math.exp(1.0 - (ref_len + 1) / hyp_len)
    return 100.0 * brevity * math.exp(log_precision)


@METRICS.add("sbleu")
class SbleuMetric(MeanMetric):
    """Sentence BLEU on 13a tokens: Nakov BLEU+1 (``smooth="nakov"``, default) or sacreBLEU's
    ``sentence_bleu`` (``smooth="exp"``); corpus: the mean."""

    label = "SBLEU"

    def __init__(self, smooth: str = "nakov") -> None:
        if smooth not in SBLEU_SMOOTHINGS:
            raise ConfigError(f"unknown sbleu smoothing {smooth!r}; known: {', '.join(SBLEU_SMOOTHINGS)}")
        self.smooth = smooth
        self.bleu = BleuMetric()
        self.sacre = _one_reference(BLEU(smooth_method="exp", effective_order=True))

    def prepare_hypothesis(self, text: str) -> tuple[Any, int]:
        return self.bleu.prepare_hypothesis(text)

    def score_of_bleu_stats(self, bleu_stats: Sequence[float]) -> float:
        """Sentence BLEU of one segment from its BLEU statistics (BleuMetric's layout)."""
        if self.smooth == "nakov":
            return nakov_bleu_plus_one(bleu_stats)
        return self.sacre._compute_score_from_stats(self.bleu.to_sacre(bleu_stats)).score

    def pair_stats(self, hypothesis: tuple[Any, int], reference: tuple[Any, int]) -> list[float]:
        return [self.score_of_bleu_stats(self.bleu.pair_stats(hypothesis, reference)), 1]

    def signature(self) -> str:
        signature = self.sacre.get_signature().format()
        if self.smooth == "nakov":  # sacreBLEU's layout, with the smoothing that was applied
            signature = signature.replace("smooth:exp", "smooth:nakov")
        return signature


class _Chrf(_Sacre):
    word_order = 0

    def __init__(self) -> None:
        self.sacre = _one_reference(CHRF(word_order=self.word_order))
        self.stat_names = tuple(f"{kind}{n}_{side}" for kind, orders in (("c", self.sacre.char_order), ("w", self.word_order))
                                for n in range(1, orders + 1) for side in ("hyp", "ref", "match"))

    def prepare_hypothesis(self, text: str) -> list[Any]:
        """Character (and, for chrF++, word) n-gram counts per order, as sacreBLEU extracts them."""
        text = self.sacre._preprocess_segment(text)
        ngrams = extract_all_char_ngrams(text, self.sacre.char_order, self.sacre.whitespace)
        if self.word_order > 0:
            words = self.sacre._remove_punctuation(text)
            ngrams.extend(extract_word_ngrams(words, n) for n in range(1, self.word_order + 1))
        return ngrams

    def pair_stats(self, hypothesis: list[Any], reference: list[Any]) -> list[float]:
        stats: list[float] = []
        for hyp, ref in zip(hypothesis, reference):
            stats.extend(self.sacre._get_match_statistics(hyp, ref))
        return stats


@METRICS.add("chrf")
class ChrfMetric(_Chrf):
    """chrF2 (character order 6, beta 2), as ``sacrebleu.sentence_chrf`` / ``corpus_chrf``."""

    label = "chrF"


@METRICS.add("chrf++")
class ChrfPlusMetric(_Chrf):
    """chrF++ (chrF2 plus word n-grams up to order 2)."""

    label = "chrF++"
    word_order = 2


@METRICS.add("ter")
class TerMetric(_Sacre):
    """TER (lower is better; may exceed 100), as ``sacrebleu.sentence_ter`` / ``corpus_ter``."""

    label = "TER"
    higher_is_better = False
    stat_names = ("edits", "ref_words")

    def __init__(self) -> None:
        self.sacre = _one_reference(TER())

    def prepare_hypothesis(self, text: str) -> str:
        return self.sacre._preprocess_segment(text)

    def prepare_reference(self, text: str) -> dict[str, Any]:
        # exactly what corpus_score caches per reference line (it preprocesses, then extracts)
        return self.sacre._extract_reference_info([self.sacre._preprocess_segment(text)])

    def pair_stats(self, hypothesis: str, reference: dict[str, Any]) -> list[float]:
        return self.sacre._compute_segment_statistics(hypothesis, reference)
