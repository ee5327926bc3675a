"""The ranking evaluation of Yan et al. (2022) on sentence pairs: top region and Monte Carlo sampling.

For each source it runs the exact top-k search, a plain beam and ancestral sampling,
scores every hypothesis with the quality Q (a utility of the metric stack,
``simpe.metrics.utility``) and computes the measures of measures.py (kRG, kQRG, random
kRG), the empty-mode rate and the beam search error rate. Settings: ``RankingConfig``
(the ``ranking`` section of adapters/defaults.yaml).

Decisions where Yan et al. (2022) is silent:

* Ties in model score keep the decoder's order (exact top-k: the search's; samples: draw
  order).
* Fewer than k hypotheses (a hypothesis space smaller than k under the length limit, or a
  search cut short that found fewer): n is the number there is, for f, both DCGs, kQRG's
  normaliser and the random baseline; each record keeps ``n``, and the summary reports the
  share of such segments (``top.short_rate``). No hypothesis at all: the segment is left
  out of the ranking means (it cannot happen with an exact search, which always finds one).
* Monte Carlo sampling (``mc.*``): Y_M is all ``samples`` ancestral samples sorted by model
  score, duplicates kept (k = number of samples, as in the paper); each sample's Q is
  computed once per distinct text. Sample seeds are ``sample_seed + segment index``.
* Empty-mode rate: share of segments whose exact top-1 is the empty hypothesis (EOS only).
  Beam search error rate: share whose plain beam output (width ``beam_size``) scores more
  than 1e-4 below the exact top-1. For segments whose search was cut short, the top-1 is
  only the best found: both rates are then lower bounds (``top.exact_rate`` says how many
  were exact).

Speed: the exact searches, plain beams and Monte Carlo samples of up to 32 sentences run
together in lockstep (``decode_sources``; the samples of one sentence share the rows of their
common prefixes, decoders/sampling.py), so per-sentence ``seconds`` are the chunk's time per
sentence. Each sentence is encoded once for the three decoders, its cross-attention states
computed once per decoder and read in place by every row of that sentence
(``simpe.decoders.cross``), and each distinct hypothesis decoded to text once
(``Detokenizer``). The min-heap beam that bounds the exact search is the search's first part:
its prefixes join the search tree with their states and rows (decoders/topk.py). Where a
snapshot's time goes, and what it was before: ``make bench-snapshot`` (docs/benchmarks.md).
The forward batches are what they were, so the floats, and the records, are too: most of a
snapshot is the model's forward passes, whose rows (top-k expansions, distinct sample
prefixes, the beams' rows) the records fix.

``snapshot`` is what the online loop calls every N segments; ``evaluate`` also returns the
per-sentence records ``simpe rank`` writes (study.py). ``check`` refuses bad settings before
any model loads. This module does not load models or write files.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from simpe.config.tree import RankingConfig
from simpe.errors import DataError
from simpe.metrics.utility import build_utility, check_utility
from simpe.ranking.measures import rank_figures

CHUNK = 32  # sentences whose exact searches (and beams) run together in lockstep
BEAM_ERROR_TOL = 1e-4


def check(cfg: RankingConfig, comet: Any = None) -> None:
    """Refuse a quality that does not exist, or ``comet`` without a COMET model, before any model loads."""
    check_utility(cfg.quality, comet)


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _quality_fn(cfg: RankingConfig, comet: Any) -> Callable[[list[str], str, str], list[float]]:
    utility = build_utility(cfg.quality, comet)

    def quality(texts: list[str], reference: str, source: str) -> list[float]:
        distinct = list(dict.fromkeys(texts))
        values = dict(zip(distinct, utility.scores(distinct, reference, source)))
        return [float(values[t]) for t in texts]

    return quality


class Detokenizer:
    """Hypotheses to text, as ``tokenizer.batch_decode(..., skip_special_tokens=True)`` gives it, each distinct
    token sequence decoded once.

    For a slow (Python) tokenizer that keeps ``PreTrainedTokenizer``'s own ``_decode`` and ``convert_ids_to_tokens``
    (Marian's), the special tokens are dropped here with sets built once and the rest decoded with
    ``skip_special_tokens=False``: the same text (those two functions drop exactly the ids in ``all_special_ids``
    and then the tokens in ``all_special_tokens``), without rebuilding both lists for every token (most of
    the time of decoding a probe set's samples). Any other tokenizer decodes as it always did.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.texts: dict[tuple[int, ...], str] = {}
        self.drop: set[int] | None = None  # None: decode with the tokenizer's own skip_special_tokens
        self.keep: set[int] = set()
        try:
            import transformers
            from transformers import MarianTokenizer, PreTrainedTokenizer
        except ImportError:  # pragma: no cover (transformers is a dependency)
            return
        kind = type(tokenizer)
        # transformers 5's MarianTokenizer wraps _decode only to choose its source or target SentencePiece model,
        # from a keyword the plain decode here passes through unchanged
        plain = (PreTrainedTokenizer._decode, getattr(MarianTokenizer, "_decode", None))
        if (isinstance(tokenizer, PreTrainedTokenizer) and kind._decode in plain
                and kind.convert_ids_to_tokens is PreTrainedTokenizer.convert_ids_to_tokens):
            self.special_ids = set(tokenizer.all_special_ids)
            # transformers 4's _decode also drops a token whose text is special; 5's drops by id only
            five = int(transformers.__version__.split(".")[0]) >= 5
            self.special_tokens = set() if five else set(tokenizer.all_special_tokens)
            self.drop, self.keep = set(), set()  # ids found special (dropped) or not

    def _kept(self, tokens: tuple[int, ...]) -> list[int]:
        assert self.drop is not None
        kept = []
        for token in tokens:
            if token in self.keep:
                kept.append(token)
            elif token not in self.drop:
                special = token in self.special_ids or self.tokenizer.convert_ids_to_tokens(token) in self.special_tokens
                (self.drop if special else self.keep).add(token)
                if not special:
                    kept.append(token)
        return kept

    def __call__(self, hypotheses: Sequence[Any]) -> list[str]:
        """The texts of ``hypotheses`` (anything with ``tokens``), in order."""
        todo = [t for t in dict.fromkeys(h.tokens for h in hypotheses) if t not in self.texts]
        if todo:
            if self.drop is None:
                found = self.tokenizer.batch_decode([list(t) for t in todo], skip_special_tokens=True)
            else:
                found = [self.tokenizer.decode(self._kept(t), skip_special_tokens=False) for t in todo]
            self.texts.update(zip(todo, found))
        return [self.texts[h.tokens] for h in hypotheses]


def evaluate(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
             comet: Any = None, on_record: Callable[[dict[str, Any]], None] | None = None,
             keep_records: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the ranking evaluation (top region and/or Monte Carlo sampling) on sentence pairs.

    Args:
        model, tokenizer: a model of a supported family (any mode; put in eval mode for the duration) and its tokenizer.
        sources, references: detokenised segments, equally many.
        comet: for quality=comet, a COMET model, a ``CometScorer``, or a hub id / path.
        on_record: called with each per-sentence record as soon as it is done.
        keep_records: also return the records (otherwise an empty list).
    Returns:
        (flat summary dict, per-sentence records).
    """
    import torch

    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.incremental import decoding, encode, special_ids
    from simpe.decoders.sampling import SamplingDecoder
    from simpe.decoders.topk import TopKDecoder
    from simpe.models import family_of

    if len(sources) != len(references):
        raise DataError(f"ranking needs as many references as sources; got {len(sources)} and {len(references)}")
    t0 = time.perf_counter()
    quality = _quality_fn(cfg, comet)
    length = cfg.length()
    topk = TopKDecoder(k=cfg.k, beam_size=max(cfg.k, cfg.beam_size), batch_size=cfg.batch_size,
                       max_expansions=cfg.max_expansions, max_seconds=cfg.max_seconds, **length)
    beam = BeamDecoder(beam_size=cfg.beam_size, **length)
    sampler = SamplingDecoder(samples=cfg.samples, seed=cfg.sample_seed, **length)
    device = next(model.parameters()).device
    family = family_of(model)
    stops = special_ids(model).stops
    empty = lambda tokens: len(tokens) == 1 and tokens[0] in stops  # noqa: E731 (the stop token alone)
    records: list[dict[str, Any]] = []
    top_rows: list[dict[str, Any]] = []
    mc_rows: list[dict[str, Any]] = []
    texts_of = Detokenizer(tokenizer)
    with torch.inference_mode(), decoding(model):
        for chunk in range(0, len(sources), CHUNK):
            t_chunk = time.perf_counter()
            # the encoder once per sentence, for all three decoders (they share one length limit)
            encoded = [encode(model, family.encode_source(tokenizer, source, device)[0], topk.limit)
                       for source in sources[chunk:chunk + CHUNK]]
            if cfg.top_region:  # the chunk's searches in lockstep, sharing forward passes
                tops = topk.decode_sources(model, encoded, start=chunk, t0=t_chunk)
                beams = beam.decode_sources(model, encoded, start=chunk)
            if cfg.sampling:  # every sample of the chunk's sentences in one decoder batch (shared prefixes share rows)
                drawn = sampler.decode_sources(model, encoded, start=chunk)
            for offset in range(len(encoded)):
                index = chunk + offset
                source, reference = sources[index], references[index]
                record: dict[str, Any] = {"index": index, "source": source, "reference": reference}
                # every text of the sentence decoded at once (each distinct token sequence once); qualities in the
                # groups they always had (a COMET utility embeds a group's new texts in one batch: same groups, same floats)
                top_hyps = tops[offset].hypotheses if cfg.top_region else []
                best_beam = beams[offset].hypotheses[0] if cfg.top_region else None
                samples = drawn[offset].hypotheses if cfg.sampling else []
                texts = texts_of(top_hyps + ([best_beam] if best_beam is not None else []) + samples)
                if cfg.top_region:
                    assert best_beam is not None
                    record["top"] = _top_row(tops[offset], best_beam, texts[:len(top_hyps)], texts[len(top_hyps)],
                                             quality, reference, source, cfg, empty)
                    top_rows.append(record["top"])
                if cfg.sampling:
                    record["mc"] = _mc_row(drawn[offset], texts[len(texts) - len(samples):], quality, reference, source,
                                           cfg, empty)
                    mc_rows.append(record["mc"])
                if on_record is not None:
                    on_record(record)
                if keep_records:
                    records.append(record)
    summary = _summary(cfg, len(sources), top_rows, mc_rows)
    summary["seconds"] = time.perf_counter() - t0
    return summary, records


def _top_row(result: Any, best_beam: Any, top_texts: list[str], beam_text: str, quality: Callable, reference: str,
             source: str, cfg: RankingConfig, empty: Callable[[Any], bool]) -> dict[str, Any]:
    """One sentence's top-region record: the exact top-k ranked by quality, the search's figures, beam search's best."""
    hyps = result.hypotheses
    top_q = quality(top_texts, reference, source)
    beam_q = quality([beam_text], reference, source)[0]
    return {**rank_figures(top_q, cfg.gain, cfg.ties), "exact": bool(result.exact), "expansions": result.expansions,
            "seconds": result.seconds, "empty": bool(hyps) and empty(hyps[0].tokens),
            "beam_error": bool(hyps) and best_beam.score < hyps[0].score - BEAM_ERROR_TOL,
            "beam": {"text": beam_text, "score": best_beam.score, "quality": beam_q},
            "hypotheses": [{"text": t, "score": h.score, "quality": q, "length": len(h.tokens)}
                           for t, h, q in zip(top_texts, hyps, top_q)]}


def _mc_row(result: Any, sample_texts: list[str], quality: Callable, reference: str, source: str, cfg: RankingConfig,
            empty: Callable[[Any], bool]) -> dict[str, Any]:
    """One sentence's Monte Carlo record: the samples ranked by quality, each distinct text once with its count."""
    hyps = result.hypotheses
    sample_q = quality(sample_texts, reference, source)
    distinct: dict[str, dict[str, Any]] = {}
    for t, h, q in zip(sample_texts, hyps, sample_q):
        entry = distinct.setdefault(t, {"text": t, "score": h.score, "quality": q, "count": 0})
        entry["count"] += 1
    return {**rank_figures(sample_q, cfg.gain, cfg.ties), "unique": result.info["unique"] if result.info else None,
            "mean_quality": sum(sample_q) / len(sample_q), "seconds": result.seconds,
            "empty_share": sum(empty(h.tokens) for h in hyps) / len(hyps),
            "samples": list(distinct.values())}


def _summary(cfg: RankingConfig, probe_size: int, top_rows: list[dict[str, Any]], mc_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The snapshot's flat summary: the means of the sentences' records (``top.*``, ``mc.*``)."""
    summary: dict[str, Any] = {"probe_size": probe_size, "k": cfg.k, "quality": cfg.quality, "gain": cfg.gain, "ties": cfg.ties}
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
    return summary


def snapshot(model: Any, tokenizer: Any, sources: list[str], references: list[str], cfg: RankingConfig,
             comet: Any = None) -> dict[str, Any]:
    """Run the ranking evaluation on a probe set with the current parameters.

    Returns a flat JSON-able dict of summary figures: ``top.krg``, ``top.kqrg``,
    ``top.random_krg``, ``top.empty_rate``, ``top.beam_error_rate``, ``top.exact_rate``,
    ``top.short_rate``, ``top.beam_quality``, ``top.expansions``, ``top.seconds``; ``mc.krg``,
    ``mc.kqrg``, ``mc.random_krg``, ``mc.mean_quality``, ``mc.unique``, ``mc.empty_share``,
    ``mc.samples``, ``mc.seconds``; ``probe_size``, ``k``, ``quality``, ``gain``, ``ties``, ``seconds``.

    Changes no parameter, no module's train/eval flag and no RNG state of the caller: it runs
    under ``torch.inference_mode`` with the model in eval mode (restored afterwards), and
    sampling draws from a local ``torch.Generator``.
    """
    summary, _ = evaluate(model, tokenizer, sources, references, cfg, comet=comet)
    return summary
