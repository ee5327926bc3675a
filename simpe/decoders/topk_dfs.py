"""Algorithm 1 of Yan et al. (2021) as written: DFS exact top-k with a min-heap of size k.

The plain reference for tests and benchmarks (``topk_dfs``): one prefix per forward pass,
children visited best first ("iterating the vocabulary greedily", Yan et al. (2021), appendix B), the
pruning bound gamma initialised from min-heap beam search of width ``beam_size`` (default
k) and raised to the heap's minimum once the heap holds k hypotheses. It keeps each stack
frame's key/value cache, so it does not recompute prefixes; it only lacks batching and
best-first order. Two deliberate readings of the pseudo-code: a prefix ending in EOS is
complete and is not expanded further (Algorithm 1's line 12 loop would run on after
pushing it), and gamma never drops below the beam bound (``max(gamma_beam, heap min)``).
Children scoring below gamma - ``bound_slack`` - the tie tolerance are pruned (the slack absorbs
float noise between batch shapes; it only ever costs expansions); the k kept are ranked with
``simpe.ties``' rule, as topk.py ranks them.

Exactness, length limit and the limits (``max_expansions``, ``max_seconds``; exact=False
when cut short) are as in topk.py.
"""
from __future__ import annotations

import heapq
import time
from typing import Any

import torch

from simpe.decoders.base import DECODERS, DecodeResult, Hypothesis
from simpe.decoders.beam import beam_search
from simpe.decoders.incremental import NEG_INF, LengthLimit, Source, SourceDecoder, check_int, check_number, decoding, step_scores
from simpe.decoders.prefix import apply as apply_typed
from simpe.models import family_of
from simpe.ties import SCORE_ATOL, margin, rank


@DECODERS.add("topk_dfs")
class TopKDfsDecoder(SourceDecoder):
    """Exact top-k by the DFS of Algorithm 1 (Yan et al. (2021)); slow, for reference."""

    def __init__(self, k: int = 10, beam_size: int | None = None, max_expansions: int | None = None,
                 max_seconds: float | None = None, bound_slack: float = 1e-4, max_len_a: float = 2.0, max_len_b: int = 10,
                 max_len_cap: int = 256) -> None:
        check_int("k", k, 1)
        check_int("beam_size", beam_size, 1, allow_none=True)
        check_int("max_expansions", max_expansions, 1, allow_none=True)
        check_number("max_seconds", max_seconds, 0.0, allow_none=True)
        self.k, self.beam_size = k, beam_size
        self.max_expansions, self.max_seconds, self.bound_slack = max_expansions, max_seconds, float(bound_slack)
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode_source(self, model: Any, source: Source, *, t0: float | None = None) -> DecodeResult:
        t0 = time.perf_counter() if t0 is None else t0
        family = family_of(model)
        with decoding(model):
            special, stops, device = source.special, source.special.stops, source.device
            beam_hyps, _, _ = beam_search(model, source, self.beam_size or self.k, heap=True)
            gamma = beam_hyps[self.k - 1].score if len(beam_hyps) >= self.k else NEG_INF
            initial_bound = gamma
            cross: list[tuple[torch.Tensor, torch.Tensor]] = []
            expansions = 0

            def expand(prefix: tuple[int, ...], legacy: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[Any, ...]:
                """One forward pass for one prefix (the root: the whole target prefix); returns (self-attention
                states per layer, sorted children tokens, scores)."""
                nonlocal expansions
                if not prefix:
                    cache = family.new_cache()
                    ids = torch.tensor([source.prefix], dtype=torch.long, device=device)  # (1, P)
                else:
                    cache = family.build_cache(legacy, cross)
                    ids = torch.tensor([[prefix[-1]]], dtype=torch.long, device=device)  # (1, 1)
                logits, out = family.forward(model, ids, cache, hidden=source.hidden)
                if not prefix:
                    cross.extend(family.cross_layers(out))
                new_legacy = [(layer.keys, layer.values) for layer in family.self_cache(out).layers]
                logp = torch.log_softmax(logits.float(), dim=-1)  # (1, vocab)
                apply_typed(source, logp, [prefix])
                allowed = step_scores(logp, special, last=len(prefix) + 1 >= source.max_len)[0].double()  # (vocab,)
                values, order = torch.sort(allowed, descending=True)  # (vocab,), (vocab,)
                expansions += 1
                return new_legacy, order.tolist(), values.tolist()

            heap: list[float] = []  # min-heap of the k best complete scores: its minimum raises gamma
            complete: list[tuple[float, tuple[int, ...]]] = []  # every complete hypothesis met above the floor
            floor = gamma - self.bound_slack - margin(gamma, SCORE_ATOL) if gamma > NEG_INF else NEG_INF
            cut = False
            legacy, order, values = expand((), [])
            # stack frames: [prefix, score, cache, children tokens, children log-probs, next child]
            stack: list[list[Any]] = [[(), 0.0, legacy, order, values, 0]]
            while stack:
                frame = stack[-1]
                prefix, score, legacy, order, values, i = frame
                if i >= len(order):
                    stack.pop()
                    continue
                child = score + values[i]
                if child == NEG_INF or child < floor:  # sorted: every later sibling is lower too
                    stack.pop()
                    continue
                frame[5] = i + 1
                token = order[i]
                if token in stops:
                    complete.append((child, prefix + (token,)))
                    heapq.heappush(heap, child)
                    if len(heap) > self.k:
                        heapq.heappop(heap)
                    if len(heap) == self.k and heap[0] > gamma:
                        gamma = heap[0]
                        floor = gamma - self.bound_slack - margin(gamma, SCORE_ATOL)
                    continue
                if (self.max_expansions is not None and expansions >= self.max_expansions) or \
                        (self.max_seconds is not None and time.perf_counter() - t0 >= self.max_seconds):
                    cut = True
                    break
                new_prefix = prefix + (token,)
                legacy, order, values = expand(new_prefix, legacy)
                stack.append([new_prefix, child, legacy, order, values, 0])
            found = complete
            if cut:  # fill up with the beam's hypotheses; nothing here is proven
                have = {tokens for _, tokens in found}
                found += [(h.score, h.tokens) for h in beam_hyps if h.tokens not in have]
            found = [found[i] for i in rank([v for v, _ in found], key=[t for _, t in found], atol=SCORE_ATOL)[: self.k]]
        return DecodeResult([Hypothesis(tokens, s) for s, tokens in found], exact=not cut, expansions=expansions,
                            seconds=time.perf_counter() - t0,
                            info={"initial_bound": initial_bound, "max_len": source.max_len})

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "beam_size": self.beam_size, "max_expansions": self.max_expansions,
                "max_seconds": self.max_seconds, "bound_slack": self.bound_slack, **self.limit.params()}
