"""Seeded ancestral sampling: N independent samples y ~ P(y|x), drawn token by token.

All samples of one source run as one batch over the shared (cached) encoder output, one row
per distinct prefix: samples that agree so far share a row, and finished samples leave the
batch (``draw_samples``). Each draw takes one uniform number (inverse CDF), not one random
number per vocabulary entry as ``torch.multinomial`` does: sample j's t-th token takes the
number (j, t) of a table drawn up front. Randomness comes from a local ``torch.Generator``
seeded with ``seed``, so a call never touches (or depends on) torch's global RNG state, and
the same model, source and seed give the same samples on the same device and torch build;
on another CPU kernel set a draw can fall on the other side of a token boundary (rounding of
the model's probabilities), which then changes that one sample (docs/reproducibility.md).

The pad / decoder-start token is never drawn: the next token is sampled from the model's
distribution restricted to the other tokens (renormalised for the draw only); a sample's
score stays its raw log P(y|x). At the length limit the sample ends with EOS.

Output: all N samples (duplicates kept; ``unique=True`` keeps the first of each) sorted by
descending score, ties (to rounding noise, ``simpe.ties``) in sample order;
``info["draw_order"]`` gives each
hypothesis' position in that order and ``info["unique"]`` the number of distinct samples.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from simpe.decoders.base import DECODERS, Decoder, DecodeResult, Hypothesis
from simpe.decoders.incremental import LengthLimit, Lockstep, LockstepDecoder, Source, check_int
from simpe.ties import SCORE_ATOL, rank

DRAW_ROWS = 32  # rows whose draws are taken together (_draw)


def _next_tokens(logp: torch.Tensor, special: Any, last: bool, uniform: torch.Tensor, counts: list[int]
                 ) -> tuple[list[list[int]], list[list[float]]]:
    """Draw one next token for each uniform number of each row (inverse CDF); returns (tokens, their raw
    log-probabilities) per row.

    Args:
        logp: (rows, vocab) raw log-probabilities; pad/start (and, when ``last``, all but EOS) get weight 0.
        uniform: (rows, most) float64: row r's first ``counts[r]`` entries are the uniform numbers in [0, 1)
            of the samples on it; the rest is padding (drawn for, and dropped).
    """
    drawn = torch.cat([_draw(logp[first:first + DRAW_ROWS], special, last, uniform[first:first + DRAW_ROWS])
                       for first in range(0, logp.shape[0], DRAW_ROWS)])  # (rows, most)
    if last:  # every stop token at probability 0 (a kNN mixture with lambda 1): the sample still ends, at the first one
        stops = list(special.stops)
        drawn = torch.where(torch.isin(drawn, torch.tensor(stops, device=drawn.device)), drawn, stops[0])
    values = logp.gather(1, drawn).double().tolist()  # (rows, most)
    tokens = drawn.tolist()
    return [row[:count] for row, count in zip(tokens, counts)], [row[:count] for row, count in zip(values, counts)]


def _draw(logp: torch.Tensor, special: Any, last: bool, uniform: torch.Tensor) -> torch.Tensor:
    """``_next_tokens``' draws for a few rows (``DRAW_ROWS``: their float64 cumulative sums stay in the CPU's cache,
    where those of a whole batch would be fresh memory; each row's sums and draws are the same either way)."""
    weights = logp.exp()  # (rows, vocab) probabilities (logp is normalised: no overflow)
    if last:
        stops = list(special.stops)
        keep = weights[:, stops].clone()  # (rows, stops)
        weights.zero_()
        weights[:, stops] = keep
    elif special.forbidden:
        weights[:, list(special.forbidden)] = 0.0
    cumulative = torch.cumsum(weights.double(), dim=-1)  # (rows, vocab)
    total = cumulative[:, -1:].contiguous()  # (rows, 1)
    drawn = torch.searchsorted(cumulative, uniform * total, right=True)  # (rows, most)
    return torch.minimum(drawn, torch.searchsorted(cumulative, total, right=False))  # rounding at the top: the last token with weight


def draw_samples_many(model: Any, sources: list[Source], samples: int, seeds: list[int]) -> list[tuple[list[Hypothesis], int]]:
    """Draw ``samples`` ancestral samples for each of several encoded sources, in one decoder batch.

    Sample j of a source draws its t-th token with the uniform number ``U[j, t]`` of a (samples,
    the source's max_len) table drawn up front from the source's own generator (seed ``seeds[i]``), by inverse
    CDF (``searchsorted`` on the cumulative probabilities of its prefix's row). The batch holds one
    row per distinct prefix, with the samples on it. This is ancestral sampling exactly: every
    sample's next token is an independent draw from P(. | its prefix); sharing rows only saves
    the forward passes of repeated prefixes, and batching sources only shares the passes. A
    source's samples do not depend on the other sources of the batch (up to float noise of the
    batch shape).

    Why a table per sample: a draw whose uniform number falls within rounding distance of a
    token's CDF boundary can go either way on another CPU kernel set (the model's
    log-probabilities differ there by ~1e-5). With the table, such a flip changes that one
    sample's continuation only; drawing the numbers row by row instead would shift every later
    sample of the sentence onto other numbers.

    Returns:
        per source: (its samples in sample order, expansions = decoder rows run).
    """

    n = len(sources)
    special = sources[0].special
    device = sources[0].device
    longest = max(s.max_len for s in sources)
    tables = []  # per source: (samples, its max_len) uniform numbers (its own length: batching changes nothing)
    for seed, src in zip(seeds, sources):
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)
        tables.append(torch.rand((samples, src.max_len), generator=generator, dtype=torch.float64, device=device))
    rows_of = Lockstep(model, sources)
    # rows grouped by source: row_source, and per source its rows' prefixes, sample ids and scores
    row_source = list(range(n))
    prefixes: list[list[tuple[int, ...]]] = [[()] for _ in range(n)]
    members: list[list[list[int]]] = [[list(range(samples))] for _ in range(n)]
    scores: list[list[float]] = [[0.0] for _ in range(n)]
    finished: list[dict[int, Hypothesis]] = [{} for _ in range(n)]
    expansions = [0] * n
    tokens_in = None  # step 0 feeds the target prefixes
    for position in range(longest):
        rows = len(row_source)
        logp = rows_of.step(tokens_in)  # (rows, vocab)
        keep: list[int] = []
        next_tokens: list[int] = []
        next_source: list[int] = []
        first = 0
        while first < rows:
            i = row_source[first]
            block = len(prefixes[i])
            expansions[i] += block
            # each row's samples' numbers for this position, in one gather (rows padded with their first sample's)
            counts = [len(ids) for ids in members[i]]
            most = max(counts)
            index = torch.tensor([ids + ids[:1] * (most - len(ids)) for ids in members[i]], dtype=torch.long,
                                 device=device)  # (block, most)
            drawn, values = _next_tokens(logp[first:first + block], special, position == sources[i].max_len - 1,
                                         tables[i][:, position][index], counts)  # (block, most) uniform numbers
            branches = []  # (the row it continues, its prefix, its samples, its score)
            for row, (prefix, score, ids) in enumerate(zip(prefixes[i], scores[i], members[i])):
                branches += [(first + row, *branch) for branch in
                             _branch(prefix, score, ids, drawn[row], values[row], special.stops, finished[i])]
            keep += [branch[0] for branch in branches]
            next_tokens += [branch[1][-1] for branch in branches]
            next_source += [i] * len(branches)
            prefixes[i] = [branch[1] for branch in branches]
            members[i] = [branch[2] for branch in branches]
            scores[i] = [branch[3] for branch in branches]
            first += block
        if not keep:
            break
        rows_of.select(keep, next_source)  # (live rows,) repeats allowed
        tokens_in = torch.tensor(next_tokens, dtype=torch.long, device=device)  # (live rows,)
        row_source = next_source
    assert all(len(done) == samples and all(h.tokens[-1] in special.stops for h in done.values()) for done in finished)
    return [([done[j] for j in range(samples)], expanded) for done, expanded in zip(finished, expansions)]


def _branch(prefix: tuple[int, ...], score: float, ids: list[int], drawn: list[int], values: list[float], stops: Any,
            finished: dict[int, Hypothesis]) -> list[tuple[tuple[int, ...], list[int], float]]:
    """One row's samples after their next tokens: those that drew a stop token go to ``finished``; the others
    group by token (first-drawn order) into the rows of the next step: (prefix, samples, score) each."""
    tally: dict[int, list[Any]] = {}  # token -> [its log-probability, the samples that drew it]
    for sample, token, value in zip(ids, drawn, values):
        tally.setdefault(token, [value, []])[1].append(sample)
    branches = []
    for token, (value, drew) in tally.items():
        if token in stops:
            for sample in drew:
                finished[sample] = Hypothesis((*prefix, token), score + value)
        else:
            branches.append(((*prefix, token), drew, score + value))
    return branches


def draw_samples(model: Any, source: Source, samples: int, seed: int) -> tuple[list[Hypothesis], int]:
    """Draw ``samples`` ancestral samples of one source (``draw_samples_many``); returns (samples, expansions)."""
    return draw_samples_many(model, [source], samples, [seed])[0]


@DECODERS.add("sampling")
class SamplingDecoder(LockstepDecoder):
    """``samples`` seeded ancestral samples, sorted by model score (best first)."""

    def __init__(self, samples: int = 200, seed: int = 0, unique: bool = False, max_len_a: float = 2.0,
                 max_len_b: int = 10, max_len_cap: int = 256) -> None:
        check_int("samples", samples, 1)
        check_int("seed", seed, 0)
        self.samples, self.seed, self.unique = samples, seed, bool(unique)
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        """``samples`` samples drawn with seed ``seed + index``."""
        return self.decode_batch(model, [input_ids], start=index)[0]

    def decode_source(self, model: Any, source: Source, *, t0: float | None = None) -> DecodeResult:
        if source.constraint is not None:  # sampling draws from the unconstrained distribution: no typed prefix
            return Decoder.decode_source(self, model, source, t0=t0)
        return super().decode_source(model, source, t0=t0)

    def decode_sources(self, model: Any, sources: list[Source], *, start: int = 0, t0: float | None = None) -> list[DecodeResult]:
        """``decode_batch`` of sources encoded already (``incremental.encode`` with this decoder's length limit):
        source j draws with seed ``seed + start + j`` and gets what ``decode`` gives it alone. Call inside
        ``decoding(model)``; ``t0``: when the call's clock started (default: now)."""
        if not sources:
            return []
        t0 = time.perf_counter() if t0 is None else t0
        found = draw_samples_many(model, sources, self.samples, [self.seed + start + j for j in range(len(sources))])
        seconds = (time.perf_counter() - t0) / len(sources)
        return [self._result(drawn, expansions, seconds) for drawn, expansions in found]

    def _result(self, drawn: list[Hypothesis], expansions: int, seconds: float) -> DecodeResult:
        order = list(range(len(drawn)))
        distinct = len({h.tokens for h in drawn})
        if self.unique:
            seen: set[tuple[int, ...]] = set()
            order = [i for i in order if not (drawn[i].tokens in seen or seen.add(drawn[i].tokens))]  # type: ignore[func-returns-value]
        # by score; scores tied to rounding noise (simpe.ties: copies of one sample among them) in sample order
        order = [order[i] for i in rank([drawn[i].score for i in order], key=order, atol=SCORE_ATOL)]
        return DecodeResult([drawn[i] for i in order], exact=None, expansions=expansions, seconds=seconds,
                            info={"draw_order": order, "unique": distinct, "samples": len(drawn)})

    def params(self) -> dict[str, Any]:
        return {"samples": self.samples, "seed": self.seed, "unique": self.unique, **self.limit.params()}
