"""``simpe rank``: seed 000's ranking evaluation of a model on a test set, and its Table 3 study.

``run_protocol``: top-region (exact top-k) and Monte Carlo sampling evaluation of one model
(ranking.py), writing per-sentence records (``records.jsonl``) and a summary
(``summary.json``) into an output folder.

``run_correlation``: for several models or checkpoints, the corpus figures of the protocol
(sampled kQRG above all), the quality of beam search output, the mean quality of one
ancestral sample, and the quality of MBR-decoded output (mbr.py); then Pearson, Spearman and
Kendall correlations, across models, of each figure with MBR quality (seed 000, Table 3:
MBR, beam search, sampling, sampled kQRG). Writes one folder per model and
``correlation.json``.

Functions take plain values; models are loaded with ``simpe.model.load_model``. Only
cli.py parses arguments.
"""
from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, DataError
from simpe.ranking import RankingConfig, evaluate

logger = logging.getLogger(__name__)

PREDICTORS = ("mc.kqrg", "top.kqrg", "mc.krg", "top.krg", "beam.quality", "mc.mean_quality")


# ---------------------------------------------------------------- inputs and outputs
def read_test_set(src: Path, ref: Path, limit: int | None = None, max_words: int | None = None) -> tuple[list[str], list[str]]:
    """Aligned plain-text source and reference lines; keep pairs whose source has at most
    ``max_words`` words, then the first ``limit`` of them."""
    for path in (src, ref):
        if not Path(path).is_file():
            raise DataError(f"test set file {path} does not exist")
    sources = Path(src).read_text(encoding="utf-8").splitlines()
    references = Path(ref).read_text(encoding="utf-8").splitlines()
    if len(sources) != len(references):
        raise DataError(f"{src} has {len(sources)} lines but {ref} has {len(references)}; they must be aligned line by line")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive integer, got {limit}")
    if max_words is not None and max_words < 1:
        raise ConfigError(f"--max-words must be a positive integer, got {max_words}")
    pairs = [(s, r) for s, r in zip(sources, references) if s.strip()]
    if max_words is not None:
        pairs = [(s, r) for s, r in pairs if len(s.split()) <= max_words]
    if limit is not None:
        pairs = pairs[:limit]
    if not pairs:
        raise DataError(f"no sentence pair of {src} / {ref} is left after the filters (--limit, --max-words)")
    return [s for s, _ in pairs], [r for _, r in pairs]


def prepare_out(out: Path, names: Sequence[str], overwrite: bool) -> None:
    """Create ``out``; refuse to replace any of ``names`` in it without ``overwrite``."""
    out = Path(out)
    existing = [n for n in names if (out / n).exists()]
    if existing and not overwrite:
        raise ConfigError(f"{out} already holds {', '.join(existing)}; pass --overwrite to replace them")
    out.mkdir(parents=True, exist_ok=True)


def signatures(quality: str) -> dict[str, str]:
    """sacrebleu signature of the quality function (COMET: its name only)."""
    from sacrebleu.metrics import BLEU, CHRF

    metric = {"chrf": CHRF(), "sbleu": BLEU(effective_order=True)}.get(quality)
    if metric is None:
        return {}
    metric.sentence_score("a", ["a"])  # sacrebleu knows the number of references only after scoring
    return {quality: str(metric.get_signature())}


# ---------------------------------------------------------------- the protocol
def run_protocol(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
                 out: Path | None = None, comet: Any = None, meta: dict[str, Any] | None = None,
                 overwrite: bool = False) -> dict[str, Any]:
    """Evaluate one model; write ``out/records.jsonl`` and ``out/summary.json`` when ``out`` is given.

    Returns:
        the summary: ``{"figures": {...}, "config": {...}, "signatures": {...}, **meta}``.
    """
    handle = None
    if out is not None:
        prepare_out(out, ["records.jsonl", "summary.json"], overwrite)
        handle = (Path(out) / "records.jsonl").open("w", encoding="utf-8")
    done = [0]

    def on_record(record: dict[str, Any]) -> None:
        done[0] += 1
        if handle is not None:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
        top, mc = record.get("top"), record.get("mc")
        logger.debug("sentence %d: top kRG %s kQRG %s exact %s | mc kRG %s kQRG %s", record["index"],
                     top and top["krg"], top and top["kqrg"], top and top["exact"], mc and mc["krg"], mc and mc["kqrg"])
        if done[0] % 10 == 0 or done[0] == len(sources):
            logger.info("ranked %d/%d sentences", done[0], len(sources))

    try:
        figures, _ = evaluate(model, tokenizer, sources, references, cfg, comet=comet, on_record=on_record)
    finally:
        if handle is not None:
            handle.close()
    summary = {**(meta or {}), "sentences": len(sources), "config": asdict(cfg), "signatures": signatures(cfg.quality),
               "figures": figures}
    if out is not None:
        (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary


# ---------------------------------------------------------------- MBR and beam quality
def decoded_quality(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], decoder: Any,
                    quality: str, comet: Any = None) -> dict[str, Any]:
    """Mean sentence quality of a decoder's best output; returns {"quality", "outputs", "seconds"}."""
    import torch

    from simpe.decoders.mbr import MbrDecoder
    from simpe.decoders.utility import build_utility

    utility = build_utility(quality, comet)
    device = next(model.parameters()).device
    outputs, values = [], []
    t0 = time.perf_counter()
    with torch.inference_mode():
        for index, (source, reference) in enumerate(zip(sources, references)):
            ids = tokenizer(source, truncation=True, max_length=512, return_tensors="pt")["input_ids"].to(device)  # (1, src_len)
            if isinstance(decoder, MbrDecoder):  # one seed per sentence, as the sampling evaluation
                result = decoder.decode(model, ids, source_text=source, seed=decoder.seed + index)
            else:
                result = decoder.decode(model, ids)
            text = tokenizer.decode(list(result.hypotheses[0].tokens), skip_special_tokens=True)
            outputs.append(text)
            values.append(utility.scores([text], reference, source)[0])
    return {"quality": sum(values) / len(values), "outputs": outputs, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- correlation
def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than 2 points or a constant series."""
    n = len(x)
    if n != len(y):
        raise ValueError("pearson needs two series of the same length")
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of average ranks."""
    return pearson(_ranks(x), _ranks(y))


def kendall(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties in either series handled); None when undefined."""
    n = len(x)
    if n < 2:
        return None
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denom if denom else None


def correlate(rows: Sequence[dict[str, Any]], target: str = "mbr.quality",
              predictors: Sequence[str] = PREDICTORS) -> dict[str, dict[str, float | None]]:
    """Correlation across models of each predictor with ``target`` (rows: one flat dict per model)."""
    out: dict[str, dict[str, float | None]] = {}
    for name in predictors:
        pairs = [(r[name], r[target]) for r in rows if r.get(name) is not None and r.get(target) is not None]
        if len(pairs) < len(rows):
            continue
        x, y = [p[0] for p in pairs], [p[1] for p in pairs]
        out[name] = {"pearson": pearson(x, y), "spearman": spearman(x, y), "kendall": kendall(x, y)}
    return out


def run_correlation(model_ids: Sequence[str], sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
                    out: Path, device: str = "auto", comet: Any = None, mbr_samples: int = 100, mbr_utility: str | None = None,
                    mbr_seed: int = 0, overwrite: bool = False) -> dict[str, Any]:
    """Seed 000 Table 3 for several models: per-model figures, MBR quality, and their correlations.

    Args:
        model_ids: model folders or hub ids (``simpe.model.load_model``), at least two.
        mbr_utility: MBR utility (chrf, chrf++, sbleu, comet); default: ``cfg.quality``.
    Returns:
        ``{"models": [{"model", "mbr.quality", "beam.quality", "mc.kqrg", ...}], "correlation": {...}, ...}``
        (also written to ``out/correlation.json``).
    """
    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.mbr import MbrDecoder
    from simpe.model import load_model, model_name

    if len(model_ids) < 2:
        raise ConfigError("a correlation across models needs at least two models (--models A B ...)")
    utility = mbr_utility or cfg.quality
    mbr = MbrDecoder(samples=mbr_samples, seed=mbr_seed, utility=utility, comet_model=comet if utility == "comet" else None,
                     **cfg.length())
    names = [model_name(m) for m in model_ids]
    if len(set(names)) != len(names):
        names = [f"{i + 1:02d}-{n}" for i, n in enumerate(names)]
    prepare_out(out, ["correlation.json"] + names, overwrite)
    rows: list[dict[str, Any]] = []
    for model_id, name in zip(model_ids, names):
        logger.info("model %s", model_id)
        loaded = load_model(model_id, device)
        summary = run_protocol(loaded.model, loaded.tokenizer, sources, references, cfg, Path(out) / name, comet=comet,
                               meta={"model": str(model_id)}, overwrite=True)
        figures = dict(summary["figures"])
        if "top.beam_quality" in figures:
            figures["beam.quality"] = figures["top.beam_quality"]
        else:
            beam = decoded_quality(loaded.model, loaded.tokenizer, sources, references,
                                   BeamDecoder(beam_size=cfg.beam_size, **cfg.length()), cfg.quality, comet)
            figures["beam.quality"] = beam["quality"]
        decoded = decoded_quality(loaded.model, loaded.tokenizer, sources, references, mbr.bind(loaded.tokenizer),
                                  cfg.quality, comet)
        figures["mbr.quality"] = decoded["quality"]
        figures["mbr.seconds"] = decoded["seconds"]
        (Path(out) / name / "mbr.txt").write_text("\n".join(decoded["outputs"]) + "\n", encoding="utf-8")
        rows.append({"model": str(model_id), "name": name, **figures})
        logger.info("%s: mc kQRG %s, beam quality %.4f, MBR quality %.4f", name, figures.get("mc.kqrg"),
                    figures["beam.quality"], figures["mbr.quality"])
        del loaded
    result = {"sentences": len(sources), "config": asdict(cfg), "signatures": signatures(cfg.quality),
              "mbr": {"samples": mbr_samples, "utility": utility, "seed": mbr_seed},
              "models": rows, "correlation": correlate(rows)}
    (Path(out) / "correlation.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result
