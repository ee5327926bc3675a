"""The judges of the claims of Yan et al. (2021) and Yan et al. (2022): what the decoding studies read (search errors
per beam size, BLEU statistics per beam size, the top region's per-sentence figures) and the systems study (Yan et
al. (2022), Table 3). Each is a function of what its claim reads (a ``judges.Lookup`` below), with the paper's figures
as parameters; the claims' text and rules are the table of ``claims.py``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from simpe.replicate.judges import AWAITS, Claim, Evidence, Judge, Lookup, Verdict, digest
from simpe.replicate.papers import POINTS
from simpe.replicate.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Band,
    Effect,
    Judged,
    band_around,
    judge,
    judge_null,
    mean_effect,
    metric_score,
    n_to_decide,
    paired_effect,
    pearson_effect,
    share_effect,
    systems_to_decide,
)
from simpe.ties import SCORE_ATOL, margin

EMPTY_REGIME = 0.10  # below this empty-mode rate the search-error regime of Yan et al. (2021) is not the demo model's
PER_SENTENCE = "the decoding studies did not run (or ran before they kept per-sentence figures)"


def exact_studies(ev: Evidence) -> dict[str, Any] | None:
    """The decoding studies' figures, when they searched some sentences exactly."""
    studies = ev.studies
    return studies if studies and studies.get("exact_sentences") else None


def _studies_with(key: str, missing: str) -> Lookup:
    return Lookup(lambda ev: s if (s := exact_studies(ev)) is not None and s.get(key) else None, ("studies",), missing)


def region(ev: Evidence, k: int | None = None) -> tuple[int, list[dict[str, Any]]] | None:
    """The top region's per-sentence figures at ``k`` (else at the k nearest 10): (k, rows)."""
    studies = exact_studies(ev)
    if studies is None:
        return None
    found = {kk: r for kk, r in studies["top_region"].items() if r.get("per_sentence")}
    if not found:
        return None
    kk = k if k in found else min(found, key=lambda key: abs(int(key) - 10))
    return kk, found[kk]["per_sentence"]


STUDIES = Lookup(exact_studies, ("studies",), "the decoding studies did not run")
SEARCH_FLAGS = _studies_with("search_flags", PER_SENTENCE)
BLEU_STATS = _studies_with("bleu_stats", "the decoding studies did not run (or ran before they kept BLEU per beam size)")
TOP10 = Lookup(lambda ev: region(ev, 10), ("studies",), PER_SENTENCE)
SYSTEMS = Lookup(lambda ev: ev.systems or None, ("systems",), "the systems study did not run (it needs the forgetting runs' stores)")
# what records made before the studies kept it lack: the row says what the next from-scratch call records
LN_AWAITS = (f"{AWAITS}: the studies record, per sentence, the BLEU statistics of the hypothesis plain and min-heap beam "
             "search rank first by log P / length (bleu_stats_ln; simpe/replicate/studies.py)")
RERANK_AWAITS = (f"{AWAITS}: the studies record each sentence's exact top-10 kRG after reranking by log P / length "
                 "(krg_linear_ln; simpe/replicate/studies.py)")
SAMPLED_AWAITS = (f"{AWAITS}: the systems study kept each system's mean sampled kRG only; the next call keeps, per sentence, "
                  "the sampled kRG and the random order's kRG at its number of distinct samples (simpe/replicate/run.py)")


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which sentences' outputs differ between two beam sizes (their BLEU statistics differ): (n,) bool."""
    return (a != b).any(axis=1)


def _beam_stats(studies: dict[str, Any]) -> tuple[dict[int, np.ndarray], str]:
    """Plain beam's per-sentence BLEU statistics by beam size: from the beam-size study on more sentences when the
    studies hold it, else from the probe sentences; and which."""
    wide = studies.get("beam_sizes")
    if isinstance(wide, dict) and wide.get("bleu_stats"):
        return ({b: np.asarray(rows, dtype=np.float64) for b, rows in sorted(wide["bleu_stats"].items())},
                f"{wide['sentences']} dev sentences, plain beam search alone")
    return ({b: np.asarray(v["beam"], dtype=np.float64) for b, v in sorted(studies["bleu_stats"].items())},
            f"{studies['sentences']} dev sentences of the exact-search probe")


def sentence_bleu(stats: np.ndarray) -> np.ndarray:
    """Sentence BLEU (BLEU+1 of Nakov et al. (2012), simpe's SBLEU) of each row of BLEU statistics: (n,)."""
    from simpe.metrics.sacre import nakov_bleu_plus_one

    return np.array([nakov_bleu_plus_one(row) for row in stats], dtype=np.float64)


def _above_zero(found: Effect) -> tuple[str, str]:
    """A rise whose size the paper does not print in simpe's unit (``ABOVE_ZERO``), and why."""
    if found.significant:
        return (REPRODUCED if found.value > 0 else NOT_REPRODUCED), found.show()
    need = n_to_decide(found, abs(found.value)) if found.value else None
    return INCONCLUSIVE, found.show() + (f"; about {need} {found.of} would decide it" if need else "")


def _differences(a: Sequence[float], b: Sequence[float]) -> Effect:
    """The mean of a − b per sentence, points (rates x 100), with its interval."""
    return mean_effect([x - y for x, y in zip(a, b)], POINTS, scale=100.0)


def _paired(rows: list[dict[str, Any]], a: str, b: str) -> Effect:
    """The mean of per-sentence figure ``a`` minus ``b`` over the sentences that have both, points (x 100)."""
    return mean_effect([r[a] - r[b] for r in rows if r[a] is not None and r[b] is not None], POINTS, scale=100.0)


BELOW_ZERO = ("reproduced when significantly below zero (the paper prints no size), not reproduced when significantly above, "
              "else inconclusive")


def _below_zero(found: Effect) -> str:
    """A decrease whose size the paper does not print (``BELOW_ZERO``)."""
    return (REPRODUCED if found.value < 0 else NOT_REPRODUCED) if found.significant else INCONCLUSIVE


def _bleu_of(studies: dict[str, Any], b: int, name: str) -> np.ndarray | None:
    rows = (studies.get("bleu_stats") or {}).get(b, {}).get(name)
    return np.asarray(rows, dtype=np.float64) if rows else None


ABOVE_ZERO = ("reproduced when significantly above zero (the paper's size is in another unit), not reproduced when "
              "significantly below, else inconclusive")


# ---------------------------------------------------------------------------------------- Yan et al. (2021)
def empty_modes(c: Claim, studies: dict[str, Any]) -> Verdict:
    rate = studies["empty_rate"]
    figures = f"{100 * rate:.1f}% of {studies['exact_sentences']} dev sentences searched exactly"
    return c.measured(figures, f"the demo model's empty-mode rate is {100 * rate:.1f}% (paper 64.70%)")


def search_errors(gap: float) -> Judge:
    """Min-heap's minus plain beam's search-error rate at the smallest beam against the paper's ``gap`` (points)."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        first = min(studies["search_flags"])
        flags = studies["search_flags"][first]
        diffs = [x - y for x, y in zip(flags["heap_beam"], flags["beam"])]
        verdict, why = judge(_differences(flags["heap_beam"], flags["beam"]), gap, band_around(gap))
        rates = studies["search_errors"]
        figures = ("; ".join(f"B={b}: beam {100 * r['beam']:.1f}%, min-heap {100 * r['heap_beam']:.1f}%" for b, r in sorted(rates.items()))
                   + f"; exact 0% by construction; empty modes {100 * studies['empty_rate']:.1f}%")
        if studies["empty_rate"] < EMPTY_REGIME and verdict == REPRODUCED:
            verdict, why = PARTLY, why + f"; but the demo model has {100 * studies['empty_rate']:.1f}% empty modes (paper 64.70%): another regime"
        out = c.row(figures, verdict, f"B={first}: {why}")
        out.evidence = digest(diffs)
        return out

    return judge_it


def beam_sizes(c: Claim, studies: dict[str, Any]) -> Verdict:
    flags = studies["search_flags"]
    small, wide = min(flags), max(flags)
    diffs = [x - y for x, y in zip(flags[wide]["beam"], flags[small]["beam"])]
    found = _differences(flags[wide]["beam"], flags[small]["beam"])
    figures = ", ".join(f"B={b}: {100 * r['beam']:.1f}%" for b, r in sorted(studies["search_errors"].items()))
    out = c.row(figures, _below_zero(found), f"B={wide} − B={small}: {found.show()}")
    out.evidence = digest(diffs)
    return out


def beam_curse(c: Claim, studies: dict[str, Any]) -> Verdict:
    """Figure 1b in its own unit, corpus BLEU, with beside it what explains a rise: the hypothesis/reference length ratio
    (corpus BLEU's brevity penalty fires only below 1) and the mean sentence BLEU, whose penalty is each sentence's own."""
    beam, where = _beam_stats(studies)
    small, wide = min(beam), max(beam)
    score = metric_score("bleu")
    ratios = {b: stats.sum(0)[-2] / stats.sum(0)[-1] for b, stats in beam.items()}  # hypothesis / reference length
    parts = []
    for b, stats in beam.items():
        ratio = ratios[b]
        parts.append(f"B={b}: {float(score(stats.sum(0))[0]):.1f} (length ratio {ratio:.2f}, brevity penalty "
                     f"{min(1.0, math.exp(1 - 1 / ratio)) if ratio > 0 else 0.0:.2f}; mean sentence BLEU {sentence_bleu(stats).mean():.1f})")
    changed = _changed(beam[small], beam[wide])
    shorter = (beam[wide][changed, -2].sum() / beam[small][changed, -2].sum()) if changed.any() else 1.0
    found = paired_effect(beam[small], beam[wide], score, False, POINTS, of="sentences")
    sentence = mean_effect(list(sentence_bleu(beam[wide]) - sentence_bleu(beam[small])), POINTS)
    if ratios[wide] >= 1:  # the penalty never fires: shorter outputs lose nothing to length and gain precision
        penalty = (f"the length ratio stays at or above 1 ({ratios[small]:.2f} to {ratios[wide]:.2f}), so the brevity "
                   "penalty never fires: shorter outputs lose no corpus BLEU to length and gain n-gram precision")
    else:  # the penalty fires at the wide beam: part of the fall is the length
        penalty = (f"the length ratio falls from {ratios[small]:.2f} to {ratios[wide]:.2f}, below 1, so the brevity "
                   "penalty fires and part of the fall is the outputs' length")
    why = (f"B={wide} − B={small}: {found.show()}; {int(changed.sum())} of {len(changed)} sentences change between them, their "
           f"outputs {shorter:.2f} times as long at B={wide}. Corpus BLEU's brevity penalty fires only when the whole output is "
           f"shorter than the references (ratio below 1); here {penalty}. Sentence BLEU penalises each short sentence on its "
           f"own: its mean moves {sentence.show()}")
    out = c.row(f"corpus BLEU {'; '.join(parts)} ({where})", _below_zero(found), why)
    out.evidence = digest(beam[small], beam[wide])
    return out


def sentence_changes(band: float) -> Judge:
    """Figure 1c: against the smallest beam, how many sentences' sentence BLEU rises and falls at each wider beam; the
    direction is random when the share of rises among the sentences that change at the widest beam lies within 50 ±
    ``band`` points (an equivalence test over the changed sentences)."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        beam, where = _beam_stats(studies)
        small = min(beam)
        base = sentence_bleu(beam[small])
        counts, delta = [], np.zeros(0)
        for b, stats in beam.items():
            if b == small:
                continue
            delta = sentence_bleu(stats) - base  # the widest beam's, the last
            counts.append(f"B={b}: {int((delta > 0).sum())} up, {int((delta < 0).sum())} down")
        rises = [int(d > 0) for d in delta if d != 0]
        share = share_effect(sum(rises), len(rises), 50.0, "changed sentences")
        if share.n == 0:
            return c.row("; ".join(counts) + f" ({where})", INCONCLUSIVE, f"no sentence's sentence BLEU changes between B={small} "
                         f"and B={max(beam)}: nothing to judge; more sentences would decide it")
        verdict, why = judge_null(share, band)
        why = why.replace("simpe ", "simpe share of rises − 50 ", 1)
        out = c.row("; ".join(counts) + f" (sentence BLEU against B={small}; {where})", verdict, f"B={max(beam)}: {why}")
        out.evidence = digest(rises)
        return out

    return judge_it


def heap_bleu(gap: float) -> Judge:
    """Min-heap beam's corpus BLEU minus plain beam's at the smallest beam against the paper's ``gap`` (points); not
    testable here where the model has (almost) no empty modes, the collapse's precondition."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        b = min(studies["bleu_stats"])
        score = metric_score("bleu")
        beam, heap = _bleu_of(studies, b, "beam"), _bleu_of(studies, b, "heap_beam")
        assert beam is not None and heap is not None
        rate = studies.get("empty_rate") or 0.0
        figures = (f"B={b}: beam {float(score(beam.sum(0))[0]):.1f}, min-heap {float(score(heap.sum(0))[0]):.1f} "
                   f"({len(beam)} dev sentences; empty modes {100 * rate:.1f}%)")
        if rate < EMPTY_REGIME:
            out = c.row(figures, NOT_TESTABLE,
                        f"the collapse is min-heap beam finding the empty modes (Table 1: 64.70 % of sentences), and the demo model "
                        f"has {100 * rate:.1f}% (yan2021-empty-modes): there is no empty mode to find. A model whose exact top-1 is "
                        "often empty fills it (the paper's Transformer-base with label smoothing; `simpe replicate --model PATH` "
                        "runs the studies on it)")
        else:
            found = paired_effect(beam, heap, score, False, POINTS, of="sentences")
            verdict, why = judge(found, gap, band_around(gap))
            out = c.row(figures, verdict, f"B={b}: {why}")
        out.evidence = digest(beam, heap)
        return out

    return judge_it


def heap_ln(band: float) -> Judge:
    """Table 4's "+ length normalization" row: min-heap beam's corpus BLEU minus plain beam's when each ranks its
    finished hypotheses by log P / length: no effect within ±``band`` points (the paper: 26.73 against 26.72)."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        if not studies.get("bleu_stats_ln"):
            return c.missing(LN_AWAITS)
        b = min(studies["bleu_stats_ln"])
        rows = studies["bleu_stats_ln"][b]
        beam, heap = np.asarray(rows["beam"], dtype=np.float64), np.asarray(rows["heap_beam"], dtype=np.float64)
        score = metric_score("bleu")
        found = paired_effect(beam, heap, score, False, POINTS, of="sentences")
        verdict, why = judge_null(found, band)
        out = c.row(f"B={b}, length-normalised: beam {float(score(beam.sum(0))[0]):.1f}, min-heap {float(score(heap.sum(0))[0]):.1f} "
                    f"({len(beam)} dev sentences)", verdict, f"B={b}: {why}")
        out.evidence = digest(beam, heap)
        return out

    return judge_it


def length_norm_rerank(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    """A reduced Table 2: the exact top-k's kRG (linear gain) reranked by log P / length minus by log P, per sentence."""
    k, rows = found
    if not all("krg_linear_ln" in r for r in rows):
        return c.missing(RERANK_AWAITS)
    values = [r["krg_linear_ln"] - r["krg_linear"] for r in rows if r.get("krg_linear_ln") is not None and r["krg_linear"] is not None]
    effect = mean_effect(values, POINTS, scale=100.0)
    verdict, why = _above_zero(effect)
    out = c.row(f"k={k}: kRG reranked by log P / length − by log P {effect.show()}", verdict, f"k={k}: {why}")
    out.evidence = digest(values)
    return out


def heap_theorem(c: Claim, studies: dict[str, Any]) -> Verdict:
    """Section 5's theorem, measured: at each beam size, the sentences whose min-heap best scores below plain beam's."""
    scores = studies.get("best_scores")
    if scores:
        worse = {b: sum(1 for h, p in zip(v["heap_beam"], v["beam"]) if h is not None and p is not None
                        and h < p - margin(p, SCORE_ATOL)) for b, v in sorted(scores.items())}
        unit = "best log P below plain beam's"
        n = len(next(iter(scores.values()))["beam"])
    else:  # older records: the search-error flags against the exact top-1
        flags = studies["search_flags"]
        worse = {b: sum(1 for h, p in zip(v["heap_beam"], v["beam"]) if h and not p) for b, v in sorted(flags.items())}
        unit = "a search error where plain beam has none (against the exact top-1)"
        n = len(next(iter(flags.values()))["beam"])
    figures = ", ".join(f"B={b}: {w}" for b, w in worse.items()) + f" of {n} sentences with {unit}"
    return c.measured(figures, "a check of a theorem (the min-heap keeps every hypothesis plain beam keeps), not a finding: "
                      + ("it holds on every sentence" if not any(worse.values()) else "it fails on some sentences"))


# ---------------------------------------------------------------------------------------- Yan et al. (2022)
def random_order(c: Claim, _: None) -> Verdict:
    """A random order's kRG of the top 10: its exact expectation (arithmetic, a check of simpe's gain), measured."""
    from simpe.ranking.measures import random_krg

    value = 100 * (random_krg(10, "exp") or 0.0)
    return c.measured(f"{value:.2f} (exact expectation; linear gain: {100 * (random_krg(10, 'linear') or 0.0):.2f})",
                      f"arithmetic, not a finding: {value - 58.72:+.2f} points from the paper's 58.72 (exponential gain)")


def sampling(c: Claim, systems: dict[str, Any]) -> Verdict:
    """Monte Carlo samples ranked by the model against the random order at each sentence's sample count (the demo
    model, the first system), kRG points, per sentence."""
    first = systems["models"][0]
    rows = first.get("per_sentence")
    if not rows:
        return c.missing(SAMPLED_AWAITS)
    values = [r["krg"] - r["random_krg"] for r in rows if r.get("krg") is not None and r.get("random_krg") is not None]
    effect = mean_effect(values, POINTS, scale=100.0)
    verdict, why = _above_zero(effect)
    out = c.row(f"{first['name']}: sampled kRG − random {effect.show()} ({systems['settings']['samples']} samples a sentence)",
                verdict, why)
    out.evidence = digest(values)
    return out


def correlations(parts: tuple[tuple[str, str, float | None], ...], band: Band, null: float) -> Judge:
    """Pearson's r across the systems of each predictor (label, key, the paper's r; None: no correlation, judged
    within ±``null``) with MBR quality: a directional part against ``band``, a null part, each required."""
    def judge_it(c: Claim, systems: dict[str, Any]) -> Verdict:
        corr, n = systems["correlation"], len(systems["models"])
        judged = []
        for label, key, paper in parts:
            r = (corr.get(key) or {}).get("pearson")
            if r is None:
                judged.append(Judged(NOT_TESTABLE, f"{label}: not measured (it does not vary across the systems)"))
                continue
            found = pearson_effect(r, n)
            verdict, why = judge(found, paper, band) if paper is not None else judge_null(found, null)
            if verdict == INCONCLUSIVE:
                why = why.split("; about")[0] + f"; about {systems_to_decide(band.low)} systems would decide it"
            judged.append(Judged(verdict, f"{label}: {why}"))
        return c.of_parts(judged)

    return judge_it


def top_region(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    k, rows = found
    effect = _paired(rows, "krg_linear", "random_linear")
    verdict, why = judge_null(effect, 3.0)
    exp = [r["krg"] for r in rows if r["krg"] is not None]
    return c.row(f"k={k}: kRG − random {effect.show()}; exponential gain: mean kRG {100 * float(np.mean(exp)):.1f} against 58.72",
                 verdict, why)


def lucky_bias(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    """Beam's minus the exact top-k's kQRG: a significant positive difference is at most partly (the scales differ)."""
    k, rows = found
    effect = _paired(rows, "kqrg_beam", "kqrg_exact")
    verdict = (PARTLY if effect.value > 0 else NOT_REPRODUCED) if effect.significant else INCONCLUSIVE
    return c.row(f"k={k}: {effect.show()} (chrF)", verdict, f"k={k}: {effect.show()}")


def beam_krg(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    k, rows = found
    effect = _paired(rows, "beam_krg_linear", "krg_linear")
    verdict, why = judge_null(effect, 2.0)
    return c.row(f"k={k}: {effect.show()}", verdict, why)


def chrf_kqrg(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    k, rows = found
    effect = mean_effect([r["kqrg_exact"] for r in rows if r["kqrg_exact"] is not None], POINTS, scale=100.0)
    return c.measured(f"k={k}: {effect.show()}".replace("+", ""), "paper 31.67 (Transformer)")


def correlation(paper: float, band: Band) -> Judge:
    """Pearson's r of sampled kQRG with MBR quality across the systems against the paper's ``paper`` within ``band``."""
    def judge_it(c: Claim, systems: dict[str, Any]) -> Verdict:
        rows, corr, settings = systems["models"], systems["correlation"], systems["settings"]
        r = (corr.get("mc.kqrg") or {}).get("pearson")
        beam = (corr.get("beam.quality") or {}).get("pearson")
        if r is None:
            return c.missing("the systems' sampled kQRG does not vary")
        found = pearson_effect(r, len(rows))
        verdict, why = judge(found, paper, band)
        if verdict == INCONCLUSIVE:
            why = why.split("; about")[0] + f"; about {systems_to_decide(band.low)} systems would decide it"
        figures = (f"{len(rows)} systems (the demo model and its adapted states after {settings.get('segments', '?')} scalc segments "
                   f"of each method): sampled kQRG {found.show(3)}; beam quality r = {'–' if beam is None else f'{beam:.3f}'} "
                   f"({settings['probe']} dev sentences, {settings['samples']} samples, MBR over {settings['mbr_samples']} samples, chrF)")
        return c.row(figures, verdict, why)

    return judge_it
