"""The five verdicts of the replication page, and the rules that give them from an effect, its interval and the paper's size.

* **reproduced**: the effect has the paper's direction, its 95 % interval excludes zero, and the whole
  interval lies inside the stated band of the paper's effect, in the paper's unit (a size test);
* **partly**: the direction is reproduced (significant) but the size is outside the band, or not established (the
  interval reaches outside the band: *direction only*); a claim of several parts: its required parts right in
  direction but not all in size, or an optional part refuted. A claim whose paper prints no size in a unit simpe
  measures passes on direction alone, so it is at most partly, labelled *direction only*;
* **not reproduced**: a significant effect of the opposite sign, or no significant effect while the
  interval rules out the paper's size (it lies wholly on zero's side of the band);
* **inconclusive**: the interval holds both zero and the paper's size; the rule says how many
  segments (or sentences, systems) would make it narrow enough to decide;
* **not testable here**: what is missing, and what fills it.

A probe beyond the papers is **measured**: its figures are reported, it is not counted in the
headline. A "no effect" claim (bias leaves BLEU unchanged) is judged as equivalence: reproduced
when the interval lies inside the band around zero, not reproduced when it lies outside. A part
"not above the baseline" is judged with a margin (``judge_not_above``): reproduced only when its
interval's upper bound lies below the paper's smallest effect of interest, never on the absence of
an effect alone. A claim of several parts declares each part required or optional, and ``combine``
gives the claim's verdict from them by one rule (docs/replicate.md, "The verdicts").
This module holds no paper figures and reads no runs.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simpe.metrics import metric_for
from simpe.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_scores, resample_counts

REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE = (
    "reproduced", "partly", "not reproduced", "inconclusive", "not testable here")
MEASURED = "measured"  # a probe beyond the papers: reported, not counted
DIRECTION_ONLY = "direction only"  # a part or row right in direction whose size is not established (at most partly)
COUNTED = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE)
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Effect:
    """simpe's effect in the paper's unit with its 95 % interval over ``n`` units (segments, sentences, systems);
    ``beside``: a second interval over another unit, reported beside this one (document blocks of a stream)."""

    value: float
    low: float
    high: float
    n: int
    unit: str
    of: str = "segments"
    beside: str = ""

    def show(self, digits: int = 1) -> str:
        f = f"{{:+.{digits}f}}"
        also = f"; {self.beside}" if self.beside else ""
        return f"{f.format(self.value)} {self.unit} (95% CI {f.format(self.low)} to {f.format(self.high)}, n={self.n} {self.of}{also})"

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Band:
    """Where simpe's effect counts as the paper's size, in the paper's unit."""

    low: float
    high: float

    def show(self, unit: str) -> str:
        return f"[{self.low:+g}, {self.high:+g}] {unit}"


def band_around(paper: float, factor: float = 2.0) -> Band:
    """Within a factor of ``factor`` of the paper's effect: [paper / factor, paper * factor] (ordered)."""
    a, b = paper / factor, paper * factor
    return Band(min(a, b), max(a, b))


def n_to_decide(effect: Effect, size: float) -> int | None:
    """Units at which the interval's half-width would shrink below ``size`` (half-width ~ 1/sqrt(n))."""
    half = (effect.high - effect.low) / 2
    if size <= 0 or not half > 0 or not math.isfinite(half):  # NaN: no interval to scale
        return None
    return max(effect.n + 1, math.ceil(effect.n * (half / size) ** 2))


def judge(effect: Effect, paper: float, band: Band) -> tuple[str, str]:
    """The verdict of a directional claim whose paper effect is ``paper`` (non-zero), and why."""
    assert paper != 0, "a zero effect is judged by judge_null"
    sign = 1.0 if paper > 0 else -1.0
    said = f"simpe {effect.show()} against the paper's {paper:+g}, band {band.show(effect.unit)}"
    if effect.significant and effect.value * sign < 0:
        return NOT_REPRODUCED, f"{said}: significant, opposite sign"
    if effect.significant:
        if band.low <= effect.low and effect.high <= band.high:
            return REPRODUCED, f"{said}: significant, the interval inside the band"
        if effect.high < band.low or effect.low > band.high:
            return PARTLY, f"{said}: significant, the size is outside the band"
        return PARTLY, f"{said}: significant, but the interval reaches outside the band: {DIRECTION_ONLY}"
    edge = band.low if sign > 0 else band.high  # the paper-size edge nearest zero
    if (sign > 0 and effect.high < edge) or (sign < 0 and effect.low > edge):
        return NOT_REPRODUCED, f"{said}: not significant, and the interval rules out the paper's size"
    need = n_to_decide(effect, abs(edge))
    return INCONCLUSIVE, f"{said}: not significant, the interval holds both 0 and the band" + (
        f"; about {need} {effect.of} would decide it" if need else "")


def judge_size(effect: Effect, paper: float, band: Band) -> tuple[str, str]:
    """The verdict of a claim whose direction a theorem guarantees (a check, not evidence): only its size is tested.
    Reproduced when the interval lies inside ``band``, not reproduced when it lies wholly outside it, else inconclusive."""
    said = f"simpe {effect.show()} against the paper's {paper:+g}, band {band.show(effect.unit)}"
    if band.low <= effect.low and effect.high <= band.high:
        return REPRODUCED, f"{said}: the interval inside the band"
    if effect.high < band.low or effect.low > band.high:
        return NOT_REPRODUCED, f"{said}: the interval rules out the paper's size"
    return INCONCLUSIVE, f"{said}: the interval crosses the band's edge"


def cap(verdict: str, at: str = PARTLY) -> str:
    """``verdict`` lowered to ``at`` when it is reproduced (a cap: a verdict below it stays)."""
    return at if verdict == REPRODUCED else verdict


def judge_null(effect: Effect, band: float) -> tuple[str, str]:
    """The verdict of a claim of no effect: the interval inside [-band, band] or outside it."""
    said = f"simpe {effect.show()} against the paper's no effect, band ±{band:g} {effect.unit}"
    if -band <= effect.low and effect.high <= band:
        return REPRODUCED, f"{said}: the interval lies inside the band"
    if effect.low > band or effect.high < -band:
        return NOT_REPRODUCED, f"{said}: the interval lies outside the band"
    room = band - abs(effect.value)
    need = n_to_decide(effect, room) if room > 0 else None
    return INCONCLUSIVE, f"{said}: the interval crosses the band's edge" + (f"; about {need} {effect.of} would decide it" if need else "")


def judge_not_above(effect: Effect, margin: float) -> tuple[str, str]:
    """A part "not above the baseline" (the paper: only another method improves): reproduced when the interval's upper
    bound lies below ``margin`` (> 0, the paper's smallest effect of interest), not reproduced when the effect is
    significantly above zero, else inconclusive. It never passes on the absence of an effect alone."""
    assert margin > 0, "the margin is the smallest effect of interest, above zero"
    said = f"simpe {effect.show()} against the paper's not above the baseline, margin {margin:+g} {effect.unit}"
    if effect.high < margin:
        return REPRODUCED, f"{said}: the interval lies below the margin"
    if effect.low > 0:
        return NOT_REPRODUCED, f"{said}: significantly above the baseline"
    room = margin - effect.value
    need = n_to_decide(effect, room) if room > 0 else None
    return INCONCLUSIVE, f"{said}: the interval crosses the margin" + (f"; about {need} {effect.of} would decide it" if need else "")


@dataclass(frozen=True)
class Judged:
    """One part of a claim, judged: its verdict, why ("label: the rule's numbers") and whether the claim requires it
    (an optional part can only lower a reproduced claim to partly)."""

    verdict: str
    why: str
    required: bool = True
    effect: Effect | None = None  # what was judged (None: not measured, or a verdict of no interval)
    band: Band | None = None  # where the effect counts as the paper's size (a null band: [-b, b]; a margin: [-inf, m])

    @property
    def direction_only(self) -> bool:
        """Right in direction, the size not established: at most partly."""
        return self.verdict == PARTLY and DIRECTION_ONLY in self.why

    def show(self) -> str:
        return f"**{self.verdict}**{'' if self.required else ' (optional)'} {self.why}"


def combine(parts: Sequence[Judged]) -> str:
    """One verdict of a claim of several parts, by the rule of docs/replicate.md ("The verdicts"), in this order:

    1. any required part not reproduced (significant and opposite, or its interval rules out the paper's size):
       not reproduced;
    2. else any required part inconclusive: inconclusive;
    3. else every required part reproduced: reproduced, or partly when an optional part is not reproduced;
    4. else (the required parts right in direction, not all in size, or some not measured here): partly.
    No required part measured: not testable here."""
    required = [p.verdict for p in parts if p.required]
    optional = [p.verdict for p in parts if not p.required]
    assert required, "a claim has at least one required part"
    if all(v == NOT_TESTABLE for v in required):
        return NOT_TESTABLE
    if NOT_REPRODUCED in required:
        return NOT_REPRODUCED
    if INCONCLUSIVE in required:
        return INCONCLUSIVE
    if all(v == REPRODUCED for v in required):
        return PARTLY if NOT_REPRODUCED in optional else REPRODUCED
    return PARTLY


def direction_only(parts: Sequence[Judged], verdict: str) -> bool:
    """A row of ``parts`` is *direction only* when it is partly because some required part's size is not established
    (``Judged.direction_only``), none being outside its band (the others reproduced or not measured here): it passes on
    direction alone."""
    required = [p for p in parts if p.required]
    return (verdict == PARTLY and any(p.direction_only for p in required)
            and all(p.verdict in (REPRODUCED, NOT_TESTABLE) or p.direction_only for p in required))


# ---------------------------------------------------------------------------------------- intervals
def metric_score(key: str) -> Callable[[np.ndarray], np.ndarray]:
    """The corpus score of metric ``key`` (in points where the metric is a percentage) from summed statistics rows."""
    metric = metric_for(key)
    scale = 100.0 if metric.percent else 1.0
    return lambda summed: metric.scores_from_stats(np.atleast_2d(summed)) * scale


def paired_effect(base: np.ndarray, system: np.ndarray, score: Callable[[np.ndarray], np.ndarray], relative: bool,
                  unit: str, num_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, of: str = "segments") -> Effect:
    """system minus base from per-unit statistics (n, d): in score points, or relative to base in % (``relative``);
    the interval from a paired bootstrap over the units (sacreBLEU's resampling, ``simpe.stats``): segments of a
    stream, sentences of a study, or document blocks (``block_sums``: each block's statistics summed), ``of``."""
    base, system = np.asarray(base, dtype=np.float64), np.asarray(system, dtype=np.float64)  # (n, d)
    counts = resample_counts(base.shape[0], num_resamples, seed)  # (B, n)
    b_obs, s_obs = np.float64(score(base.sum(0))[0]), np.float64(score(system.sum(0))[0])  # numpy: x / 0 is inf, not an error
    b_res, s_res = bootstrap_scores(base, score, counts), bootstrap_scores(system, score, counts)  # (B,)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(100.0 * (s_obs / b_obs - 1.0) if relative else s_obs - b_obs)
        resampled = 100.0 * (s_res / b_res - 1.0) if relative else s_res - b_res
    resampled = resampled[np.isfinite(resampled)]
    if not np.isfinite(value) or resampled.size == 0:
        return Effect(float("nan"), float("nan"), float("nan"), base.shape[0], unit, of)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Effect(float(value), float(low), float(high), int(base.shape[0]), unit, of)


def block_sums(stats: np.ndarray, blocks: Sequence[str]) -> np.ndarray:
    """Per-segment statistics (n, d) summed per block of consecutive segments with the same id (a document):
    (blocks, d). A score from summed statistics is the same on either; a bootstrap over the blocks resamples
    documents, whose segments cluster (R1 counts a word's second occurrence, often in the same document)."""
    starts = [i for i in range(len(blocks)) if i == 0 or blocks[i] != blocks[i - 1]]
    return np.add.reduceat(np.asarray(stats, dtype=np.float64), starts, axis=0)  # (blocks, d)


def leave_one_out(base: np.ndarray, system: np.ndarray, score: Callable[[np.ndarray], np.ndarray], relative: bool) -> np.ndarray:
    """system minus base (points, or relative %) with each unit (a row of (n, d) statistics: a document block) left
    out in turn: (n,). The unit whose absence moves the effect most is what one document contributes."""
    base, system = np.asarray(base, dtype=np.float64), np.asarray(system, dtype=np.float64)  # (n, d)
    b, s = score(base.sum(0) - base), score(system.sum(0) - system)  # (n,)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * (s / b - 1.0) if relative else s - b


def clustered_difference(a: Sequence[tuple[float, int]], b: Sequence[tuple[float, int]], unit: str, of: str,
                         num_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Effect:
    """mean(a) − mean(b) of values that come in clusters (value, cluster id): the perturbations of one source sentence.
    The bootstrap resamples clusters (the ids of ``a`` and ``b`` together: a sentence with both kinds is drawn once, so
    the difference is paired where they share a sentence), and each resample's means are over the values of the drawn
    clusters. ``n`` is the number of clusters, in ``of``."""
    ids = sorted({c for _, c in a} | {c for _, c in b})
    if not a or not b:
        return Effect(float("nan"), float("nan"), float("nan"), len(ids), unit, of)
    index = {c: j for j, c in enumerate(ids)}
    sums = np.zeros((2, 2, len(ids)))  # (a/b, sum/count, clusters)
    for side, values in enumerate((a, b)):
        for value, c in values:
            sums[side, 0, index[c]] += value
            sums[side, 1, index[c]] += 1
    counts = resample_counts(len(ids), num_resamples, seed)  # (B, clusters)
    drawn = np.einsum("bc,skc->bsk", counts, sums)  # (B, a/b, sum/count)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = drawn[:, :, 0] / drawn[:, :, 1]  # (B, a/b)
    diffs = means[:, 0] - means[:, 1]
    diffs = diffs[np.isfinite(diffs)]
    value = float(sums[0, 0].sum() / sums[0, 1].sum() - sums[1, 0].sum() / sums[1, 1].sum())
    low, high = np.percentile(diffs, [2.5, 97.5])
    return Effect(value, float(low), float(high), len(ids), unit, of)


def mean_effect(values: Sequence[float], unit: str, of: str = "sentences", scale: float = 1.0,
                num_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Effect:
    """The mean of per-unit values (differences already paired per unit) times ``scale``, with a bootstrap interval."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64) * scale  # (n,)
    if x.size == 0:
        return Effect(float("nan"), float("nan"), float("nan"), 0, unit, of)
    counts = resample_counts(x.size, num_resamples, seed)  # (B, n)
    means = counts @ x / x.size  # (B,)
    low, high = np.percentile(means, [2.5, 97.5])
    return Effect(float(x.mean()), float(low), float(high), int(x.size), unit, of)


def share_effect(hits: int, n: int, centre: float, of: str) -> Effect:
    """A share (hits of n, in %) minus ``centre`` points, with the Wilson score 95 % interval: a proportion of few units
    (a percentile bootstrap of five equal values has no width)."""
    if n == 0:
        return Effect(float("nan"), float("nan"), float("nan"), 0, "points", of)
    p = hits / n
    z2 = Z95 * Z95
    mid = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Effect(100 * p - centre, 100 * (mid - half) - centre, 100 * (mid + half) - centre, n, "points", of)


def pearson_effect(r: float, n: int) -> Effect:
    """Pearson's r over ``n`` systems with its Fisher-z 95 % interval."""
    if n <= 3 or abs(r) >= 1:
        return Effect(r, -1.0 if n <= 3 else r, 1.0 if n <= 3 else r, n, "r", "systems")
    z, se = math.atanh(r), 1 / math.sqrt(n - 3)
    return Effect(r, math.tanh(z - Z95 * se), math.tanh(z + Z95 * se), n, "r", "systems")


def systems_to_decide(r: float) -> int:
    """Systems at which a Pearson r of this size would have a Fisher-z interval that excludes zero."""
    return math.ceil(3 + (Z95 / math.atanh(abs(r))) ** 2) + 1
