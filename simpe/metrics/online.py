"""Streaming scorer of the online loop: per-segment metrics plus running (cumulative) values.

``OnlineScorer.add`` scores one segment (hypothesis against its post-edit) and returns the
``hyp_tokens``/``ref_tokens``/``metrics``/``stats``/``cumulative`` part of a
``segments.jsonl`` record (docs/run-format.md). Cumulative values over segments 0..i come
from accumulated sufficient statistics, never from rescoring the prefix: BLEU from summed
n-gram matches/totals and lengths, chrF from summed character n-gram statistics, TER
from summed edits and reference lengths, R from summed numerators and denominators,
SBLEU as the running mean. ``replay`` rebuilds that state from logged records, so a
resumed run continues exactly as if it had never stopped.

One addition to the documented record: with ``subword=True`` the returned dict also
holds ``ref_pieces`` (the reference's subword pieces), because resuming the subword
occurrence counts needs them and they cannot be recovered from the text.

This module does not translate, write files, or run COMET (``simpe.metrics.comet``).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from simpe.errors import ConfigError, DataError
from simpe.metrics.recall import RecallCounter, load_vocab, ratio, r_names
from simpe.metrics.sacre import CORPUS_METRICS, SacreStats
from simpe.stopwords import load_stopwords
from simpe.text import ContentWords, TextPipeline

logger = logging.getLogger(__name__)


@dataclass
class MetricsConfig:
    """What the online scorer computes and how it finds content words."""

    lang: str = "de"                      # target language (tokeniser, stopwords)
    truecaser: str | None = None          # path to a MosesTruecaser model, or None
    stopwords: str = "de"                 # a language code under stopwords/ or a path
    r_max_k: int = 1                      # log r0..r{k} and r0..k variants up to this k (r0+1 is always logged, named "r0+1")
    novel_vocab: str | None = None        # path to a word list (one per line) for the novel-word variant, names "novel:r0" ...
    subword: bool = False                 # also log subword variants "subword:r0" ... from the pieces

    def __post_init__(self) -> None:
        if not isinstance(self.lang, str) or not self.lang:
            raise ConfigError(f"metrics lang must be a language code such as 'de', got {self.lang!r}")
        if isinstance(self.truecaser, str) and self.truecaser.lower() in ("", "none"):
            self.truecaser = None
        if self.truecaser is not None and not isinstance(self.truecaser, str):
            self.truecaser = str(self.truecaser)
        self.stopwords = str(self.stopwords) if self.stopwords else ""
        if not self.stopwords:
            raise ConfigError("metrics stopwords must be a language code such as 'de' or a path to a word list")
        r_names(self.r_max_k)  # validates r_max_k
        if self.novel_vocab is not None and not isinstance(self.novel_vocab, str):
            self.novel_vocab = str(self.novel_vocab)
        if not isinstance(self.subword, bool):
            raise ConfigError(f"metrics subword must be true or false, got {self.subword!r}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "MetricsConfig":
        """Build from a config mapping; an unknown key is a ConfigError naming the known ones."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"unknown metrics setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class OnlineScorer:
    """Scores a stream one segment at a time and keeps the running sums behind every cumulative value."""

    def __init__(self, cfg: MetricsConfig) -> None:
        self.cfg = cfg
        self.pipeline = TextPipeline(cfg.lang, cfg.truecaser)
        self.stopwords = load_stopwords(cfg.stopwords)
        self.content_types = ContentWords(self.stopwords)
        self.sacre = SacreStats()
        self.words = RecallCounter(cfg.r_max_k)
        self.novel = None
        if cfg.novel_vocab is not None:
            self.novel = RecallCounter(cfg.r_max_k, vocab=load_vocab(cfg.novel_vocab), prefix="novel:")
        self.subwords = RecallCounter(cfg.r_max_k, prefix="subword:") if cfg.subword else None
        self.num_segments = 0
        self.totals: dict[str, list] = {"bleu": [0] * self.sacre.bleu_width, "chrf": [0] * self.sacre.chrf_width, "ter": [0, 0]}
        self.sbleu_sum = 0.0

    # ------------------------------------------------------------ names
    def r_metric_names(self) -> list[str]:
        """Names of every R value this scorer logs, in logging order."""
        names = list(self.words.names)
        for counter in (self.novel, self.subwords):
            if counter is not None:
                names += counter.names
        return names

    def metric_names(self) -> list[str]:
        """Names under ``cumulative`` (and ``summary()["corpus"]``), in order."""
        return ["bleu", "chrf", "ter", "sbleu"] + self.r_metric_names()

    # ------------------------------------------------------------ scoring
    def add(self, hypothesis: str, reference: str, hyp_pieces: list[str] | None = None,
            ref_pieces: list[str] | None = None) -> dict:
        """Score one segment; returns {"hyp_tokens": str, "ref_tokens": str, "metrics": {...}, "stats": {...}, "cumulative": {...}} exactly as in docs/run-format.md

        Args:
            hypothesis: the detokenised system output for this segment.
            reference: the detokenised reference (post-edit).
            hyp_pieces, ref_pieces: the subword pieces of both; required when ``cfg.subword``.
        """
        if self.subwords is not None and (hyp_pieces is None or ref_pieces is None):
            raise DataError("the subword R variants (subword=True) need hyp_pieces and ref_pieces for every segment")
        hyp_tokens = " ".join(self.pipeline.tokens(hypothesis))
        ref_tokens = " ".join(self.pipeline.tokens(reference))
        stats = self.sacre.segment_stats(hypothesis, reference)
        metrics: dict[str, Any] = {
            "sbleu": self.sacre.sbleu_score(stats["bleu"]),
            "chrf": self.sacre.chrf_score(stats["chrf"]),
            "ter": self.sacre.ter_score(stats["ter"]),
        }
        # Types from the joined strings, exactly what replay() will see in the record.
        hyp_types = self.content_types(hyp_tokens.split())
        ref_types = self.content_types(ref_tokens.split())
        metrics.update(self.words.add(hyp_types, ref_types))
        if self.novel is not None:
            metrics.update(self.novel.add(hyp_types, ref_types))
        if self.subwords is not None:
            metrics.update(self.subwords.add(set(hyp_pieces), set(ref_pieces)))
        self._accumulate(stats, metrics["sbleu"])
        record = {"hyp_tokens": hyp_tokens, "ref_tokens": ref_tokens, "metrics": metrics, "stats": stats,
                  "cumulative": self.cumulative()}
        if self.subwords is not None:
            record["ref_pieces"] = list(ref_pieces)
        return record

    def _accumulate(self, stats: Mapping[str, list], sbleu: float) -> None:
        for name in CORPUS_METRICS:
            total = self.totals[name]
            for j, value in enumerate(stats[name]):
                total[j] += value
        self.sbleu_sum += sbleu
        self.num_segments += 1

    def replay(self, record: dict) -> None:
        """Rebuild the running state from a logged record (the dict `add` returned, after a JSON round trip), for resuming a run; afterwards add() must continue exactly as if never interrupted."""
        missing = [key for key in ("ref_tokens", "metrics", "stats") if key not in record]
        if self.subwords is not None and "ref_pieces" not in record:
            missing.append("ref_pieces")
        if missing:
            raise DataError(f"logged segment {record.get('index', '?')} lacks {', '.join(missing)}; cannot resume the metrics from it")
        metrics, stats = record["metrics"], record["stats"]
        self.sacre.check_stats(stats)
        if not isinstance(metrics.get("sbleu"), (int, float)):
            raise DataError(f"logged segment {record.get('index', '?')} has no numeric metrics['sbleu']")
        ref_types = self.content_types(record["ref_tokens"].split())
        self.words.observe(ref_types, metrics)
        if self.novel is not None:
            self.novel.observe(ref_types, metrics)
        if self.subwords is not None:
            self.subwords.observe(set(record["ref_pieces"]), metrics)
        self._accumulate(stats, float(metrics["sbleu"]))

    # ------------------------------------------------------------ running values
    def cumulative(self) -> dict[str, float | None]:
        """Every metric over the segments seen so far (BLEU/chrF/TER/SBLEU 0-100, R as fractions, None if undefined)."""
        values: dict[str, float | None] = {name: self.sacre.score(name, self.totals[name]) for name in CORPUS_METRICS}
        values["sbleu"] = self.sbleu_sum / self.num_segments if self.num_segments else None
        for counter in (self.words, self.novel, self.subwords):
            if counter is not None:
                for name, (num, den) in counter.totals.items():
                    values[name] = ratio(num, den)
        return values

    def summary(self) -> dict:
        """{"corpus": {"bleu","chrf","ter","sbleu","r0","r1","r0+1", ...variants}, "signatures": {"bleu": str, "chrf": str, "ter": str, "sbleu": str}}"""
        corpus = self.cumulative()
        if not self.num_segments:
            corpus.update({name: None for name in CORPUS_METRICS})
        return {"corpus": corpus, "signatures": self.sacre.signatures()}


def cumulative_curves(records: Iterable[dict], cfg: MetricsConfig) -> dict[str, list[float | None]]:
    """Cumulative value of every metric after each logged record (what Figure 2's deltas are made of).

    Args:
        records: ``segments.jsonl`` records in stream order (as ``OnlineScorer.add`` produced them).
        cfg: the metrics configuration of the run that logged them.
    Returns:
        ``{metric name: [value after segment 0, after segment 1, ...]}``.
    """
    scorer = OnlineScorer(cfg)
    curves: dict[str, list[float | None]] = {name: [] for name in scorer.metric_names()}
    for record in records:
        scorer.replay(record)
        for name, value in scorer.cumulative().items():
            curves[name].append(value)
    return curves
