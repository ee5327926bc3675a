"""BLEU/chrF/TER/SBLEU from per-segment statistics agree with sacreBLEU's own scoring functions."""
from __future__ import annotations

import math

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from simpe.errors import ConfigError
from simpe.metrics import METRICS
from simpe.metrics.sacre import SacreStats, corpus_scores

PAIRS = [
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("Wählen Sie Format - Zellen.", "Wählen Sie Format - Zellen."),
    ("Klicken Sie auf OK", "Klicken Sie auf die Schaltfläche OK."),
    ("", "Ein Verweis."),
    ("Nur Hypothese", ""),
    ("Das ist, 3,5 % der Summe (SUMME).", "Dies sind 3,5 % der Summe."),
]


def test_hand_worked_bleu_statistics_and_ter():
    # hyp "the cat sat on the mat" vs ref "the cat sat on a mat" (13a tokens = words):
    # 1-grams: the x2 (ref has 1) -> 1, cat, sat, on, mat -> 5 of 6
    # 2-grams: the cat, cat sat, sat on match; on the, the mat do not -> 3 of 5
    # 3-grams: the cat sat, cat sat on -> 2 of 4;  4-grams: the cat sat on -> 1 of 3
    # lengths 6 and 6 (no brevity penalty). BLEU = 100 * (5/6 * 3/5 * 2/4 * 1/3) ** (1/4).
    # TER: one substitution (the -> a) over 6 reference words.
    sacre = SacreStats()
    stats = sacre.segment_stats(*PAIRS[0])
    assert stats["bleu"] == [5, 3, 2, 1, 6, 5, 4, 3, 6, 6]
    assert stats["ter"] == [1, 6.0]
    assert len(stats["chrf"]) == 18
    assert sacre.bleu_score(stats["bleu"]) == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25, abs=1e-9)
    assert sacre.ter_score(stats["ter"]) == pytest.approx(100 / 6, abs=1e-9)


@pytest.mark.parametrize("hyp, ref", PAIRS)
def test_sentence_scores_equal_sacrebleu_sentence_functions(hyp, ref):
    sacre = SacreStats()
    stats = sacre.segment_stats(hyp, ref)
    assert sacre.sbleu_score(stats["bleu"]) == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref]).score, abs=1e-9)
    assert sacre.chrf_score(stats["chrf"]) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score, abs=1e-9)
    assert sacre.ter_score(stats["ter"]) == pytest.approx(sacrebleu.sentence_ter(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("sbleu").sentence_score(hyp, ref) == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("chrf").sentence_score(hyp, ref) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("ter").sentence_score(hyp, ref) == pytest.approx(sacrebleu.sentence_ter(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("bleu").sentence_score(hyp, ref) == pytest.approx(BLEU().corpus_score([hyp], [[ref]]).score, abs=1e-9)


def test_corpus_scores_equal_sacrebleu_corpus_score():
    hyps, refs = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    scores = corpus_scores(hyps, refs)
    assert scores["bleu"] == pytest.approx(BLEU().corpus_score(hyps, [refs]).score, abs=1e-9)
    assert scores["chrf"] == pytest.approx(CHRF().corpus_score(hyps, [refs]).score, abs=1e-9)
    assert scores["ter"] == pytest.approx(TER().corpus_score(hyps, [refs]).score, abs=1e-9)
    mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in PAIRS) / len(PAIRS)
    assert scores["sbleu"] == pytest.approx(mean, abs=1e-9)


def test_signatures():
    sig = SacreStats().signatures()
    version = sacrebleu.__version__
    assert sig["bleu"] == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{version}"
    assert sig["sbleu"] == f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{version}"
    assert sig["chrf"] == f"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:{version}"
    assert sig["ter"] == f"nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:{version}"


def test_metric_registry():
    assert {"bleu", "sbleu", "chrf", "ter"} <= set(METRICS.names())
    with pytest.raises(ConfigError, match="known:"):
        METRICS.build("meteor")
    for name in ("bleu", "sbleu", "chrf", "ter"):
        metric = METRICS.build(name)
        assert metric.utility("Klicken Sie auf OK.", "Klicken Sie auf OK.") == 1.0
        u = metric.utility("völlig anders", "Klicken Sie auf OK.")
        assert 0.0 <= u < 1.0 and not math.isnan(u)
    assert METRICS.build("ter").higher_is_better is False
    # TER above 100 (more edits than reference words) is clipped to utility 0
    assert METRICS.build("ter").utility("a b c d e f", "x") == 0.0
    with pytest.raises(ConfigError, match="known:"):
        SacreStats(sbleu_smooth="nakov")
