"""Decisions among floats that agree up to rounding noise: one tolerance, one rule for ties.

The same float computed two ways (another CPU kernel set, another thread count, another batch
shape) agrees only up to rounding: AVX2 and plain kernels gave lasso step norms that differ by
3.5e-8 relative on the same segment. A decision that compares such values (a greedy budget, a
ranking, an argmax, the k nearest) must not hang on those last bits, or the run it decides
differs from machine to machine for no reason a researcher could see.

So every such decision in simpe goes through this module:

* Two values are **tied** when ``|a - b| <= REL * max(|a|, |b|) + atol``. ``REL = 1e-5`` is
  about 84 float32 ulps (float32's epsilon is 1.19e-7): two hundred times the measured
  disagreement between kernel sets, far below any difference that carries information (a
  log-probability 1e-5 relative apart is a probability ratio of ~1.0001). ``atol`` is each
  call site's floor for values near zero (``SCORE_ATOL`` for log-probabilities, whose rounding
  is absolute, not relative, when they are near 0).
* Ranking with ties: sort, then split the sorted values where two neighbours are **not**
  tied (single linkage). Values that agree to the noise always share a group, whatever
  order the noise put them in; the group is then ordered by a stable key the call site
  names (a name, a token sequence, a row index). A decision can still move only where two
  neighbours differ by almost exactly the tolerance, a hundred times further apart than
  the noise.

A threshold against one continuous value (perplexity <= 2.0, a step norm > 0) is not a tie
between candidates: no rule can make it immune to rounding, and simpe leaves those as they are
(docs/reproducibility.md names them).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

REL = 1e-5  # relative tolerance: ~84 float32 ulps
SCORE_ATOL = 1e-6  # absolute floor for log-probabilities (nats): float32 log-softmax rounds at ~1e-7 absolute


def margin(value: float, atol: float = 0.0) -> float:
    """How far from ``value`` another value is still tied with it."""
    return REL * abs(value) + atol


def tied(a: float, b: float, atol: float = 0.0) -> bool:
    """``a`` and ``b`` agree to within rounding noise (see the module docstring); an infinite value
    is tied only with itself."""
    if a == b:
        return True
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= REL * max(abs(a), abs(b)) + atol


def rank(*columns: Sequence[float], key: Sequence[Any] | None = None, atol: float = 0.0) -> list[int]:
    """Indices ordered by ``columns[0]`` descending, tied values by ``columns[1]`` descending, and so on,
    each compared with the tolerance; values tied in every column by ``key`` ascending, then by index.

    ``key`` is compared exactly (a name, a token tuple, a row number): it must be a stable property
    of the item, never another float computed by the model.
    """
    n = len(columns[0]) if columns else len(key or ())
    if any(len(c) != n for c in columns) or (key is not None and len(key) != n):
        raise ValueError("rank: columns and key must have the same length")

    def order(items: list[int], level: int) -> list[int]:
        if level == len(columns):
            return sorted(items, key=(lambda i: (key[i], i)) if key is not None else (lambda i: i))
        values = columns[level]
        items = sorted(items, key=lambda i: -values[i])
        result: list[int] = []
        start = 0
        for j in range(1, len(items) + 1):
            if j == len(items) or not tied(values[items[j - 1]], values[items[j]], atol):
                group = items[start:j]
                result += order(group, level + 1) if len(group) > 1 else group
                start = j
        return result

    return order(list(range(n)), 0)


def top(values: torch.Tensor, n: int, tiebreak: torch.Tensor | None = None, atol: float = 0.0) -> torch.Tensor:
    """Indices of the ``n`` largest of the 1-D ``values``; the group tied at the cut is ordered by
    ``tiebreak`` (larger first, with the tolerance), then by index (lower first). Largest first.

    Only the cut decides which indices are in: the search looks at a window of the largest
    values and widens it while the tied group at the cut reaches its end.
    """
    total = values.numel()
    n = max(0, min(n, total))
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=values.device)
    window = min(total, n + max(16, n // 8))
    while True:
        vals, idx = torch.topk(values, window)  # (window,) descending, (window,)
        if n == window == total:
            return idx
        # tied_next[j]: vals[j] and vals[j + 1] agree to the tolerance
        bound = torch.maximum(vals[:-1].abs(), vals[1:].abs()) * REL + atol  # (window - 1,)
        tied_next = ((vals[:-1] - vals[1:]) <= bound) & torch.isfinite(bound)  # (window - 1,); -inf ties only -inf
        tied_next |= vals[:-1] == vals[1:]
        if n == window or not bool(tied_next[n - 1]):
            return idx[:n]
        breaks = (~tied_next[n - 1:]).nonzero()  # where the group holding position n - 1 ends
        if len(breaks) == 0 and window < total:
            window = min(total, 2 * window)
            continue
        hi = n - 1 + (int(breaks[0]) if len(breaks) else window - n)  # last position of the group (inclusive)
        before = (~tied_next[: n - 1]).nonzero()
        lo = int(before[-1]) + 1 if len(before) else 0  # first position of the group
        group = idx[lo: hi + 1]
        group_list = group.tolist()
        columns = [tiebreak[group].tolist()] if tiebreak is not None else []
        chosen = [group_list[i] for i in rank(*columns, key=group_list, atol=atol)] if columns else sorted(group_list)
        return torch.cat([idx[:lo], torch.tensor(chosen[: n - lo], dtype=torch.long, device=values.device)])


def smallest_per_row(values: torch.Tensor, k: int, magnitude: Callable[[torch.Tensor], torch.Tensor] | None = None,
                     later_first: bool = True, order: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` smallest of each row of ``values`` (rows, n): (values, indices), ascending except
    where a tie at the cut was resolved.

    Entries tied at the cut are taken by index, the latest first (``later_first``) or the earliest.
    ``magnitude``, if given, maps (rows, w) indices to the magnitude each value's rounding is
    relative to (for a difference of large terms, such as a partial squared distance, the terms'
    size, not the difference's); otherwise the values' own magnitude. ``order`` (rows, n), if given,
    non-negative integers: what "later" means for tied entries in place of the column index (the
    entry each column holds, when the columns are not in entry order).
    """
    if k == 1 and magnitude is None and order is None and values.shape[1] > 1:
        return _smallest_one(values, later_first)
    return _smallest(values, k, magnitude, later_first, order)


def _smallest_one(values: torch.Tensor, later_first: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``smallest_per_row`` with k = 1 and the values' own magnitude, as a minimum pass instead of a top-k.

    A value v tied with the minimum m (``v - m <= REL * max(|v|, |m|)``) lies within ``REL / (1 - REL) * |m|``
    of it, so a row with no other value within twice that has no tie at the cut and its answer is the minimum,
    as ``_smallest`` returns it. The other rows (a tie, a near miss, or NaN, whose minimum is NaN) go through
    ``_smallest``, whose answer for a row depends on that row alone. The same values and indices, bit for bit
    (``tests/unit/test_ties.py``); k-means assigns every datastore entry to its nearest centroid this way."""
    low, index = values.min(dim=1, keepdim=True)  # (rows, 1), (rows, 1)
    within = values <= low + low.abs() * (2 * REL)  # (rows, n): the minimum itself counts once
    flagged = (within.sum(dim=1) != 1).nonzero().squeeze(1)  # (flagged,)
    if flagged.numel():
        low, index = low.clone(), index.clone()
        low[flagged], index[flagged] = _smallest(values.index_select(0, flagged), 1, None, later_first, None)
    return low, index


FEW_ROWS = 16  # up to this many rows (a decoding step's kNN search: a beam's), the cut is checked on Python floats first
# a tie test's tolerance widened by the float32 rounding of the test's own few operations (a few units of 2**-24
# relative), bounded: a check on Python floats with this margin catches every pair the float32 test calls tied
# (here and in the beam's cut, simpe.decoders.beam._may_tie)
GATE = 1.0 + 1e-6


def _untied_at_cut(vals: torch.Tensor, idx: torch.Tensor, k: int, magnitude: Callable[[torch.Tensor], torch.Tensor] | None) -> bool:
    """Whether no row of ``_smallest``'s window (``vals``, ``idx``: (rows, window) ascending) has its k-th and
    (k+1)-th values tied, decided on Python floats with the float32 rounding of ``_smallest``'s own test as margin:
    True only where that test finds no tie either (a difference over ``REL * GATE`` of the magnitude is over
    ``REL`` of it in float32 too); NaN, infinities and near misses answer False, and the test decides."""
    pair = vals[:, k - 1: k + 1]  # (rows, 2)
    scale = (pair.abs() if magnitude is None else magnitude(idx[:, k - 1: k + 1])).tolist()  # (rows, 2)
    return all(b - a > max(sa, sb) * REL * GATE for (a, b), (sa, sb) in zip(pair.tolist(), scale))


def _smallest(values: torch.Tensor, k: int, magnitude: Callable[[torch.Tensor], torch.Tensor] | None, later_first: bool,
              order: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``smallest_per_row`` by a top-k window grown until the group tied at the cut fits in it."""
    rows, total = values.shape
    k = min(k, total)
    window = min(total, k + max(8, k))
    while True:
        vals, idx = torch.topk(values, window, dim=1, largest=False)  # (rows, window) ascending
        if k == total or window == k:
            break
        if rows <= FEW_ROWS and _untied_at_cut(vals, idx, k, magnitude):
            break  # what the test below finds too, in a few Python comparisons instead of a dozen torch operations
        scale = vals.abs() if magnitude is None else magnitude(idx)  # (rows, window)
        size = torch.maximum(scale[:, 1:], scale[:, :-1])  # (rows, window - 1)
        tied_next = ((vals[:, 1:] - vals[:, :-1]) <= size * REL) | (vals[:, 1:] == vals[:, :-1])  # (rows, window - 1)
        if not bool(tied_next[:, k - 1].any()):
            break  # no row has a tie at the cut: topk's own first k are the answer
        group = torch.cat([torch.zeros((rows, 1), dtype=torch.long, device=values.device),
                           (~tied_next).long().cumsum(dim=1)], dim=1)  # (rows, window) group number along each row
        if window < total and bool((group[:, k - 1] == group[:, -1]).any()):
            window = min(total, 2 * window)  # a group at the cut may go on past the window
            continue
        position = idx if order is None else order.gather(1, idx)  # (rows, window)
        span = total if order is None else int(order.max()) + 1
        order_key = position if not later_first else (span - 1 - position)
        composite = group * span + order_key  # (rows, window): by group, then by index
        pick = composite.argsort(dim=1)[:, :k]  # (rows, k)
        return vals.gather(1, pick), idx.gather(1, pick)
    return vals[:, :k], idx[:, :k]
