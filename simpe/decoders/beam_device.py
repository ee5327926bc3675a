"""Plain beam search with its whole state on the model's device: no host read inside a decoding step (issue 67).

``simpe.decoders.beam`` ranks each step's candidates in Python: it reads the step's top-k values and tokens back,
keeps the finished hypotheses as Python lists, decides whether a source is done there, and uploads the next tokens
and the kept rows. On a GPU each of those is a synchronisation: the host waits for the device, the device then waits
for the host's next launch. This module takes the same decisions with tensor operations on the device, so that a
step only queues work; the host reads one small tensor every ``CHECK_EVERY`` steps (whether any source still searches)
and the results once at the end.

The stop check every ``CHECK_EVERY`` steps costs up to ``CHECK_EVERY - 1`` passes after the last source is done
(they change nothing); a step's own work is about 190 small kernel launches beside the model's (make bench-launches),
on fixed shapes with no read back. On a static cache (``simpe.decoders.static``, off the CPU for the families whose
attention it knows) a step after the first is the model's pass and the decisions (``_Search.advance``) together: CUDA
replays it as one graph (issue 67, item 2). The model's passes run
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
               parent: torch.Tensor, token: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``beam._keep_best`` of the finished hypotheses ((n, beam) scores, (n, beam, length) tokens) and the step's new
    ones (``fresh``: (n, m) scores, -inf where the candidate did not end; ``prefixes[parent]`` + ``token`` at
    ``position``, a 0-dim tensor on the device): ((n, beam) scores, (n, beam, length) tokens), best first. The tuples
    are compared over their whole length: every one holds -1 after its last token, so the order is that of the tokens
    up to ``position`` (one shape for every step: what a CUDA graph replays)."""
    n, beam_size, length = ended_tokens.shape
    m = fresh.shape[1]
    fresh_tokens = prefixes.gather(1, parent[:, :, None].expand(n, m, length))  # (n, m, length)
    fresh_tokens.scatter_(2, position.view(1, 1, 1).expand(n, m, 1), token[:, :, None])
    all_scores = torch.cat([ended_scores, fresh], dim=1)  # (n, beam + m)
    all_tokens = torch.cat([ended_tokens, fresh_tokens], dim=1)  # (n, beam + m, length)
    best = ranked(all_scores, tuple_rank(all_tokens), beam_size + m, beam_size)  # (n, beam)
    return all_scores.gather(1, best), all_tokens.gather(1, best[:, :, None].expand(n, beam_size, length))


class _Search:
    """The state of ``search`` on the device (see the module docstring), and one step's decisions (``advance``), each
    written into the state's own tensors: the same tensors from step to step, and from search to search where ``held``
    keeps them (a static pool entry's: what its captured graph reads and writes)."""

    def __init__(self, sources: list[Source], beam_size: int, length: int, held: dict[str, torch.Tensor] | None) -> None:
        n, device = len(sources), sources[0].device
        self.n, self.beam_size, self.length, self.special = n, beam_size, length, sources[0].special
        self.held = {} if held is None else held

        def tensor(name: str, shape: tuple[int, ...], dtype: torch.dtype, fill: Any) -> torch.Tensor:
            found = self.held.get(name)
            if found is None or tuple(found.shape) != shape or found.dtype != dtype:
                found = self.held[name] = torch.empty(shape, dtype=dtype, device=device)
            return found.fill_(fill)

        self.limit = tensor("limit", (n,), torch.long, 0)
        self.limit.copy_(torch.tensor([s.max_len for s in sources]))  # (n,) the one upload before the steps
        self.prefixes = tensor("prefixes", (n, beam_size, length), torch.long, -1)  # live prefixes, -1 after
        self.scores = tensor("scores", (n, beam_size), torch.float64, NEG_INF)  # (n, beam) -inf: a dead row
        self.scores[:, 0] = 0.0
        self.ended_scores = tensor("ended_scores", (n, beam_size), torch.float64, NEG_INF)  # finished, best first
        self.ended_tokens = tensor("ended_tokens", (n, beam_size, length), torch.long, -1)
        self.active = tensor("active", (n,), torch.bool, True)  # (n,) still searching
        self.expansions = tensor("expansions", (n,), torch.long, 0)
        self.steps = tensor("steps", (n,), torch.long, 0)
        self.real = tensor("real", (n,), torch.long, 1)  # (n,) live rows at the head of each block
        self.wide = tensor("wide", (), torch.bool, False)  # a tied group ran past a row's window
        self.position = tensor("position", (), torch.long, 0)  # the target position the next step decides
        self.beams = tensor("beams", (2 * beam_size,), torch.long, 0)
        self.beams.copy_(torch.arange(2 * beam_size))  # (2 beam,) row numbers in a block, ranks in a step's head
        self.blocks = tensor("blocks", (n, 1), torch.long, 0)
        self.blocks.copy_(torch.arange(n)[:, None])  # (n, 1) source numbers
        self.stop_column = self.forbidden_column = None

    def columns(self, vocab: int) -> None:
        """The stop and forbidden tokens as (vocab,) masks, made once (before any capture)."""
        if self.stop_column is not None and self.stop_column.shape[0] == vocab:
            return
        self.stop_column = self.held.get("stop_column")
        if self.stop_column is None or self.stop_column.shape[0] != vocab:
            device = self.limit.device
            stop = torch.zeros(vocab, dtype=torch.bool)
            forbidden = torch.zeros(vocab, dtype=torch.bool)
            stop[list(self.special.stops)] = True
            forbidden[list(self.special.forbidden)] = True
            self.held["stop_column"], self.held["forbidden_column"] = stop.to(device), forbidden.to(device)
        self.stop_column, self.forbidden_column = self.held["stop_column"], self.held["forbidden_column"]

    def advance(self, logp: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One step's decisions on (n * width, vocab) log-probabilities (masked in place), written into the state;
        returns the next step's ((n * beam,) parent rows, (n * beam,) tokens). Reads nothing back."""
        n, beam_size, length = self.n, self.beam_size, self.length
        vocab = logp.shape[1]
        # incremental.step_scores: forbidden tokens at -inf; at a source's last position only the stop tokens
        last = self.limit - 1 == self.position  # (n,)
        masked = torch.where(last[:, None], ~self.stop_column, self.forbidden_column)  # (n, vocab)
        logp = logp.reshape(n, width, vocab).masked_fill_(masked[:, None, :], NEG_INF).view(n * width, vocab)
        per = min(2 * beam_size, vocab)
        values, tokens, over = row_best(logp, per)  # (n * width, per) each, (n * width,)
        # float64 sums; a dead row's score is -inf, and so are its candidates (a done source's are masked below)
        candidates = (self.scores[:, :width, None] + values.view(n, width, per).double()).view(n, width * per)
        keys = (self.beams[:width, None] * vocab + tokens.view(n, width, per)).view(n, width * per)  # (n, width * per)
        head = ranked(candidates, keys, width * vocab, min(2 * beam_size, width * per))  # (n, k) best first
        value, key = candidates.gather(1, head), keys.gather(1, head)  # (n, k)
        parent, token = key // vocab, key % vocab
        k = head.shape[1]
        place = self.beams[:k]  # (k,) rank in the head
        valid = value > NEG_INF
        stop = self.stop_column[token]  # (n, k) the candidate ends its hypothesis
        going = valid & ~stop
        going &= going.cumsum(dim=1) <= beam_size  # (n, k): the first beam_size non-stop continuations
        count = going.sum(dim=1)  # (n,) live beams after this step
        pick = torch.sort(torch.where(going, place, k + place), dim=1)[1][:, :beam_size]  # (n, <= beam)
        if pick.shape[1] < beam_size:
            pick = torch.cat([pick, pick[:, :1].expand(n, beam_size - pick.shape[1])], dim=1)
        alive = self.beams[:beam_size] < count[:, None]  # (n, beam)
        new_scores = torch.where(alive, value.gather(1, pick), NEG_INF)  # (n, beam)
        new_parent, new_token = parent.gather(1, pick), token.gather(1, pick)  # (n, beam)
        new_prefixes = self.prefixes.gather(1, new_parent[:, :, None].expand(n, beam_size, length))
        new_prefixes.scatter_(2, self.position.view(1, 1, 1).expand(n, beam_size, 1), new_token[:, :, None])
        # a stop token among the first beam_size candidates ends a hypothesis (beam._beam_step)
        m = min(beam_size, k)
        fresh = torch.where(valid[:, :m] & stop[:, :m], value[:, :m], NEG_INF)  # (n, m)
        kept_scores, kept_tokens = _keep_best(self.ended_scores, self.ended_tokens, fresh, self.prefixes, parent[:, :m],
                                              token[:, :m], self.position)
        worst = kept_scores[:, -1]  # (n,) -inf until beam_size are finished
        full = worst > NEG_INF
        done = (count == 0) | (full & (new_scores[:, 0] < worst - (worst.abs() * REL + SCORE_ATOL)))  # (n,)
        # a source that was done before this step keeps all its state
        active = self.active
        self.ended_scores.copy_(torch.where(active[:, None], kept_scores, self.ended_scores))
        self.ended_tokens.copy_(torch.where(active[:, None, None], kept_tokens, self.ended_tokens))
        self.expansions += torch.where(active, self.real, 0)
        self.steps += active.long()
        self.wide |= (over.view(n, width).any(dim=1) & active).any()
        still = active & ~done
        self.prefixes.copy_(torch.where(still[:, None, None], new_prefixes, self.prefixes))
        self.scores.copy_(torch.where(still[:, None], new_scores, self.scores))
        self.real.copy_(torch.where(still, count, self.real))
        self.active.copy_(still)
        self.position += 1
        fed = alive & still[:, None]  # (n, beam) rows that carry a live beam next step; the others are fed EOS
        parents = (self.blocks * width + torch.where(fed, new_parent, 0)).view(-1)  # parent rows
        return parents, torch.where(fed, new_token, self.special.eos).view(-1)  # (n * beam,) each

    def results(self) -> list[tuple[list[Hypothesis], int, int]]:
        """The finished hypotheses of each source, its expansions and steps (read back once)."""
        found = zip(self.ended_scores.tolist(), self.ended_tokens.tolist(), self.prefixes[:, 0].tolist(),
                    self.expansions.tolist(), self.steps.tolist())
        results = []
        for hyp_scores, hyp_tokens, best_prefix, expanded, stepped in found:
            hyps = [Hypothesis(tuple(t for t in tokens if t >= 0), score) for score, tokens in zip(hyp_scores, hyp_tokens)
                    if score > NEG_INF]
            if not hyps:  # no complete hypothesis has probability > 0: the best prefix, ended, at -inf (as beam.py)
                hyps = [Hypothesis(tuple(t for t in best_prefix if t >= 0) + (self.special.eos,), NEG_INF)]
            results.append((hyps, expanded, stepped))
        return results


def search(model: Any, sources: list[Source], beam_size: int) -> list[tuple[list[Hypothesis], int, int]] | None:
    """``beam.beam_search_many(model, sources, beam_size)`` (plain beam, ``even`` or not: both count the real rows
    only) with its state on the model's device; None where a tied group at a row's cut ran past ``row_best``'s
    window (the caller searches on the host then). On fixed shapes (``simpe.decoders.static``) every step after the
    first is the model's pass and ``_Search.advance`` together, which CUDA replays as one graph."""
    n = len(sources)
    length = max(s.max_len for s in sources)
    if static.usable(model, sources):  # fixed shapes: beam_size rows per source from step 0, a static cache, a graph
        rows = static.StaticRows(model, sources, beam_size)
        state = _Search(sources, beam_size, rows.bucket - rows.prefix, rows.held(beam_size))

        def step() -> None:  # a step after the first: the pass on the entry's tokens and parents, then the decisions
            parents, tokens = state.advance(rows.pass_(), beam_size)
            rows.select_index(parents, [])
            rows.feed(tokens)

        logp = rows.step(None)  # step 0: the prefix, eagerly
        state.columns(logp.shape[1])
        parents, tokens = state.advance(logp, beam_size)
        rows.select_index(parents, [])
        rows.feed(tokens)
        for position in range(1, length):
            if position % CHECK_EVERY == 0 and not _going_on(state):
                break
            rows.run(step, beam_size)
        return None if bool(state.wide) else state.results()
    lockstep = Lockstep(model, sources, reuse=False)
    lockstep.known_masks = True  # the masks' padding said to transformers, not read back from the device
    state = _Search(sources, beam_size, length, None)
    block_sources = [i for i in range(n) for _ in range(beam_size)]
    tokens_in = None
    for position in range(length):
        logp = lockstep.step(tokens_in)  # (n * width, vocab); nothing else reads it: masked in place
        state.columns(logp.shape[1])
        parents, tokens_in = state.advance(logp, 1 if position == 0 else beam_size)
        if position + 1 == length:
            break
        lockstep.select_index(parents, block_sources)
        if (position + 1) % CHECK_EVERY == 0 and not _going_on(state):
            break
    return None if bool(state.wide) else state.results()


def _going_on(state: _Search) -> bool:
    """The stop check, the step's one host read: whether any source still searches (and none ran past its window)."""
    going_on, ran_past = torch.stack([state.active.any(), state.wide]).tolist()
    return bool(going_on) and not ran_past
