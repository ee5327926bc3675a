"""BLEU, chrF, TER and sentence BLEU through sacreBLEU, from per-segment sufficient statistics.

Every number comes from sacreBLEU's own code: per segment, the metric's
``_preprocess_segment`` / ``_extract_reference_info`` / ``_compute_segment_statistics``
(exactly what ``corpus_score`` runs per line), and for any set of segments
``_compute_score_from_stats`` on the summed statistics (what ``corpus_score`` runs on
the whole corpus). So a corpus or a cumulative score from summed statistics equals
sacreBLEU's ``corpus_score`` on the same lines, bit for bit (same sums in the same order).

Settings: sacreBLEU's defaults, the same as its command line: BLEU ``tok:13a``,
``smooth:exp``, mixed case; chrF2 (char order 6, word order 0, beta 2); TER
case-insensitive, no normalisation. The signature of each is reported with it.

Sentence BLEU (SBLEU, seed 002 Table 1 cites Nakov et al. 2012): sacreBLEU's
``sentence_bleu`` settings, i.e. BLEU with ``smooth_method='exp'`` (NIST/mteval
geometric smoothing, Chen & Cherry's method 3) and ``effective_order=True``, computed
from the segment's own BLEU statistics. This is the standard modern choice; it is not
the exact BLEU+1 variant of Nakov et al. (add-one on n>1 counts plus a smoothed brevity
penalty), which sacreBLEU does not implement; the signature (``eff:yes|smooth:exp``) says
what was used. SBLEU over many segments is the mean of the sentence scores.

Layout of the BLEU statistics in simpe records (docs/run-format.md):
``[m1, m2, m3, m4, t1, t2, t3, t4, hyp_len, ref_len]`` (matches, totals, lengths);
sacreBLEU keeps ``[hyp_len, ref_len, m1..m4, t1..t4]`` internally, converted here.
chrF statistics are sacreBLEU's (hyp, ref, match counts per order: 18 numbers), TER's
are ``[edits, ref_words]``.

This module does not tokenise for the R metrics (``simpe.text``) and does no COMET.
"""
from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF, TER

from simpe.errors import ConfigError, DataError
from simpe.metrics.base import METRICS, SentenceMetric

SBLEU_SMOOTH = "exp"
CORPUS_METRICS = ("bleu", "chrf", "ter")


def _bleu_to_simpe(stats: Sequence[int]) -> list[int]:
    """sacreBLEU's ``[hyp_len, ref_len, m1..m4, t1..t4]`` -> simpe's ``[m1..m4, t1..t4, hyp_len, ref_len]``."""
    return list(stats[2:]) + [stats[0], stats[1]]


def _bleu_to_sacre(stats: Sequence[float]) -> list[int]:
    return [int(stats[-2]), int(stats[-1])] + [int(v) for v in stats[:-2]]


class SacreStats:
    """Per-segment sufficient statistics and scores-from-statistics for BLEU, chrF, TER and SBLEU."""

    def __init__(self, sbleu_smooth: str = SBLEU_SMOOTH) -> None:
        """
        Args:
            sbleu_smooth: sacreBLEU smoothing for sentence BLEU ('exp', 'floor', 'add-k', 'none').
        """
        if sbleu_smooth not in BLEU.SMOOTH_DEFAULTS:
            raise ConfigError(f"unknown sentence-BLEU smoothing {sbleu_smooth!r}; known: {', '.join(BLEU.SMOOTH_DEFAULTS)}")
        self.bleu = BLEU()
        self.sbleu = BLEU(smooth_method=sbleu_smooth, effective_order=True)
        self.chrf = CHRF()
        self.ter = TER()
        for metric in (self.bleu, self.sbleu, self.chrf, self.ter):
            metric.num_refs = 1  # signatures need it; simpe always scores against one reference
        self.bleu_width = 2 + 2 * self.bleu.max_ngram_order
        self.chrf_width = 3 * self.chrf.order

    # ------------------------------------------------------------ per segment
    def _segment(self, metric, hypothesis: str, reference: str) -> list:
        ref_info = metric._extract_reference_info([metric._preprocess_segment(reference)])
        return metric._compute_segment_statistics(metric._preprocess_segment(hypothesis), ref_info)

    def segment_stats(self, hypothesis: str, reference: str) -> dict[str, list]:
        """``{"bleu": [...10], "chrf": [...18], "ter": [edits, ref_words]}`` for one detokenised segment."""
        return {
            "bleu": _bleu_to_simpe(self._segment(self.bleu, hypothesis, reference)),
            "chrf": self._segment(self.chrf, hypothesis, reference),
            "ter": self._segment(self.ter, hypothesis, reference),
        }

    # ------------------------------------------------------------ from (summed) statistics
    def bleu_score(self, stats: Sequence[float]) -> float:
        """Corpus BLEU (0-100) from summed BLEU statistics in simpe's layout."""
        return self.bleu._compute_score_from_stats(_bleu_to_sacre(stats)).score

    def sbleu_score(self, stats: Sequence[float]) -> float:
        """Sentence BLEU (0-100) of one segment from its BLEU statistics in simpe's layout."""
        return self.sbleu._compute_score_from_stats(_bleu_to_sacre(stats)).score

    def chrf_score(self, stats: Sequence[float]) -> float:
        """chrF (0-100) from summed chrF statistics."""
        return self.chrf._compute_score_from_stats(stats).score

    def ter_score(self, stats: Sequence[float]) -> float:
        """TER (0-100+, lower is better) from summed ``[edits, ref_words]``."""
        return self.ter._compute_score_from_stats(stats).score

    def score(self, name: str, stats: Sequence[float]) -> float:
        """``bleu``/``chrf``/``ter`` from summed statistics."""
        if name == "bleu":
            return self.bleu_score(stats)
        if name == "chrf":
            return self.chrf_score(stats)
        if name == "ter":
            return self.ter_score(stats)
        raise ConfigError(f"unknown corpus metric {name!r}; known: {', '.join(CORPUS_METRICS)}")

    def check_stats(self, stats: dict) -> None:
        """Raise DataError when logged statistics do not have the expected shape (resuming a run)."""
        widths = {"bleu": self.bleu_width, "chrf": self.chrf_width, "ter": 2}
        for name, width in widths.items():
            value = stats.get(name)
            if not isinstance(value, list) or len(value) != width:
                raise DataError(f"logged stats[{name!r}] should be a list of {width} numbers, got {value!r}")

    def signatures(self) -> dict[str, str]:
        """sacreBLEU signatures of ``bleu``, ``chrf``, ``ter`` and ``sbleu``."""
        return {
            "bleu": self.bleu.get_signature().format(),
            "chrf": self.chrf.get_signature().format(),
            "ter": self.ter.get_signature().format(),
            "sbleu": self.sbleu.get_signature().format(),
        }


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """BLEU, chrF, TER and SBLEU of a whole corpus (detokenised lines), through summed statistics."""
    if len(hypotheses) != len(references):
        raise DataError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    sacre = SacreStats()
    totals = {"bleu": [0] * sacre.bleu_width, "chrf": [0] * sacre.chrf_width, "ter": [0, 0]}
    sbleu_sum = 0.0
    for hyp, ref in zip(hypotheses, references):
        stats = sacre.segment_stats(hyp, ref)
        for name, values in stats.items():
            total = totals[name]
            for j, v in enumerate(values):
                total[j] += v
        sbleu_sum += sacre.sbleu_score(stats["bleu"])
    scores = {name: sacre.score(name, totals[name]) for name in CORPUS_METRICS}
    scores["sbleu"] = sbleu_sum / len(hypotheses) if hypotheses else 0.0
    return scores


# ---------------------------------------------------------------- sentence metrics (MBR / kQRG utilities)
class _SacreSentenceMetric(SentenceMetric):
    def __init__(self) -> None:
        self._stats = SacreStats()


@METRICS.add("bleu")
class BleuMetric(_SacreSentenceMetric):
    """BLEU of one segment with the corpus settings (exp smoothing, no effective order)."""

    name = "bleu"

    def sentence_score(self, hypothesis: str, reference: str) -> float:
        s = self._stats
        return s.bleu_score(_bleu_to_simpe(s._segment(s.bleu, hypothesis, reference)))

    def signature(self) -> str:
        return self._stats.signatures()["bleu"]


@METRICS.add("sbleu")
class SbleuMetric(_SacreSentenceMetric):
    """Sentence BLEU (exp smoothing, effective order), as sacrebleu.sentence_bleu."""

    name = "sbleu"

    def sentence_score(self, hypothesis: str, reference: str) -> float:
        s = self._stats
        return s.sbleu_score(_bleu_to_simpe(s._segment(s.bleu, hypothesis, reference)))

    def signature(self) -> str:
        return self._stats.signatures()["sbleu"]


@METRICS.add("chrf")
class ChrfMetric(_SacreSentenceMetric):
    """Sentence chrF2, as sacrebleu.sentence_chrf."""

    name = "chrf"

    def sentence_score(self, hypothesis: str, reference: str) -> float:
        s = self._stats
        return s.chrf_score(s._segment(s.chrf, hypothesis, reference))

    def signature(self) -> str:
        return self._stats.signatures()["chrf"]


@METRICS.add("ter")
class TerMetric(_SacreSentenceMetric):
    """Sentence TER (lower is better; may exceed 100), as sacrebleu.sentence_ter."""

    name = "ter"
    higher_is_better = False

    def sentence_score(self, hypothesis: str, reference: str) -> float:
        s = self._stats
        return s.ter_score(s._segment(s.ter, hypothesis, reference))

    def signature(self) -> str:
        return self._stats.signatures()["ter"]
