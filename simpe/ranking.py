"""Ranking model errors (seed 000): kRG, kQRG, random kRG, empty-mode and beam-search error rates.

Definitions (MISSION.md). For one source, Y_M lists hypotheses in model order (best log P
first); Y_HR lists the same hypotheses by quality Q (sentence BLEU, chrF or COMET, chrF and
BLEU scaled to [0, 1]). With ranks j = 1..n:

    DCG(Y)  = sum_j f(y_j) / log2(j + 1),   f(y) = n - rank of y in Y_HR (0-based)
    kRG     = DCG(Y_M) / DCG(Y_HR)
    kQRG    = sum_j Q(y_j) / log2(j + 1) over Y_M  /  sum_j 1 / log2(j + 1)
    random kRG = E over uniformly random orders of DCG / DCG(Y_HR) = mean(f) * sum_j 1/log2(j+1) / DCG(Y_HR)
                 (exact expectation, not sampled)

``gain="exp"`` uses f(y) = 2^(n - 1 - rank) - 1 instead (standard nDCG gains): the paper's
reported random baseline for k = 10 (58.72%) matches this (58.75%), not the linear gain of
the definition above (83.39%); the linear gain is the default.

Decisions where the seed is silent:

* Ties in Q: Y_HR orders equal-quality hypotheses as the model does, so a tie is never a
  ranking error (and a list whose hypotheses all have the same quality has kRG = 1). Ties
  in model score keep the decoder's order (exact top-k: the search's; samples: draw order).
* Fewer than k hypotheses (a hypothesis space smaller than k under the length limit, or a
  search cut short that found fewer): n is the number there is, for f, both DCGs, kQRG's
  normaliser and the random baseline; each record keeps ``n``, and the summary reports the
  share of such segments (``top.short_rate``). No hypothesis at all: the segment is left
  out of the ranking means (it cannot happen with an exact search, which always finds one).
* Monte Carlo sampling (``mc.*``): Y_M is all ``samples`` ancestral samples sorted by model
  score, duplicates kept (k = number of samples, as in the seed); each sample's Q is
  computed once per distinct text. Sample seeds are ``sample_seed + segment index``.
* Empty-mode rate: share of segments whose exact top-1 is the empty hypothesis (EOS only).
  Beam search error rate: share whose plain beam output (width ``beam_size``) scores more
  than 1e-4 below the exact top-1. For segments whose search was cut short, the top-1 is
  only the best found: both rates are then lower bounds (``top.exact_rate`` says how many
  were exact).

Speed: the exact searches and plain beams of up to 32 sentences run together in lockstep
(``decode_batch``), so per-sentence ``seconds`` in the top-region records are the chunk's
time per sentence.

``snapshot`` is what the online loop calls every N segments; ``evaluate`` also returns the
per-sentence records ``simpe rank`` writes. This module does not load models or write files.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from simpe.errors import ConfigError

QUALITIES = ("sbleu", "chrf", "comet")
CHUNK = 32  # sentences whose exact searches (and beams) run together in lockstep
GAINS = ("linear", "exp")
BEAM_ERROR_TOL = 1e-4


# ---------------------------------------------------------------- the metrics
def _discounts(n: int) -> list[float]:
    return [1.0 / math.log2(j + 1) for j in range(1, n + 1)]


def _gains(n: int, gain: str) -> list[float]:
    """f for HR ranks 0..n-1."""
    if gain == "linear":
        return [float(n - r) for r in range(n)]
    if gain == "exp":
        return [float(2 ** (n - 1 - r) - 1) for r in range(n)]
    raise ConfigError(f"unknown gain {gain!r}; known: {', '.join(GAINS)}")


def hr_ranks(qualities: Sequence[float]) -> list[int]:
    """0-based rank in Y_HR of each hypothesis of Y_M (given in model order); ties follow model order."""
    order = sorted(range(len(qualities)), key=lambda i: (-qualities[i], i))
    ranks = [0] * len(qualities)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def krg(qualities: Sequence[float], gain: str = "linear") -> float | None:
    """kRG of one list.

    Args:
        qualities: Q of each hypothesis, in model order (best log-probability first); n = len.
        gain: ``linear`` (f = n - rank) or ``exp`` (f = 2^(n-1-rank) - 1).
    Returns:
        DCG(Y_M) / DCG(Y_HR) in [0, 1]; None for an empty list.
    """
    n = len(qualities)
    if n == 0:
        return None
    f = _gains(n, gain)
    disc = _discounts(n)
    ranks = hr_ranks(qualities)
    ideal = sum(g * d for g, d in zip(f, disc))
    if ideal == 0.0:  # exp gain with n == 1: f = 0 everywhere
        return 1.0
    return sum(f[ranks[j]] * disc[j] for j in range(n)) / ideal


def kqrg(qualities: Sequence[float]) -> float | None:
    """kQRG of one list: sum_j Q(y_j)/log2(j+1) over model order / sum_j 1/log2(j+1); None when empty."""
    n = len(qualities)
    if n == 0:
        return None
    disc = _discounts(n)
    return sum(q * d for q, d in zip(qualities, disc)) / sum(disc)


def random_krg(n: int, gain: str = "linear") -> float | None:
    """Expected kRG of a uniformly random order of n hypotheses with distinct qualities (exact, not sampled)."""
    if n <= 0:
        return None
    f = _gains(n, gain)
    disc = _discounts(n)
    ideal = sum(g * d for g, d in zip(f, disc))
    if ideal == 0.0:
        return 1.0
    return (sum(f) / n) * sum(disc) / ideal


def rank_figures(qualities: Sequence[float], gain: str = "linear") -> dict[str, Any]:
    """kRG, kQRG and random kRG of one model-ordered list, with its length n."""
    n = len(qualities)
    return {"n": n, "krg": krg(qualities, gain), "kqrg": kqrg(qualities), "random_krg": random_krg(n, gain)}


# ---------------------------------------------------------------- configuration
@dataclass
class RankingConfig:
    """Settings of a ranking evaluation (a loop snapshot or ``simpe rank``).

    k: top-region size; quality: sbleu | chrf | comet; samples, sample_seed: Monte Carlo
    sampling; beam_size: the plain beam whose output is checked for search errors;
    max_expansions / max_seconds: limits of each exact search (null = none; a search cut
    short is counted in exact_rate; the searches of up to 32 sentences run together in
    lockstep and share max_seconds times their number); top_region / sampling: which evaluations to run;
    gain: linear (MISSION.md) | exp (see the module docstring); batch_size: prefixes per
    forward pass of the exact search; max_len_a/b/cap: the length limit (incremental.py).
    """

    k: int = 5
    quality: str = "chrf"  # sbleu|chrf|comet
    samples: int = 200
    sample_seed: int = 0
    beam_size: int = 5
    max_expansions: int | None = 20000
    max_seconds: float | None = 30.0
    top_region: bool = True
    sampling: bool = True
    gain: str = "linear"
    batch_size: int = 64
    max_len_a: float = 2.0
    max_len_b: int = 10
    max_len_cap: int = 256

    def __post_init__(self) -> None:
        def positive_int(name: str, value: Any, allow_none: bool = False) -> None:
            if value is None and allow_none:
                return
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"ranking {name} must be a positive integer{' or null' if allow_none else ''}, got {value!r}")

        positive_int("k", self.k)
        positive_int("samples", self.samples)
        positive_int("beam_size", self.beam_size)
        positive_int("batch_size", self.batch_size)
        positive_int("max_expansions", self.max_expansions, allow_none=True)
        if isinstance(self.sample_seed, bool) or not isinstance(self.sample_seed, int) or self.sample_seed < 0:
            raise ConfigError(f"ranking sample_seed must be an integer >= 0, got {self.sample_seed!r}")
        if self.max_seconds is not None and (isinstance(self.max_seconds, bool) or not isinstance(self.max_seconds, (int, float))
                                             or self.max_seconds <= 0):
            raise ConfigError(f"ranking max_seconds must be a positive number or null, got {self.max_seconds!r}")
        if self.quality not in QUALITIES:
            raise ConfigError(f"unknown ranking quality {self.quality!r}; known: {', '.join(QUALITIES)}")
        if self.gain not in GAINS:
            raise ConfigError(f"unknown ranking gain {self.gain!r}; known: {', '.join(GAINS)}")
        if not (self.top_region or self.sampling):
            raise ConfigError("ranking with top_region=false and sampling=false evaluates nothing; enable one")

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> RankingConfig:
        """Build from a config block; an unknown key is a ConfigError naming the valid ones."""
        from dataclasses import fields

        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ConfigError(f"unknown ranking setting(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        return cls(**params)

    def length(self) -> dict[str, Any]:
        return {"max_len_a": self.max_len_a, "max_len_b": self.max_len_b, "max_len_cap": self.max_len_cap}


# ---------------------------------------------------------------- evaluation
def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _quality_fn(cfg: RankingConfig, comet: Any) -> Callable[[list[str], str, str], list[float]]:
    from simpe.decoders.utility import build_utility

    utility = build_utility(cfg.quality, comet)

    def quality(texts: list[str], reference: str, source: str) -> list[float]:
        distinct = list(dict.fromkeys(texts))
        values = dict(zip(distinct, utility.scores(distinct, reference, source)))
        return [float(values[t]) for t in texts]

    return quality


def evaluate(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
             comet: Any = None, on_record: Callable[[dict[str, Any]], None] | None = None,
             keep_records: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the ranking evaluation (top region and/or Monte Carlo sampling) on sentence pairs.

    Args:
        model, tokenizer: a MarianMTModel (any mode; put in eval mode for the duration) and its tokenizer.
        sources, references: detokenised segments, equally many.
        comet: for quality=comet, a COMET model, a ``CometScorer``, or a hub id / path.
        on_record: called with each per-sentence record as soon as it is done.
        keep_records: also return the records (otherwise an empty list).
    Returns:
        (flat summary dict, per-sentence records).
    """
    import torch

    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.incremental import special_ids
    from simpe.decoders.sampling import SamplingDecoder
    from simpe.decoders.topk import TopKDecoder

    if len(sources) != len(references):
        from simpe.errors import DataError

        raise DataError(f"ranking needs as many references as sources; got {len(sources)} and {len(references)}")
    t0 = time.perf_counter()
    quality = _quality_fn(cfg, comet)
    length = cfg.length()
    topk = TopKDecoder(k=cfg.k, beam_size=max(cfg.k, cfg.beam_size), batch_size=cfg.batch_size,
                       max_expansions=cfg.max_expansions, max_seconds=cfg.max_seconds, **length)
    beam = BeamDecoder(beam_size=cfg.beam_size, **length)
    sampler = SamplingDecoder(samples=cfg.samples, seed=cfg.sample_seed, **length)
    device = next(model.parameters()).device
    eos = special_ids(model).eos
    records: list[dict[str, Any]] = []
    top_rows: list[dict[str, Any]] = []
    mc_rows: list[dict[str, Any]] = []
    with torch.inference_mode():
        for chunk in range(0, len(sources), CHUNK):
            chunk_ids = [tokenizer(source, truncation=True, max_length=512, return_tensors="pt")["input_ids"].to(device)  # (1, src_len)
                         for source in sources[chunk:chunk + CHUNK]]
            if cfg.top_region:  # the chunk's searches in lockstep, sharing forward passes
                tops = topk.decode_batch(model, chunk_ids)
                beams = beam.decode_batch(model, chunk_ids)
            for offset, ids in enumerate(chunk_ids):
                index = chunk + offset
                source, reference = sources[index], references[index]
                record: dict[str, Any] = {"index": index, "source": source, "reference": reference}
                if cfg.top_region:
                    result = tops[offset]
                    best_beam = beams[offset].hypotheses[0]
                    hyps = result.hypotheses
                    texts = tokenizer.batch_decode([list(h.tokens) for h in hyps], skip_special_tokens=True)
                    qualities = quality(texts, reference, source)
                    beam_text = tokenizer.decode(list(best_beam.tokens), skip_special_tokens=True)
                    row = {**rank_figures(qualities, cfg.gain), "exact": bool(result.exact), "expansions": result.expansions,
                           "seconds": result.seconds, "empty": bool(hyps) and hyps[0].tokens == (eos,),
                           "beam_error": bool(hyps) and best_beam.score < hyps[0].score - BEAM_ERROR_TOL,
                           "beam": {"text": beam_text, "score": best_beam.score,
                                    "quality": quality([beam_text], reference, source)[0]},
                           "hypotheses": [{"text": t, "score": h.score, "quality": q, "length": len(h.tokens)}
                                          for t, h, q in zip(texts, hyps, qualities)]}
                    top_rows.append(row)
                    record["top"] = row
                if cfg.sampling:
                    result = sampler.decode(model, ids, seed=cfg.sample_seed + index)
                    hyps = result.hypotheses
                    texts = tokenizer.batch_decode([list(h.tokens) for h in hyps], skip_special_tokens=True)
                    qualities = quality(texts, reference, source)
                    distinct: dict[str, dict[str, Any]] = {}
                    for t, h, q in zip(texts, hyps, qualities):
                        entry = distinct.setdefault(t, {"text": t, "score": h.score, "quality": q, "count": 0})
                        entry["count"] += 1
                    row = {**rank_figures(qualities, cfg.gain), "unique": result.info["unique"] if result.info else None,
                           "mean_quality": sum(qualities) / len(qualities), "seconds": result.seconds,
                           "empty_share": sum(h.tokens == (eos,) for h in hyps) / len(hyps),
                           "samples": list(distinct.values())}
                    mc_rows.append(row)
                    record["mc"] = row
                if on_record is not None:
                    on_record(record)
                if keep_records:
                    records.append(record)
    summary: dict[str, Any] = {"probe_size": len(sources), "k": cfg.k, "quality": cfg.quality, "gain": cfg.gain}
    n_top = len(top_rows)
    if cfg.top_region:
        summary.update({
            "top.krg": _mean([r["krg"] for r in top_rows]),
            "top.kqrg": _mean([r["kqrg"] for r in top_rows]),
            "top.random_krg": _mean([r["random_krg"] for r in top_rows]),
            "top.empty_rate": sum(r["empty"] for r in top_rows) / n_top if n_top else None,
            "top.beam_error_rate": sum(r["beam_error"] for r in top_rows) / n_top if n_top else None,
            "top.exact_rate": sum(r["exact"] for r in top_rows) / n_top if n_top else None,
            "top.short_rate": sum(r["n"] < cfg.k for r in top_rows) / n_top if n_top else None,
            "top.beam_quality": _mean([r["beam"]["quality"] for r in top_rows]),
            "top.expansions": _mean([r["expansions"] for r in top_rows]),
            "top.seconds": sum(r["seconds"] for r in top_rows),
        })
    if cfg.sampling:
        summary.update({
            "mc.samples": cfg.samples,
            "mc.krg": _mean([r["krg"] for r in mc_rows]),
            "mc.kqrg": _mean([r["kqrg"] for r in mc_rows]),
            "mc.random_krg": _mean([r["random_krg"] for r in mc_rows]),
            "mc.mean_quality": _mean([r["mean_quality"] for r in mc_rows]),
            "mc.unique": _mean([r["unique"] for r in mc_rows]),
            "mc.empty_share": _mean([r["empty_share"] for r in mc_rows]),
            "mc.seconds": sum(r["seconds"] for r in mc_rows),
        })
    summary["seconds"] = time.perf_counter() - t0
    return summary, records


def snapshot(model: Any, tokenizer: Any, sources: list[str], references: list[str], cfg: RankingConfig,
             comet: Any = None) -> dict[str, Any]:
    """Run the ranking evaluation on a probe set with the current parameters.

    Returns a flat JSON-able dict of summary figures: ``top.krg``, ``top.kqrg``,
    ``top.random_krg``, ``top.empty_rate``, ``top.beam_error_rate``, ``top.exact_rate``,
    ``top.short_rate``, ``top.beam_quality``, ``top.expansions``, ``top.seconds``; ``mc.krg``,
    ``mc.kqrg``, ``mc.random_krg``, ``mc.mean_quality``, ``mc.unique``, ``mc.empty_share``,
    ``mc.samples``, ``mc.seconds``; ``probe_size``, ``k``, ``quality``, ``gain``, ``seconds``.

    Changes no parameter, no module's train/eval flag and no RNG state of the caller: it runs
    under ``torch.inference_mode`` with the model in eval mode (restored afterwards), and
    sampling draws from a local ``torch.Generator``.
    """
    summary, _ = evaluate(model, tokenizer, sources, references, cfg, comet=comet)
    return summary


def config_dict(cfg: RankingConfig) -> dict[str, Any]:
    """The config as a plain dict, for summaries."""
    return asdict(cfg)
