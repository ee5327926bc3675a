"""Streaming scorer of the online loop: per-segment metrics plus running (cumulative) values.

``OnlineScorer.add`` scores one segment (hypothesis against its post-edit) and returns the
``hyp_tokens``/``ref_tokens``/``metrics``/``stats``/``cumulative`` part of a
``segments.jsonl`` record (docs/run-format.md). Cumulative values over segments 0..i come
from accumulated sufficient statistics, never from rescoring the prefix: BLEU from summed
n-gram matches/totals and lengths, chrF from summed character n-gram statistics, TER
from summed edits and reference lengths, R from summed numerators and denominators,
SBLEU as the running mean. ``replay`` rebuilds that state from logged records, so a
resumed run continues exactly as if it had never stopped.

The R metrics follow the script of the authors of Simianer et al. (2019) (``rk.rb``) by default; ``r_signatures``
names every setting they depend on. Their variants:

- ``novel:`` (``metrics.novel_vocab``): only reference types rare in a training vocabulary;
  ``train`` is the vocabulary ``make corpus`` writes for the dataset's train split.
- ``subword:`` (``metrics.subword``): ``all`` counts every SentencePiece piece of the
  model's own segmentation, with no stopword or token filter (Simianer et al. (2019), Table 4); the
  returned dict then also holds ``ref_pieces``, because resuming the subword occurrence
  counts needs them and they cannot be recovered from the text. ``content`` counts only the
  pieces of content words: each content type of the segment segmented alone by the target
  SentencePiece model (so they are recomputed from the logged tokens on resume).
- ``metrics.scope: document`` restarts every occurrence count when the document id changes.

Every value comes from the metric stack (``simpe.metrics.base``): the statistics of every
metric of ``metrics.logged`` (default sacreBLEU's BLEU, chrF and TER; any registered metric:
adding one is its file and a name in the list) under ``stats`` (each metric's declared
layout), their segment scores, SBLEU and the R values under ``metrics``. ``logged_stats`` is the one place that says where a metric's per-segment
statistics sit in a record, and ``metric_for`` gives the ``Metric`` that scores them, for
every reader of the logs (compare's bootstrap, plots).

With a glossary (``data.glossary``) the scorer is given its term counter (``simpe.terms.score.TermCounter``, which
this layer never imports: it is handed in): the term metrics (``simpe.metrics.terms``) are then logged beside the R
values, restarted with them per document, and replayed from the logged source and hypothesis tokens.

This module does not translate, write files, or run COMET (``simpe.metrics.comet``).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from simpe import __version__
from simpe.config.tree import NOVEL_VOCAB_OF_DATASET, MetricsConfig
from simpe.errors import ConfigError, DataError
from simpe.metrics.base import METRICS, Metric
from simpe.metrics.effort import EFFORT_METRICS
from simpe.metrics.recall import RecallCounter, RecallMetric, load_vocab, r_signature, ratio, vocab_digest
from simpe.metrics.sacre import SbleuMetric
from simpe.metrics.stopwords import load_stopwords, stopwords_digest, stopwords_path
from simpe.metrics.terms import TERM_METRICS, TERM_SIGNATURE
from simpe.metrics.text import ContentWords, TextPipeline, split_tokens, truecaser_path

logger = logging.getLogger(__name__)

SENTENCE_SCORE = {"bleu": "sbleu"}  # a logged metric whose segment score is another one (BLEU of one segment: SBLEU)
NOT_LOGGED = {"sbleu": "always logged, from bleu's statistics", "comet": "logged by --comet"}  # never in metrics.logged
_R_NAME = re.compile(r"^(novel:|subword:|nonterm:)?r(\d+|0\+1|0\.\.\d+)$")


@functools.lru_cache(maxsize=None)
def metric_for(name: str) -> Metric:
    """The ``Metric`` that scores the logged statistics of ``name`` (any name under ``cumulative``, or comet).

    Built once per name (the metrics keep no state between calls): readers and the loop's
    progress line ask for it per segment.
    """
    if _R_NAME.match(name):
        return RecallMetric(name)
    if name in EFFORT_METRICS:
        return EFFORT_METRICS[name]
    if name in TERM_METRICS:
        return TERM_METRICS[name]
    return METRICS.build(name)


def logged_metrics(cfg: MetricsConfig) -> dict[str, Metric]:
    """The metrics of ``metrics.logged`` by name, built from ``METRICS``; one line for an unknown or repeated name."""
    names = cfg.logged
    known = [name for name in METRICS.names() if name not in NOT_LOGGED]
    for name in names:
        if name in NOT_LOGGED:
            raise ConfigError(f"metrics.logged cannot hold {name!r}: it is {NOT_LOGGED[name]}; known: {', '.join(known)}")
        if not isinstance(name, str) or name not in known:
            raise ConfigError(f"unknown metrics.logged metric {name!r}; known: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"metrics.logged names a metric twice: {names}")
    if "bleu" not in names:
        raise ConfigError(f"metrics.logged must hold bleu (the loop's sbleu comes from its statistics), got {names}")
    return {name: METRICS.build(name) for name in names}


def signature_label(kind: str) -> str:
    """The label of a key of a summary's ``signatures``: a metric's label (``term``: the term metrics'), or ``R``,
    ``novel:R``, ``subword:R``."""
    if kind == "r" or kind.endswith(":r"):
        return kind[:-1] + "R"
    if kind == TERM_SIGNATURE:
        return "Terms"
    return metric_for(kind).label


def logged_stats(record: Mapping[str, Any], name: str) -> list[float] | None:
    """Per-segment statistics of metric ``name`` in a segments.jsonl record, laid out as its ``stat_names``.

    The logged metrics (``metrics.logged``: BLEU, chrF, TER by default): ``stats[name]``; R values and term values:
    ``metrics[name]`` ([matched, types], [hits, terms] ...); SBLEU: ``[metrics["sbleu"], 1]``. None when the record does not hold them.
    """
    stats = record.get("stats") or {}
    if name in stats:
        value = stats[name]
    else:
        value = (record.get("metrics") or {}).get(name)
        if name == "sbleu" or name == "comet":
            value = None if not isinstance(value, (int, float)) or isinstance(value, bool) else [value, 1]
    if not isinstance(value, (list, tuple)) or not value:
        return None
    return [float(v) for v in value]


class OnlineScorer:
    """Scores a stream one segment at a time and keeps the running sums behind every cumulative value."""

    def __init__(self, cfg: MetricsConfig, model_dir: Path | None = None, *, train_vocab: str | Path | None = None,
                 spm_model: str | Path | None = None, terms: Any = None) -> None:
        """
        Args:
            cfg: the metrics section of the config.
            model_dir: the model folder, where ``truecaser: model`` finds ``truecase.<lang>.model``
                and ``subword: content`` its ``target.spm``.
            train_vocab: the dataset's train vocabulary file (what ``novel_vocab: train`` means).
            spm_model: the target SentencePiece model for ``subword: content`` (default: model_dir/target.spm).
            terms: a glossary's term counter (``simpe.terms.score.TermCounter``, from ``glossary_counter``): the
                term metrics are then logged beside the R values, and ``add`` needs each segment's source.
        """
        self.cfg = cfg
        self.truecaser = truecaser_path(cfg, model_dir)
        self.pipeline = TextPipeline(cfg.lang, self.truecaser)
        self.stopwords = load_stopwords(cfg.stopwords)
        self.content_types = ContentWords(self.stopwords, cfg.stopword_case, cfg.token_filter)
        self.corpus: dict[str, Metric] = logged_metrics(cfg)  # metrics.logged, in order
        self.sbleu = SbleuMetric(cfg.sbleu)
        self.words = RecallCounter(cfg.r_max_k)
        self.novel = None
        self.vocab_path: Path | None = None
        if cfg.novel_vocab is not None:
            self.vocab_path = resolve_vocab(cfg.novel_vocab, train_vocab)
            self.vocab = load_vocab(self.vocab_path)
            self.novel = RecallCounter(cfg.r_max_k, vocab=self.vocab, prefix="novel:", rare_threshold=cfg.rare_threshold)
        self.subwords = RecallCounter(cfg.r_max_k, prefix="subword:") if cfg.subword else None
        self.spm = None
        if cfg.subword == "content":
            self.spm_path = Path(spm_model) if spm_model is not None else (Path(model_dir) / "target.spm" if model_dir else None)
            self.spm = _load_spm(self.spm_path)
        self.doc_id: str | None = None
        self.num_segments = 0
        self.totals: dict[str, list] = {name: [0] * len(metric.stat_names) for name, metric in self.corpus.items()}
        self.sbleu_sum = 0.0
        self.effort_totals: dict[str, list[float]] = {}  # ksmr / wsr under the interactive protocol
        self.terms = terms

    # ------------------------------------------------------------ names
    def recall_counters(self) -> list[RecallCounter]:
        """The R counters in logging order: words, then novel words and subwords when configured."""
        return [c for c in (self.words, self.novel, self.subwords) if c is not None]

    def r_metric_names(self) -> list[str]:
        """Names of every R value this scorer logs, in logging order."""
        return [name for counter in self.recall_counters() for name in counter.names]

    def metric_names(self) -> list[str]:
        """Names under ``cumulative`` (and ``summary()["corpus"]``), in order."""
        return [*self.corpus, "sbleu", *self.r_metric_names(), *(self.terms.names if self.terms is not None else ())]

    # ------------------------------------------------------------ scoring
    def add(self, hypothesis: str, reference: str, hyp_pieces: list[str] | None = None,
            ref_pieces: list[str] | None = None, doc_id: str | None = None, effort: Mapping[str, list] | None = None,
            source: str | None = None) -> dict:
        """Score one segment; returns the ``hyp_tokens``, ``ref_tokens``, ``metrics``, ``stats`` and ``cumulative``
        part of its record (with a glossary also ``terms`` and ``terms_fixed``), exactly as in docs/run-format.md.

        Args:
            hypothesis: the detokenised system output for this segment.
            reference: the detokenised reference (post-edit).
            hyp_pieces, ref_pieces: the subword pieces of both; required when ``cfg.subword`` is ``all``.
            doc_id: the segment's document (``scope: document`` restarts the counts when it changes).
            effort: the interactive protocol's statistics of this segment, ``{"ksmr": [actions, chars], "wsr": [...]}``
                (``simpe.loop.interactive``): logged under ``stats`` and ``metrics`` beside the text metrics.
            source: the segment's source text; needed with a glossary (its terms are found there).
        """
        if self.cfg.subword == "all" and (hyp_pieces is None or ref_pieces is None):
            raise DataError("the subword R variants (subword: all) need hyp_pieces and ref_pieces for every segment")
        if self.terms is not None and source is None:
            raise DataError("the term metrics (a glossary) need the source of every segment")
        self._enter_document(doc_id)
        hyp_tokens = " ".join(self.pipeline.tokens(hypothesis))
        ref_tokens = " ".join(self.pipeline.tokens(reference))
        stats = {name: metric.segment_stats(hypothesis, reference) for name, metric in self.corpus.items()}
        metrics: dict[str, Any] = {"sbleu": self.sbleu.score_of_bleu_stats(stats["bleu"])}
        metrics.update({name: metric.score_from_stats(stats[name]) for name, metric in self.corpus.items()
                        if name not in SENTENCE_SCORE})
        # Types from the joined strings, split as rk.rb splits them: exactly what replay() and the script see.
        hyp_types = self.content_types(split_tokens(hyp_tokens))
        ref_types = self.content_types(split_tokens(ref_tokens))
        metrics.update(self.words.add(hyp_types, ref_types))
        if self.novel is not None:
            metrics.update(self.novel.add(hyp_types, ref_types))
        if self.cfg.subword == "all":
            metrics.update(self.subwords.add(set(hyp_pieces), set(ref_pieces)))
        elif self.cfg.subword == "content":
            metrics.update(self.subwords.add(self._content_pieces(hyp_types), self._content_pieces(ref_types)))
        terms = None
        if self.terms is not None:  # the glossary's terms on the R pipeline's tokens (the target side ignores case)
            terms = self.terms.add(self.terms.matcher.source_tokens(source), split_tokens(hyp_tokens),
                                   split_tokens(ref_tokens), None, hyp_types, ref_types)
            metrics.update(terms.counts)
        for name, values in (effort or {}).items():
            stats[name] = list(values)
            metrics[name] = EFFORT_METRICS[name].score_from_stats(values)
        self._accumulate(stats, metrics["sbleu"])
        record = {"hyp_tokens": hyp_tokens, "ref_tokens": ref_tokens, "metrics": metrics, "stats": stats,
                  "cumulative": self.cumulative()}
        if self.cfg.subword == "all":
            record["ref_pieces"] = list(ref_pieces)
        if terms is not None:
            record.update({"terms": terms.terms, "terms_fixed": terms.fixed})
        return record

    def _enter_document(self, doc_id: str | None) -> None:
        """Under ``scope: document``, restart every occurrence count when the document changes."""
        if self.cfg.scope == "document" and doc_id != self.doc_id:
            for counter in self.recall_counters():
                counter.restart()
            if self.terms is not None:
                self.terms.restart()
        self.doc_id = doc_id

    def _content_pieces(self, types: frozenset[str]) -> set[str]:
        """The pieces of content types, each type segmented alone by the target SentencePiece model."""
        return {piece for word in types for piece in self.spm.encode(word, out_type=str)}

    def _accumulate(self, stats: Mapping[str, list], sbleu: float) -> None:
        for name in self.corpus:
            total = self.totals[name]
            for j, value in enumerate(stats[name]):
                total[j] += value
        for name in EFFORT_METRICS:
            if name in stats:
                total = self.effort_totals.setdefault(name, [0, 0])
                for j, value in enumerate(stats[name]):
                    total[j] += value
        self.sbleu_sum += sbleu
        self.num_segments += 1

    def replay(self, record: dict) -> None:
        """Rebuild the running state from a logged record (what ``add`` returned, after a JSON round trip).

        For resuming a run: afterwards ``add`` continues exactly as if never interrupted.
        """
        missing = [key for key in ("ref_tokens", "metrics", "stats") if key not in record]
        if self.cfg.subword == "all" and "ref_pieces" not in record:
            missing.append("ref_pieces")
        if missing:
            raise DataError(f"logged segment {record.get('index', '?')} lacks {', '.join(missing)}; cannot resume the metrics from it")
        metrics, stats = record["metrics"], record["stats"]
        for name, metric in self.corpus.items():
            value = stats.get(name)
            if not isinstance(value, list) or len(value) != len(metric.stat_names):
                raise DataError(f"logged stats[{name!r}] should be a list of {len(metric.stat_names)} numbers, got {value!r}")
        if not isinstance(metrics.get("sbleu"), (int, float)):
            raise DataError(f"logged segment {record.get('index', '?')} has no numeric metrics['sbleu']")
        self._enter_document(record.get("doc_id"))
        ref_types = self.content_types(split_tokens(record["ref_tokens"]))
        self.words.observe(ref_types, metrics)
        if self.novel is not None:
            self.novel.observe(ref_types, metrics)
        if self.cfg.subword == "all":
            self.subwords.observe(set(record["ref_pieces"]), metrics)
        elif self.cfg.subword == "content":
            self.subwords.observe(self._content_pieces(ref_types), metrics)
        if self.terms is not None:  # the term counts need the hypothesis too: which terms it missed, the fixes pending
            if not isinstance(record.get("source"), str) or not isinstance(record.get("hyp_tokens"), str):
                raise DataError(f"logged segment {record.get('index', '?')} lacks its source or hyp_tokens; cannot resume "
                                "the term metrics from it")
            hyp_tokens = split_tokens(record["hyp_tokens"])
            self.terms.observe(metrics, self.terms.matcher.source_tokens(record["source"]), hyp_tokens,
                               split_tokens(record["ref_tokens"]), None, self.content_types(hyp_tokens), ref_types)
        self._accumulate(stats, float(metrics["sbleu"]))

    # ------------------------------------------------------------ running values
    def cumulative(self) -> dict[str, float | None]:
        """Every metric over the segments seen so far (BLEU/chrF/TER/SBLEU 0-100, R as fractions, None if undefined)."""
        values: dict[str, float | None] = {name: metric.score_from_stats(self.totals[name]) for name, metric in self.corpus.items()}
        values["sbleu"] = self.sbleu_sum / self.num_segments if self.num_segments else None
        for counter in self.recall_counters():
            for name, (num, den) in counter.totals.items():
                values[name] = ratio(num, den)
        if self.terms is not None:
            values.update(self.terms.cumulative())
        for name, total in self.effort_totals.items():
            values[name] = EFFORT_METRICS[name].score_from_stats(total)
        return values

    def r_signatures(self) -> dict[str, str]:
        """The R metrics' signatures: ``r`` (words), and ``novel:r`` / ``subword:r`` when logged."""
        cfg = self.cfg
        stop_name = Path(stopwords_path(cfg.stopwords)).stem
        truecaser = "none" if self.truecaser is None else f"{Path(self.truecaser).name}.{_file_digest(self.truecaser)}"
        common = {"max_k": cfg.r_max_k, "stopwords": f"{stop_name}.{stopwords_digest(self.stopwords)}",
                  "case": cfg.stopword_case, "token_filter": cfg.token_filter, "truecaser": truecaser,
                  "tokenizer": f"moses.{cfg.lang}", "scope": cfg.scope, "version": __version__}
        signatures = {"r": r_signature(**common)}
        if self.novel is not None:
            signatures["novel:r"] = r_signature(**common, vocab=f"{self.vocab_path.name}.{vocab_digest(self.vocab)}",
                                                rare_threshold=cfg.rare_threshold)
        if cfg.subword == "all":
            signatures["subword:r"] = r_signature(**{**common, "stopwords": "none", "token_filter": "none"},
                                                  unit="subword-all")
        elif cfg.subword == "content":
            signatures["subword:r"] = r_signature(**common, unit=f"subword-content.{_file_digest(self.spm_path)}")
        return signatures

    def signatures(self) -> dict[str, str]:
        """Signatures of the logged metrics (``bleu``, ``chrf``, ``ter``), ``sbleu`` (sacreBLEU's manner), of the R metrics
        (``r`` ...) and, with a glossary, of the term metrics (``term``: ``simpe.terms.score.term_signature``)."""
        signatures = {**{name: metric.signature() for name, metric in self.corpus.items()}, "sbleu": self.sbleu.signature(),
                      **self.r_signatures()}
        if self.terms is not None and self.terms.signature:
            signatures[TERM_SIGNATURE] = self.terms.signature
        return signatures

    def summary(self) -> dict:
        """{"corpus": {"bleu","chrf","ter","sbleu","r0","r1","r0+1", ...variants}, "signatures": {"bleu", "chrf", "ter", "sbleu", "r", ...}}"""
        corpus = self.cumulative()
        if not self.num_segments:
            corpus.update({name: None for name in self.corpus})
        return {"corpus": corpus, "signatures": self.signatures()}


def resolve_vocab(novel_vocab: str, train_vocab: str | Path | None) -> Path:
    """The vocabulary file ``metrics.novel_vocab`` names: ``train`` -> the dataset's train vocabulary, else a path."""
    if novel_vocab == NOVEL_VOCAB_OF_DATASET:
        if train_vocab is None:
            raise ConfigError("metrics.novel_vocab=train needs a dataset with a train vocabulary (libreoffice: "
                              "data/libreoffice/vocab.train.de, written by `make corpus`); or give a vocabulary file")
        path = Path(train_vocab)
        if not path.is_file():
            raise DataError(f"metrics.novel_vocab=train: {path} does not exist; run `make corpus` to write it")
        return path
    path = Path(novel_vocab)
    if not path.is_file():
        raise DataError(f"metrics.novel_vocab {novel_vocab!r} does not exist (give 'train' or a file of '<count> <word>' lines)")
    return path


@functools.lru_cache(maxsize=8)
def _file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:8]


def _load_spm(path: Path | None):  # -> sentencepiece.SentencePieceProcessor
    import sentencepiece as spm

    if path is None or not Path(path).is_file():
        raise ConfigError(f"metrics.subword=content needs the target SentencePiece model ({path or 'no model folder'} "
                          "does not exist); give --subword-model SPM")
    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except Exception as err:
        raise DataError(f"{str(path)!r} is not a SentencePiece model ({err})") from None


def cumulative_curves(records: Iterable[dict], cfg: MetricsConfig, model_dir: Path | None = None,
                      train_vocab: str | Path | None = None, terms: Any = None) -> dict[str, list[float | None]]:
    """Cumulative value of every metric after each logged record (what Figure 2's deltas are made of).

    Args:
        records: ``segments.jsonl`` records in stream order (as ``OnlineScorer.add`` produced them).
        cfg: the metrics configuration of the run that logged them.
        terms: a fresh term counter of the run's glossary (``simpe.terms.score.glossary_counter``), when it had one.
    Returns:
        ``{metric name: [value after segment 0, after segment 1, ...]}``.
    """
    scorer = OnlineScorer(cfg, model_dir, train_vocab=train_vocab, terms=terms)
    curves: dict[str, list[float | None]] = {name: [] for name in scorer.metric_names()}
    for record in records:
        scorer.replay(record)
        for name, value in scorer.cumulative().items():
            curves[name].append(value)
    return curves


def running_text(figures: dict[str, Any], full: bool = False) -> str:
    """'BLEU 31.2 R0+1 45.0' (R metrics in percent; '-' while undefined)."""
    names = ("bleu", "chrf", "ter", "r0", "r1", "r0+1") if full else ("bleu", "r0+1")
    parts = []
    for name in names:
        value, metric = figures.get(name), metric_for(name)
        parts.append(f"{metric.label} {'-' if value is None else f'{(100 if metric.percent else 1) * value:.1f}'}")
    return " ".join(parts)
