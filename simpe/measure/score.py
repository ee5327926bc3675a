"""``simpe score``: every simpe metric on plain hypothesis/reference files, like sacreBLEU's command line.

``score_files`` reads the files (strict UTF-8, equal line counts, checked before any
model is loaded), streams the segments through ``OnlineScorer`` (so corpus figures and
cumulative curves are exactly what a simulation run logs), adds COMET when a model is
given, and returns a plain dict; ``format_table`` / ``format_cumulative`` render it.
Lines are read like sacreBLEU reads them (``simpe.textfile``: split on ``\\n`` only,
trailing whitespace stripped). The settings are the ``metrics`` section of
adapters/defaults.yaml with the command line's changes; ``truecaser: model`` means the demo
model's truecaser for the language, when it ships one.

This module does not parse arguments (``simpe.cli`` does) and writes nothing.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simpe.config.files import defaults
from simpe.config.tree import MetricsConfig
from simpe.errors import ConfigError, DataError
from simpe.metrics.comet import comet_signature
from simpe.metrics.online import OnlineScorer, metric_for, signature_label
from simpe.metrics.terms import REPEAT, TERM_METRICS, TERM_SIGNATURE
from simpe.metrics.text import truecaser_path
from simpe.paths import DEFAULT_MODEL
from simpe.textfile import read_lines

logger = logging.getLogger(__name__)


def resolve_truecaser(cfg: MetricsConfig) -> MetricsConfig:
    """``cfg`` with ``truecaser: model`` replaced by the demo model's truecaser for ``cfg.lang`` (None when it has none)."""
    return dataclasses.replace(cfg, truecaser=truecaser_path(cfg, DEFAULT_MODEL, missing_ok=True))


def _check_counts(named: dict[str, Sequence[str]]) -> None:
    counts = {name: len(lines) for name, lines in named.items() if lines is not None}
    if len(set(counts.values())) > 1:
        raise DataError("line counts differ: " + ", ".join(f"{name} {count}" for name, count in counts.items()))


def score_lines(hypotheses: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None, *,
                cfg: MetricsConfig | None = None, comet: str | None = None, comet_batch_size: int = 16,
                device: str = "cpu", hyp_pieces: Sequence[list[str]] | None = None,
                ref_pieces: Sequence[list[str]] | None = None, cumulative: bool = False,
                train_vocab: str | Path | None = None, spm_model: str | Path | None = None,
                doc_ids: Sequence[str] | None = None, glossary: Any = None) -> dict[str, Any]:
    """Score detokenised segments with every simpe metric.

    Args:
        hypotheses, references: one detokenised segment each, in stream order.
        sources: the source segments; needed for COMET.
        cfg: metrics settings (default: the ``metrics`` section of adapters/defaults.yaml).
        comet: COMET hub id, model folder or checkpoint; None skips COMET.
        comet_batch_size, device: COMET batching and device.
        hyp_pieces, ref_pieces: subword pieces per segment, for ``cfg.subword: all``.
        cumulative: also return every metric's value over segments 1..i for each i.
        train_vocab: what ``cfg.novel_vocab: train`` means (the default dataset's train vocabulary).
        spm_model: the SentencePiece model for ``cfg.subword: content``.
        doc_ids: the document of each segment (``cfg.scope: document`` restarts the R counts when it changes).
        glossary: a loaded glossary (``simpe.terms.glossary.load_glossary``): adds the term metrics (needs sources).
    Returns:
        ``{"segments", "corpus", "counts", "signatures", "settings"[, "cumulative"]}``: corpus
        BLEU/chrF/TER/SBLEU in 0-100, R values as fractions (None when undefined), ``counts``
        the R ``[numerator, denominator]`` sums (and the term metrics' with a glossary), COMET (when given) the mean
        segment score.
    """
    cfg = resolve_truecaser(cfg or defaults("metrics"))
    _check_counts({"hypotheses": hypotheses, "references": references, "sources": sources,
                   "hypothesis pieces": hyp_pieces, "reference pieces": ref_pieces, "document ids": doc_ids})
    if cfg.scope == "document" and doc_ids is None:
        raise ConfigError("metrics.scope=document needs the document id of every segment")
    if comet is not None and sources is None:
        raise ConfigError("COMET needs the source segments: give --src")
    if glossary is not None and sources is None:
        raise ConfigError("the term metrics need the source segments: give --src")
    if cfg.subword == "all" and (hyp_pieces is None or ref_pieces is None):
        raise ConfigError("the subword R variants need subword pieces of hypotheses and references (give --subword-model)")
    # validates stopwords, truecaser, vocabulary before COMET loads
    terms = None
    if glossary is not None:
        from simpe.terms.score import glossary_counter

        terms = glossary_counter(glossary, cfg.r_max_k, cfg.scope)
    scorer = OnlineScorer(cfg, train_vocab=train_vocab, spm_model=spm_model, terms=terms)
    _warn_suspicious(hypotheses)
    comet_scorer = None
    if comet is not None:
        from simpe.metrics.comet import CometScorer

        comet_scorer = CometScorer(comet, batch_size=comet_batch_size, device=device)

    curves: dict[str, list] = {name: [] for name in scorer.metric_names()} if cumulative else {}
    for i, (hyp, ref) in enumerate(zip(hypotheses, references)):
        record = scorer.add(hyp, ref, None if hyp_pieces is None else list(hyp_pieces[i]),
                            None if ref_pieces is None else list(ref_pieces[i]), doc_id=None if doc_ids is None else doc_ids[i],
                            source=None if terms is None else sources[i])
        if cumulative:
            for name, value in record["cumulative"].items():
                curves[name].append(value)
    summary = scorer.summary()
    report: dict[str, Any] = {
        "segments": len(hypotheses),
        "corpus": summary["corpus"],
        "counts": {**{name: list(total) for counter in (scorer.words, scorer.novel, scorer.subwords)
                      if counter is not None for name, total in counter.totals.items()},
                   **(terms.all_totals() if terms is not None else {})},
        "signatures": summary["signatures"],
        "settings": dataclasses.asdict(cfg),
    }
    if comet_scorer is not None:
        comet_scores = comet_scorer.score(list(sources), list(hypotheses), list(references))
        report["corpus"]["comet"] = sum(comet_scores) / len(comet_scores) if comet_scores else None
        report["signatures"]["comet"] = comet_signature(comet, comet_batch_size)
        if cumulative:
            running, curve = 0.0, []
            for i, value in enumerate(comet_scores, 1):
                running += value
                curve.append(running / i)
            curves["comet"] = curve
    if cumulative:
        report["cumulative"] = curves
    return report


def _warn_suspicious(hypotheses: Sequence[str]) -> None:
    """Warn once, with a count, about empty hypotheses and Moses-tokenised-looking ones."""
    empty = sum(1 for h in hypotheses if not h.strip())
    if empty:
        logger.warning("%d of %d hypotheses are empty", empty, len(hypotheses))
    tokenised = sum(1 for h in hypotheses if h.endswith((" .", " ?", " !")) or " , " in h)
    if tokenised >= max(10, len(hypotheses) // 10):
        logger.warning("%d of %d hypotheses look tokenised (' .', ' , '); the metrics expect detokenised text",
                       tokenised, len(hypotheses))


def _encode_pieces(model_path: str, lines: Sequence[str]) -> list[list[str]]:
    import sentencepiece as spm

    if not Path(model_path).is_file():
        raise DataError(f"SentencePiece model {model_path!r} does not exist")
    try:
        sp = spm.SentencePieceProcessor(model_file=str(model_path))
    except Exception as err:
        raise DataError(f"{model_path!r} is not a SentencePiece model ({err})") from None
    return [sp.encode(line, out_type=str) for line in lines]


def score_files(hyp_path: str | Path, ref_path: str | Path, src_path: str | Path | None = None, *,
                cfg: MetricsConfig | None = None, comet: str | None = None, comet_batch_size: int = 16,
                device: str = "cpu", subword_model: str | None = None, cumulative: bool = False,
                train_vocab: str | Path | None = None, doc_ids: str | Path | None = None,
                mt_path: str | Path | None = None, glossary: Any = None) -> dict[str, Any]:
    """``score_lines`` on files (one segment per line); ``subword_model`` (a SentencePiece model) turns on the
    subword variants (``all`` unless ``cfg.subword`` says ``content``).

    ``mt_path``: the raw MT output the references were post-edited from (the Autodesk corpus's
    field 2); adds ``report["raw_mt"]``, its TER against the references (HTER-style).
    """
    hypotheses = read_lines(hyp_path, "hypotheses file", rstrip=True)
    references = read_lines(ref_path, "references file", rstrip=True)
    sources = read_lines(src_path, "sources file", rstrip=True) if src_path is not None else None
    docs = [line.partition("\t")[0] for line in read_lines(doc_ids, "document ids file", rstrip=True)] if doc_ids else None
    raw_mt = read_lines(mt_path, "raw MT file", rstrip=True) if mt_path is not None else None
    _check_counts({str(hyp_path): hypotheses, str(ref_path): references,
                   **({str(src_path): sources} if sources is not None else {}),
                   **({str(doc_ids): docs} if docs is not None else {}),
                   **({str(mt_path): raw_mt} if raw_mt is not None else {})})
    if not hypotheses:
        raise DataError(f"hypotheses file {str(hyp_path)!r} is empty")
    cfg = cfg or defaults("metrics")
    hyp_pieces = ref_pieces = None
    if subword_model is not None and not cfg.subword:
        cfg = dataclasses.replace(cfg, subword="all")
    if cfg.subword and subword_model is None:
        raise ConfigError(f"subword R variants ({cfg.subword}) need the SentencePiece model: give --subword-model SPM")
    if cfg.subword == "all":
        hyp_pieces = _encode_pieces(subword_model, hypotheses)
        ref_pieces = _encode_pieces(subword_model, references)
    report = score_lines(hypotheses, references, sources, cfg=cfg, comet=comet, comet_batch_size=comet_batch_size,
                         device=device, hyp_pieces=hyp_pieces, ref_pieces=ref_pieces, cumulative=cumulative,
                         train_vocab=train_vocab, spm_model=subword_model, doc_ids=docs, glossary=glossary)
    report["files"] = {"hypotheses": str(hyp_path), "references": str(ref_path),
                       **({"sources": str(src_path)} if src_path is not None else {}),
                       **({"raw_mt": str(mt_path)} if mt_path is not None else {})}
    if raw_mt is not None:
        report["raw_mt"] = raw_mt_distance(raw_mt, references)
    return report


def raw_mt_distance(raw_mt: Sequence[str], post_edits: Sequence[str]) -> dict[str, Any]:
    """HTER-style: the corpus TER (the metric stack's sacreBLEU TER) of the raw MT output against its post-edits."""
    from simpe.metrics import METRICS

    ter = METRICS.build("ter")
    return {"hter": ter.corpus_score(list(raw_mt), list(post_edits)), "signature": ter.signature(), "segments": len(raw_mt)}


# ---------------------------------------------------------------- rendering
def _label(name: str) -> str:
    return metric_for(name).label


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table: one metric per row with its value and signature (R as % with counts)."""
    rows = [("metric", "value", "details")]
    corpus, counts, signatures = report["corpus"], report["counts"], report["signatures"]
    for name, value in corpus.items():
        if name in counts:
            num, den = counts[name]
            unit = ("subword types" if name.startswith("subword:") else "glossary terms" if name in TERM_METRICS and name != REPEAT
                    else "fixed terms" if name == REPEAT else "content-word types")
            rows.append((_label(name), _fmt(None if value is None else 100 * value), f"{num}/{den} {unit}"))
        elif name == "comet":
            rows.append((_label(name), _fmt(value, 4), signatures.get(name, "")))
        else:
            rows.append((_label(name), _fmt(value), signatures.get(name, "")))
    width0 = max(len(r[0]) for r in rows)
    width1 = max(len(r[1]) for r in rows)
    if "raw_mt" in report:
        rows.append(("HTER (raw MT)", _fmt(report["raw_mt"]["hter"]), f"TER of the raw MT against the references; {report['raw_mt']['signature']}"))
        width0, width1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    lines = [f"{a:<{width0}}  {b:>{width1}}  {c}".rstrip() for a, b, c in rows]
    lines.append(f"({report['segments']} segments; R values in % of reference content-word types)")
    for kind, signature in signatures.items():
        if kind == "r" or kind.endswith(":r") or kind == TERM_SIGNATURE:
            lines.append(f"{signature_label(kind)} signature: {signature}")
    return "\n".join(lines)


def format_cumulative(report: dict[str, Any]) -> str:
    """Tab-separated cumulative curves: a header, then ``segment<TAB>value...`` per prefix (R in %)."""
    curves = report["cumulative"]
    names = list(curves)
    counts = report["counts"]
    lines = ["segment\t" + "\t".join(_label(n) for n in names)]
    for i in range(report["segments"]):
        values = []
        for name in names:
            value = curves[name][i]
            if value is not None and name in counts:
                value *= 100
            values.append(_fmt(value, 4))
        lines.append(f"{i + 1}\t" + "\t".join(values))
    return "\n".join(lines)
