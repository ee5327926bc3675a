"""Plain beam search with its whole state on the model's device: no host read inside a decoding step (issue 67).

``simpe.decoders.beam`` ranks each step's candidates in Python: it reads the step's top-k values and tokens back,
keeps the finished hypotheses as Python lists, decides whether a source is done there, and uploads the next tokens
and the kept rows. On a GPU each of those is a synchronisation: the host waits for the device, the device then waits
for the host's next launch. This module takes the same decisions with tensor operations on the device, so that a
step only queues work; the host reads one small tensor every ``CHECK_EVERY`` steps (whether any source still searches)
and the results once at the end.

The stop check every ``CHECK_EVERY`` steps costs up to ``CHECK_EVERY - 1`` passes after the last source is done
(they change nothing); a step's own work is about 150 to 200 small kernel launches beside the model's (make bench-launches),
on fixed shapes with no read back: what a captured CUDA graph can replay (issue 67, item 2). The model's passes run
under ``simpe.decoders.cross.known_masks``: transformers would otherwise read each pass's attention mask back to find
that it masks nothing.

Layout: after step 0 every source holds a block of ``beam_size`` rows, its live beams first in rank order, then dead
rows (score -inf, fed EOS, a copy of the block's first row, never read): the rows ``beam_search_many(..., even=True)``
runs, fixed shapes whatever the search needs. The state, per source: the live prefixes (beam_size, max_len) padded
with -1, their float64 scores, the finished hypotheses (beam_size, max_len) padded with -1 and their scores (-inf
for an empty slot), whether it still searches, its expansions and steps. A source that is done is frozen: the steps
run after it (until the next check) compute its rows but every update of its state is masked off, so its finished
list, step count and expansion count are those of the step that ended it, as on the host.

The decisions are the host path's, operation for operation (``simpe.ties``' rule, in the same float types):

* **A row's best k tokens** (``beam._best``; k = 2 beam_size): a top-k over a window of ``k + max(16, k // 8)``;
  where the k-th and (k+1)-th values are tied (``ties.top``'s float32 test, the one ``beam._may_tie`` gates), the
  tied group at the cut is every token whose value lies between the group's first and last value in the window (a
  group's neighbours are untied, so strictly apart) and its smallest token ids fill the cut, as ``ties.top`` takes
  them. A group that reaches the window's end takes every value equal to the window's last; if the next lower
  distinct value is tied to it the chain would go on past the window: the step flags it, and ``search`` answers
  None at the next check (the caller then searches on the host; at beam 5, 16 or more distinct values each within
  1e-5 of the next below a row's 10th best: never on the demo model, built on purpose in the tests).
* **The ranking of candidates** (``beam._ranked_head``): float64 sums of the row's score and the token's value (the
  same sums Python takes), sorted best first (stable), neighbours tied by ``ties.tied``'s formula, a group number by
  the cumulative sum of the untied flags, then a stable sort by (group, row, token).
* **The finished list** (``beam._keep_best``): old and new finished sorted by score, groups as above, each group by
  its token tuple (Python's tuple order: a prefix before its extensions; the rank of each tuple among the others is
  counted pairwise on the tuples padded with -1).
* **Done** (``beam._beam_step``): no live continuation, or beam_size finished and the best live score below the
  worst finished less ``ties.margin``.

Where it applies (``usable``): plain beam search (not min-heap) of at most ``MAX_BEAM`` beams, no step hook (the
exact top-k search reads every step's states through one), no typed-prefix constraint (``Source.constraint``: its
mask reads the prefixes' text on the host) and no memo reuse (``Source.memo``: its rows are found by token prefix on
the host). Elsewhere, and on the CPU unless ``ON_DEVICE`` forces it, ``beam.beam_search_many`` runs its host path,
whose records are unchanged.
"""
from __future__ import annotations

from typing import Any

import torch

from simpe.decoders import static
from simpe.decoders.base import Hypothesis
from simpe.decoders.incremental import NEG_INF, Lockstep, Source
from simpe.ties import REL, SCORE_ATOL

ON_DEVICE: bool | None = None  # None: on every device but the CPU; True / False: forced (the tests force it on the CPU)
INF = float("inf")
# wider beams search on the host: the finished list's tuple order compares (2 beam)^2 pairs of prefixes per source and
# step, and a row's cut holds (rows, vocab) temporaries; at 32, 8 sources of a 256k vocabulary take about 0.3 GB
MAX_BEAM = 32
CHECK_EVERY = 4  # steps between two host reads of whether any source still searches


def on_device(device: Any) -> bool:
    """Whether plain beam search keeps its state on ``device``: ``ON_DEVICE`` when set, else off the CPU only."""
    return torch.device(device or "cpu").type != "cpu" if ON_DEVICE is None else ON_DEVICE


def usable(sources: list[Source], beam_size: int, heap: bool, hooked: bool) -> bool:
    """Whether ``search`` can run these sources (see the module docstring); else the host path runs."""
    return (not heap and not hooked and beam_size <= MAX_BEAM and on_device(sources[0].device)
            and all(s.constraint is None and s.memo is None for s in sources))


def _tied_next(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``ties.top``'s test of sorted neighbours ``a`` >= ``b`` (float32, as it evaluates it): tied to the noise.
    ``bound < inf`` is ``isfinite(bound)`` for a bound that is never -inf (NaN fails both), in one operation."""
    bound = torch.maximum(a.abs(), b.abs()) * REL + SCORE_ATOL
    return (((a - b) <= bound) & (bound < INF)) | (a == b)


def _tied(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``ties.tied(a, b, SCORE_ATOL)`` elementwise on sorted float64 neighbours ``a`` >= ``b``: the same operations
    Python's floats take (``a - b`` is ``|a - b|`` there). ``isfinite(a) and isfinite(b)`` is ``bound < inf``: the
    larger magnitude is finite (and neither is NaN)."""
    bound = torch.maximum(a.abs(), b.abs()) * REL + SCORE_ATOL
    return (a == b) | (((a - b) <= bound) & (bound < INF))


def row_best(allowed: torch.Tensor, per: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's ``per`` best tokens as ``beam._best`` takes them: ((rows, per) values, (rows, per) tokens, (rows,)
    whether the tied group at the cut may run past the window, where the answer is not the host's)."""
    rows, vocab = allowed.shape
    if per >= vocab:
        values, tokens = torch.topk(allowed, vocab, dim=1)
        return values, tokens, torch.zeros(rows, dtype=torch.bool, device=allowed.device)
    window = min(vocab, per + max(16, per // 8))
    vals, idx = torch.topk(allowed, window, dim=1)  # (rows, window) descending
    beyond = window < vocab
    if beyond:  # the next lower value after the window's last (and its equals), tested with the window's neighbours
        below = allowed < vals[:, -1:]  # (rows, vocab)
        nearest = torch.where(below, allowed, NEG_INF).amax(dim=1, keepdim=True)  # (rows, 1), -inf where none
        tied = _tied_next(vals, torch.cat([vals[:, 1:], nearest], dim=1))  # (rows, window): j tied with j + 1
        past = tied[:, -1] & (vals[:, -1] > NEG_INF)  # (rows,) a chain at the window's end would go on past it
        tied = tied[:, :-1]  # (rows, window - 1)
    else:
        tied = _tied_next(vals[:, :-1], vals[:, 1:])  # (rows, window - 1): position j tied with j + 1
    cut = tied[:, per - 1]  # (rows,) the per-th and (per+1)-th tied: the group at the cut is chosen by token id
    untied = ~tied
    after = torch.arange(1, per, device=allowed.device)  # (per - 1,)
    lo = (untied[:, : per - 1] * after).amax(dim=1) if per > 1 else torch.zeros_like(idx[:, 0])  # (rows,) group's first
    tail = untied[:, per - 1:]  # (rows, window - per): where the group ends
    ends = tail.any(dim=1)  # (rows,)
    at = torch.arange(window - per, device=allowed.device)  # (window - per,)
    hi = per - 1 + torch.where(tail, at, window - per - 1).amin(dim=1)  # (rows,) the group's last position, if it ends
    top = vals.gather(1, lo[:, None])  # (rows, 1) the group's highest value
    bottom = torch.where(ends[:, None], vals.gather(1, hi[:, None]), vals[:, -1:])  # (rows, 1) its lowest
    over = cut & ~ends & past if beyond else torch.zeros_like(cut)  # (rows,) the group runs past the window
    member = (allowed >= bottom) & (allowed <= top)  # (rows, vocab): the tied group at the cut
    ids = torch.arange(vocab, dtype=torch.int32, device=allowed.device)  # (vocab,) int32: half the (rows, vocab) below
    smallest = torch.topk(torch.where(member, ids, vocab), per, dim=1, largest=False).values.long()  # (rows, per) ascending
    place = torch.arange(per, device=allowed.device)  # (per,)
    chosen = torch.where(place < lo[:, None], idx[:, :per], smallest.gather(1, (place - lo[:, None]).clamp(min=0)))
    tokens = torch.where(cut[:, None], chosen, idx[:, :per])  # (rows, per)
    return allowed.gather(1, tokens), tokens, over


def ranked(values: torch.Tensor, keys: torch.Tensor, span: int, k: int) -> torch.Tensor:
    """``beam._ranked_head`` on each row of (n, m) float64 ``values`` with distinct int64 ``keys`` in [0, ``span``):
    (n, k) positions, best first: sorted (stable), split where neighbours are untied, each group by key."""
    sorted_values, order = torch.sort(values, dim=1, descending=True, stable=True)  # (n, m)
    untied = ~_tied(sorted_values[:, :-1], sorted_values[:, 1:])  # (n, m - 1)
    group = torch.nn.functional.pad(untied.cumsum(dim=1), (1, 0))  # (n, m) int64: the group of each sorted value
    composite = group * span + keys.gather(1, order)  # (n, m): by group, then by key
    return order.gather(1, torch.sort(composite, dim=1, stable=True)[1][:, :k])


def tuple_rank(tokens: torch.Tensor) -> torch.Tensor:
    """(n, m) how many of each row's m token tuples ((n, m, length), padded with -1) sort before each in Python."""
    a, b = tokens[:, :, None, :], tokens[:, None, :, :]  # (n, m, 1, length), (n, 1, m, length)
    differ = a != b  # (n, m, m, length)
    length = tokens.shape[2]
    first = torch.where(differ, torch.arange(length, device=tokens.device), length).amin(dim=3, keepdim=True)
    first = first.clamp(max=length - 1)  # (n, m, m, 1): the first position where the two differ
    shape = differ.shape
    mine = a.expand(shape).gather(3, first)[..., 0]  # (n, m, m)
    theirs = b.expand(shape).gather(3, first)[..., 0]  # (n, m, m)
    return ((theirs < mine) & differ.any(dim=3)).sum(dim=2)  # (n, m)


def _keep_best(ended_scores: torch.Tensor, ended_tokens: torch.Tensor, fresh: torch.Tensor, prefixes: torch.Tensor,
               parent: torch.Tensor, token: torch.Tensor, position: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``beam._keep_best`` of the finished hypotheses ((n, beam) scores, (n, beam, length) tokens) and the step's new
    ones (``fresh``: (n, m) scores, -inf where the candidate did not end; ``prefixes[parent]`` + ``token`` at
    ``position``): ((n, beam) scores, (n, beam, length) tokens), best first."""
    n, beam_size, length = ended_tokens.shape
    m = fresh.shape[1]
    fresh_tokens = prefixes.gather(1, parent[:, :, None].expand(n, m, length))  # (n, m, length)
    fresh_tokens[:, :, position] = token
    all_scores = torch.cat([ended_scores, fresh], dim=1)  # (n, beam + m)
    all_tokens = torch.cat([ended_tokens, fresh_tokens], dim=1)  # (n, beam + m, length)
    best = ranked(all_scores, tuple_rank(all_tokens[:, :, : position + 1]), beam_size + m, beam_size)  # (n, beam)
    return all_scores.gather(1, best), all_tokens.gather(1, best[:, :, None].expand(n, beam_size, length))


def search(model: Any, sources: list[Source], beam_size: int) -> list[tuple[list[Hypothesis], int, int]] | None:
    """``beam.beam_search_many(model, sources, beam_size)`` (plain beam, ``even`` or not: both count the real rows
    only) with its state on the model's device; None where a tied group at a row's cut ran past ``row_best``'s
    window (the caller searches on the host then)."""
    n, width_after, device = len(sources), beam_size, sources[0].device
    special = sources[0].special
    length = max(s.max_len for s in sources)
    rows_of: Any
    if static.usable(model, sources):  # fixed shapes: beam_size rows per source from step 0, a static cache, a graph
        rows_of, width_first = static.StaticRows(model, sources, beam_size), beam_size
    else:
        rows_of, width_first = Lockstep(model, sources, reuse=False), 1
        rows_of.known_masks = True  # the masks' padding said to transformers, not read back from the device
    limit = torch.tensor([s.max_len for s in sources], device=device)  # (n,) the one upload before the steps
    prefixes = torch.full((n, beam_size, length), -1, dtype=torch.long, device=device)  # live prefixes, -1 after
    scores = torch.full((n, beam_size), NEG_INF, dtype=torch.float64, device=device)  # (n, beam) -inf: a dead row
    scores[:, 0] = 0.0
    ended_scores = torch.full_like(scores, NEG_INF)  # (n, beam) finished, best first; -inf: an empty slot
    ended_tokens = torch.full_like(prefixes, -1)  # (n, beam, length)
    active = torch.ones(n, dtype=torch.bool, device=device)  # (n,) still searching
    expansions = torch.zeros(n, dtype=torch.long, device=device)
    steps = torch.zeros_like(expansions)
    real = torch.ones_like(expansions)  # (n,) live rows at the head of each block
    wide = torch.zeros((), dtype=torch.bool, device=device)  # a tied group ran past a row's window
    block_sources = [i for i in range(n) for _ in range(beam_size)]
    beams = torch.arange(2 * beam_size, device=device)  # (2 beam,) row numbers in a block, ranks in a step's head
    blocks = torch.arange(n, device=device)[:, None]  # (n, 1) source numbers
    tokens_in = None
    stop_column = forbidden_column = None
    for position in range(length):
        width = width_first if position == 0 else width_after  # rows per source this step
        logp = rows_of.step(tokens_in)  # (n * width, vocab); nothing else reads it: masked in place
        vocab = logp.shape[1]
        if stop_column is None:
            stop_column = torch.zeros(vocab, dtype=torch.bool, device=device)
            forbidden_column = torch.zeros_like(stop_column)
            for token in special.stops:
                stop_column[token] = True
            for token in special.forbidden:
                forbidden_column[token] = True
        # incremental.step_scores: forbidden tokens at -inf; at a source's last position only the stop tokens
        last = limit - 1 == position  # (n,)
        masked = torch.where(last[:, None], ~stop_column, forbidden_column)  # (n, vocab)
        logp = logp.reshape(n, width, vocab).masked_fill_(masked[:, None, :], NEG_INF).view(n * width, vocab)  # (n * width, vocab)
        per = min(2 * beam_size, vocab)
        values, tokens, over = row_best(logp, per)  # (n * width, per) each, (n * width,)
        # float64 sums; a dead row's score is -inf, and so are its candidates (a done source's are masked below)
        candidates = (scores[:, :width, None] + values.view(n, width, per).double()).view(n, width * per)
        keys = (beams[:width, None] * vocab + tokens.view(n, width, per)).view(n, width * per)  # (n, width * per)
        head = ranked(candidates, keys, width * vocab, min(2 * beam_size, width * per))  # (n, k) best first
        value, key = candidates.gather(1, head), keys.gather(1, head)  # (n, k)
        parent, token = key // vocab, key % vocab
        k = head.shape[1]
        place = beams[:k]  # (k,) rank in the head
        valid = value > NEG_INF
        stop = stop_column[token]  # (n, k) the candidate ends its hypothesis
        going = valid & ~stop
        going &= going.cumsum(dim=1) <= beam_size  # (n, k): the first beam_size non-stop continuations
        count = going.sum(dim=1)  # (n,) live beams after this step
        pick = torch.sort(torch.where(going, place, k + place), dim=1)[1][:, :beam_size]  # (n, <= beam)
        if pick.shape[1] < beam_size:
            pick = torch.cat([pick, pick[:, :1].expand(n, beam_size - pick.shape[1])], dim=1)
        alive = beams[:beam_size] < count[:, None]  # (n, beam)
        new_scores = torch.where(alive, value.gather(1, pick), NEG_INF)  # (n, beam)
        new_parent, new_token = parent.gather(1, pick), token.gather(1, pick)  # (n, beam)
        new_prefixes = prefixes.gather(1, new_parent[:, :, None].expand(n, beam_size, length))
        new_prefixes[:, :, position] = new_token
        # a stop token among the first beam_size candidates ends a hypothesis (beam._beam_step)
        m = min(beam_size, k)
        fresh = torch.where(valid[:, :m] & stop[:, :m], value[:, :m], NEG_INF)  # (n, m)
        kept_scores, kept_tokens = _keep_best(ended_scores, ended_tokens, fresh, prefixes, parent[:, :m], token[:, :m], position)
        worst = kept_scores[:, -1]  # (n,) -inf until beam_size are finished
        full = worst > NEG_INF
        done = (count == 0) | (full & (new_scores[:, 0] < worst - (worst.abs() * REL + SCORE_ATOL)))  # (n,)
        # a source that was done before this step keeps all its state
        ended_scores = torch.where(active[:, None], kept_scores, ended_scores)
        ended_tokens = torch.where(active[:, None, None], kept_tokens, ended_tokens)
        expansions += torch.where(active, real, 0)
        steps += active.long()
        wide |= (over.view(n, width).any(dim=1) & active).any()
        active = active & ~done
        prefixes = torch.where(active[:, None, None], new_prefixes, prefixes)
        scores = torch.where(active[:, None], new_scores, scores)
        real = torch.where(active, count, real)
        if position + 1 == length:
            break
        fed = alive & active[:, None]  # (n, beam) rows that carry a live beam next step; the others are fed EOS
        rows_of.select_index((blocks * width + torch.where(fed, new_parent, 0)).view(-1), block_sources)  # parent rows
        tokens_in = torch.where(fed, new_token, special.eos).view(-1)  # (n * beam,)
        if (position + 1) % CHECK_EVERY == 0:
            going_on, ran_past = torch.stack([active.any(), wide]).tolist()  # the step's one host read
            if ran_past:
                return None
            if not going_on:
                break
    if bool(wide):
        return None
    found = zip(ended_scores.tolist(), ended_tokens.tolist(), prefixes[:, 0].tolist(), expansions.tolist(), steps.tolist())
    results = []
    for hyp_scores, hyp_tokens, best_prefix, expanded, stepped in found:
        hyps = [Hypothesis(tuple(t for t in tokens if t >= 0), score) for score, tokens in zip(hyp_scores, hyp_tokens)
                if score > NEG_INF]
        if not hyps:  # no complete hypothesis has probability > 0: the best prefix, ended, at -inf (as beam.py)
            hyps = [Hypothesis(tuple(t for t in best_prefix if t >= 0) + (special.eos,), NEG_INF)]
        results.append((hyps, expanded, stepped))
    return results
