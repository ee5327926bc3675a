"""Ranking measures of one model-ordered list (seed 000): kRG, kQRG and the random kRG.

For one source, Y_M lists hypotheses in model order (best log P first); Y_HR lists the same
hypotheses by quality Q (in [0, 1]). With ranks j = 1..n:

    DCG(Y)  = sum_j f(y_j) / log2(j + 1),   f(y) = n - rank of y in Y_HR (0-based)
    kRG     = DCG(Y_M) / DCG(Y_HR)
    kQRG    = sum_j Q(y_j) / log2(j + 1) over Y_M  /  sum_j 1 / log2(j + 1)
    random kRG = E over uniformly random orders of DCG / DCG(Y_HR) = mean(f) * sum_j 1/log2(j+1) / DCG(Y_HR)
                 (exact expectation, not sampled)

``gain="exp"`` uses f(y) = 2^(n - 1 - rank) - 1 instead (standard nDCG gains): the paper's
reported random baseline for k = 10 (58.72%) matches this (58.75%), not the linear gain of
the definition above (83.39%). Ties in Q: Y_HR orders equal-quality hypotheses as the model
does, so a tie is never a ranking error. These are pure functions of lists of numbers;
evaluate.py runs the decoders that produce the lists.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from simpe.config import GAINS
from simpe.errors import ConfigError


def _discounts(n: int) -> list[float]:
    return [1.0 / math.log2(j + 1) for j in range(1, n + 1)]


def _gains(n: int, gain: str) -> list[float]:
    """f for HR ranks 0..n-1."""
    if gain == "linear":
        return [float(n - r) for r in range(n)]
    if gain == "exp":
        return [float(2 ** (n - 1 - r) - 1) for r in range(n)]
    raise ConfigError(f"unknown gain {gain!r}; known: {', '.join(GAINS)}")


def hr_ranks(qualities: Sequence[float]) -> list[int]:
    """0-based rank in Y_HR of each hypothesis of Y_M (given in model order); ties follow model order."""
    order = sorted(range(len(qualities)), key=lambda i: (-qualities[i], i))
    ranks = [0] * len(qualities)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def krg(qualities: Sequence[float], gain: str = "linear") -> float | None:
    """kRG of one list.

    Args:
        qualities: Q of each hypothesis, in model order (best log-probability first); n = len.
        gain: ``linear`` (f = n - rank) or ``exp`` (f = 2^(n-1-rank) - 1).
    Returns:
        DCG(Y_M) / DCG(Y_HR) in [0, 1]; None for an empty list.
    """
    n = len(qualities)
    if n == 0:
        return None
    f = _gains(n, gain)
    disc = _discounts(n)
    ranks = hr_ranks(qualities)
    ideal = sum(g * d for g, d in zip(f, disc))
    if ideal == 0.0:  # exp gain with n == 1: f = 0 everywhere
        return 1.0
    return sum(f[ranks[j]] * disc[j] for j in range(n)) / ideal


def kqrg(qualities: Sequence[float]) -> float | None:
    """kQRG of one list: sum_j Q(y_j)/log2(j+1) over model order / sum_j 1/log2(j+1); None when empty."""
    n = len(qualities)
    if n == 0:
        return None
    disc = _discounts(n)
    return sum(q * d for q, d in zip(qualities, disc)) / sum(disc)


def random_krg(n: int, gain: str = "linear") -> float | None:
    """Expected kRG of a uniformly random order of n hypotheses with distinct qualities (exact, not sampled)."""
    if n <= 0:
        return None
    f = _gains(n, gain)
    disc = _discounts(n)
    ideal = sum(g * d for g, d in zip(f, disc))
    if ideal == 0.0:
        return 1.0
    return (sum(f) / n) * sum(disc) / ideal


def rank_figures(qualities: Sequence[float], gain: str = "linear") -> dict[str, Any]:
    """kRG, kQRG and random kRG of one model-ordered list, with its length n."""
    n = len(qualities)
    return {"n": n, "krg": krg(qualities, gain), "kqrg": kqrg(qualities), "random_krg": random_krg(n, gain)}
