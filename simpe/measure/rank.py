"""``simpe rank``: the ranking evaluation of Yan et al. (2022) of a model on a test set, and its Table 3 study.

``run_protocol``: top-region (exact top-k) and Monte Carlo sampling evaluation of one model
(evaluate.py), writing per-sentence records (``records.jsonl``) and a summary
(``summary.json``) into an output folder (``simpe.rundir.OutputDir``).

``run_correlation``: for several models or checkpoints, the corpus figures of the protocol
(sampled kQRG above all), the quality of beam search output, the mean quality of one
ancestral sample, and the quality of MBR-decoded output (mbr.py); then Pearson, Spearman and
Kendall correlations (``simpe.stats``), across models, of each figure with MBR quality
(Yan et al. (2022), Table 3: MBR, beam search, sampling, sampled kQRG). Writes one folder per model
and ``correlation.json``.

Functions take plain values; models are loaded with ``simpe.model.load_model``. Only
simpe.cli parses arguments.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from simpe.config.tree import RankingConfig
from simpe.errors import ConfigError, DataError
from simpe.metrics.utility import build_utility
from simpe.ranking.evaluate import evaluate
from simpe.rundir.layout import CORRELATION_FILE, RANK_RECORDS_FILE, RANK_SUMMARY_FILE
from simpe.rundir.output import OutputDir
from simpe.stats import kendall, pearson, spearman
from simpe.textfile import read_lines

logger = logging.getLogger(__name__)

PREDICTORS = ("mc.kqrg", "top.kqrg", "mc.krg", "top.krg", "beam.quality", "mc.mean_quality")


# ---------------------------------------------------------------- inputs
def read_test_set(src: Path, ref: Path, limit: int | None = None, max_words: int | None = None) -> tuple[list[str], list[str]]:
    """Aligned plain-text source and reference lines; keep pairs whose source has at most
    ``max_words`` words, then the first ``limit`` of them."""
    sources, references = read_lines(src, "test set file"), read_lines(ref, "test set file")
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


def signatures(quality: str, comet: Any = None) -> dict[str, str]:
    """The signature of the quality's metric (sacreBLEU's for chrF and BLEU; COMET: none)."""
    signature = build_utility(quality, comet).signature() if quality != "comet" else ""
    return {quality: signature} if signature else {}


# ---------------------------------------------------------------- the protocol
def run_protocol(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
                 out: Path | None = None, comet: Any = None, meta: dict[str, Any] | None = None,
                 overwrite: bool = False) -> dict[str, Any]:
    """Evaluate one model; write ``out/records.jsonl`` and ``out/summary.json`` when ``out`` is given.

    Returns:
        the summary: ``{"figures": {...}, "config": {...}, "signatures": {...}, **meta}``.
    """
    output = OutputDir(out, [RANK_RECORDS_FILE, RANK_SUMMARY_FILE], overwrite) if out is not None else None
    with output.jsonl(RANK_RECORDS_FILE) if output is not None else contextlib.nullcontext(None) as write:
        done = 0

        def on_record(record: dict[str, Any]) -> None:
            nonlocal done
            done += 1
            if write is not None:
                write(record)
            top, mc = record.get("top"), record.get("mc")
            logger.debug("sentence %d: top kRG %s kQRG %s exact %s | mc kRG %s kQRG %s", record["index"],
                         top and top["krg"], top and top["kqrg"], top and top["exact"], mc and mc["krg"], mc and mc["kqrg"])
            if done % 10 == 0 or done == len(sources):
                logger.info("ranked %d/%d sentences", done, len(sources))

        figures, _ = evaluate(model, tokenizer, sources, references, cfg, comet=comet, on_record=on_record)
    summary = {**(meta or {}), "sentences": len(sources), "config": asdict(cfg), "signatures": signatures(cfg.quality, comet),
               "figures": figures}
    if output is not None:
        output.write_json(RANK_SUMMARY_FILE, summary)
    return summary


# ---------------------------------------------------------------- MBR and beam quality
def decoded_quality(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], decoder: Any,
                    quality: str, comet: Any = None) -> dict[str, Any]:
    """Mean sentence quality of a decoder's best output; returns {"quality", "outputs", "seconds"}."""
    import torch

    from simpe.models import family_of

    utility = build_utility(quality, comet)
    decoder.bind(tokenizer)
    device = next(model.parameters()).device
    outputs, values = [], []
    t0 = time.perf_counter()
    with torch.inference_mode():
        for index, (source, reference) in enumerate(zip(sources, references)):
            result = decoder.decode(model, family_of(model).encode_source(tokenizer, source, device)[0], index=index, source=source)
            text = tokenizer.decode(list(result.hypotheses[0].tokens), skip_special_tokens=True)
            outputs.append(text)
            values.append(utility.scores([text], reference, source)[0])
    return {"quality": sum(values) / len(values), "outputs": outputs, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- correlation
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


def _is_store(model_id: Any) -> bool:
    return str(model_id).endswith(".safetensors") and Path(model_id).is_file()


def _store_name(path: Any) -> str:
    """A store's system name: its run's name for a run's own ``store.safetensors``, else the file's stem."""
    path = Path(path)
    return path.parent.name if path.name == "store.safetensors" else path.stem


def load_system(model_id: Any, device: str = "auto", model_settings: dict[str, Any] | None = None) -> Any:
    """A system to rank: a model folder or hub id, or a per-user store (``export-store``, a run's
    ``store.safetensors``): the base model its metadata names, with the store applied (an adapted model)."""
    from simpe.model import load_model

    if not _is_store(model_id):
        return load_model(model_id, device, settings=model_settings)
    from simpe.store.user import load_store, read_store

    _, metadata = read_store(Path(model_id))
    if metadata.method == "icl":
        raise ConfigError(f"{model_id} is an icl store: it adapts prompts, which rank does not build; rank a model or another store")
    settings = {**metadata.language_settings(), **(model_settings or {})}
    loaded = load_model(metadata.base_model_path or None, device, settings=settings or None)
    load_store(loaded.model, loaded.name, Path(model_id))
    return loaded


def run_correlation(model_ids: Sequence[str], sources: Sequence[str], references: Sequence[str], cfg: RankingConfig,
                    out: Path, device: str = "auto", comet: Any = None, mbr_samples: int = 100, mbr_utility: str | None = None,
                    mbr_seed: int = 0, overwrite: bool = False, model_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Table 3 of Yan et al. (2022) for several models: per-model figures, MBR quality, and their correlations.

    Args:
        model_ids: model folders, hub ids or per-user stores (``load_system``), at least two.
        model_settings: the ``model`` section's family settings every model loads with (src_lang, tgt_lang,
            prompt_template; default none).
        mbr_utility: MBR utility (chrf, chrf++, sbleu, comet); default: ``cfg.quality``.
    Returns:
        ``{"models": [{"model", "mbr.quality", "beam.quality", "mc.kqrg", ...}], "correlation": {...}, ...}``
        (also written to ``out/correlation.json``).
    """
    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.mbr import MbrDecoder
    from simpe.model import model_name

    if len(model_ids) < 2:
        raise ConfigError("a correlation across models needs at least two models (--models A B ...)")
    utility = mbr_utility or cfg.quality
    mbr = MbrDecoder(samples=mbr_samples, seed=mbr_seed, utility=utility, comet_model=comet if utility == "comet" else None,
                     **cfg.length())  # checks the utility before any model loads
    names = [_store_name(m) if _is_store(m) else model_name(m) for m in model_ids]
    if len(set(names)) != len(names):
        names = [f"{i + 1:02d}-{n}" for i, n in enumerate(names)]
    output = OutputDir(out, [CORRELATION_FILE, *names], overwrite)
    rows: list[dict[str, Any]] = []
    for model_id, name in zip(model_ids, names):
        logger.info("model %s", model_id)
        loaded = load_system(model_id, device, model_settings)
        summary = run_protocol(loaded.model, loaded.tokenizer, sources, references, cfg, Path(out) / name, comet=comet,
                               meta={"model": str(model_id)}, overwrite=True)
        figures = dict(summary["figures"])
        if "top.beam_quality" in figures:
            figures["beam.quality"] = figures["top.beam_quality"]
        else:
            beam = decoded_quality(loaded.model, loaded.tokenizer, sources, references,
                                   BeamDecoder(beam_size=cfg.beam_size, **cfg.length()), cfg.quality, comet)
            figures["beam.quality"] = beam["quality"]
        decoded = decoded_quality(loaded.model, loaded.tokenizer, sources, references, mbr,
                                  cfg.quality, comet)
        figures["mbr.quality"] = decoded["quality"]
        figures["mbr.seconds"] = decoded["seconds"]
        OutputDir(Path(out) / name, []).write_text("mbr.txt", "\n".join(decoded["outputs"]) + "\n")
        rows.append({"model": str(model_id), "name": name, **figures})
        logger.info("%s: mc kQRG %s, beam quality %.4f, MBR quality %.4f", name, figures.get("mc.kqrg"),
                    figures["beam.quality"], figures["mbr.quality"])
        del loaded
    result = {"sentences": len(sources), "config": asdict(cfg), "signatures": signatures(cfg.quality, comet),
              "mbr": {"samples": mbr_samples, "utility": utility, "seed": mbr_seed},
              "models": rows, "correlation": correlate(rows)}
    output.write_json(CORRELATION_FILE, result)
    return result
