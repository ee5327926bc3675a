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
    DIRECTION_ONLY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Band,
    Effect,
    Judged,
    band_around,
    cap,
    judge,
    judge_null,
    judge_size,
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
MOST_AWAITS = ("the penalty study did not run: the four UID regularisers (max, square, variance, greedy) rerank by each "
               "hypothesis's token log-probabilities, which the decoding studies do not keep (`simpe replicate --only "
               "penalties` runs it, minutes on a CPU)")
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


def _above_zero(found: Effect, sign: float = 1.0) -> tuple[str, str]:
    """A rise (``sign`` -1: a fall) whose size the paper does not print in simpe's unit (``ABOVE_ZERO``): right in
    direction and significant is at most partly, labelled direction only; and why."""
    if found.significant:
        if found.value * sign > 0:
            return PARTLY, f"{found.show()}: significant, {DIRECTION_ONLY} (the paper prints no size in this unit)"
        return NOT_REPRODUCED, f"{found.show()}: significant, opposite sign"
    need = n_to_decide(found, abs(found.value)) if found.value else None
    return INCONCLUSIVE, found.show() + (f"; about {need} {found.of} would decide it" if need else "")


def _differences(a: Sequence[float], b: Sequence[float]) -> Effect:
    """The mean of a − b per sentence, points (rates x 100), with its interval."""
    return mean_effect([x - y for x, y in zip(a, b)], POINTS, scale=100.0)


def _paired(rows: list[dict[str, Any]], a: str, b: str) -> Effect:
    """The mean of per-sentence figure ``a`` minus ``b`` over the sentences that have both, points (x 100)."""
    return mean_effect([r[a] - r[b] for r in rows if r[a] is not None and r[b] is not None], POINTS, scale=100.0)


BELOW_ZERO = (f"a stated direction, no size: at most partly ({DIRECTION_ONLY}) when significantly below zero (the paper prints "
              "no size), not reproduced when significantly above, else inconclusive")


def _bleu_of(studies: dict[str, Any], b: int, name: str) -> np.ndarray | None:
    rows = (studies.get("bleu_stats") or {}).get(b, {}).get(name)
    return np.asarray(rows, dtype=np.float64) if rows else None


ABOVE_ZERO = (f"a stated direction, no size in this unit: at most partly ({DIRECTION_ONLY}) when significantly above zero, "
              "not reproduced when significantly below, else inconclusive")


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
        found, band = _differences(flags["heap_beam"], flags["beam"]), band_around(gap)
        verdict, why = judge_size(found, gap, band)
        rates = studies["search_errors"]
        figures = ("; ".join(f"B={b}: beam {100 * r['beam']:.1f}%, min-heap {100 * r['heap_beam']:.1f}%" for b, r in sorted(rates.items()))
                   + f"; exact 0% by construction; empty modes {100 * studies['empty_rate']:.1f}%")
        worse = sum(1 for d in diffs if d > 0)
        why += (f"; the direction is a theorem's (min-heap keeps every hypothesis plain beam keeps, Section 5: it never errs "
                f"where plain beam does not), a check, not counted: {worse} of {len(diffs)} sentences break it")
        if studies["empty_rate"] < EMPTY_REGIME:
            verdict = cap(verdict)
            why += f"; the demo model has {100 * studies['empty_rate']:.1f}% empty modes (paper 64.70%): another regime, at most partly"
        out = c.judged(figures, Judged(verdict, f"B={first}: {why}", effect=found, band=band))
        out.evidence = digest(diffs)
        return out

    return judge_it


def beam_sizes(c: Claim, studies: dict[str, Any]) -> Verdict:
    flags = studies["search_flags"]
    small, wide = min(flags), max(flags)
    diffs = [x - y for x, y in zip(flags[wide]["beam"], flags[small]["beam"])]
    found = _differences(flags[wide]["beam"], flags[small]["beam"])
    figures = ", ".join(f"B={b}: {100 * r['beam']:.1f}%" for b, r in sorted(studies["search_errors"].items()))
    verdict, why = _above_zero(found, -1.0)
    out = c.judged(figures, Judged(verdict, f"B={wide} − B={small}: {why}", effect=found))
    out.evidence = digest(diffs)
    return out


def _without_penalty(score: Any) -> Any:
    """Corpus BLEU without its brevity penalty (the n-gram precisions alone): the reference length set to the
    hypothesis length in the summed statistics (the last two columns), so the penalty is 1."""
    def precision(summed: np.ndarray) -> np.ndarray:
        rows = np.array(np.atleast_2d(summed), dtype=np.float64)  # (B, d)
        rows[:, -1] = rows[:, -2]
        return score(rows)

    return precision


def beam_curse(c: Claim, studies: dict[str, Any]) -> Verdict:
    """Figure 1b in its own unit, corpus BLEU, split into its two parts: the precision part (BLEU without the brevity
    penalty) and the length part (BLEU minus that: what the penalty takes), each B=widest − B=smallest with its paired
    bootstrap interval. The curse is the length part (Yan et al. (2021) cite it from Yang et al. (2018), who trace it to
    short outputs): required; the precision part says whether the outputs also got worse word by word: optional."""
    beam, where = _beam_stats(studies)
    small, wide = min(beam), max(beam)
    score = metric_score("bleu")
    precision = _without_penalty(score)
    ratios = {b: stats.sum(0)[-2] / stats.sum(0)[-1] for b, stats in beam.items()}  # hypothesis / reference length
    shown = []
    for b, stats in beam.items():
        ratio = ratios[b]
        shown.append(f"B={b}: {float(score(stats.sum(0))[0]):.1f} (without the brevity penalty "
                     f"{float(precision(stats.sum(0))[0]):.1f}; length ratio {ratio:.3f}, brevity penalty "
                     f"{min(1.0, math.exp(1 - 1 / ratio)) if ratio > 0 else 0.0:.3f}; mean sentence BLEU {sentence_bleu(stats).mean():.1f})")
    changed = _changed(beam[small], beam[wide])
    shorter = (beam[wide][changed, -2].sum() / beam[small][changed, -2].sum()) if changed.any() else 1.0
    total = paired_effect(beam[small], beam[wide], score, False, POINTS, of="sentences")
    words = paired_effect(beam[small], beam[wide], precision, False, POINTS, of="sentences")
    length = paired_effect(beam[small], beam[wide], lambda x: score(x) - precision(x), False, POINTS, of="sentences")
    parts = []
    for label, found, required in (("length part (BLEU − BLEU without the brevity penalty)", length, True),
                                   ("precision part (BLEU without the brevity penalty)", words, False)):
        verdict, why = _above_zero(found, -1.0)
        said = why.replace(found.show(), found.show() + " against the paper's fall", 1)
        parts.append(Judged(verdict, f"{label}: simpe {said}", required, found))
    sentence = mean_effect(list(sentence_bleu(beam[wide]) - sentence_bleu(beam[small])), POINTS)
    out = c.of_parts(parts)
    out.simpe = f"corpus BLEU {'; '.join(shown)} ({where})"
    out.why += (f". B={wide} − B={small} in corpus BLEU {total.show()}: {int(changed.sum())} of {len(changed)} sentences change, "
                f"their outputs {shorter:.2f} times as long at B={wide}; the length ratio moves {ratios[small]:.3f} → "
                f"{ratios[wide]:.3f}" + (", below 1, so the brevity penalty takes more" if ratios[wide] < 1 else
                                         ", never below 1, so the brevity penalty never fires")
                + (f"; the precision part {'rises' if words.value > 0 else 'falls'}: "
                   + ("all of the fall is the outputs' length" if words.value > 0 and total.value < 0 else
                      "the outputs also lose n-gram precision"))
                + f". Mean sentence BLEU (BLEU+1, each sentence's own penalty) moves {sentence.show()}")
    out.evidence = digest(beam[small], beam[wide])
    return out


def sentence_changes(band: float) -> Judge:
    """Figure 1c: against the smallest beam, how many sentences' sentence BLEU rises and falls at each wider beam. The
    paper's word is "random" (a sentence gets better or worse "randomly", line 76): a fair coin, as many rises as falls.
    Not reproduced when the share of rises among the sentences that change at the widest beam differs significantly
    from 50 % (its Wilson interval excludes 50: a direction dominates); reproduced when the interval holds 50 and lies
    within 50 ± ``band`` points (a judgement: the smallest lean called a direction); else inconclusive."""
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
        said = f"simpe share of rises − 50 {share.show()} against the paper's random (a fair coin: 0), band ±{band:g} points"
        if share.significant:
            verdict, why = NOT_REPRODUCED, f"{said}: the interval excludes an even split, a direction dominates"
        elif -band <= share.low and share.high <= band:
            verdict, why = REPRODUCED, f"{said}: the interval holds an even split and lies inside the band"
        else:
            verdict, why = INCONCLUSIVE, f"{said}: the interval holds an even split but crosses the band's edge"
        out = c.judged("; ".join(counts) + f" (sentence BLEU against B={small}; {where})",
                       Judged(verdict, f"B={max(beam)}: {why}", effect=share, band=Band(-band, band)))
        out.evidence = digest(rises)
        return out

    return judge_it


def heap_bleu(gap: float) -> Judge:
    """Min-heap beam's corpus BLEU minus plain beam's at the smallest beam against the paper's ``gap`` (points); where
    the model has (almost) no empty modes, the collapse's precondition, the regime differs and the verdict is at most
    partly (the cap of ``search_errors``)."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        b = min(studies["bleu_stats"])
        score = metric_score("bleu")
        beam, heap = _bleu_of(studies, b, "beam"), _bleu_of(studies, b, "heap_beam")
        assert beam is not None and heap is not None
        rate = studies.get("empty_rate") or 0.0
        figures = (f"B={b}: beam {float(score(beam.sum(0))[0]):.1f}, min-heap {float(score(heap.sum(0))[0]):.1f} "
                   f"({len(beam)} dev sentences; empty modes {100 * rate:.1f}%)")
        found, band = paired_effect(beam, heap, score, False, POINTS, of="sentences"), band_around(gap)
        verdict, why = judge(found, gap, band)
        if rate < EMPTY_REGIME:
            verdict = cap(verdict)
            why += (f"; the collapse is min-heap beam finding the empty modes (Table 1: 64.70 % of sentences) and the demo "
                    f"model has {100 * rate:.1f}% (yan2021-empty-modes): another regime, at most partly (as "
                    "yan2021-t3-search-errors); a model whose exact top-1 is often empty (`simpe replicate --model PATH`) "
                    "tests the collapse itself")
        out = c.judged(figures, Judged(verdict, f"B={b}: {why}", effect=found, band=band))
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
        out = c.judged(f"B={b}, length-normalised: beam {float(score(beam.sum(0))[0]):.1f}, min-heap {float(score(heap.sum(0))[0]):.1f} "
                       f"({len(beam)} dev sentences)", Judged(verdict, f"B={b}: {why}", effect=found, band=Band(-band, band)))
        out.evidence = digest(beam, heap)
        return out

    return judge_it


def length_norm_rerank(c: Claim, ev: Evidence) -> Verdict | None:
    """A reduced Table 2: the exact top-k's kRG (linear gain) reranked by log P / length minus by log P, per sentence
    (improves: the studies); and minus reranked by each UID regulariser at its best lambda on these sentences (most: the
    penalty study; the best lambda favours the other penalty, so the test is a strict one)."""
    found = region(ev, 10)
    if found is None:
        return None
    k, rows = found
    if not all("krg_linear_ln" in r for r in rows):
        return c.missing(RERANK_AWAITS)
    values = [r["krg_linear_ln"] - r["krg_linear"] for r in rows if r.get("krg_linear_ln") is not None and r["krg_linear"] is not None]
    effect = mean_effect(values, POINTS, scale=100.0)
    verdict, why = _above_zero(effect)
    parts = [Judged(verdict, f"improves: simpe {why.replace(effect.show(), effect.show() + ' against the paper', 1)}", effect=effect)]
    figures = [f"k={k}: kRG reranked by log P / length − by log P {effect.show()}"]
    study = ev.penalties or {}
    kept, lambdas = study.get("per_sentence") or [], study.get("lambdas") or []
    if not kept or not lambdas:
        parts.append(Judged(NOT_TESTABLE, f"most (of Table 2's five penalties, line 251): {MOST_AWAITS}"))
    for name in study.get("penalties") or () if kept and lambdas else ():
        best = max(range(len(lambdas)), key=lambda j: float(np.mean([r["krg_linear_uid"][name][j] for r in kept])))
        gap = mean_effect([r["krg_linear_ln"] - r["krg_linear_uid"][name][best] for r in kept], POINTS, scale=100.0)
        verdict, why = _above_zero(gap)
        label = f"most, vs {name} (λ {lambdas[best]:g}, its best of {', '.join(f'{x:g}' for x in lambdas)})"
        parts.append(Judged(verdict, f"{label}: simpe {why.replace(gap.show(), gap.show() + ' against the paper', 1)}", effect=gap))
        figures.append(f"− by {name} {gap.show()}")
    out = c.of_parts(parts)
    out.simpe = "; ".join(figures) + (f" (penalties: exact top-{study.get('k')} of {len(kept)} sentences)" if kept else "")
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
    out = c.judged(f"{first['name']}: sampled kRG − random {effect.show()} ({systems['settings']['samples']} samples a sentence)",
                   Judged(verdict, why, effect=effect))
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
            judged.append(Judged(verdict, f"{label}: {why}", True, found, band if paper is not None else Band(-null, null)))
        return c.of_parts(judged)

    return judge_it


def top_region(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    k, rows = found
    effect = _paired(rows, "krg_linear", "random_linear")
    verdict, why = judge_null(effect, 3.0)
    exp = [r["krg"] for r in rows if r["krg"] is not None]
    return c.judged(f"k={k}: kRG − random {effect.show()}; exponential gain: mean kRG {100 * float(np.mean(exp)):.1f} against 58.72",
                    Judged(verdict, why, effect=effect, band=Band(-3.0, 3.0)))


def k_insensitive(band: float) -> Judge:
    """A reduced Figure 4 of Yan et al. (2022): each sentence's kRG minus the random order's (linear gain) at the
    largest k the studies searched minus at the smallest (5 and 10; the paper: 10 to 100), points; no effect within
    ±``band``."""
    def judge_it(c: Claim, ev: Evidence) -> Verdict | None:
        studies = exact_studies(ev)
        found = {int(k): r["per_sentence"] for k, r in ((studies or {}).get("top_region") or {}).items() if r.get("per_sentence")}
        if len(found) < 2:
            return None
        small, wide = min(found), max(found)
        gaps = [(w["krg_linear"] - w["random_linear"]) - (s["krg_linear"] - s["random_linear"])
                for s, w in zip(found[small], found[wide]) if None not in (s["krg_linear"], w["krg_linear"])]
        effect = mean_effect(gaps, POINTS, scale=100.0)
        verdict, why = judge_null(effect, band)
        return c.judged(f"kRG − random at k={wide} minus at k={small} {effect.show()}",
                        Judged(verdict, f"k={small} → {wide}: {why}", effect=effect, band=Band(-band, band)))

    return judge_it


def lucky_bias(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    """Beam's minus the exact top-k's kQRG: a significant positive difference is at most partly (the scales differ)."""
    k, rows = found
    effect = _paired(rows, "kqrg_beam", "kqrg_exact")
    verdict, why = _above_zero(effect)
    return c.judged(f"k={k}: {effect.show()} (chrF)", Judged(verdict, f"k={k}: {why}", effect=effect))


def beam_krg(c: Claim, found: tuple[int, list[dict[str, Any]]]) -> Verdict:
    k, rows = found
    effect = _paired(rows, "beam_krg_linear", "krg_linear")
    verdict, why = judge_null(effect, 2.0)
    return c.judged(f"k={k}: {effect.show()}", Judged(verdict, why, effect=effect, band=Band(-2.0, 2.0)))


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
        one = Judged(verdict, why, effect=found, band=band)
        figures = (f"{len(rows)} systems (the demo model and its adapted states after {settings.get('segments', '?')} scalc segments "
                   f"of each method): sampled kQRG {found.show(3)}; beam quality r = {'–' if beam is None else f'{beam:.3f}'} "
                   f"({settings['probe']} dev sentences, {settings['samples']} samples, MBR over {settings['mbr_samples']} samples, chrF)")
        return c.judged(figures, one)

    return judge_it
