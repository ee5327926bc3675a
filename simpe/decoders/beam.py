"""Beam search (plain, as in Hugging Face ``generate``) and the search loop min-heap beam shares.

Plain beam search with raw scores (no length normalisation), matching ``generate(num_beams=B,
length_penalty=0.0, early_stopping=False)``: at each step the 2B best continuations of the
live beams are ranked; an EOS continuation among the first B becomes a finished hypothesis
(the best B finished are kept), the best B non-EOS continuations stay live. The search stops
when B hypotheses are finished and no live beam scores above the worst of them (scores only
fall, so nothing better can follow), or at the length limit (see incremental.py; there only
EOS may follow, with its true probability, where ``generate`` would force it with
probability 1).

Min-heap beam search (Yan et al. (2021), section 5; heap_beam.py) is the same loop, except that the
EOS continuation of *every* live beam at every step goes into a min-heap of capacity B,
which is the output; it keeps every hypothesis plain beam keeps, so its best score is never
lower.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from simpe.decoders import beam_device
from simpe.decoders.base import DECODERS, DecodeResult, Hypothesis
from simpe.decoders.incremental import NEG_INF, LengthLimit, Lockstep, LockstepDecoder, Source, check_int, decoding, encode, step_scores
from simpe.decoders.prefix import apply as apply_typed
from simpe.ties import GATE, REL, SCORE_ATOL, margin, rank, tied, top

StepHook = Callable[[int, list[tuple[int, ...]], list[float], torch.Tensor, torch.Tensor, Any], None]


def _best(allowed: torch.Tensor, scores: list[float], k: int) -> tuple[list[float], list[int], list[int]]:
    """The ``k`` best continuations of the live rows: (scores, rows, tokens), best first.

    Each row's own best ``k`` tokens first (the running score is the same for a whole row, so
    they are its best continuations too), then the best ``k`` of those ``rows * k``: the same
    continuations as ranking the whole (rows, vocab) table, without adding and sorting it all.
    The few sums are taken in Python: its floats are IEEE doubles, so ``score + value`` is the
    float64 sum (a float32 value is exact in float64). Scores tied to rounding noise
    (``simpe.ties``) are ranked by row (the better beam first), then token id, at both cuts.
    """
    vocab = allowed.shape[1]
    per_row = min(k, vocab)
    values, tokens = torch.topk(allowed, min(k + 1, vocab), dim=1)  # (rows, per_row + 1) sorted
    # one transfer of the few values to Python; the search then runs on floats there (a torch op on
    # a (rows, k) table costs as much as on a long one: about as much as the topk above, per op)
    value_rows, token_rows = values.tolist(), tokens.tolist()
    if per_row < vocab:  # a row whose k-th and (k+1)-th tokens tie: its k best chosen with the tie rule
        for row, row_values in enumerate(value_rows):
            if _may_tie(row_values[per_row - 1], row_values[per_row]):
                chosen = top(allowed[row], per_row, atol=SCORE_ATOL)  # (per_row,)
                token_rows[row][:per_row] = chosen.tolist()
                value_rows[row][:per_row] = allowed[row, chosen].tolist()
    cand_scores, cand_keys = [], []
    for row, (score, row_values, row_tokens) in enumerate(zip(scores, value_rows, token_rows)):
        for value, token in zip(row_values[:per_row], row_tokens[:per_row]):
            cand_scores.append(score + value)
            cand_keys.append((row, token))
    order = _ranked_head(cand_scores, cand_keys, k)
    return [cand_scores[i] for i in order], [cand_keys[i][0] for i in order], [cand_keys[i][1] for i in order]


def _may_tie(at: float, after: float) -> bool:
    """Whether a row's k-th and (k+1)-th values (``at`` >= ``after``, float32 read as floats) may be tied by
    ``simpe.ties``' rule as ``top`` evaluates it in float32 (``at - after <= max(|at|, |after|) * REL + SCORE_ATOL``,
    ``after`` finite). Taken with the float32 rounding of that test as margin, so every row ``top`` would
    call tied is caught; a row caught that ``top`` finds untied keeps its own topk order (a row's values are
    the same, and tokens of exactly equal values are ordered by ``_ranked_head``'s key)."""
    return math.isfinite(after) and at - after <= (max(abs(at), abs(after)) * REL + SCORE_ATOL) * GATE


def _ranked_head(values: list[float], keys: list[Any], k: int) -> list[int]:
    """``simpe.ties.rank(values, key=keys, atol=SCORE_ATOL)[:k]``, ranking only as far as the first ``k`` reach:
    sorted best first, split where neighbours are not tied (``simpe.ties.tied``), each tied group by key, then
    index; the groups past the k-th item are never split or ordered."""
    items = sorted(range(len(values)), key=lambda i: -values[i])
    result: list[int] = []
    start = 0
    for j in range(1, len(items) + 1):
        if j == len(items) or not tied(values[items[j - 1]], values[items[j]], SCORE_ATOL):
            group = items[start:j]
            result += sorted(group, key=lambda i: (keys[i], i)) if len(group) > 1 else group
            if len(result) >= k:
                break
            start = j
    return result[:k]


def _keep_best(finished: list[tuple[float, tuple[int, ...]]], beam_size: int) -> None:
    """Rank finished hypotheses best first in place (ties to rounding noise: by tokens) and keep ``beam_size``."""
    order = rank([f[0] for f in finished], key=[f[1] for f in finished], atol=SCORE_ATOL)[:beam_size]
    finished[:] = [finished[i] for i in order]


def _beam_step(logp: torch.Tensor, seqs: list[tuple[int, ...]], scores: list[float], finished: list[tuple[float, tuple[int, ...]]],
               beam_size: int, heap: bool, special: Any, last: bool,
               overwrite: bool = False) -> tuple[list[tuple[int, int, float]], bool]:
    """One step of one sentence's beam: updates ``finished``; returns (live (row, token, score), done).
    ``overwrite``: ``logp`` is not needed after this step and may be masked in place."""
    allowed = step_scores(logp, special, last=last, overwrite=overwrite)  # (rows, vocab), written here
    live: list[tuple[int, int, float]] = []  # (row, token, score)
    if heap:
        for stop in special.stops:  # every stop token ends a candidate (EOS; a chat template's end of turn)
            ends = [score + value for score, value in zip(scores, allowed[:, stop].tolist())]  # float64 sums
            finished += [(value, seqs[row] + (stop,)) for row, value in enumerate(ends) if value > NEG_INF]
        _keep_best(finished, beam_size)  # the min-heap of capacity B, kept as a ranked list (the tie rule needs ranks)
        for stop in special.stops:
            allowed[:, stop] = NEG_INF
        for value, row, token in zip(*_best(allowed, scores, beam_size)):
            if value == NEG_INF:
                break
            live.append((row, token, value))
    else:
        for rank, (value, row, token) in enumerate(zip(*_best(allowed, scores, 2 * beam_size))):
            if value == NEG_INF:
                break
            if token in special.stops:
                if rank < beam_size:
                    finished.append((value, seqs[row] + (token,)))
            elif len(live) < beam_size:
                live.append((row, token, value))
        _keep_best(finished, beam_size)
    full = len(finished) >= beam_size
    worst = finished[-1][0] if full else NEG_INF
    # scores only fall: done when no live beam can reach the worst finished one (or tie with it, to the noise)
    done = not live or (full and live[0][2] < worst - margin(worst, SCORE_ATOL))
    return live, done


def beam_search_many(model: Any, sources: list[Source], beam_size: int, heap: bool = False,
                     on_step: StepHook | None = None, even: bool = False) -> list[tuple[list[Hypothesis], int, int]]:
    """Plain (``heap=False``) or min-heap beam search on several encoded sources in lockstep.

    The live beams of all sources share each forward pass (rows grouped by source; padded
    source positions are masked in cross-attention); every source keeps its own beam, length
    limit and stopping rule, so each result equals searching that source alone (up to float
    noise of the batch shape).

    Args:
        on_step: called after each forward pass, per source, with (source index, its live
            prefixes, their scores, their (rows, vocab) next-token log-probabilities, their
            (rows, fed, layers, 2, heads, head_dim) self-attention states of the positions just fed (the
            whole target prefix at step 0, one position after), the cache); the exact top-k search
            reuses these expansions.
        even: every source keeps ``beam_size`` rows after step 0, whatever its search needs (a run axis's passes
            take equal blocks of rows: ``simpe.models.stacked``): a source with fewer live beams, or one whose
            search has ended while others go on, fills its block with copies of one of its rows, whose outputs are
            never read. A source's rows are then computed in blocks of one size in a group and alone, so its search
            is the same bit for bit (``simpe.loop.group``).
    Returns:
        per source: (hypotheses best first, expansions = decoder rows run, steps).
    """
    # plain beam off the CPU, without a step hook, a typed prefix or a memo, of at most 32 beams (beam_device.usable):
    # the search's state stays on the device; otherwise (min-heap beam, the exact search's hook, a constraint or memo
    # read on the host, a wide beam, the CPU) the host path below
    if beam_device.usable(sources, beam_size, heap, on_step is not None):
        found = beam_device.search(model, sources, beam_size)
        if found is not None:
            return found  # else a tied group ran past a row's window: the host path below decides it
    n = len(sources)
    special = sources[0].special
    device = sources[0].device
    rows_of = Lockstep(model, sources, reuse=on_step is None)  # a step hook reads every step's states: run them all
    row_source = list(range(n))  # source of each cache row; rows are grouped by source
    tokens_in = None  # step 0 feeds the target prefixes
    seqs: list[list[tuple[int, ...]]] = [[()] for _ in range(n)]
    scores: list[list[float]] = [[0.0] for _ in range(n)]
    finished: list[list[tuple[float, tuple[int, ...]]]] = [[] for _ in range(n)]  # best first
    expansions, steps = [0] * n, [0] * n
    real = [1] * n  # (even) the live rows at the head of each source's block; 0 once its search has ended
    for position in range(max(s.max_len for s in sources)):
        rows = len(row_source)
        logp = rows_of.step(tokens_in)  # (rows, vocab)
        states = rows_of.states() if on_step is not None else None  # (rows, fed, layers, 2, heads, head_dim)
        keep: list[int] = []
        next_tokens: list[int] = []
        next_source: list[int] = []
        first = 0
        while first < rows:
            i = row_source[first]
            last_row = first
            while last_row + 1 < rows and row_source[last_row + 1] == i:
                last_row += 1
            if even:
                end = last_row + 1  # the whole block, filler rows included
                if not real[i]:  # ended: its block stays, all filler, while another source searches on
                    keep += [first] * beam_size
                    next_tokens += [special.eos] * beam_size
                    next_source += [i] * beam_size
                    first = end
                    continue
                last_row = first + real[i] - 1
            block = slice(first, last_row + 1)
            apply_typed(sources[i], logp[block], seqs[i])
            if on_step is not None:
                on_step(i, seqs[i], scores[i], logp[block], states[block], rows_of.cache)
            expansions[i] += last_row + 1 - first
            steps[i] += 1
            # without a step hook nothing else reads these log-probabilities: they are masked in place
            live, done = _beam_step(logp[block], seqs[i], scores[i], finished[i], beam_size, heap, special,
                                    last=position == sources[i].max_len - 1, overwrite=on_step is None)
            if not done:
                keep += [first + row for row, _, _ in live]
                next_tokens += [tok for _, tok, _ in live]
                next_source += [i] * len(live)
                seqs[i] = [seqs[i][row] + (tok,) for row, tok, _ in live]
                scores[i] = [value for _, _, value in live]
            if even:
                real[i] = 0 if done else len(live)
                filler = beam_size - real[i]
                keep += [first] * filler  # copies of the block's first row, fed EOS: never read
                next_tokens += [special.eos] * filler
                next_source += [i] * filler
                first = end
                continue
            first = last_row + 1
        if not keep or (even and not any(real)):
            break
        rows_of.select(keep, next_source)
        tokens_in = torch.tensor(next_tokens, dtype=torch.long, device=device)  # (live rows,)
        row_source = next_source
    results = []
    for i in range(n):
        if not finished[i]:  # no complete hypothesis has probability > 0 (a kNN mixture with lambda 1 gives EOS none):
            finished[i] = [(NEG_INF, seqs[i][0] + (special.eos,))]  # the best prefix, ended, at its true score -inf
        results.append(([Hypothesis(tokens, score) for score, tokens in finished[i]], expansions[i], steps[i]))
    return results


def beam_search(model: Any, source: Source, beam_size: int, heap: bool = False) -> tuple[list[Hypothesis], int, int]:
    """Plain or min-heap beam search on one encoded source: (hypotheses best first, expansions, steps)."""
    return beam_search_many(model, [source], beam_size, heap)[0]


class _BeamBase(LockstepDecoder):
    heap = False

    def __init__(self, beam_size: int = 5, max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        check_int("beam_size", beam_size, 1)
        self.beam_size = beam_size
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        t0 = time.perf_counter()
        with decoding(model):
            source = encode(model, input_ids, self.limit)
            hyps, expansions, steps = beam_search(model, source, self.beam_size, heap=self.heap)
        return DecodeResult(hyps, exact=None, expansions=expansions, seconds=time.perf_counter() - t0,
                            info={"steps": steps, "max_len": source.max_len})

    def decode_sources(self, model: Any, sources: list[Source], *, start: int = 0, t0: float | None = None,
                       even: bool = False) -> list[DecodeResult]:
        """``decode_batch`` of sources encoded already (``incremental.encode`` with this decoder's length limit).
        Call inside ``decoding(model)``; ``t0``: when the call's clock started (default: now); ``even``: every source
        keeps ``beam_size`` rows (``beam_search_many``; a lockstep group's runs)."""
        if not sources:
            return []
        t0 = time.perf_counter() if t0 is None else t0
        found = beam_search_many(model, sources, self.beam_size, heap=self.heap, even=even)
        seconds = (time.perf_counter() - t0) / len(sources)
        return [DecodeResult(hyps, exact=None, expansions=expansions, seconds=seconds,
                             info={"steps": steps, "max_len": source.max_len})
                for (hyps, expansions, steps), source in zip(found, sources)]

    def params(self) -> dict[str, Any]:
        return {"beam_size": self.beam_size, **self.limit.params()}


@DECODERS.add("beam")
class BeamDecoder(_BeamBase):
    """Plain beam search; up to ``beam_size`` finished hypotheses, best first."""

    def __init__(self, beam_size: int = 5, max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        super().__init__(beam_size, max_len_a, max_len_b, max_len_cap)
