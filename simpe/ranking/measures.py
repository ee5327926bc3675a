"""Ranking measures of one model-ordered list (Yan et al. (2022)): kRG, kQRG and the random kRG.

For one source, Y_M lists hypotheses in model order (best log P first); Y_HR lists the same
hypotheses by quality Q (in [0, 1]). With positions j = 1..n and r the 0-based position of a
hypothesis in Y_HR:

    DCG(Y)  = sum_j g(y_j) / log2(j + 1)
    kRG     = DCG(Y_M) / DCG(Y_HR)
    kQRG    = sum_j Q(y_j) / log2(j + 1) over Y_M  /  sum_j 1 / log2(j + 1)
    random kRG = E over uniformly random orders of DCG(Y_M) / DCG(Y_HR)
               = mean(g) * sum_j 1/log2(j+1) / DCG(Y_HR)   (exact expectation, not sampled)

The gain: the paper writes f(y) = k - Rank(y, Y_HR), "a permutation of [0, 1, ..., k-1]"
(so f = n - 1 - r), and reports a random kRG of 58.72% at k = 10 (section 5.1). Only the
exponential gain g = 2^f - 1 reproduces that figure (58.75%; the linear g = f gives 80.4%).
So ``gain="exp"`` (the default) is g = 2^f - 1 and ``gain="linear"`` is g = f, the formula
as printed; both on f in [0, n-1].

Ties: hypotheses of equal Q have no true order, so with ``ties="mean"`` (the default) each
member of a group of equal Q gets the mean gain of the Y_HR positions the group occupies,
in DCG(Y_M) and in DCG(Y_HR) alike. Then an ordering among tied hypotheses is neither
rewarded nor punished, and a list whose qualities are all equal scores exactly its random
baseline (1.0): ties do not look like skill. The random kRG of a list is computed under the
same rule (``random_krg_of``); ``random_krg(n)`` is the tie-free value for n distinct
qualities (the paper's random line). ``ties="model"`` (simpe 0.1) orders tied hypotheses as
the model did, which scores every tie as a correct ranking. Q values tie when they are equal
as floats.

These are pure functions of lists of numbers; evaluate.py runs the decoders that produce the lists.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from simpe.config.tree import GAINS, TIES
from simpe.errors import ConfigError


def _discounts(n: int) -> list[float]:
    return [1.0 / math.log2(j + 1) for j in range(1, n + 1)]


def _gains(n: int, gain: str) -> list[float]:
    """g for Y_HR positions r = 0..n-1 (f = n - 1 - r)."""
    if gain == "exp":
        return [float(2 ** (n - 1 - r) - 1) for r in range(n)]
    if gain == "linear":
        return [float(n - 1 - r) for r in range(n)]
    raise ConfigError(f"unknown gain {gain!r}; known: {', '.join(GAINS)}")


def hr_ranks(qualities: Sequence[float]) -> list[int]:
    """0-based position in Y_HR of each hypothesis of Y_M (given in model order); ties follow model order."""
    order = sorted(range(len(qualities)), key=lambda i: (-qualities[i], i))
    ranks = [0] * len(qualities)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def item_gains(qualities: Sequence[float], gain: str = "exp", ties: str = "mean") -> list[float]:
    """The gain of each hypothesis of Y_M (model order): g of its Y_HR position, or under ``ties="mean"``
    the mean g of the positions its group of equal quality occupies."""
    if ties not in TIES:
        raise ConfigError(f"unknown ties rule {ties!r}; known: {', '.join(TIES)}")
    n = len(qualities)
    g = _gains(n, gain)
    ranks = hr_ranks(qualities)
    if ties == "model":
        return [g[r] for r in ranks]
    positions: dict[float, list[int]] = {}
    for q, r in zip(qualities, ranks):
        positions.setdefault(q, []).append(r)
    shared = {q: sum(g[r] for r in rs) / len(rs) for q, rs in positions.items()}
    return [shared[q] for q in qualities]


def _ideal_dcg(gains: Sequence[float], disc: Sequence[float]) -> float:
    return sum(gv * d for gv, d in zip(sorted(gains, reverse=True), disc))


def krg(qualities: Sequence[float], gain: str = "exp", ties: str = "mean") -> float | None:
    """kRG of one list.

    Args:
        qualities: Q of each hypothesis, in model order (best log-probability first); n = len.
        gain: ``exp`` (g = 2^f - 1) or ``linear`` (g = f), f = n - 1 - Y_HR position.
        ties: ``mean`` (tied hypotheses share the mean gain of their positions) or ``model``.
    Returns:
        DCG(Y_M) / DCG(Y_HR) in [0, 1]; None for an empty list; 1.0 when every gain is 0 (n = 1).
    """
    n = len(qualities)
    if n == 0:
        return None
    gains = item_gains(qualities, gain, ties)
    disc = _discounts(n)
    ideal = _ideal_dcg(gains, disc)
    if ideal == 0.0:
        return 1.0
    return sum(gv * d for gv, d in zip(gains, disc)) / ideal


def kqrg(qualities: Sequence[float]) -> float | None:
    """kQRG of one list: sum_j Q(y_j)/log2(j+1) over model order / sum_j 1/log2(j+1); None when empty."""
    n = len(qualities)
    if n == 0:
        return None
    disc = _discounts(n)
    return sum(q * d for q, d in zip(qualities, disc)) / sum(disc)


def random_krg(n: int, gain: str = "exp") -> float | None:
    """Expected kRG of a uniformly random order of n hypotheses with distinct qualities (exact, not sampled)."""
    if n <= 0:
        return None
    return random_krg_of(list(range(n, 0, -1)), gain)


def random_krg_of(qualities: Sequence[float], gain: str = "exp", ties: str = "mean") -> float | None:
    """Expected kRG of a uniformly random order of these hypotheses, under the same gain and ties rule.

    Under ``ties="mean"`` the gains do not depend on the order, so the expectation is
    mean(g) * sum(discounts) / DCG(Y_HR) exactly. Under ``ties="model"`` a tied group's gains
    go to its members in their (random) order: the member at position j gets the gain of its
    group's start plus the number s of fellow members placed before j, s hypergeometric
    (n - 1 other positions, m - 1 fellow members, j - 1 earlier positions).
    """
    n = len(qualities)
    if n == 0:
        return None
    disc = _discounts(n)
    if ties == "mean":
        gains = item_gains(qualities, gain, ties)
        ideal = _ideal_dcg(gains, disc)
        return 1.0 if ideal == 0.0 else (sum(gains) / n) * sum(disc) / ideal
    g = _gains(n, gain)
    ideal = _ideal_dcg(g, disc)
    if ideal == 0.0:
        return 1.0
    sizes: dict[float, int] = {}
    for q in qualities:
        sizes[q] = sizes.get(q, 0) + 1
    groups, start = [], 0  # (Y_HR start position, size), best quality first
    for q in sorted(sizes, reverse=True):
        groups.append((start, sizes[q]))
        start += sizes[q]
    expected = 0.0
    for j in range(1, n + 1):
        for a, m in groups:
            mean_gain = sum(math.comb(m - 1, s) * math.comb(n - m, j - 1 - s) * g[a + s]
                            for s in range(max(0, j - 1 - (n - m)), min(m - 1, j - 1) + 1)) / math.comb(n - 1, j - 1)
            expected += disc[j - 1] * (m / n) * mean_gain
    return expected / ideal


def rank_figures(qualities: Sequence[float], gain: str = "exp", ties: str = "mean") -> dict[str, Any]:
    """kRG, kQRG and random kRG (under the same ties rule) of one model-ordered list, with its length n."""
    n = len(qualities)
    return {"n": n, "krg": krg(qualities, gain, ties), "kqrg": kqrg(qualities),
            "random_krg": random_krg_of(qualities, gain, ties)}
