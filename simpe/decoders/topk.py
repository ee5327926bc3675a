"""Exact top-k decoding: the k highest-scoring complete hypotheses under raw log P(y|x), provably.

Algorithm: best-first search over prefixes, batched and with lazy successors.

* Scores only fall along a path (every log-probability is <= 0), so the frontier's best
  entry bounds every hypothesis not yet found. A complete hypothesis (ending in EOS) taken
  from the top of the frontier, with no expansion pending, is therefore the next best of
  all: the first k such are the exact top-k, in order. The search goes on past the k-th only
  for hypotheses whose score ties with it to rounding noise (``simpe.ties``), and the k are
  ranked with the tie rule (tied scores: by token ids), so no CPU's rounding picks the k-th.
* Lazy successors: an expanded prefix keeps its children as one list sorted by score, and
  the frontier holds only its next-best child; taking that child from the frontier puts
  the following sibling in. Pushing all children (or all above the bound) floods the queue
  when the model is flat (under-trained or freshly adapted).
* Bound: the k-th best of the complete hypotheses known so far (first those of min-heap beam
  search of width ``beam_size``, then every EOS child met while expanding) bounds the k-th
  best overall from below; children below it (minus ``bound_slack``, which absorbs float
  noise between batch shapes) are never stored. With the bound, this search expands no
  prefix the DFS of Algorithm 1 (topk_dfs.py) could prune, up to batching (below).
* Batching: the ``batch_size`` best frontier prefixes (above the bound) are expanded in one
  forward pass, prefixes of different lengths side by side: their cached key/value states
  are gathered from an arena (one slot per expanded prefix, holding the states of its last
  input token) and padded, with an attention mask, into a buffer with room for the position
  fed, which the model's update writes in place (``incremental.room_layer``: no
  concatenation). A batch may expand a few prefixes a strictly sequential best-first search
  would not; it never changes the result.
* Several sentences (``decode_batch``): their searches run in lockstep, each forward pass
  carrying the prefixes of every unfinished sentence (padded source positions masked in
  cross-attention; each row reads its own sentence's cross-attention states in place, where
  the family allows: ``simpe.decoders.cross``), so a probe set keeps the hardware busy even
  when each search is small; every sentence keeps its own frontier, bound, results and
  limits, and its result equals searching it alone (up to float noise). The children of all
  the rows of a pass are selected at once (``select_children``: one comparison with each
  row's floor, one transfer to the host).
* Reuse: the encoder runs once per sentence; cross-attention keys/values are computed once and shared;
  each prefix's self-attention states are computed once and kept; each expanded prefix's
  log-probability row is reduced once to its sorted children; and every prefix the bounding
  beam search expanded joins the search tree as an expanded node (states and row kept), so
  the search never runs it again (``info["reused"]`` counts those it reached;
  ``expansions`` counts only the forward rows of the search itself).

Positions: Marian's decoder adds the sinusoidal embedding of the cache length to every row
of a batch; for a row whose prefix is shorter than the batch's longest, the input embedding
passed in (``decoder_inputs_embeds``) carries the difference, so every row sees its own
position. The tests compare the result with brute-force enumeration scored by plain
full-sequence forward passes.

Exactness holds among hypotheses of at most ``max_len`` tokens (EOS included; see
incremental.py): with a length cap the result is the exact top-k of that set. Limits
(``max_expansions`` per sentence; ``max_seconds`` per sentence, and for ``decode_batch``
``max_seconds`` times the number of sentences for the whole call) may cut a search short;
its result is then the best complete hypotheses found (the first ``info["finalised"]`` are
provably the exact best, in order) and ``exact`` is False. Pad and decoder-start tokens
never occur in hypotheses. ``seconds`` of a ``decode_batch`` result is the call's time
divided by its number of sentences (``info["batch_seconds"]`` is the whole).
"""
from __future__ import annotations

import contextlib
import heapq
import math
import time
from typing import Any

import numpy as np
import torch

from simpe.decoders.base import DECODERS, DecodeResult, Hypothesis
from simpe.decoders.beam import beam_search_many
from simpe.decoders.cross import by_source, usable
from simpe.decoders.incremental import NEG_INF, LengthLimit, LockstepDecoder, Source, check_int, check_number, log_softmax_, room_layer, stack_sources
from simpe.decoders.prefix import apply as apply_typed
from simpe.errors import ConfigError
from simpe.models import family_of
from simpe.ties import SCORE_ATOL, margin, rank


class KnownComplete:
    """The best ``k`` distinct complete hypotheses seen so far; its minimum is the pruning bound."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.heap: list[tuple[float, tuple[int, ...]]] = []  # min-heap of (score, tokens)
        self.members: set[tuple[int, ...]] = set()

    def add(self, score: float, tokens: tuple[int, ...]) -> None:
        if score == NEG_INF or tokens in self.members:
            return
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, (score, tokens))
            self.members.add(tokens)
        elif score > self.heap[0][0]:
            _, dropped = heapq.heapreplace(self.heap, (score, tokens))
            self.members.discard(dropped)
            self.members.add(tokens)

    @property
    def bound(self) -> float:
        return self.heap[0][0] if len(self.heap) >= self.k else NEG_INF

    def best(self) -> list[tuple[float, tuple[int, ...]]]:
        return sorted(self.heap, key=lambda item: -item[0])


class KVArena:
    """Self-attention key/value states of expanded prefixes, one slot per decoder input token."""

    def __init__(self, example: torch.Tensor, capacity: int = 1024) -> None:
        """``example``: (n, layers, 2, heads, head_dim) states, giving the slot shape, dtype and device."""
        shape = tuple(example.shape[1:])
        self.data = torch.empty((max(capacity, 1),) + shape, dtype=example.dtype, device=example.device)  # (slots, layers, 2, heads, head_dim)
        self.used = 0
        self._gathered: torch.Tensor | None = None  # gather's output, reused from pass to pass

    def write(self, states: torch.Tensor) -> list[int]:
        """Store (n, layers, 2, heads, head_dim) states in fresh slots; returns their slot numbers."""
        n = states.shape[0]
        if self.used + n > self.data.shape[0]:
            grown = torch.empty((max(2 * self.data.shape[0], self.used + n),) + tuple(self.data.shape[1:]),  # (slots, layers, 2, heads, head_dim)
                                dtype=self.data.dtype, device=self.data.device)
            grown[: self.used] = self.data[: self.used]
            self.data = grown
        self.data[self.used: self.used + n] = states
        slots = list(range(self.used, self.used + n))
        self.used += n
        return slots

    def gather(self, index: torch.Tensor) -> torch.Tensor:
        """(rows, positions) slot numbers -> (rows, positions, layers, 2, heads, head_dim) states, written into a
        buffer kept from call to call (valid until the next call)."""
        shape = tuple(index.shape) + tuple(self.data.shape[1:])
        size = index.numel() * self.data[0].numel()
        if self._gathered is None or self._gathered.numel() < size or self._gathered.dtype != self.data.dtype:
            self._gathered = torch.empty(size + size // 4, dtype=self.data.dtype, device=self.data.device)
        out = self._gathered[:size].view(shape)  # (rows, positions, layers, 2, heads, head_dim)
        torch.index_select(self.data, 0, index.reshape(-1), out=out.view((-1,) + tuple(self.data.shape[1:])))
        return out


def select_children(logp: torch.Tensor, scores: list[float], floors: list[float]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Each row's children at or above its floor (its prefix score ``scores[i]`` plus a log-probability of
    ``logp[i]``, (rows, vocab) masked), best first (equal scores: by token): (tokens, float64 scores, where each row's
    children end), rows in order, on the host (one transfer). Selected in float32 relative to each prefix score, with
    a margin for the float32 rounding of (floor - prefix score); the exact float64 test follows on the few selected."""
    device = logp.device
    base = torch.tensor(scores, dtype=torch.float64, device=device)  # (rows,) prefix scores
    bounded = [floor > NEG_INF for floor in floors]
    floor = torch.tensor(floors, dtype=torch.float64, device=device)  # (rows,)
    if all(bounded):
        keep = logp >= ((floor - base).float() - 1e-4).unsqueeze(1)  # (rows, vocab)
    elif not any(bounded):
        keep = logp > NEG_INF  # (rows, vocab)
    else:
        relative = torch.where(floor > NEG_INF, (floor - base).float() - 1e-4, NEG_INF)  # (rows,) float32
        keep = (logp >= relative.unsqueeze(1)) & (logp > NEG_INF)  # (rows, vocab)
    where = keep.nonzero()  # (selected, 2) (row, token), row by row
    row_of, token = where[:, 0], where[:, 1]  # (selected,) each
    children = base[row_of] + logp[row_of, token].double()  # (selected,) float64 scores
    ok = (children >= floor[row_of]) & (children > NEG_INF)  # (selected,)
    row_np, token_np, child_np, ok_np = (t.cpu().numpy() for t in (row_of, token, children, ok))
    row_np, token_np, child_np = row_np[ok_np], token_np[ok_np], child_np[ok_np]
    order = np.lexsort((token_np, -child_np, row_np))  # by row, best child first (equal scores: by token)
    ends = np.searchsorted(row_np[order], np.arange(1, len(scores) + 1)).tolist()  # (rows,)
    return token_np[order], child_np[order], ends


class SentenceSearch:
    """The best-first search state of one sentence: its tree of expanded prefixes, frontier, bound, results."""

    def __init__(self, source: Source, k: int, slack: float, max_expansions: int | None) -> None:
        self.source, self.k, self.slack, self.max_expansions = source, k, slack, max_expansions
        self.special = source.special
        self.device = source.device
        self.known = KnownComplete(k)
        self.frontier: list[tuple[float, int, int, int]] = []  # (-score, push order, node, child rank)
        self.pushes = 0
        self.expansions = 0
        self.batches = 0
        self.reused = 0  # beam prefixes reached by the search (expanded for free)
        self.results: list[tuple[float, tuple[int, ...]]] = []
        self.cutoff = NEG_INF  # once k are found: the lowest score still tied with the k-th
        self.done = False
        self.cut = False
        # nodes (expanded prefixes), indexed by node id
        self.tokens: list[tuple[int, ...]] = []
        self.slots: list[tuple[int, ...]] = []  # arena slots of the decoder inputs [prefix..., y_1, ..., y_t]
        self.child_tokens: list[np.ndarray] = []  # (children,) sorted by descending score
        self.child_scores: list[np.ndarray] = []  # (children,)
        self.index: dict[tuple[int, ...], int] = {}  # prefix -> node, for the beam's prefixes
        self._beam_slots: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._beam_rows: list[tuple[list[tuple[int, ...]], list[float], torch.Tensor]] = []

    # ---------------------------------------------------------------- the beam's expansions
    def record_beam_step(self, prefixes: list[tuple[int, ...]], scores: list[float], logp: torch.Tensor,
                         slots: list[tuple[int, ...]]) -> None:
        """Keep one step of the bounding beam search (its states already stored in ``slots``: per row, the
        slots of the positions it fed: the whole target prefix at step 0, one position after)."""
        for prefix, fed in zip(prefixes, slots):
            self._beam_slots[prefix] = (self._beam_slots[prefix[:-1]] if prefix else ()) + fed
        self._beam_rows.append((list(prefixes), list(scores), logp))

    def seed_from_beam(self) -> None:
        """Turn the recorded beam prefixes into expanded nodes (children above the bound) and start at the root."""
        blocks = self._beam_rows
        for prefixes, _, logp in blocks:
            self.mask(prefixes, logp)
        self.note_stops([(prefixes, scores, logp[:, list(self.special.stops)].tolist()) for prefixes, scores, logp in blocks])
        first = len(self.tokens)
        for prefixes, scores, logp in blocks:  # every block's stop children noted first: the floor is the final one
            tokens, children, ends = select_children(logp, scores, [self.floor] * len(prefixes))
            self.add_nodes(prefixes, [self._beam_slots[p] for p in prefixes], tokens, children, ends, push=False)
        self.index = {prefix: first + i for i, prefix in enumerate(p for rows, _, _ in blocks for p in rows)}
        self._beam_rows, self._beam_slots = [], {}
        self._push(self.index[()], 0)

    # ---------------------------------------------------------------- nodes
    def mask(self, prefixes: list[tuple[int, ...]], logp: torch.Tensor) -> None:
        """Mask in place what never enters the tree: tokens leaving a typed prefix, forbidden tokens, and all but the
        stop tokens at the length limit. ``logp`` (rows, vocab) float32 is this search's own (a fresh forward, or a
        beam row the beam is done with)."""
        stops = list(self.special.stops)
        apply_typed(self.source, logp, prefixes)  # a typed prefix: tokens leaving it never enter the tree
        if self.special.forbidden:
            logp[:, list(self.special.forbidden)] = NEG_INF
        last = [i for i, prefix in enumerate(prefixes) if len(prefix) + 1 >= self.source.max_len]
        if last:
            index = torch.tensor(last, device=logp.device)[:, None]  # (last, 1)
            stop_logp = logp[index, stops].clone()  # (last, stops)
            logp[last] = NEG_INF
            logp[index, stops] = stop_logp

    def note_stops(self, blocks: list[tuple[list[tuple[int, ...]], list[float], list[list[float]]]]) -> None:
        """Add the stop-token children of the blocks' rows (prefixes, scores, the masked log-probabilities of the stop
        tokens per row) to the known complete hypotheses, stop by stop, rows in order. Python's float sum is the
        float64 sum of the float32 value."""
        for column, stop in enumerate(self.special.stops):
            for prefixes, scores, rows in blocks:
                for prefix, score, row in zip(prefixes, scores, rows):
                    self.known.add(score + row[column], prefix + (stop,))

    def add_nodes(self, prefixes: list[tuple[int, ...]], slots: list[tuple[int, ...]], tokens: np.ndarray,
                  children: np.ndarray, ends: list[int], start: int = 0, push: bool = True) -> None:
        """Register expanded prefixes with their children, best first (``select_children``): prefix i's are
        ``tokens[ends[i - 1]:ends[i]]`` (the first's from ``start``), with their scores in ``children``."""
        for i, end in enumerate(ends):
            node = len(self.tokens)
            self.tokens.append(prefixes[i])
            self.slots.append(slots[i])
            self.child_tokens.append(tokens[start:end])
            self.child_scores.append(children[start:end])
            if end > start and push:
                self._push(node, 0)
            start = end

    @property
    def floor(self) -> float:
        """Children below this never enter the top k: the bound, less ``slack`` (float noise between batch
        shapes) and less the tie tolerance (a hypothesis tied with the k-th, ``simpe.ties``, is still found)."""
        bound = self.known.bound
        return bound - self.slack - margin(bound, SCORE_ATOL) if bound > NEG_INF else NEG_INF

    def _push(self, node: int, child: int) -> None:
        if child < len(self.child_tokens[node]):
            self.pushes += 1
            heapq.heappush(self.frontier, (-float(self.child_scores[node][child]), self.pushes, node, child))

    # ---------------------------------------------------------------- search
    def collect(self, room: int) -> list[tuple[int, int, float]]:
        """Take up to ``room`` prefixes to expand next, as (parent node, token, score); finalise the complete
        hypotheses that reach the top with nothing pending; mark the search done (or cut short) when it is."""
        stops = self.special.stops
        left = room if self.max_expansions is None else min(room, self.max_expansions - self.expansions)
        batch: list[tuple[int, int, float]] = []
        while self.frontier:
            neg, _, node, child = self.frontier[0]
            score = -neg
            if score < self.floor:  # below the bound, and so are its later siblings
                heapq.heappop(self.frontier)
                continue
            if len(self.results) >= self.k and score < self.cutoff:  # nothing left that ties with the k-th
                if batch:
                    break
                self.done = True
                return []
            token = int(self.child_tokens[node][child])
            if token in stops:
                if batch:  # a pending expansion could still produce something better
                    break
                heapq.heappop(self.frontier)
                self._push(node, child + 1)
                self.results.append((score, self.tokens[node] + (token,)))
                if len(self.results) == self.k:  # go on only for hypotheses tied with the k-th (simpe.ties)
                    self.cutoff = score - margin(score, SCORE_ATOL)
                continue
            known = self.index.get(self.tokens[node] + (token,)) if self.index else None
            if known is None and len(batch) >= left:
                break
            heapq.heappop(self.frontier)
            self._push(node, child + 1)
            if known is not None:  # expanded by the beam search already
                self.reused += 1
                self._push(known, 0)
                continue
            batch.append((node, token, score))
        if not batch:
            self.done = True
            # stopped by max_expansions, not by an exhausted space (with k found, only ties were left to check)
            self.cut = bool(self.frontier) and len(self.results) < self.k
        return batch

    def finish(self) -> tuple[list[Hypothesis], bool, int]:
        """(hypotheses best first, exact, number provably in exact order). Scores tied to rounding noise
        (``simpe.ties``) are ordered by their token ids."""
        results = self.results
        finalised = min(len(results), self.k)
        if self.cut:
            found = {tokens for _, tokens in results}
            results = results + [(v, t) for v, t in self.known.best() if t not in found]
        order = rank([v for v, _ in results], key=[t for _, t in results], atol=SCORE_ATOL)[: self.k]
        return [Hypothesis(results[i][1], results[i][0]) for i in order], not self.cut, finalised


class BatchedSearch:
    """Exact top-k searches of several sentences in lockstep, sharing forward passes and one state arena."""

    def __init__(self, model: Any, sources: list[Source], k: int, batch_size: int, max_rows: int, bound_slack: float,
                 max_expansions: int | None, max_seconds: float | None, t0: float) -> None:
        self.model, self.sources = model, sources
        self.batch_size, self.max_rows = batch_size, max_rows
        self.max_seconds, self.t0 = max_seconds, t0
        self.device = sources[0].device
        self.family = family_of(model)
        self.searches = [SentenceSearch(src, k, bound_slack, max_expansions) for src in sources]
        self.hidden, self.src_mask = stack_sources(sources)  # (n, max_src, d_model), (n, max_src) or None
        self.arena: KVArena | None = None
        self.cross: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer (n, heads, max_src, head_dim)
        self.capacity = 1024 if max_expansions is None else min(len(sources) * (max_expansions + 1), 1 << 16)
        self.rounds = 0
        self._buffers: dict[tuple[str, int], torch.Tensor] = {}  # cross-attention states by row, reused
        self.by_source = len(sources) > 1 and usable(model, self.family)  # rows read their sentence's cross-attention states in place

    def record_beam_step(self, i: int, prefixes: list[tuple[int, ...]], scores: list[float], logp: torch.Tensor,
                         states: torch.Tensor, cache: Any) -> None:
        """beam_search_many's hook: store the states of sentence ``i``'s beam rows and hand them to its search
        (``states``: (rows, fed, layers, 2, heads, head_dim); at step 0 the left-padded target prefix)."""
        if self.arena is None:  # the first step: one row per sentence, in order; cross-attention states are fresh
            self.cross = self.family.cross_layers(cache)  # each (n, heads, max_src, head_dim); none for a causal LM
            longest = max(len(s.prefix) + s.max_len for s in self.sources)
            self.arena = KVArena(states[:, 0], capacity=max(self.capacity, 4 * len(self.sources) * longest))
        fed = states.shape[1]
        if fed == 1:
            slots = [(slot,) for slot in self.arena.write(states[:, 0])]
        else:  # step 0: each row's own prefix positions (the left padding of shorter prefixes dropped)
            own = len(self.sources[i].prefix)
            slots = [tuple(self.arena.write(row[fed - own:])) for row in states]
        self.searches[i].record_beam_step(prefixes, scores, logp, slots)

    def _select(self, name: tuple[str, int], states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``states.index_select(0, index)`` written into a buffer kept from pass to pass (valid until the next)."""
        shape = (index.shape[0], *states.shape[1:])
        size = math.prod(shape)
        buffer = self._buffers.get(name)
        if buffer is None or buffer.numel() < size or buffer.dtype != states.dtype:
            buffer = self._buffers[name] = torch.empty(size + size // 4, dtype=states.dtype, device=states.device)
        out = buffer[:size].view(shape)
        torch.index_select(states, 0, index, out=out)
        return out

    def expand(self, batch: list[tuple[int, int, int, float]]) -> None:
        """Expand prefixes ``parent + (token,)`` of several sentences, given as (sentence, parent node, token, score)
        grouped by sentence, in one forward pass."""
        assert self.arena is not None
        rows = len(batch)
        parent_slots = [self.searches[i].slots[parent] for i, parent, _, _ in batch]
        lengths = [len(s) for s in parent_slots]
        longest = max(lengths)
        if self.family.pad_before:  # relative positions (T5): the padding before each row's states
            order = [(0,) * (longest - len(s)) + s for s in parent_slots]
            rows_mask = [[0] * (longest - n) + [1] * n + [1] for n in lengths]
        else:
            order = [s + (0,) * (longest - len(s)) for s in parent_slots]
            rows_mask = [[1] * n + [0] * (longest - n) + [1] for n in lengths]
        # each row's slots, then one for the position fed now (any slot: the model's update writes it, see room_layer)
        index = torch.tensor([row + (0,) for row in order], dtype=torch.long, device=self.device)  # (rows, longest + 1)
        mask = torch.tensor(rows_mask, dtype=torch.long, device=self.device)  # (rows, longest + 1)
        states = self.arena.gather(index)  # (rows, longest + 1, layers, 2, heads, head_dim)
        room = [(states[:, :, layer, 0].transpose(1, 2), states[:, :, layer, 1].transpose(1, 2))  # (rows, heads, longest + 1, head_dim)
                for layer in range(states.shape[2])]
        sentence = torch.tensor([i for i, _, _, _ in batch], dtype=torch.long, device=self.device)  # (rows,)
        only = batch[0][0] if batch[0][0] == batch[-1][0] else None  # rows are grouped by sentence
        cross_states = []
        if self.by_source:  # each sentence's states once, read in place by its rows (simpe.decoders.cross) ...
            cross_states = [keys for keys, _ in self.cross] + [values for _, values in self.cross]
            cross = self.cross
        elif only is not None:  # ... or rows of one sentence share its states (a view) ...
            cross = [(keys[only: only + 1].expand(rows, -1, -1, -1), values[only: only + 1].expand(rows, -1, -1, -1))
                     for keys, values in self.cross]
        else:  # ... or each row holds its sentence's states
            cross = [(self._select(("keys", number), keys, sentence), self._select(("values", number), values, sentence))
                     for number, (keys, values) in enumerate(self.cross)]
        cache = self.family.build_cache([(keys[..., :longest, :], values[..., :longest, :]) for keys, values in room], cross)
        layers = self.family.self_cache(cache).layers
        for number, (keys, values) in enumerate(room):
            layers[number] = room_layer(keys, values, longest)
        tokens = torch.tensor([token for _, _, token, _ in batch], dtype=torch.long, device=self.device).view(rows, 1)  # (rows, 1)
        enc = None if self.hidden is None else self.hidden[:1].expand(rows, -1, -1)  # (rows, max_src, d_model): shape only
        src_mask = None if self.src_mask is None else self.src_mask[sentence]  # (rows, max_src)
        with by_source(self.model, [i for i, _, _, _ in batch], cross_states) if cross_states else contextlib.nullcontext():
            logits, out_cache = self.family.forward(self.model, tokens, cache, hidden=enc, src_mask=src_mask, mask=mask)
        new = torch.stack([torch.stack([layer.keys[:, :, -1], layer.values[:, :, -1]], dim=1)  # (rows, 2, heads, head_dim)
                           for layer in self.family.self_cache(out_cache).layers], dim=1)  # (rows, layers, 2, heads, head_dim)
        slots = self.arena.write(new)
        logp = log_softmax_(logits)  # (rows, vocab)
        self.rounds += 1
        blocks = []  # per sentence of the batch: (its search, first row, end, its prefixes, their scores)
        first = 0
        while first < rows:
            i = batch[first][0]
            end = first
            while end + 1 < rows and batch[end + 1][0] == i:
                end += 1
            search = self.searches[i]
            part = batch[first:end + 1]
            blocks.append((search, first, end + 1, [search.tokens[parent] + (token,) for _, parent, token, _ in part],
                           [score for _, _, _, score in part]))
            first = end + 1
        for search, first, end, prefixes, _ in blocks:
            search.mask(prefixes, logp[first:end])
        stops = logp[:, list(self.searches[0].special.stops)].tolist()  # (rows, stops)
        for search, first, end, prefixes, scores in blocks:
            search.note_stops([(prefixes, scores, stops[first:end])])
        # every sentence's stops noted: each row's children selected against its sentence's floor, all in one pass
        tokens, children, ends = select_children(logp, [score for _, _, _, score in batch],
                                                 [search.floor for search, first, end, _, _ in blocks for _ in range(first, end)])
        for search, first, end, prefixes, _ in blocks:
            search.expansions += end - first
            search.batches += 1
            search.add_nodes(prefixes, [parent_slots[r] + (slots[r],) for r in range(first, end)], tokens, children,
                             ends[first:end], start=ends[first - 1] if first else 0)

    def run(self) -> None:
        for search in self.searches:
            search.seed_from_beam()
        start = 0
        n = len(self.searches)
        budget = None if self.max_seconds is None else self.max_seconds * n
        while True:
            active = [s for s in self.searches if not s.done]
            if not active:
                return
            if budget is not None and time.perf_counter() - self.t0 >= budget:
                for search in active:
                    search.done = search.cut = True
                return
            batch: list[tuple[int, int, int, float]] = []
            for j in range(n):  # rotate the starting sentence so that a row cap starves none
                i = (start + j) % n
                search = self.searches[i]
                room = min(self.batch_size, self.max_rows - len(batch))
                if search.done or room <= 0:
                    continue
                batch += [(i, parent, token, score) for parent, token, score in search.collect(room)]
            start = (start + 1) % n
            if batch:
                self.expand(batch)


@DECODERS.add("topk")
class TopKDecoder(LockstepDecoder):
    """Exact top-k by batched best-first search with lazy successors (see the module docstring).

    Params: k; beam_size of the min-heap beam search giving the initial bound (default k);
    batch_size prefixes per sentence per forward pass, max_rows prefixes per forward pass in
    all (decode_batch); max_expansions (per sentence) / max_seconds limits (null = none; a
    search cut short is marked exact=False); bound_slack; max_len_a/b/cap.
    """

    def __init__(self, k: int = 10, beam_size: int | None = None, batch_size: int = 64, max_rows: int = 256,
                 max_expansions: int | None = None, max_seconds: float | None = None, bound_slack: float = 1e-4,
                 max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        check_int("k", k, 1)
        check_int("beam_size", beam_size, 1, allow_none=True)
        check_int("batch_size", batch_size, 1)
        check_int("max_rows", max_rows, 1)
        check_int("max_expansions", max_expansions, 1, allow_none=True)
        check_number("max_seconds", max_seconds, 0.0, allow_none=True)
        if isinstance(bound_slack, bool) or not isinstance(bound_slack, (int, float)) or bound_slack < 0:
            raise ConfigError(f"decoder parameter bound_slack must be a number >= 0, got {bound_slack!r}")
        self.k, self.beam_size, self.batch_size, self.max_rows = k, beam_size, batch_size, max(max_rows, batch_size)
        self.max_expansions, self.max_seconds, self.bound_slack = max_expansions, max_seconds, float(bound_slack)
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        return self.decode_batch(model, [input_ids])[0]

    def decode_sources(self, model: Any, sources: list[Source], *, start: int = 0, t0: float | None = None) -> list[DecodeResult]:
        """``decode_batch`` of sources encoded already (``incremental.encode`` with this decoder's length limit;
        the ranking evaluation encodes a probe set once for all its decoders). Call inside ``decoding(model)``.
        ``t0``: when the call's clock (``seconds``, ``max_seconds``) started (default: now)."""
        if not sources:
            return []
        t0 = time.perf_counter() if t0 is None else t0
        search = BatchedSearch(model, sources, self.k, self.batch_size, self.max_rows, self.bound_slack,
                               self.max_expansions, self.max_seconds, t0)
        beams = beam_search_many(model, sources, self.beam_size or self.k, heap=True, on_step=search.record_beam_step)
        bounds = []
        for sentence, (beam_hyps, _, _) in zip(search.searches, beams):
            for hyp in beam_hyps:
                sentence.known.add(hyp.score, hyp.tokens)
            bounds.append(sentence.known.bound)
        search.run()
        total = time.perf_counter() - t0
        results = []
        for sentence, (_, beam_expansions, _), bound in zip(search.searches, beams, bounds):
            hyps, exact, finalised = sentence.finish()
            results.append(DecodeResult(hyps, exact=exact, expansions=sentence.expansions, seconds=total / len(sources),
                                        info={"finalised": finalised, "initial_bound": bound, "batches": sentence.batches,
                                              "beam_expansions": beam_expansions, "reused": sentence.reused,
                                              "max_len": sentence.source.max_len, "nodes": len(sentence.tokens),
                                              "batch_seconds": total, "batch_sentences": len(sources)}))
        return results

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "beam_size": self.beam_size, "batch_size": self.batch_size, "max_rows": self.max_rows,
                "max_expansions": self.max_expansions, "max_seconds": self.max_seconds,
                "bound_slack": self.bound_slack, **self.limit.params()}
