"""The online simulated post-editing loop: translate -> score -> adapt, segment by segment.

For segment i of the stream: translate the source with the current parameters θ(i-1),
score the output against the reference (the post-edit), then update the model on
(source_i, reference_i), then log. The hypothesis of segment i is always produced before
the model sees reference i. Every N segments a ranking snapshot may be taken on a fixed
probe set. Everything a user can get wrong (dataset, method, decoder, metric and ranking
settings) is checked before the model is loaded; then the method is attached with the update
settings and the decoder is bound to the tokenizer. ``simpe.rundir`` writes the files.
With ``reset: document`` the adapted state returns to the base model's before the first
segment of every document (a change of ``doc_id``), as adaptive translation servers work
per project. At the end the run writes its final adapted state as the method's per-user
store (``store.safetensors``; ``simpe export-store`` hands it out, ``simpe translate
--store`` applies it).

The loop sees methods, decoders and metrics only through their base classes.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import json
import logging
import random
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

from simpe import log
from simpe.config import RunConfig, load_saved_config, resume_difference
from simpe.datasets import DATASETS, Segment, stream_hash
from simpe.decoders import DECODERS
from simpe.errors import ConfigError, DataError, ModelError, RunDirError
from simpe.fingerprint import run_code
from simpe.interactive import COMPLETING_DECODERS, EFFORT_OF, Effort, run_sessions
from simpe.methods.base import Context
from simpe.methods.compose import build_method
from simpe.metrics.online import OnlineScorer, metric_for
from simpe.metrics.recall import repeated_errors
from simpe.metrics.text import split_tokens
from simpe.model import load_model, model_family, model_folder, model_name, resolve_device
from simpe.paths import DEFAULT_MODEL
from simpe.profiling import ModelTimer
from simpe.ranking import evaluate as ranking
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.rundir.record import SegmentRecord
from simpe.rundir.writer import RunDir, environment
from simpe.storefile import StoreMetadata
from simpe.update import Tuner, set_dropout, update

logger = logging.getLogger(__name__)


def reuse_freed_memory() -> None:
    """Have glibc's malloc keep freed memory for the next allocation instead of handing it back (Linux, glibc).

    Every update step allocates the trainable tensors' gradients (40 MB for the demo model's ``full``)
    and frees them. With glibc's defaults, blocks from 128 KiB up to the largest freed so far are
    mapped and unmapped each time and a free heap top over twice that is returned to the system, so
    every step pays the page faults of fresh memory in backward and the unmapping after the step:
    ~20 ms and ~5 ms per 40 MB allocated and freed on the demo machine, ~0.05 ms each kept. Blocks up
    to 32 MiB (glibc's largest threshold) then come from the heap, and up to 1 GiB of free heap is kept.
    The process's peak memory is the same; it is kept between steps. Once per process; nothing elsewhere.
    """
    if sys.platform != "linux":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc's; another C library may lack it
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 1 << 30)


def load_stream(cfg: RunConfig) -> tuple[Any, list[Segment]]:
    """The dataset and the first ``data.segments`` segments of its split (checked).

    ``cfg.data.params`` is completed with the dataset's defaults, so the saved config.yaml
    names every choice that made the stream.
    """
    cfg.data.params = DATASETS.resolve(cfg.data.name, cfg.data.params)
    dataset = DATASETS.build(cfg.data.name, **cfg.data.params)
    segments = dataset.load(cfg.data.split, cfg.data.skip_empty)
    if cfg.data.segments is not None:
        if cfg.data.segments > len(segments):  # the run folder (…--<N>seg) and the summary would disagree
            raise DataError(f"data.segments is {cfg.data.segments} but {cfg.data.name}:{cfg.data.split} has only "
                            f"{len(segments)} segments; pass --segments {len(segments)}, or leave --segments out for all")
        segments = segments[: cfg.data.segments]
    return dataset, segments


def run_path(cfg: RunConfig) -> Path:
    """The run's folder: ``<runs_dir>/<dataset>-<split>--<model>--<N>seg/<adapter>``."""
    model = model_name(cfg.model.path) if cfg.model.path else DEFAULT_MODEL.name
    warm = re.sub(r"[^A-Za-z0-9._=+,@-]", "_", Path(cfg.warm_start.path).stem).lstrip(".-") or "memory" if cfg.warm_start.path else None
    path = layout.run_path(cfg.runs_dir, cfg.data.name, cfg.data.split, model, cfg.data.segments, cfg.adapter, cfg.protocol.name,
                           warm)
    if not layout.inside(path, cfg.runs_dir) or Path(path).resolve() == Path(cfg.runs_dir).resolve():
        raise ConfigError(f"the run folder {path} would lie outside the runs folder {cfg.runs_dir}; check the names")
    return path


# What decides a run's records beyond its config: a resume under another value of any of these would log records an
# uninterrupted run does not (docs/reproducibility.md); env.json holds them.
RECORD_ENV = ("torch_threads", "cpu_capability", "device", "packages.torch", "packages.transformers")


def env_changes(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``key (the run has A, now B)`` for each RECORD_ENV value that differs; a key the run did not record (older
    runs have no cpu_capability) is not a difference."""
    def value(env: dict[str, Any], key: str) -> Any:
        for part in key.split("."):
            env = env.get(part) if isinstance(env, dict) else None
        return env

    changes = []
    for key in RECORD_ENV:
        was, is_now = value(saved, key), value(now, key)
        if was is not None and was != is_now:
            changes.append(f"{key} (the run has {was!r}, now {is_now!r})")
    return changes


def probe_set(cfg: RunConfig, dataset: Any, stream: list[Segment]) -> list[Segment]:
    """The fixed probe set of the ranking snapshots (see SnapshotConfig)."""
    short = lambda segs: [s for s in segs if len(s.source.split()) <= cfg.snapshots.max_words]  # noqa: E731
    probe = cfg.snapshots.probe
    if probe == "auto":  # the dev split when the dataset has a non-empty one, else a fixed sample of the stream
        probe = "stream"
        if "dev" in dataset.splits:
            try:
                dev = short(dataset.load("dev", cfg.data.skip_empty))[: cfg.snapshots.probe_size]
            except DataError as err:  # e.g. an Autodesk file too small to hold out dev documents
                logger.info("ranking snapshots probe a fixed sample of the stream (the dev split: %s)", err)
            else:
                if dev:
                    return dev
        logger.debug("ranking snapshots probe a fixed sample of the stream")
    if probe == "dev":
        if "dev" not in dataset.splits:
            raise ConfigError(f"snapshots.probe=dev but dataset {cfg.data.name!r} has no dev split; use snapshots.probe=stream")
        return short(dataset.load("dev", cfg.data.skip_empty))[: cfg.snapshots.probe_size]
    candidates = short(stream)
    rng = random.Random(cfg.seed)
    return sorted(rng.sample(candidates, min(cfg.snapshots.probe_size, len(candidates))), key=stream.index)


def forgetting_set(cfg: RunConfig, dataset: Any) -> list[Segment]:
    """The forgetting probe: the last ``snapshots.forgetting`` segments of the dev split (held-out text the model
    never trained on and the stream never shows; the ranking probe takes dev's first short segments)."""
    if not (cfg.snapshots.every and cfg.snapshots.forgetting):
        return []
    if "dev" not in dataset.splits:
        raise ConfigError(f"snapshots.forgetting needs a dev split, and dataset {cfg.data.name!r} has none; set it to 0")
    return dataset.load("dev", cfg.data.skip_empty)[-cfg.snapshots.forgetting:]


def _running(figures: dict[str, Any], full: bool = False) -> str:
    """'BLEU 31.2 R0+1 45.0' (R metrics in percent; '-' while undefined)."""
    names = ("bleu", "chrf", "ter", "r0", "r1", "r0+1") if full else ("bleu", "r0+1")
    parts = []
    for name in names:
        value, metric = figures.get(name), metric_for(name)
        parts.append(f"{metric.label} {'-' if value is None else f'{(100 if metric.percent else 1) * value:.1f}'}")
    return " ".join(parts)


@dataclasses.dataclass
class Draft:
    """A segment translated and not yet learnt from (``Loop.translate``): what ``Loop.learn`` needs."""

    index: int
    segment: Segment
    examples: Any  # the in-context examples of the prompt (icl), else empty
    pair: Any  # simpe.models.base.Pair: the source's ids and the segment reference's labels
    result: Any  # the decoder's result
    best: list[int]  # the best hypothesis's tokens
    hypothesis: str  # detokenised
    seconds: dict[str, float]  # prepare, translate, translate_model
    # the method's translating() context (tune-retrieve's tuned copy), entered by translate and closed by learn before
    # the update, and what it yielded
    tuning: contextlib.ExitStack = dataclasses.field(default_factory=contextlib.ExitStack)
    tuned: Any = None


class Loop:
    """One run: a model with a method attached, a decoder, a scorer and a run directory.

    The constructor checks every setting and input without loading the model; ``run``
    checks the run folder (writable, not locked, resumable with the same settings), then
    loads the model, then writes.
    """

    def __init__(self, cfg: RunConfig, progress: bool = True) -> None:
        self.cfg = cfg
        self.progress = progress
        # check everything a user can get wrong before the model is loaded
        self.dataset, self.segments = load_stream(cfg)
        self.method = build_method(cfg.method.name, cfg.method.params, cfg.method.modifiers)
        self.warm_pairs, self.warm_method, self.warm_update = self._check_warm_start()
        self.decoder = DECODERS.build(cfg.decoder.name, **cfg.decoder.params)
        self.levels = ("char", "word") if cfg.protocol.level == "both" else (cfg.protocol.level,)
        if cfg.protocol.name == "interactive" and cfg.decoder.name not in COMPLETING_DECODERS:
            raise ConfigError(f"protocol interactive completes typed prefixes, which decoder {cfg.decoder.name!r} cannot; "
                              f"use one of {', '.join(COMPLETING_DECODERS)}")
        self.path = run_path(cfg)
        self.probe = probe_set(cfg, self.dataset, self.segments) if cfg.snapshots.every and cfg.snapshots.ranking else []
        self.forgetting = forgetting_set(cfg, self.dataset)
        if cfg.snapshots.every and cfg.snapshots.ranking:
            ranking.check(cfg.ranking)
        # the model's family and its settings (None: a hub id not in the cache, checked when it loads)
        self.family = model_family(cfg.model.path, cfg.model.family, cfg.model.family_settings())
        if self.family is not None:
            self.method.check_family(self.family)
        resolve_device(cfg.device)  # --device cuda without a GPU
        # truecaser, stopwords, vocabularies (novel_vocab=train: the dataset's), SentencePiece model
        self.scorer = OnlineScorer(cfg.metrics, model_folder(cfg.model.path), train_vocab=self.dataset.train_vocab(cfg.metrics.lang))
        self.comet = None
        if cfg.comet:  # loaded now, not after the stream: a bad --comet must not cost a run
            from simpe.metrics.comet import CometScorer

            self.comet = CometScorer(cfg.comet, device=str(resolve_device(cfg.device)))
        self.loaded: Any = None
        self.truncated = 0  # segments cut to the model's maximum length
        self._repeat: dict[str, Any] | None = None  # a snapshot's figures, when every later one is the same (snapshot)

    def check_run_dir(self, resume: bool, overwrite: bool, resume_anyway: bool = False) -> None:
        """Refuse, before the model loads, a run folder that cannot be written or resumed with these settings, or
        (without ``resume_anyway``) in another environment than the one it ran in (RECORD_ENV)."""
        self.env_changes: list[str] = []
        if not RunDir.check(self.path, resume, overwrite):
            return
        env_file = self.path / layout.ENV_FILE
        if env_file.exists():
            try:
                saved_env = json.loads(env_file.read_text(encoding="utf-8"))
            except ValueError as err:
                raise RunDirError(f"{env_file} is not JSON ({err}); pass --overwrite to start the run again") from None
            self.env_changes = env_changes(saved_env if isinstance(saved_env, dict) else {},
                                           environment(resolve_device(self.cfg.device)))
            if self.env_changes and not resume_anyway:
                raise RunDirError(f"{self.path} ran in another environment: {'; '.join(self.env_changes)}; its records "
                                  "would differ from an uninterrupted run's. Resume where it ran, or pass --resume-anyway "
                                  "to go on and record the change in env.json and the summary")
        saved_file = self.path / layout.CONFIG_FILE
        if not saved_file.exists():
            return  # interrupted before the config was written: nothing to compare
        try:
            saved = load_saved_config(saved_file)
        except ConfigError as err:
            raise RunDirError(f"{saved_file} cannot be read ({err}); pass --overwrite to start the run again") from None
        differs = resume_difference(saved, self.cfg)
        if differs:
            raise RunDirError(f"{self.path}: setting {differs} differs from the run's config.yaml; resume with the same "
                              f"settings (e.g. simpe simulate --config {saved_file} --resume) or pass --overwrite")

    def load(self, resume: bool = False) -> None:
        """Load the model, attach the method, bind the decoder, build the scorer, prepare the method (once).

        ``resume``: a checkpoint will be loaded (the method's ``prepare`` then leaves what the state holds)."""
        if self.loaded is not None:
            return
        cfg = self.cfg
        torch.manual_seed(cfg.seed)
        reuse_freed_memory()
        self.loaded = load_model(cfg.model.path, cfg.device, self.family, cfg.model.dtype,
                                 family_name=cfg.model.family, settings=cfg.model.family_settings())
        if self.family is None:  # a hub id whose config was not cached: its family is known now
            self.family = self.loaded.family
            self.method.check_family(self.family)
        self.model, self.tokenizer = self.loaded.model, self.loaded.tokenizer
        set_dropout(self.model, cfg.update.dropout)
        self.method.attach(self.model, self.loaded.path, cfg.update)
        self.decoder.bind(self.tokenizer)
        self.timer = ModelTimer(self.model)
        self.warm_facts = self.warm_start() if self.warm_pairs else None
        self.method.prepare(self.context(), resume)
        # the base state a document boundary returns to (reset: document)
        self.base_state = self.method.state_dict() if cfg.reset == "document" else None

    def _check_warm_start(self) -> tuple[list[tuple[str, str]], Any, Any]:
        """The memory's pairs, and for a baseline run the method and update settings of the preset that warm-starts it
        (``warm_start.method``), read and checked before the model loads."""
        warm = self.cfg.warm_start
        if warm.method is not None and self.cfg.method.name != "baseline":
            raise ConfigError(f"warm_start.method is for a baseline run (the warm-started model without online updates); "
                              f"method {self.cfg.method.name!r} warm-starts with its own update: leave it null")
        if warm.path is None:
            return [], None, None
        from simpe.datasets.parallel import read_memory

        pairs = read_memory(warm.path, *self.languages())
        if self.cfg.method.name != "baseline":
            return pairs, None, None
        if warm.method is None:
            raise ConfigError("a baseline run learns nothing from --warm-start by itself; name the preset whose update "
                              "warm-starts it, e.g. --set warm_start.method=full (the comparison's baseline)")
        from simpe.config import load_config

        preset = load_config(warm.method)
        method = build_method(preset.method.name, preset.method.params, preset.method.modifiers)
        return pairs, method, preset.update

    def warm_start(self) -> dict[str, Any]:
        """Adapt on the translator's memory before the stream: ``warm_start.epochs`` passes, in an order shuffled with
        the run's seed, one step of the method's own update (its trainable set and step, the update's clipping, and
        the mean loss of the batch) per ``warm_start.batch_size`` pairs; then the method sees each pair once, as after
        a segment (knn's datastore, tune-retrieve's memory and replay's buffer take the memory). A baseline run is
        warm-started by the method of ``warm_start.method`` and then frozen."""
        warm, start = self.cfg.warm_start, time.perf_counter()
        method, update_cfg = self.method, self.cfg.update
        if self.warm_method is not None:
            method, update_cfg = self.warm_method, self.warm_update
            method.attach(self.model, self.loaded.path, update_cfg)
        family, device = self.loaded.family, self.loaded.device
        pairs = [family.encode_pair(self.tokenizer, s, r, device) for s, r in self.warm_pairs]
        one_step = dataclasses.replace(update_cfg, max_repeats=1, ppl_threshold=1.0)  # exactly one step a batch
        losses, steps = [], 0
        for epoch in range(warm.epochs):
            order = list(range(len(pairs)))
            random.Random(self.cfg.seed + epoch).shuffle(order)
            for first in range(0, len(order), warm.batch_size):
                batch = [pairs[i] for i in order[first:first + warm.batch_size]]
                record = update(self.model, method, batch[0], one_step, batch=batch[1:], measure_after=False)
                steps += record["repetitions"]
                losses.append(record["loss_before"])
        for pair in pairs:
            method.after_segment(pair)
        if self.warm_method is not None:
            self.model.requires_grad_(False)  # the baseline adapts nothing from here on
            set_dropout(self.model, self.cfg.update.dropout)
        facts = {"path": str(warm.path), "pairs": len(pairs), "epochs": warm.epochs, "batch_size": warm.batch_size,
                 "method": method.name if self.warm_method is None else warm.method, "steps": steps,
                 "loss_first_batch": losses[0] if losses else None, "loss_last_batch": losses[-1] if losses else None,
                 "seconds": time.perf_counter() - start}
        logger.info("warm start on %s: %d pairs, %d epochs of batches of %d, %d steps of %s in %.1f s",
                    warm.path, len(pairs), warm.epochs, warm.batch_size, steps, facts["method"], facts["seconds"])
        return facts

    def _warm_preset_params(self) -> dict[str, Any]:
        from simpe.config import load_config

        return dict(load_config(self.cfg.warm_start.method).method.params)

    def _warm_preset_modifiers(self) -> list[dict[str, Any]]:
        from simpe.config import load_config

        return [dict(m) for m in load_config(self.cfg.warm_start.method).method.modifiers]

    def store_method(self) -> Any:
        """The method whose state the run's store holds: a warm-started baseline's is the warm start's."""
        return self.warm_method if self.warm_method is not None else self.method

    def context(self) -> Context:
        """What the method may use beyond the post-edits (``Method.prepare``): the family's encoding, sentences of the
        dataset's train or dev split (``sentences``), and fixed steps of the shared update (``Tuner``)."""
        family, tokenizer, device = self.loaded.family, self.tokenizer, self.loaded.device
        return Context(encode=lambda source, reference: family.encode_pair(tokenizer, source, reference, device),
                       sentences=self.sentences, tune=Tuner(self.model, self.cfg.update).tune, lr=self.cfg.update.lr,
                       read_pairs=self.read_pairs)

    def read_pairs(self, path: str) -> list[tuple[str, str]]:
        """A translation memory file's pairs (``simpe.datasets.parallel.read_memory``) in the run's languages."""
        from simpe.datasets.parallel import read_memory

        return read_memory(path, *self.languages())

    def languages(self) -> tuple[str, str]:
        """The (source, target) language codes of a memory file: the dataset's where it names them, else en -> metrics.lang."""
        return (getattr(self.dataset, "src_lang", "en"), getattr(self.dataset, "tgt_lang", self.cfg.metrics.lang))

    def sentences(self, split: str, n: int) -> list[tuple[str, str]]:
        """At most ``n`` (source, reference) pairs of the dataset's ``split``, drawn with the run's seed, in file order:
        ``replay``'s training pairs and ``ewc``'s Fisher sentences. Only ``train`` and ``dev``, never the stream (nor a
        pair whose source the stream holds), the reserved splits, or (of dev) the forgetting and ranking probes'."""
        if split not in ("train", "dev") or split == self.cfg.data.split:
            raise ConfigError(f"a method's own sentences come from the train or dev split, never the stream "
                              f"({self.cfg.data.split}) or the reserved splits; got {split!r}")
        if split not in self.dataset.splits:
            raise ConfigError(f"dataset {self.cfg.data.name!r} has no {split} split (its splits: "
                              f"{', '.join(self.dataset.splits)}); set the method's split to one it has")
        try:
            segments = self.dataset.load(split, True)
        except DataError as err:
            raise DataError(f"the method needs {n} sentences of the {split} split: {err}") from None
        held = {s.source for s in self.segments} | {s.source for s in self.forgetting} | {s.source for s in self.probe}
        segments = [s for s in segments if s.source not in held]
        chosen = sorted(random.Random(self.cfg.seed).sample(range(len(segments)), min(n, len(segments))))
        logger.info("%d sentences of the %s split for the method (seed %d)", len(chosen), split, self.cfg.seed)
        return [(segments[i].source, segments[i].reference) for i in chosen]

    def begin_segment(self, index: int) -> bool:
        """Before segment ``index``: with ``reset: document``, at a document boundary return to the base state; True when it did."""
        if self.base_state is None or index == 0 or self.segments[index].doc_id == self.segments[index - 1].doc_id:
            return False
        self.method.load_state_dict(self.base_state)
        return True

    def store_metadata(self) -> StoreMetadata:
        """The per-user store's metadata: what made it and for which base model (``simpe.storefile``)."""
        family = self.loaded.family.store_metadata()  # empty for a Marian store without language settings
        made = self.cfg.method if self.warm_method is None else None
        warm = self.warm_method
        return StoreMetadata(method=made.name if made else warm.name,
                             method_params=dict(made.params) if made else self._warm_preset_params(),
                             adapter=self.cfg.adapter,
                             modifiers=([dict(m) for m in made.modifiers] if made else self._warm_preset_modifiers()) or None,
                             base_model=self.loaded.name, base_model_path=str(self.cfg.model.path or ""),  # "": the demo model
                             dataset=self.cfg.data.name, split=self.cfg.data.split, segments=len(self.segments),
                             reset=self.cfg.reset, decoder=self.cfg.decoder.name, decoder_params=dict(self.cfg.decoder.params),
                             model_family=family.get("model_family"), model_config_sha256=family.get("model_config_sha256"),
                             model_settings=json.loads(family["model_settings"]) if "model_settings" in family else None)

    # ------------------------------------------------------------ one segment
    def pieces(self, ids: list[int]) -> list[str]:
        special = set(self.tokenizer.all_special_ids)
        return self.tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])

    def step(self, index: int, seg: Segment) -> SegmentRecord:
        """Translate, score, then update on one segment; return its record."""
        return self.learn(self.translate(index, seg))

    def translate(self, index: int, seg: Segment) -> Draft:
        """The first half of ``step``: segment ``index``'s hypothesis with the current parameters θ(index-1).

        ``seg.reference`` is tokenised here for the update but never reaches the decoder. A caller whose post-edit
        exists only after the hypothesis was shown (``simpe serve``: a person post-edits it) hands it to ``learn``.
        """
        start = time.perf_counter()
        examples = self.method.examples(seg.source)  # in-context methods: earlier post-edits only (reference i is not there)
        pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, seg.reference, self.loaded.device, examples)
        t0, m0 = time.perf_counter(), self.timer.seconds
        # tune-retrieve: a tuned copy for this segment, from the translation until ``learn`` has run the interactive
        # sessions (the same copy completes them); reset before the update (Draft.tuning)
        tuning = contextlib.ExitStack()
        tuned = tuning.enter_context(self.method.translating(seg.source))
        try:
            with torch.inference_mode():
                result = self.decoder.decode(self.model, pair.input_ids, index=index, source=seg.source)
        except BaseException:
            tuning.close()
            raise
        best = list(result.hypotheses[0].tokens) if result.hypotheses else []
        hypothesis = self.tokenizer.decode(best, skip_special_tokens=True)
        t1, m1 = time.perf_counter(), self.timer.seconds
        return Draft(index, seg, examples, pair, result, best, hypothesis,
                     {"prepare": t0 - start, "translate": t1 - t0, "translate_model": m1 - m0}, tuning, tuned)

    def learn(self, draft: Draft, post_edit: str | None = None, effort: dict[str, Effort] | None = None) -> SegmentRecord:
        """The second half of ``step``: score ``draft``'s hypothesis against the post-edit, update on it, return the record.

        Args:
            draft: what ``translate`` returned for this segment (the parameters have not changed since).
            post_edit: the post-edit, when it is not the draft segment's reference (a person's: ``simpe serve``).
            effort: under the interactive protocol, each level's measured effort (a person's) instead of the
                simulated translator's sessions.
        """
        index, seg, pair, examples, best, hypothesis = (draft.index, draft.segment, draft.pair, draft.examples, draft.best,
                                                        draft.hypothesis)
        seconds = dict(draft.seconds)
        with draft.tuning:  # the tuned copy (tune-retrieve) lives until the sessions are done, then resets
            if post_edit is not None and post_edit != seg.reference:
                start = time.perf_counter()
                seg = dataclasses.replace(seg, reference=post_edit)
                pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, post_edit, self.loaded.device, examples)
                seconds["prepare"] += time.perf_counter() - start
            t1, m1 = time.perf_counter(), self.timer.seconds
            if self.cfg.protocol.name == "interactive" and effort is None:  # the translator corrects, the system completes
                effort = run_sessions(self.model, self.tokenizer, self.decoder, pair.input_ids, hypothesis, seg.reference,
                                      self.levels)
        t1b, m1b = time.perf_counter(), self.timer.seconds
        pieces = self.cfg.metrics.subword == "all"
        scored = self.scorer.add(hypothesis, seg.reference, self.pieces(best) if pieces else None,
                                 self.pieces(pair.labels[0].tolist()) if pieces else None, doc_id=seg.doc_id,
                                 effort=None if effort is None else {EFFORT_OF[level]: e.stats() for level, e in effort.items()})
        t2, m2 = time.perf_counter(), self.timer.seconds
        upd = update(self.model, self.method, pair, self.cfg.update)  # reference i is seen only here
        self.method.after_segment(pair)  # knn stores the post-edit, icl remembers the pair
        t3, m3 = time.perf_counter(), self.timer.seconds
        if upd["skipped"]:
            logger.warning("segment %d: update skipped (%s)", index, upd["skipped"])
        backward = upd.pop("seconds_backward")
        result, tuned = draft.result, draft.tuned
        if tuned:
            upd["tune"] = tuned
        record = SegmentRecord(
            index=index, doc_id=seg.doc_id, seg_id=seg.seg_id, source=seg.source, reference=seg.reference, hypothesis=hypothesis,
            mt=seg.mt, examples=len(examples) if examples else None, info=dict(seg.info) if seg.info else None,
            hyp_score=result.hypotheses[0].score if result.hypotheses else None,
            **scored, update=upd,
            # phases of the loop; *_model: time inside model forward passes (ModelTimer), backward: inside autograd
            seconds={"prepare": seconds["prepare"], "translate": seconds["translate"], "score": t2 - t1b, "update": t3 - t2,
                     "translate_model": seconds["translate_model"], "update_model": m3 - m2, "backward": backward},
        )
        if effort is not None:
            record.seconds.update({"interact": t1b - t1, "interact_model": m1b - m1})
            record.effort = {level: e.to_dict() for level, e in effort.items()}
        if pair.truncated:
            record.truncated = list(pair.truncated)
            self.truncated += 1
            if self.truncated == 1:
                logger.warning("segment %d: the %s is longer than %d tokens and is cut to them for translation and update "
                               "(the model's position limit); further cut segments are counted at the end",
                               index, " and ".join(pair.truncated), self.loaded.family.max_tokens(self.model.config))
        return record

    def checkpoint_state(self, segments_done: int) -> dict[str, Any]:
        """What a resume checkpoint holds after ``segments_done`` segments (``RunDir.save_checkpoint`` writes it)."""
        return {"segments_done": segments_done, "method": self.method.state_dict(), "method_name": self.cfg.method.name,
                "torch_rng": torch.get_rng_state()}

    def snapshot(self, segments_done: int) -> dict[str, Any]:
        """The ranking snapshot and the forgetting probe with the current parameters. A method that cannot change
        what the model computes (``Method.adapts``) gives the same figures at every point: they are taken once
        and repeated, with ``repeats``: the segment of the snapshot that computed them (``_keep_to_repeat``)."""
        self.model.eval()
        if self._repeat is not None:
            return {"segment": segments_done, **self._repeat}
        figures: dict[str, Any] = {}
        with torch.inference_mode():
            if self.probe:
                figures = ranking.snapshot(self.model, self.tokenizer, [s.source for s in self.probe],
                                           [s.reference for s in self.probe], self.cfg.ranking)
            if self.forgetting:
                figures.update(self.forgetting_probe())
        self._keep_to_repeat(figures, segments_done)
        return {"segment": segments_done, **figures}

    def _keep_to_repeat(self, figures: dict[str, Any], segment: int) -> None:
        """Keep the figures of the snapshot at ``segment`` for every later one, when the method cannot change what
        the model computes and the snapshot's exact searches ended well within ``ranking.max_seconds`` (a search cut
        by the clock gives figures that depend on the machine's speed at the time: such a snapshot is not repeated)."""
        limit = self.cfg.ranking.max_seconds
        within = limit is None or "top.seconds" not in figures or figures["top.seconds"] < 0.5 * limit * figures["probe_size"]
        if within and not self.method.adapts():
            self._repeat = {**figures, "repeats": segment}

    def forgetting_probe(self) -> dict[str, Any]:
        """``forget.bleu`` / ``forget.chrf``: the run's decoder on held-out other text, with the current parameters.

        Its sentences take the positions after the stream's (what a seeded decoder's seeds follow), never a stream's."""
        t0 = time.perf_counter()
        batch = [self.loaded.family.encode_source(self.tokenizer, s.source, self.loaded.device)[0] for s in self.forgetting]
        results = self.decoder.decode_batch(self.model, batch, start=len(self.segments))
        hyps = [self.tokenizer.decode(list(r.hypotheses[0].tokens) if r.hypotheses else [], skip_special_tokens=True)
                for r in results]
        refs = [s.reference for s in self.forgetting]
        return {"forget.bleu": metric_for("bleu").corpus_score(hyps, refs), "forget.chrf": metric_for("chrf").corpus_score(hyps, refs),
                "forget.size": len(refs), "forget.seconds": time.perf_counter() - t0}

    # ------------------------------------------------------------ the run
    def run(self, resume: bool = False, overwrite: bool = False, stop_after: int | None = None,
            resume_anyway: bool = False) -> Path:
        """Run (or resume) the whole stream; ``stop_after`` stops early without DONE (tests); ``resume_anyway`` resumes
        in another environment (threads, kernel set, versions, device) and records the change."""
        cfg = self.cfg
        self.check_run_dir(resume or resume_anyway, overwrite, resume_anyway)
        resume = resume or resume_anyway
        self.load(resume=resume and (self.path / layout.STATE_DIR / layout.CHECKPOINT_FILE).exists())
        with RunDir(self.path) as rundir:
            rundir.open(resume=resume, overwrite=overwrite)
            start, records = self._restore(rundir, resume)
            log.add_file(rundir.log_file)
            logger.info("run %s: method %s with %d trainable tensors (%d parameters), %d segments, decoder %s %s, device %s",
                        cfg.adapter, cfg.method.name, len(self.method.trainable()),
                        sum(p.numel() for p in self.method.trainable().values()), len(self.segments), cfg.decoder.name,
                        cfg.decoder.params, self.loaded.device)
            logger.debug("method facts: %s", self.method.describe())
            bar = self._progress(start)
            # What is alive now (the model, the tokenizer, the libraries' objects: ~400k on the demo model) lives
            # through the run: frozen, a full collection of the cyclic GC does not walk it (80-190 ms each time,
            # landing in whichever part of a segment allocated last). Thawed at the end, so nothing stays frozen.
            frozen = gc.get_freeze_count() == 0  # a caller's own freeze is left alone
            if frozen:
                gc.freeze()
            try:
                for index in range(start, len(self.segments)):
                    if stop_after is not None and index >= stop_after:
                        return self.path
                    reset = self.begin_segment(index)
                    record = self.step(index, self.segments[index])
                    if cfg.reset != "none":
                        record.reset = reset
                    records.append(rundir.append_segment(record))
                    done = index + 1
                    if cfg.snapshots.every and done % cfg.snapshots.every == 0:
                        rundir.append_snapshot(self.snapshot(done))
                    if done % cfg.checkpoint_every == 0 and done < len(self.segments):
                        rundir.save_checkpoint(self.checkpoint_state(done))
                    if bar is not None:
                        bar.set_postfix_str(_running(record.cumulative), refresh=False)
                        bar.update(1)
                if bar is not None:
                    bar.close()
                    bar = None
                self._finish(rundir, records)
            finally:
                if frozen:
                    gc.unfreeze()
                if bar is not None:
                    bar.close()
                log.remove_file()
        return self.path

    def _restore(self, rundir: RunDir, resume: bool) -> tuple[int, list[dict[str, Any]]]:
        """Where the run starts and the records logged before it: a resume restores the last checkpoint (the method's
        state, the RNG, the scorer's running sums) and cuts the logs back to it; a new run writes its config and env."""
        start, records = 0, []
        state = rundir.load_checkpoint() if resume else None
        if state is not None:
            self._check_checkpoint(rundir, state)
            self.method.load_state_dict(state["method"])
            torch.set_rng_state(state["torch_rng"])
            records = rundir.rewind(state["segments_done"])
            for record in records:
                self.scorer.replay(record)
            self._repeat_after_resume()
            start = state["segments_done"]
            logger.info("resuming %s at segment %d of %d", self.path, start, len(self.segments))
            if self.env_changes:  # --resume-anyway: say so where the run's environment is kept
                env = json.loads((self.path / layout.ENV_FILE).read_text(encoding="utf-8"))
                env.setdefault("resumed_in_another_environment", []).append({"segment": start, "changes": self.env_changes})
                rundir.write_env(env)
                logger.warning("resumed in another environment: %s", "; ".join(self.env_changes))
        elif resume:
            records = rundir.rewind(0)  # no checkpoint yet: start the logs again (a torn first line too)
        if start == 0:
            rundir.write_config(self.cfg)
            # the code the run depends on (simpe.fingerprint): `simpe replicate` reuses a run only while it matches
            rundir.write_env({**environment(self.loaded.device), "stream_sha256": stream_hash(self.segments),
                              "code": run_code(self.cfg.to_dict())})
            manifest = self.dataset.manifest()
            if manifest is not None:
                rundir.write_json(layout.MANIFEST_FILE, manifest)
        return start, records

    def _check_checkpoint(self, rundir: RunDir, state: dict[str, Any]) -> None:
        """Refuse a checkpoint whose values this run could not have written (RunDir.load_checkpoint checked its
        structure): another method's, more segments than the stream, a method state of other tensors or NaNs."""
        name = state.get("method_name", self.cfg.method.name)  # checkpoints before it was saved: the config's
        if name != self.cfg.method.name:
            raise rundir.bad_checkpoint(f"was written by method {name!r}; this run's method is {self.cfg.method.name!r}")
        if state["segments_done"] >= len(self.segments):
            raise rundir.bad_checkpoint(f"says {state['segments_done']} segments are done; the stream has {len(self.segments)} "
                                        "and a checkpoint is taken before the last")
        try:
            self.method.check_state(state["method"])
        except ModelError as err:
            raise rundir.bad_checkpoint(f"(method {self.cfg.method.name!r}) {err}") from None

    def _repeat_after_resume(self) -> None:
        """A resumed run of a method that changes nothing repeats the snapshot its first part took, as the
        uninterrupted run does (``snapshot``), so that both write the same records."""
        if self.method.adapts():
            return
        taken = read_jsonl(self.path / layout.SNAPSHOTS_FILE)
        if taken and "repeats" not in taken[0]:
            self._keep_to_repeat({k: v for k, v in taken[0].items() if k != "segment"}, taken[0]["segment"])

    def _finish(self, rundir: RunDir, records: list[dict[str, Any]]) -> None:
        """The end of a complete stream: the store, the summary, and DONE (``RunDir.finish``)."""
        if self.truncated:
            logger.warning("%d segments were cut to %d tokens (records with a 'truncated' key)", self.truncated,
                           self.loaded.family.max_tokens(self.model.config))
        store = rundir.write_store(self.store_method().export_store(), self.store_metadata())
        summary = {**self.summary(records), "store_file_bytes": store.stat().st_size}
        changed = json.loads((self.path / layout.ENV_FILE).read_text(encoding="utf-8")).get("resumed_in_another_environment")
        if changed:
            summary["resumed_in_another_environment"] = changed
        rundir.finish(summary, records, self.cfg.metrics.lang)
        logger.info("%s: %s, %d adapted parameters (%.1f kB per user)", self.cfg.adapter, _running(summary["corpus"], full=True),
                    summary["adapted_parameters"], summary["store_bytes"] / 1000)

    def _progress(self, start: int):
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=len(self.segments), initial=start, desc=self.cfg.adapter, unit="seg", dynamic_ncols=True, leave=True)

    def summary(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        corpus = self.scorer.summary()
        comet, segment_comet = None, None
        if self.comet is not None:
            segment_comet = self.comet.score(
                [r["source"] for r in records], [r["hypothesis"] for r in records], [r["reference"] for r in records])
            comet = sum(segment_comet) / len(segment_comet)
        seconds = {k: sum(r["seconds"].get(k, 0.0) for r in records)  # .get: records of runs begun by older versions
                   for k in ("prepare", "translate", "score", "update", "translate_model", "update_model", "backward")}
        raw_mt = {}
        if records and all("mt" in r for r in records):  # HTER-style: how far the corpus's own MT was from the post-edits
            ter = metric_for("ter")
            raw_mt = {"raw_mt": {"hter": ter.corpus_score([r["mt"] for r in records], [r["reference"] for r in records]),
                                 "signature": ter.signature(), "segments": len(records)}}
        content, split = self.scorer.content_types, split_tokens
        repeated = repeated_errors([content(split(r["hyp_tokens"])) for r in records],
                                   [content(split(r["ref_tokens"])) for r in records])
        again, shown = sum(a for a, _ in repeated), sum(s for _, s in repeated)
        return {
            "method": self.cfg.method.name, "adapter": self.cfg.adapter, "dataset": self.cfg.data.name,
            "split": self.cfg.data.split, "segments": len(records), "model": self.loaded.name,
            "stream_sha256": stream_hash(self.segments),
            "corpus": {**corpus["corpus"], "comet": comet}, "signatures": corpus["signatures"],
            "segment_comet": segment_comet,
            "adapted_parameters": self.store_method().adapted_parameters(), "store_bytes": self.store_method().store_bytes(),
            "reset": self.cfg.reset, "method_facts": self.method.describe(),
            **({"warm_start": self.warm_facts} if getattr(self, "warm_facts", None) else {}),
            "updates": {"repetitions": sum(r["update"]["repetitions"] for r in records),
                        "skipped": sum(1 for r in records if r["update"]["skipped"])},
            "seconds": {**seconds, "model_forward": self.timer.seconds}, **raw_mt,
            # of the content words a post-edit showed after a miss, the share missed again at their next occurrence
            "repeated_errors": {"again": again, "shown": shown, "rate": again / shown if shown else None},
        }


def simulate(configs: list[RunConfig], resume: bool = False, overwrite: bool = False, resume_anyway: bool = False,
             progress: bool = True, on_done: Callable[[Path], None] | None = None) -> list[Path]:
    """Run every config in turn (``simpe.config.run_configs``: the presets on the same stream); return the run
    directories."""
    paths = []
    for cfg in configs:
        loop = Loop(cfg, progress=progress)
        path = loop.run(resume=resume, overwrite=overwrite, resume_anyway=resume_anyway)
        loop.timer.remove()
        paths.append(path)
        if on_done:
            on_done(path)
    return paths
