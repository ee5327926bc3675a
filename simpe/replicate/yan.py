"""The judges of the claims of Yan et al. (2021) and Yan et al. (2022): what the decoding studies read (search errors
per beam size, BLEU statistics per beam size, the top region's per-sentence figures) and the systems study (Yan et
al. (2022), Table 3). Each is a function of what its claim reads (a ``judges.Lookup`` below), with the paper's figures
as parameters; the claims' text and rules are the table of ``claims.py``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simpe.replicate.judges import Claim, Evidence, Judge, Lookup, Verdict
from simpe.replicate.papers import POINTS
from simpe.replicate.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    Band,
    Effect,
    band_around,
    judge,
    judge_null,
    mean_effect,
    metric_score,
    paired_effect,
    pearson_effect,
    systems_to_decide,
)

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
        verdict, why = judge(_differences(flags["heap_beam"], flags["beam"]), gap, band_around(gap))
        rates = studies["search_errors"]
        figures = ("; ".join(f"B={b}: beam {100 * r['beam']:.1f}%, min-heap {100 * r['heap_beam']:.1f}%" for b, r in sorted(rates.items()))
                   + f"; exact 0% by construction; empty modes {100 * studies['empty_rate']:.1f}%")
        if studies["empty_rate"] < EMPTY_REGIME and verdict == REPRODUCED:
            verdict, why = PARTLY, why + f"; but the demo model has {100 * studies['empty_rate']:.1f}% empty modes (paper 64.70%): another regime"
        return c.row(figures, verdict, f"B={first}: {why}")

    return judge_it


def beam_sizes(c: Claim, studies: dict[str, Any]) -> Verdict:
    flags = studies["search_flags"]
    small, wide = min(flags), max(flags)
    found = _differences(flags[wide]["beam"], flags[small]["beam"])
    figures = ", ".join(f"B={b}: {100 * r['beam']:.1f}%" for b, r in sorted(studies["search_errors"].items()))
    return c.row(figures, _below_zero(found), f"B={wide} − B={small}: {found.show()}")


def beam_curse(c: Claim, studies: dict[str, Any]) -> Verdict:
    beam = {b: _bleu_of(studies, b, "beam") for b in sorted(studies["bleu_stats"])}
    small, wide = min(beam), max(beam)
    score = metric_score("bleu")
    figures = ", ".join(f"B={b}: {float(score(stats.sum(0))[0]):.1f}" for b, stats in beam.items())  # type: ignore[union-attr]
    found = paired_effect(beam[small], beam[wide], score, False, POINTS)  # type: ignore[arg-type]
    return c.row(f"BLEU {figures} ({len(beam[small])} dev sentences)",  # type: ignore[arg-type]
                 _below_zero(found), f"B={wide} − B={small}: {found.show()}")


def heap_bleu(gap: float) -> Judge:
    """Min-heap beam's corpus BLEU minus plain beam's at the smallest beam against the paper's ``gap`` (points)."""
    def judge_it(c: Claim, studies: dict[str, Any]) -> Verdict:
        b = min(studies["bleu_stats"])
        score = metric_score("bleu")
        beam, heap = _bleu_of(studies, b, "beam"), _bleu_of(studies, b, "heap_beam")
        found = paired_effect(beam, heap, score, False, POINTS)  # type: ignore[arg-type]
        verdict, why = judge(found, gap, band_around(gap))
        rate = studies.get("empty_rate") or 0.0
        why += (f"; measured why: the collapse is the empty modes' (Table 1: 64.70 %), and the demo model has {100 * rate:.1f}% "
                "(yan2021-empty-modes), so min-heap beam has no empty mode to find")
        figures = (f"B={b}: beam {float(score(beam.sum(0))[0]):.1f}, min-heap {float(score(heap.sum(0))[0]):.1f} "  # type: ignore[union-attr]
                   f"({len(beam)} dev sentences; empty modes {100 * rate:.1f}%)")  # type: ignore[arg-type]
        return c.row(figures, verdict, f"B={b}: {why}")

    return judge_it


# ---------------------------------------------------------------------------------------- Yan et al. (2022)
def random_order(c: Claim, _: None) -> Verdict:
    """A random order's kRG of the top 10, its exact expectation, against the paper's 58.72 within 0.1 points."""
    from simpe.ranking.measures import random_krg

    value = 100 * (random_krg(10, "exp") or 0.0)
    ok = abs(value - 58.72) < 0.1
    return c.row(f"{value:.2f} (exact expectation; linear gain: {100 * (random_krg(10, 'linear') or 0.0):.2f})",
                 REPRODUCED if ok else NOT_REPRODUCED, f"{value - 58.72:+.2f}")


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
