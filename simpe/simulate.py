"""The online simulated post-editing loop: translate -> score -> adapt, segment by segment.

For segment i of the stream: translate the source with the current parameters θ(i-1),
score the output against the reference (the post-edit), then update the model on
(source_i, reference_i), then log. The hypothesis of segment i is always produced before
the model sees reference i. Every N segments a ranking snapshot may be taken on a fixed
probe set. Everything a user can get wrong (dataset, method, decoder, metric and ranking
settings) is checked before the model is loaded; then the method is attached with the update
settings and the decoder is bound to the tokenizer. ``simpe.rundir`` writes the files.

The loop sees methods, decoders and metrics only through their base classes.
"""
from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any, Callable

import torch

from simpe import log
from simpe.config import RunConfig, load_config, load_saved_config
from simpe.datasets import DATASETS, Segment, stream_hash
from simpe.decoders import DECODERS
from simpe.errors import ConfigError, RunDirError
from simpe.methods import METHODS
from simpe.metrics.online import OnlineScorer, metric_for, resolve_vocab
from simpe.metrics.stopwords import load_stopwords
from simpe.model import encode_pair, load_model, model_name
from simpe.paths import DEFAULT_MODEL
from simpe.profiling import ModelTimer
from simpe.ranking import evaluate as ranking
from simpe.rundir import layout
from simpe.rundir.writer import RunDir, environment
from simpe.update import set_dropout, update

logger = logging.getLogger(__name__)


def load_stream(cfg: RunConfig) -> tuple[Any, list[Segment]]:
    """The dataset and the first ``data.segments`` segments of its split (checked)."""
    dataset = DATASETS.build(cfg.data.name, **cfg.data.params)
    segments = dataset.load(cfg.data.split, cfg.data.skip_empty)
    if cfg.data.segments is not None:
        if cfg.data.segments > len(segments):
            logger.warning("data.segments=%d but %s:%s has only %d segments; using all", cfg.data.segments,
                           cfg.data.name, cfg.data.split, len(segments))
        segments = segments[: cfg.data.segments]
    return dataset, segments


def run_path(cfg: RunConfig) -> Path:
    """The run's folder: ``<runs_dir>/<dataset>-<split>--<model>--<N>seg/<adapter>``."""
    model = model_name(cfg.model) if cfg.model else DEFAULT_MODEL.name
    return layout.run_path(cfg.runs_dir, cfg.data.name, cfg.data.split, model, cfg.data.segments, cfg.adapter)


def probe_set(cfg: RunConfig, dataset: Any, stream: list[Segment]) -> list[Segment]:
    """The fixed probe set of the ranking snapshots (see SnapshotConfig)."""
    short = lambda segs: [s for s in segs if len(s.source.split()) <= cfg.snapshots.max_words]  # noqa: E731
    probe = cfg.snapshots.probe
    if probe == "auto":
        probe = "dev" if "dev" in dataset.splits else "stream"
        logger.debug("ranking snapshots probe the %s split", "dev" if probe == "dev" else "stream (a fixed sample; no dev split)")
    if probe == "dev":
        if "dev" not in dataset.splits:
            raise ConfigError(f"snapshots.probe=dev but dataset {cfg.data.name!r} has no dev split; use snapshots.probe=stream")
        return short(dataset.load("dev", cfg.data.skip_empty))[: cfg.snapshots.probe_size]
    candidates = short(stream)
    rng = random.Random(cfg.seed)
    return sorted(rng.sample(candidates, min(cfg.snapshots.probe_size, len(candidates))), key=stream.index)


def _running(figures: dict[str, Any], full: bool = False) -> str:
    """'BLEU 31.2 R0+1 45.0' (R metrics in percent; '-' while undefined)."""
    names = ("bleu", "chrf", "ter", "r0", "r1", "r0+1") if full else ("bleu", "r0+1")
    parts = []
    for name in names:
        value, metric = figures.get(name), metric_for(name)
        parts.append(f"{metric.label} {'-' if value is None else f'{(100 if metric.percent else 1) * value:.1f}'}")
    return " ".join(parts)


class Loop:
    """One run: a model with a method attached, a decoder, a scorer and a run directory."""

    def __init__(self, cfg: RunConfig, progress: bool = True) -> None:
        self.cfg = cfg
        self.progress = progress
        # check everything a user can get wrong before the model is loaded
        self.dataset, self.segments = load_stream(cfg)
        self.method = METHODS.build(cfg.method.name, **cfg.method.params)
        self.decoder = DECODERS.build(cfg.decoder.name, **cfg.decoder.params)
        load_stopwords(cfg.metrics.stopwords)
        self.train_vocab = self.dataset.train_vocab(cfg.metrics.lang)
        if cfg.metrics.novel_vocab is not None:
            resolve_vocab(cfg.metrics.novel_vocab, self.train_vocab)  # a missing vocabulary is found before the model loads
        self.path = run_path(cfg)
        self.probe = probe_set(cfg, self.dataset, self.segments) if cfg.snapshots.every else []
        if cfg.snapshots.every:
            ranking.check(cfg.ranking)
        torch.manual_seed(cfg.seed)
        self.loaded = load_model(cfg.model, cfg.device)
        self.model, self.tokenizer = self.loaded.model, self.loaded.tokenizer
        set_dropout(self.model, cfg.update.dropout)
        self.method.attach(self.model, self.loaded.path, cfg.update)
        self.decoder.bind(self.tokenizer)
        self.scorer = OnlineScorer(cfg.metrics, self.loaded.path, train_vocab=self.train_vocab)
        self.timer = ModelTimer(self.model)

    # ------------------------------------------------------------ one segment
    def pieces(self, ids: list[int]) -> list[str]:
        special = set(self.tokenizer.all_special_ids)
        return self.tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])

    def step(self, index: int, seg: Segment) -> dict[str, Any]:
        """Translate, score, then update on one segment; return its record."""
        pair = encode_pair(self.tokenizer, seg.source, seg.reference, self.loaded.device)
        t0 = time.perf_counter()
        with torch.inference_mode():
            result = self.decoder.decode(self.model, pair.input_ids, index=index, source=seg.source)
        best = list(result.hypotheses[0].tokens) if result.hypotheses else []
        hypothesis = self.tokenizer.decode(best, skip_special_tokens=True)
        t1 = time.perf_counter()
        pieces = self.cfg.metrics.subword == "all"
        scored = self.scorer.add(hypothesis, seg.reference, self.pieces(best) if pieces else None,
                                 self.pieces(pair.labels[0].tolist()) if pieces else None, doc_id=seg.doc_id)
        t2 = time.perf_counter()
        upd = update(self.model, self.method, pair, self.cfg.update)  # reference i is seen only here
        t3 = time.perf_counter()
        if upd["skipped"]:
            logger.warning("segment %d: update skipped (%s)", index, upd["skipped"])
        backward = upd.pop("seconds_backward")
        return {
            "index": index, "doc_id": seg.doc_id, "seg_id": seg.seg_id,
            "source": seg.source, "reference": seg.reference, "hypothesis": hypothesis,
            "hyp_score": result.hypotheses[0].score if result.hypotheses else None,
            **scored, "update": upd,
            "seconds": {"translate": t1 - t0, "score": t2 - t1, "update": t3 - t2, "backward": backward},
        }

    def snapshot(self, segments_done: int) -> dict[str, Any]:
        self.model.eval()
        with torch.inference_mode():
            figures = ranking.snapshot(self.model, self.tokenizer, [s.source for s in self.probe],
                                       [s.reference for s in self.probe], self.cfg.ranking)
        return {"segment": segments_done, **figures}

    # ------------------------------------------------------------ the run
    def run(self, resume: bool = False, overwrite: bool = False, stop_after: int | None = None) -> Path:
        """Run (or resume) the whole stream; ``stop_after`` stops early without DONE (tests)."""
        cfg = self.cfg
        with RunDir(self.path) as rundir:
            rundir.open(resume=resume, overwrite=overwrite)
            start, records = 0, []
            state = rundir.load_checkpoint() if resume else None
            if resume and rundir.config_file.exists():
                saved = load_saved_config(rundir.config_file)
                if saved != cfg:
                    raise RunDirError(f"{self.path}: the settings differ from the run's config.yaml; resume with the same "
                                      "settings (e.g. simpe simulate --config that file --resume) or pass --overwrite")
            if state is not None:
                self.method.load_state_dict(state["method"])
                torch.set_rng_state(state["torch_rng"])
                records = rundir.rewind(state["segments_done"])
                for record in records:
                    self.scorer.replay(record)
                start = state["segments_done"]
                logger.info("resuming %s at segment %d of %d", self.path, start, len(self.segments))
            elif resume:
                records = rundir.rewind(0)  # no checkpoint yet: start the logs again (a torn first line too)
            if start == 0:
                rundir.write_config(cfg)
                rundir.write_env({**environment(self.loaded.device), "stream_sha256": stream_hash(self.segments)})
            log.add_file(rundir.log_file)
            logger.info("run %s: method %s with %d trainable tensors (%d parameters), %d segments, decoder %s %s, device %s",
                        cfg.adapter, cfg.method.name, len(self.method.trainable()),
                        sum(p.numel() for p in self.method.trainable().values()), len(self.segments), cfg.decoder.name,
                        cfg.decoder.params, self.loaded.device)
            logger.debug("method facts: %s", self.method.describe())
            bar = self._progress(start)
            try:
                for index in range(start, len(self.segments)):
                    if stop_after is not None and index >= stop_after:
                        return self.path
                    record = self.step(index, self.segments[index])
                    rundir.append_segment(record)
                    records.append(record)
                    done = index + 1
                    if cfg.snapshots.every and done % cfg.snapshots.every == 0:
                        rundir.append_snapshot(self.snapshot(done))
                    if done % cfg.checkpoint_every == 0 and done < len(self.segments):
                        rundir.save_checkpoint({"segments_done": done, "method": self.method.state_dict(),
                                                "torch_rng": torch.get_rng_state()})
                    if bar is not None:
                        bar.set_postfix_str(_running(record["cumulative"]), refresh=False)
                        bar.update(1)
                if bar is not None:
                    bar.close()
                    bar = None
                summary = self.summary(records)
                rundir.finish(summary, records, cfg.metrics.lang)
                logger.info("%s: %s, %d adapted parameters (%.1f kB per user)", cfg.adapter, _running(summary["corpus"], full=True),
                            summary["adapted_parameters"], summary["store_bytes"] / 1000)
            finally:
                if bar is not None:
                    bar.close()
                log.remove_file()
        return self.path

    def _progress(self, start: int):
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=len(self.segments), initial=start, desc=self.cfg.adapter, unit="seg", dynamic_ncols=True, leave=True)

    def summary(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        corpus = self.scorer.summary()
        comet, segment_comet = None, None
        if self.cfg.comet:
            from simpe.metrics.comet import CometScorer

            segment_comet = CometScorer(self.cfg.comet, device=str(self.loaded.device)).score(
                [r["source"] for r in records], [r["hypothesis"] for r in records], [r["reference"] for r in records])
            comet = sum(segment_comet) / len(segment_comet)
        seconds = {k: sum(r["seconds"][k] for r in records) for k in ("translate", "score", "update", "backward")}
        return {
            "method": self.cfg.method.name, "adapter": self.cfg.adapter, "dataset": self.cfg.data.name,
            "split": self.cfg.data.split, "segments": len(records), "model": self.loaded.name,
            "stream_sha256": stream_hash(self.segments),
            "corpus": {**corpus["corpus"], "comet": comet}, "signatures": corpus["signatures"],
            "segment_comet": segment_comet,
            "adapted_parameters": self.method.adapted_parameters(), "store_bytes": self.method.store_bytes(),
            "method_facts": self.method.describe(),
            "updates": {"repetitions": sum(r["update"]["repetitions"] for r in records),
                        "skipped": sum(1 for r in records if r["update"]["skipped"])},
            "seconds": {**seconds, "model_forward": self.timer.seconds},
        }


def simulate(adapters: list[str], overrides: list[str] | None = None, resume: bool = False, overwrite: bool = False,
             progress: bool = True, config_file: Path | None = None,
             on_done: Callable[[Path], None] | None = None) -> list[Path]:
    """Run every adapter in turn on the same stream; return the run directories."""
    configs = [load_saved_config(config_file, overrides)] if config_file else [load_config(a, overrides) for a in adapters]
    paths = []
    for cfg in configs:
        loop = Loop(cfg, progress=progress)
        path = loop.run(resume=resume, overwrite=overwrite)
        loop.timer.remove()
        paths.append(path)
        if on_done:
            on_done(path)
    return paths
