"""The metric stack's sacreBLEU metrics agree with sacreBLEU's own scoring functions."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu
from messages import raises_naming
from sacrebleu.metrics import BLEU, CHRF, TER

from simpe.errors import ConfigError
from simpe.metrics import METRICS
from simpe.metrics.utility import build_utility

PAIRS = [
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("Wählen Sie Format - Zellen.", "Wählen Sie Format - Zellen."),
    ("Klicken Sie auf OK", "Klicken Sie auf die Schaltfläche OK."),
    ("", "Ein Verweis."),
    ("Nur Hypothese", ""),
    ("Das ist, 3,5 % der Summe (SUMME).", "Dies sind 3,5 % der Summe."),
]


def independent_bleu_plus_one(hyp: str, ref: str) -> float:
    """BLEU+1 written from its definition (cdec dtrain's NakovBleuScorer, fix = 1) on sacreBLEU's 13a tokens,
    sharing no code with simpe's metric: its own n-gram counting and formula."""
    from collections import Counter

    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    h, r = tok(hyp).split(), tok(ref).split()
    if not h or not r:
        return 0.0
    m = min(4, len(r))
    log_sum = 0.0
    for n in range(1, m + 1):
        hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
        rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
        clipped, total = sum(min(c, rc[g]) for g, c in hc.items()), sum(hc.values())
        if n == 1 and (total == 0 or clipped == 0):
            return 0.0
        add = 0 if n == 1 else 1
        log_sum += math.log((clipped + add) / (total + add)) / m
    bp = 1.0 if len(h) > len(r) + 1 else math.exp(1 - (len(r) + 1) / len(h))
    return 100 * bp * math.exp(log_sum)


@pytest.mark.parametrize("hyp, ref, expected", [
    # 5/6, (3+1)/(5+1), (2+1)/(4+1), (1+1)/(3+1): geometric mean (1/6)^(1/4); BP exp(1 - 7/6) (hyp 6 is not > ref 6 + 1)
    ("the cat sat on the mat", "the cat sat on a mat", 100 * math.exp(-1 / 6) * (1 / 6) ** 0.25),
    # reference of 2 tokens: order M = 2; 1/4 and (0+1)/(3+1); hyp 4 > 2 + 1 so no brevity penalty
    ("Klicken Sie auf OK", "OK .", 25.0),
    # one token, all higher orders (0+1)/(0+1); BP exp(1 - 6/1)
    ("OK", "Klicken Sie auf OK .", 100 * math.exp(-5)),
    ("Abbrechen", "Klicken Sie auf OK .", 0.0),  # no unigram match
    ("", "Ein Verweis.", 0.0), ("Nur Hypothese", "", 0.0),  # empty side
])
def test_nakov_bleu_plus_one_hand_worked(hyp, ref, expected):
    assert METRICS.build("sbleu").sentence_score(hyp, ref) == pytest.approx(expected, abs=1e-9)
    assert independent_bleu_plus_one(hyp, ref) == pytest.approx(expected, abs=1e-9)


def test_hand_worked_bleu_statistics_and_ter():
    # hyp "the cat sat on the mat" vs ref "the cat sat on a mat" (13a tokens = words):
    # 1-grams: the x2 (ref has 1) -> 1, cat, sat, on, mat -> 5 of 6
    # 2-grams: the cat, cat sat, sat on match; on the, the mat do not -> 3 of 5
    # 3-grams: the cat sat, cat sat on -> 2 of 4;  4-grams: the cat sat on -> 1 of 3
    # lengths 6 and 6 (no brevity penalty). BLEU = 100 * (5/6 * 3/5 * 2/4 * 1/3) ** (1/4).
    # TER: one substitution (the -> a) over 6 reference words.
    bleu, ter, chrf = METRICS.build("bleu"), METRICS.build("ter"), METRICS.build("chrf")
    assert bleu.stat_names == ("m1", "m2", "m3", "m4", "t1", "t2", "t3", "t4", "hyp_len", "ref_len")
    assert bleu.segment_stats(*PAIRS[0]) == [5, 3, 2, 1, 6, 5, 4, 3, 6, 6]
    assert ter.segment_stats(*PAIRS[0]) == [1, 6.0]
    assert len(chrf.segment_stats(*PAIRS[0])) == len(chrf.stat_names) == 18
    assert bleu.score_from_stats([5, 3, 2, 1, 6, 5, 4, 3, 6, 6]) == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25, abs=1e-9)
    assert ter.score_from_stats([1, 6.0]) == pytest.approx(100 / 6, abs=1e-9)


@pytest.mark.parametrize("hyp, ref", PAIRS)
def test_sentence_scores_equal_sacrebleu_sentence_functions(hyp, ref):
    assert METRICS.build("sbleu", smooth="exp").sentence_score(hyp, ref) == pytest.approx(
        sacrebleu.sentence_bleu(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("sbleu").sentence_score(hyp, ref) == pytest.approx(independent_bleu_plus_one(hyp, ref), abs=1e-9)
    assert METRICS.build("chrf").sentence_score(hyp, ref) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("chrf++").sentence_score(hyp, ref) == pytest.approx(
        sacrebleu.sentence_chrf(hyp, [ref], word_order=2).score, abs=1e-9)
    assert METRICS.build("ter").sentence_score(hyp, ref) == pytest.approx(sacrebleu.sentence_ter(hyp, [ref]).score, abs=1e-9)
    assert METRICS.build("bleu").sentence_score(hyp, ref) == pytest.approx(BLEU().corpus_score([hyp], [[ref]]).score, abs=1e-9)
    # SBLEU's statistics are [score, 1]; its score of one segment's BLEU statistics is the same number
    sbleu = METRICS.build("sbleu")
    assert sbleu.segment_stats(hyp, ref) == [sbleu.score_of_bleu_stats(METRICS.build("bleu").segment_stats(hyp, ref)), 1]


def test_corpus_scores_equal_sacrebleu_corpus_score():
    hyps, refs = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    assert METRICS.build("bleu").corpus_score(hyps, refs) == pytest.approx(BLEU().corpus_score(hyps, [refs]).score, abs=1e-9)
    assert METRICS.build("chrf").corpus_score(hyps, refs) == pytest.approx(CHRF().corpus_score(hyps, [refs]).score, abs=1e-9)
    assert METRICS.build("ter").corpus_score(hyps, refs) == pytest.approx(TER().corpus_score(hyps, [refs]).score, abs=1e-9)
    mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in PAIRS) / len(PAIRS)
    assert METRICS.build("sbleu", smooth="exp").corpus_score(hyps, refs) == pytest.approx(mean, abs=1e-9)
    mean = sum(independent_bleu_plus_one(h, r) for h, r in PAIRS) / len(PAIRS)
    assert METRICS.build("sbleu").corpus_score(hyps, refs) == pytest.approx(mean, abs=1e-9)


def test_scores_from_stats_rows_equal_one_at_a_time():
    bleu = METRICS.build("bleu")
    stats = np.array([bleu.segment_stats(h, r) for h, r in PAIRS], dtype=float)  # (pairs, 10)
    rows = np.cumsum(stats, axis=0)  # (pairs, 10): every prefix's summed statistics
    assert bleu.scores_from_stats(rows) == pytest.approx([bleu.score_from_stats(row.tolist()) for row in rows], abs=1e-9)


def test_signatures():
    version = sacrebleu.__version__
    assert METRICS.build("bleu").signature() == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{version}"
    assert METRICS.build("sbleu").signature() == f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:nakov|version:{version}"
    assert METRICS.build("sbleu", smooth="exp").signature() == f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{version}"
    assert METRICS.build("chrf").signature() == f"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:{version}"
    assert METRICS.build("chrf++").signature() == f"nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:{version}"
    assert METRICS.build("ter").signature() == f"nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:{version}"


def test_metric_registry_and_utilities():
    assert {"bleu", "sbleu", "chrf", "chrf++", "ter", "comet"} <= set(METRICS.names())
    with pytest.raises(ConfigError, match="unknown metric 'meteor'; known:"):
        METRICS.build("meteor")
    with raises_naming(ConfigError, "'smoothing'", "'sbleu'", "smooth"):
        METRICS.build("sbleu", smoothing="nakov")
    with pytest.raises(ConfigError, match="unknown sbleu smoothing 'add-k'; known: nakov, exp"):
        METRICS.build("sbleu", smooth="add-k")
    # BLEU+1's brevity penalty is taken against ref_len + 1: a perfect 5-token match scores exp(1 - 6/5)
    assert METRICS.build("sbleu").utility("Klicken Sie auf OK.", "Klicken Sie auf OK.") == pytest.approx(math.exp(-0.2), abs=1e-12)
    for name in ("bleu", "chrf", "chrf++", "ter"):
        metric = METRICS.build(name)
        assert metric.utility("Klicken Sie auf OK.", "Klicken Sie auf OK.") == 1.0
    for name in ("bleu", "sbleu", "chrf", "chrf++", "ter"):
        metric = METRICS.build(name)
        u = metric.utility("völlig anders", "Klicken Sie auf OK.")
        assert 0.0 <= u < 1.0 and not math.isnan(u)
        # the pairwise matrix (each sentence prepared once) equals the metric's own utility
        hyps, refs = [h for h, _ in PAIRS], [r for _, r in PAIRS]
        matrix = build_utility(name).matrix(hyps, refs)  # (pairs, pairs)
        assert matrix == pytest.approx(np.array([[metric.utility(h, r) for r in refs] for h in hyps]), abs=1e-12)
    assert METRICS.build("ter").higher_is_better is False
    # TER above 100 (more edits than reference words) is clipped to utility 0
    assert METRICS.build("ter").utility("a b c d e f", "x") == 0.0
