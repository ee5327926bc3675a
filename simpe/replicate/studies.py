"""The decoding studies of ``simpe replicate`` on the base model (Yan et al. (2021) and Yan et al. (2022)).

On a probe set (dev sentences of at most 20 words), per sentence:

* the exact top-1 (``topk`` with k = 1): the empty-mode rate (the top-1 is the empty
  hypothesis) and, for every beam size B, whether plain beam search and min-heap beam search
  return a best hypothesis that scores below it (a search error; Yan et al. (2021), Table 3);
* the exact top-k for each k: the top region's kRG beside the random line (Yan et al. (2022),
  Figure 1), and the kQRG of plain beam's k-best list against the exact top-k's (Yan et al. (2022)'s
  "lucky bias" of beam search);
* for every sentence and beam size, the sentence-BLEU statistics (sacreBLEU's, ``bleu_stats``) of plain beam's and
  min-heap beam's best hypothesis: corpus BLEU against beam size (Yan et al. (2021), Figure 1b) and min-heap beam's
  BLEU without length normalisation (Table 4), with paired intervals over sentences; the same of the hypothesis each
  search's finished list ranks first by length-normalised score, log P / length (``bleu_stats_ln``: Table 4's "+ length
  normalization" row), and each search's best raw score (``best_scores``: the min-heap theorem, Section 5);
* the exact top-k's kRG (linear gain) when the list is reranked by length-normalised score (``krg_linear_ln``): a
  reduced form of Yan et al. (2021)'s Table 2 (reranking the exact top-100 with length normalisation);
* qualities are chrF (``metrics.utility``), as the loop's ranking snapshots use by default;
* per sentence (``search_flags``, ``top_region[k]["per_sentence"]``): what the verdicts' intervals resample.

Sentences whose exact search is cut short by ``max_expansions`` are left out of the figures
that need exactness, and counted.

``beam_size_study`` is plain beam search alone on a larger set of sentences (no exact search: cheap on a CPU), so
that Figure 1b and 1c rest on more sentences whose output changes with the beam size.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from simpe.decoders.beam import BeamDecoder
from simpe.decoders.heap_beam import HeapBeamDecoder
from simpe.decoders.topk import TopKDecoder
from simpe.metrics import metric_for
from simpe.metrics.utility import build_utility
from simpe.models.base import family_of
from simpe.ranking.measures import kqrg, krg, random_krg, random_krg_of
from simpe.ties import SCORE_ATOL, margin

SEARCH_ERROR_SLACK = 1e-4  # a beam's best below the exact top-1 by more than this (and the tie tolerance) is an error


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None  # the records hold JSON numbers: no infinities


def length_normalised(hypotheses: Sequence[Any]) -> list[Any]:
    """Hypotheses reranked by log P / length (tokens, EOS included), best first; ties keep their order."""
    return sorted(hypotheses, key=lambda h: -h.score / max(1, len(h.tokens)))


def beam_size_study(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], beam_sizes: Sequence[int],
                    progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Plain beam search alone at every beam size on ``sources``: per sentence and beam size the BLEU statistics of the
    best hypothesis (Yan et al. (2021), Figure 1b in corpus BLEU, Figure 1c in sentence BLEU)."""
    bleu = metric_for("bleu")
    device = next(model.parameters()).device
    t0 = time.perf_counter()
    stats: dict[int, list[list[float]]] = {b: [] for b in beam_sizes}  # per beam size, per sentence
    with torch.inference_mode():
        for i, (source, reference) in enumerate(zip(sources, references)):
            ids = family_of(model).encode_source(tokenizer, source, device)[0]
            for b in beam_sizes:
                found = BeamDecoder(beam_size=b).decode(model, ids).hypotheses
                text = tokenizer.decode(list(found[0].tokens), skip_special_tokens=True) if found else ""
                stats[b].append([float(x) for x in bleu.segment_stats(text, reference)])
            if progress is not None:
                progress(f"beam sizes: {i + 1}/{len(sources)} sentences")
    return {"sentences": len(sources), "bleu_stats": stats, "bleu_signature": bleu.signature(),
            "seconds": time.perf_counter() - t0}


def decoding_studies(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str],
                     beam_sizes: Sequence[int], ks: Sequence[int], max_expansions: int,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the studies; returns their figures (rates and means as fractions, kRG/kQRG in [0, 1])."""
    utility = build_utility("chrf")
    bleu = metric_for("bleu")
    device = next(model.parameters()).device
    t0 = time.perf_counter()
    exact1 = TopKDecoder(k=1, beam_size=5, max_expansions=max_expansions)
    tops = {k: TopKDecoder(k=k, beam_size=k, max_expansions=max_expansions) for k in ks}
    errors = {b: {"beam": 0, "heap_beam": 0} for b in beam_sizes}
    flags: dict[int, dict[str, list[int]]] = {b: {"beam": [], "heap_beam": []} for b in beam_sizes}  # per exact sentence
    bleu_stats: dict[int, dict[str, list[list[float]]]] = {b: {"beam": [], "heap_beam": []} for b in beam_sizes}  # per sentence
    bleu_ln: dict[int, dict[str, list[list[float]]]] = {b: {"beam": [], "heap_beam": []} for b in beam_sizes}  # length-normalised
    best_scores: dict[int, dict[str, list[float | None]]] = {b: {"beam": [], "heap_beam": []} for b in beam_sizes}  # log P
    per_sentence: dict[int, list[dict[str, float | None]]] = {k: [] for k in ks}  # what the verdicts' intervals resample
    exact_sentences, empty = 0, 0
    krgs: dict[int, list[float]] = {k: [] for k in ks}
    kqrgs: dict[int, dict[str, list[float]]] = {k: {"exact": [], "beam": []} for k in ks}
    cut = {k: 0 for k in [1, *ks]}

    def quality(texts: list[str], reference: str, source: str) -> list[float]:
        return [float(v) for v in utility.scores(texts, reference, source)]

    def text(tokens: Sequence[int]) -> str:
        return tokenizer.decode(list(tokens), skip_special_tokens=True)

    with torch.inference_mode():
        for i, (source, reference) in enumerate(zip(sources, references)):
            ids = family_of(model).encode_source(tokenizer, source, device)[0]
            best = exact1.decode(model, ids)
            floor = None
            if best.exact:
                exact_sentences += 1
                top = best.hypotheses[0]
                empty += len(top.tokens) == 1  # EOS alone
                floor = top.score - SEARCH_ERROR_SLACK - margin(top.score, SCORE_ATOL)
            else:
                cut[1] += 1
            for b in beam_sizes:
                for name, decoder in (("beam", BeamDecoder(beam_size=b)), ("heap_beam", HeapBeamDecoder(beam_size=b))):
                    found = decoder.decode(model, ids).hypotheses
                    bleu_stats[b][name].append([float(x) for x in bleu.segment_stats(text(found[0].tokens) if found else "", reference)])
                    normalised = length_normalised(found)
                    bleu_ln[b][name].append([float(x) for x in bleu.segment_stats(text(normalised[0].tokens) if found else "", reference)])
                    best_scores[b][name].append(_finite(found[0].score) if found else None)
                    if floor is not None:
                        error = not found or found[0].score < floor
                        errors[b][name] += error
                        flags[b][name].append(int(error))
            for k, decoder in tops.items():
                result = decoder.decode(model, ids)
                if not result.exact or len(result.hypotheses) < 2:
                    cut[k] += not result.exact
                    continue
                q = quality([text(h.tokens) for h in result.hypotheses], reference, source)
                krgs[k].append(krg(q))
                beam = BeamDecoder(beam_size=k).decode(model, ids).hypotheses
                beam_q = quality([text(h.tokens) for h in beam], reference, source)
                kqrgs[k]["exact"].append(kqrg(q))
                kqrgs[k]["beam"].append(kqrg(beam_q))
                by_score = {id(h): j for j, h in enumerate(result.hypotheses)}
                q_ln = [q[by_score[id(h)]] for h in length_normalised(result.hypotheses)]
                per_sentence[k].append({"krg": krgs[k][-1], "krg_linear": krg(q, "linear"), "krg_linear_ln": krg(q_ln, "linear"),
                                        "random_linear": random_krg_of(q, "linear"), "kqrg_exact": kqrgs[k]["exact"][-1],
                                        "kqrg_beam": kqrgs[k]["beam"][-1],
                                        "beam_krg_linear": krg(beam_q, "linear") if len(beam_q) >= 2 else None})
            if progress is not None:
                progress(f"studies: {i + 1}/{len(sources)} sentences")
    search = {b: {name: count / exact_sentences if exact_sentences else None for name, count in found.items()}
              for b, found in errors.items()}
    region = {}
    for k in ks:
        exact_q, beam_q = _mean(kqrgs[k]["exact"]), _mean(kqrgs[k]["beam"])
        region[k] = {"krg": _mean(krgs[k]), "random_krg": random_krg(k), "sentences": len(krgs[k]),
                     "kqrg_exact": exact_q, "kqrg_beam": beam_q,
                     "lucky_bias": None if not exact_q or beam_q is None else beam_q / exact_q - 1.0,
                     "per_sentence": per_sentence[k]}
    return {"sentences": len(sources), "exact_sentences": exact_sentences, "cut": cut,
            "empty_rate": empty / exact_sentences if exact_sentences else None, "search_errors": search,
            "search_flags": flags, "bleu_stats": bleu_stats, "bleu_stats_ln": bleu_ln, "best_scores": best_scores,
            "bleu_signature": bleu.signature(),
            "top_region": region, "seconds": time.perf_counter() - t0}
