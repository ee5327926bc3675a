"""Greedy decoding: the most probable next token at every step until EOS.

Kept separate from beam search (it equals ``beam`` with ``beam_size=1``, which the tests
check) because it is the simplest reference and the cheapest decoder for the online loop.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from simpe.decoders.base import DECODERS, DecodeResult, Hypothesis
from simpe.decoders.incremental import LengthLimit, Lockstep, Source, SourceDecoder, decoding, step_scores
from simpe.decoders.prefix import apply as apply_typed
from simpe.ties import SCORE_ATOL, top


@DECODERS.add("greedy")
class GreedyDecoder(SourceDecoder):
    """Argmax at each step (pad / decoder start never chosen; log-probabilities tied to rounding noise:
    the lower token id, as ``beam`` with ``beam_size=1``); one hypothesis."""

    def __init__(self, max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode_source(self, model: Any, source: Source, *, t0: float | None = None) -> DecodeResult:
        t0 = time.perf_counter() if t0 is None else t0
        with decoding(model):
            stops = source.special.stops
            dec = Lockstep(model, [source])
            token = None  # step 0 feeds the target prefix
            tokens: list[int] = []
            score = 0.0
            for position in range(source.max_len):
                logp = dec.step(token)  # (1, vocab)
                apply_typed(source, logp, [tuple(tokens)])
                allowed = step_scores(logp, source.special, last=position == source.max_len - 1)  # (1, vocab)
                best = int(top(allowed[0], 1, atol=SCORE_ATOL)[0])  # tied to rounding noise (simpe.ties): the lower id
                score += float(logp[0, best])
                tokens.append(best)
                if best in stops:
                    break
                token = torch.tensor([best], dtype=torch.long, device=source.device)  # (1,)
        hyp = Hypothesis(tuple(tokens), score)
        return DecodeResult([hyp], exact=None, expansions=len(tokens), seconds=time.perf_counter() - t0)

    def params(self) -> dict[str, Any]:
        return dict(self.limit.params())
