"""The penalty study of ``simpe replicate`` (the ``penalties`` part): Yan et al. (2021)'s Table 2 in a reduced form.

Table 2 reranks the exact top-100 by each search penalty and finds length normalisation the best of five (line 251):
log P / length and the four UID regularisers of Meister, Cotterell and Vieira (2020), each a score
log P(y) - lambda * R(y) over the hypothesis's token surprisals u_t = -log p(y_t | y_<t, x):

* max: R = max_t u_t;  square: R = sum_t u_t^2;  variance: R = mean_t (u_t - mean u)^2;
* greedy: R = sum_t (u_t - min_v u_t(v))^2, the distance from the greedy choice at each step.

On the studies' probe sentences (dev sentences of at most 20 words), per sentence: the exact top-k (``TopKDecoder``),
each hypothesis's surprisals teacher-forced in one batch (the decoders' raw log-softmax, forbidden tokens excluded: the
surprisals sum to the search's score), and the kRG (linear gain, chrF qualities as the studies use) of the list ranked
by log P, by log P / length and by each regulariser at each lambda of ``UID_LAMBDAS`` (the paper prints none). A
sentence whose search is cut short by ``max_expansions`` is left out and counted. Nothing here judges: the claim is
``yan2021-t2-length-norm`` (``yan.py``).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from simpe.decoders.incremental import special_ids
from simpe.decoders.topk import TopKDecoder
from simpe.metrics.utility import build_utility
from simpe.models.base import family_of
from simpe.ranking.measures import krg

UID_PENALTIES = ("max", "square", "variance", "greedy")
UID_LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0)  # no lambda is printed: each penalty at each, the claim takes each one's best


def surprisals(model: Any, ids: Any, hypotheses: Sequence[Any]) -> tuple[list[list[float]], list[list[float]]]:
    """Per hypothesis, each token's surprisal -log p(y_t | y_<t, x), and the smallest surprisal any token had at that
    step (the greedy choice's), teacher-forced in one batch."""
    family = family_of(model)
    width = max(len(h.tokens) for h in hypotheses)
    labels = torch.full((len(hypotheses), width), -100, dtype=torch.long, device=ids.device)  # (hyps, width)
    for row, h in enumerate(hypotheses):
        labels[row, :len(h.tokens)] = torch.tensor(h.tokens, dtype=torch.long)
    source = ids.reshape(1, -1).expand(len(hypotheses), -1)  # (hyps, src_len)
    logp = torch.log_softmax(family.pair_logits(model, source, labels).float(), dim=-1)  # (hyps, width, vocab)
    forbidden = list(special_ids(model).forbidden)
    if forbidden:
        logp[:, :, forbidden] = -math.inf
    best = logp.max(dim=-1).values  # (hyps, width)
    chosen = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (hyps, width)
    return ([[-float(chosen[r, t]) for t in range(len(h.tokens))] for r, h in enumerate(hypotheses)],
            [[-float(best[r, t]) for t in range(len(h.tokens))] for r, h in enumerate(hypotheses)])


def uid_penalty(name: str, u: Sequence[float], floor: Sequence[float]) -> float:
    """R(y) of one UID regulariser from the surprisals ``u`` and each step's smallest surprisal ``floor``."""
    if name == "max":
        return max(u)
    if name == "square":
        return sum(x * x for x in u)
    if name == "variance":
        mean = sum(u) / len(u)
        return sum((x - mean) ** 2 for x in u) / len(u)
    assert name == "greedy", name
    return sum((x - f) ** 2 for x, f in zip(u, floor))


def _ranked(qualities: Sequence[float], scores: Sequence[float]) -> list[float]:
    """The qualities in the order of ``scores``, best first (ties keep the search's order)."""
    return [qualities[j] for j in sorted(range(len(scores)), key=lambda j: -scores[j])]


def penalty_study(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], k: int,
                  max_expansions: int, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The exact top-``k`` of each sentence ranked by log P, log P / length and each UID regulariser: kRG per sentence."""
    utility = build_utility("chrf")
    device = next(model.parameters()).device
    decoder = TopKDecoder(k=k, beam_size=k, max_expansions=max_expansions)
    t0 = time.perf_counter()
    per_sentence: list[dict[str, Any]] = []
    cut = 0
    with torch.inference_mode():
        for i, (source, reference) in enumerate(zip(sources, references)):
            ids = family_of(model).encode_source(tokenizer, source, device)[0]
            result = decoder.decode(model, ids)
            if not result.exact or len(result.hypotheses) < 2:
                cut += not result.exact
                continue
            hyps = result.hypotheses
            q = [float(v) for v in utility.scores([tokenizer.decode(list(h.tokens), skip_special_tokens=True) for h in hyps],
                                                  reference, source)]
            u, floor = surprisals(model, ids, hyps)
            uid = {name: [krg(_ranked(q, [h.score - lam * uid_penalty(name, u[j], floor[j]) for j, h in enumerate(hyps)]), "linear")
                          for lam in UID_LAMBDAS] for name in UID_PENALTIES}
            per_sentence.append({"sentence": i, "krg_linear": krg(q, "linear"),
                                 "krg_linear_ln": krg(_ranked(q, [h.score / max(1, len(h.tokens)) for h in hyps]), "linear"),
                                 "krg_linear_uid": uid,
                                 "score_gap": max(abs(h.score + sum(uu)) for h, uu in zip(hyps, u))})
            if progress is not None:
                progress(f"penalties: {i + 1}/{len(sources)} sentences")
    return {"sentences": len(sources), "k": k, "lambdas": list(UID_LAMBDAS), "penalties": list(UID_PENALTIES), "cut": cut,
            "per_sentence": per_sentence, "seconds": time.perf_counter() - t0}
