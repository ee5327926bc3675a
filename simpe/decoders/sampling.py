"""Seeded ancestral sampling: N independent samples y ~ P(y|x), drawn token by token.

All samples of one source run as one batch over the shared encoder output; finished samples
leave the batch. Randomness comes from a local ``torch.Generator`` seeded with ``seed``, so
a call never touches (or depends on) torch's global RNG state, and the same model, source
and seed give the same samples (on the same device and torch build).

The pad / decoder-start token is never drawn: the next token is sampled from the model's
distribution restricted to the other tokens (renormalised for the draw only); a sample's
score stays its raw log P(y|x). At the length limit the sample ends with EOS.

Output: all N samples (duplicates kept; ``unique=True`` keeps the first of each) sorted by
descending score, ties in draw order; ``info["draw_order"]`` gives each hypothesis' draw
index and ``info["unique"]`` the number of distinct samples.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from simpe.decoders.base import DECODERS, Decoder, DecodeResult, Hypothesis
from simpe.decoders.incremental import CachedDecoder, LengthLimit, Source, check_int, decoding, encode, start_tokens, step_scores


def draw_samples(model: Any, source: Source, samples: int, seed: int) -> tuple[list[Hypothesis], int]:
    """Draw ``samples`` ancestral samples in draw order; returns (samples, expansions)."""
    special = source.special
    device = source.hidden.device
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    dec = CachedDecoder(model, source)
    logp = dec.step(start_tokens(source, 1))  # (1, vocab)
    expansions = 1
    alive = list(range(samples))  # sample index of each cache row
    tokens: list[list[int]] = [[] for _ in range(samples)]
    scores = torch.zeros(samples, dtype=torch.float64, device=device)  # (samples,)
    first = True
    for position in range(source.max_len):
        last = position == source.max_len - 1
        allowed = step_scores(logp, special, last)  # (rows, vocab)
        if first:
            allowed = allowed.expand(samples, -1)  # (samples, vocab), every sample starts from the same row
            logp = logp.expand(samples, -1)  # (samples, vocab)
        weights = torch.exp(allowed - allowed.max(dim=-1, keepdim=True).values)  # (rows, vocab), unnormalised
        drawn = torch.multinomial(weights, 1, generator=generator).view(-1)  # (rows,)
        rows = torch.tensor(alive, dtype=torch.long, device=device)  # (rows,)
        scores.index_add_(0, rows, logp.gather(1, drawn.view(-1, 1)).view(-1).double())  # (samples,) += (rows,)
        keep: list[int] = []
        for row, (sample, token) in enumerate(zip(alive, drawn.tolist())):
            tokens[sample].append(token)
            if token != special.eos:
                keep.append(row)
        if not keep:
            break
        select = torch.tensor(keep, dtype=torch.long, device=device)  # (live,)
        if first:
            dec.select(torch.zeros(len(keep), dtype=torch.long, device=device))  # the one start row, repeated
            first = False
        elif len(keep) < len(alive):
            dec.select(select)
        alive = [alive[row] for row in keep]
        logp = dec.step(drawn[select])  # (live, vocab)
        expansions += len(keep)
    values = scores.tolist()
    assert all(toks and toks[-1] == special.eos for toks in tokens)
    return [Hypothesis(tuple(toks), value) for toks, value in zip(tokens, values)], expansions


@DECODERS.add("sampling")
class SamplingDecoder(Decoder):
    """``samples`` seeded ancestral samples, sorted by model score (best first)."""

    def __init__(self, samples: int = 200, seed: int = 0, unique: bool = False, max_len_a: float = 2.0,
                 max_len_b: int = 10, max_len_cap: int = 256) -> None:
        check_int("samples", samples, 1)
        check_int("seed", seed, 0)
        self.samples, self.seed, self.unique = samples, seed, bool(unique)
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        """``samples`` samples drawn with seed ``seed + index``."""
        t0 = time.perf_counter()
        with decoding(model):
            encoded = encode(model, input_ids, self.limit)
            drawn, expansions = draw_samples(model, encoded, self.samples, self.seed + index)
        order = list(range(len(drawn)))
        distinct = len({h.tokens for h in drawn})
        if self.unique:
            seen: set[tuple[int, ...]] = set()
            order = [i for i in order if not (drawn[i].tokens in seen or seen.add(drawn[i].tokens))]  # type: ignore[func-returns-value]
        order.sort(key=lambda i: -drawn[i].score)  # stable: ties stay in draw order
        return DecodeResult([drawn[i] for i in order], exact=None, expansions=expansions,
                            seconds=time.perf_counter() - t0,
                            info={"draw_order": order, "unique": distinct, "samples": len(drawn)})

    def params(self) -> dict[str, Any]:
        return {"samples": self.samples, "seed": self.seed, "unique": self.unique, **self.limit.params()}
