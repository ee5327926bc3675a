"""Statistics over logged figures: paired bootstrap tests, and correlations across models.

Pure numerical code (numpy and the standard library only); it imports nothing else from
simpe, so any part may use it.

Paired bootstrap significance tests of a method against the baseline, from logged statistics.

Resampling is sacreBLEU's paired bootstrap scheme (``sacrebleu.significance._paired_bs_test``,
sacreBLEU 2.6.0): the segment indices of all resamples are drawn at once with
``numpy.random.default_rng(seed).choice(n, size=(resamples, n), replace=True)`` and the same
indices serve the baseline and every method (paired). Each resample's score is recomputed
from summed per-segment sufficient statistics: sacreBLEU's own metric objects for BLEU,
chrF and TER, a ratio of sums for the R metrics ([num, den] pairs) and for means (SBLEU,
COMET as [value, 1] pairs). So the resampled BLEU/chrF/TER scores are exactly those
sacreBLEU's ``PairedTest(test_type="bs")`` computes for the same seed.

The p-value is where this module departs from sacreBLEU 2.6.0 on purpose: sacreBLEU centres
the *absolute* resampled differences on their mean and counts those strictly above the
observed difference, which gives p = 1/(resamples+1) (i.e. "significant") for a method
identical to the baseline. Here the null distribution is the resampled difference shifted
by the observed one (Koehn 2004; Berg-Kirkpatrick et al. 2012), two-sided:

    p = (1 + #{b : |Δ*_b - Δ| >= |Δ|}) / (1 + B)

which gives p = 1 for an identical method and about 1/(B+1) for a clearly different one.

Correlations (``pearson``, ``spearman``, ``kendall`` tau-b with ties) serve the
Table 3 study of Yan et al. (2022) (``simpe.measure.rank``). This module computes; it does not read runs or
format tables.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

import numpy as np

DEFAULT_SEED = 12345
DEFAULT_RESAMPLES = 1000

# (k, d) summed statistics -> (k,) scores; e.g. ``Metric.scores_from_stats`` of the metric stack
ScoreFn = Callable[[np.ndarray], np.ndarray]


def resample_counts(num_segments: int, num_resamples: int = DEFAULT_RESAMPLES, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """How often each segment occurs in each bootstrap resample, sacreBLEU's draw.

    Returns an int array of shape (num_resamples, num_segments) whose rows sum to
    num_segments; row b times a (num_segments, d) stats matrix = resample b's summed stats.
    """
    if num_segments < 1 or num_resamples < 1:
        raise ValueError(f"need at least one segment and one resample, got {num_segments} and {num_resamples}")
    rng = np.random.default_rng(seed)
    indices = rng.choice(num_segments, size=(num_resamples, num_segments), replace=True)  # (B, n)
    indices += np.arange(num_resamples)[:, None] * num_segments  # row b's indices -> b * n + index
    return np.bincount(indices.ravel(), minlength=num_resamples * num_segments).reshape(num_resamples, num_segments)  # (B, n)


def bootstrap_scores(stats: np.ndarray, score: ScoreFn, counts: np.ndarray) -> np.ndarray:
    """Scores of every resample: ``score(counts @ stats)``.

    stats: (num_segments, d) per-segment statistics; counts: (num_resamples, num_segments)
    from ``resample_counts``. Returns (num_resamples,) scores.
    """
    stats = np.asarray(stats, dtype=np.float64)  # (n, d)
    if stats.ndim != 2 or stats.shape[0] != counts.shape[1]:
        raise ValueError(f"stats of shape {stats.shape} do not fit counts of shape {counts.shape}")
    return score(np.asarray(counts, dtype=np.float64) @ stats)  # (B,)


@dataclass(frozen=True)
class PairedResult:
    """One method against the baseline on one metric.

    delta: observed method minus baseline score; p_value: two-sided bootstrap p (NaN when
    undefined); delta_ci95: 2.5 and 97.5 percentiles of the resampled differences;
    num_resamples: resamples with a defined difference.
    """

    baseline_score: float
    system_score: float
    delta: float
    p_value: float
    delta_ci95: tuple[float, float]
    num_resamples: int


def paired_test(baseline_score: float, system_score: float,
                baseline_resampled: np.ndarray, system_resampled: np.ndarray) -> PairedResult:
    """Two-sided paired bootstrap p-value from observed and resampled scores (same resamples).

    baseline_resampled, system_resampled: (B,) scores of the same resamples; resamples where
    either is undefined (NaN) are left out.
    """
    delta = float(system_score - baseline_score)
    resampled = np.asarray(system_resampled, dtype=float) - np.asarray(baseline_resampled, dtype=float)  # (B,)
    resampled = resampled[~np.isnan(resampled)]
    if np.isnan(delta) or resampled.size == 0:
        return PairedResult(float(baseline_score), float(system_score), delta, float("nan"), (float("nan"), float("nan")), 0)
    extreme = int(np.count_nonzero(np.abs(resampled - delta) >= abs(delta)))
    p_value = (1 + extreme) / (1 + resampled.size)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return PairedResult(float(baseline_score), float(system_score), delta, float(min(1.0, p_value)),
                        (float(low), float(high)), int(resampled.size))


def paired_bootstrap(baseline_stats: np.ndarray, system_stats: np.ndarray, score: ScoreFn,
                     num_resamples: int = DEFAULT_RESAMPLES, seed: int | None = DEFAULT_SEED) -> PairedResult:
    """Paired bootstrap test of one system against the baseline from per-segment statistics.

    baseline_stats, system_stats: (num_segments, d) per-segment statistics of the same
    segments; score: maps summed statistics (k, d) to scores (k,).
    """
    baseline_stats = np.asarray(baseline_stats, dtype=np.float64)  # (n, d)
    system_stats = np.asarray(system_stats, dtype=np.float64)  # (n, d)
    if baseline_stats.shape != system_stats.shape:
        raise ValueError(f"baseline stats {baseline_stats.shape} and system stats {system_stats.shape} differ in shape")
    counts = resample_counts(baseline_stats.shape[0], num_resamples, seed)  # (B, n)
    return paired_test(float(score(baseline_stats.sum(0))[0]), float(score(system_stats.sum(0))[0]),
                       bootstrap_scores(baseline_stats, score, counts), bootstrap_scores(system_stats, score, counts))


# ---------------------------------------------------------------- correlations across models
def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than 2 points or a constant series."""
    n = len(x)
    if n != len(y):
        raise ValueError("pearson needs two series of the same length")
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of average ranks."""
    return pearson(_ranks(x), _ranks(y))


def kendall(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties in either series handled); None when undefined."""
    n = len(x)
    if n < 2:
        return None
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denom if denom else None
