"""The online simulated post-editing loop: translate -> score -> adapt, segment by segment.

For segment i of the stream: translate the source with the current parameters θ(i-1),
score the output against the reference (the post-edit), then update the model on
(source_i, reference_i), then log. The hypothesis of segment i is always produced before
the model sees reference i. Every N segments a ranking snapshot may be taken on a fixed
probe set. Everything a user can get wrong (dataset, method, decoder, metric and ranking
settings, the glossary) is checked before the model is loaded; then the method is attached with the update
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
import dataclasses
import gc
import json
import logging
import re
from pathlib import Path
from typing import Any, Callable

import torch

from simpe import log
from simpe.config.tree import RunConfig
from simpe.datasets import DATASETS, Segment, stream_hash
from simpe.datasets.base import pairs_hash
from simpe.datasets.languages import check_languages, pair_text, stream_pair
from simpe.decoders import DECODERS
from simpe.errors import ConfigError, ModelError, SimpeError
from simpe.filehash import file_hash
from simpe.fingerprint import run_code
from simpe.loop.malloc import reuse_freed_memory
from simpe.loop.phases import ModelTimer, Phases
from simpe.loop.probes import Probes
from simpe.loop.protocols import Correction, Served, effort_of, protocol_for
from simpe.loop.stream import forgetting_set, load_stream, method_sentences, probe_set
from simpe.loop.summary import run_summary
from simpe.loop.update import Tuner, set_dropout, update
from simpe.loop.warmstart import check_warm_start, warm_preset, warm_start
from simpe.methods.base import Context
from simpe.methods.compose import build_method
from simpe.metrics.online import OnlineScorer, running_text
from simpe.model import load_model, model_family, model_folder, model_name, resolve_device
from simpe.paths import DEFAULT_MODEL
from simpe.ranking import evaluate as ranking
from simpe.rundir import layout
from simpe.rundir.env import environment
from simpe.rundir.record import SegmentRecord
from simpe.rundir.resume import check_resumable
from simpe.rundir.writer import RunDir
from simpe.storefile import StoreMetadata
from simpe.terms.glossary import Glossary, load_glossary, resolve_glossary
from simpe.terms.score import TermCounter, glossary_counter

logger = logging.getLogger(__name__)


_STREAM_DIGESTS: dict[str, str] = {}  # the stream digests of this process's configs (a sweep's plan names many runs)


def group_identity(cfg: RunConfig, segments: list[Segment] | None = None,
                   warm_pairs: list[tuple[str, str]] | None = None,
                   glossary_path: Path | None = None) -> dict[str, str | None]:
    """What a run's group compares, hashed: the stream as loaded (``stream``: the first ``data.segments`` of the split,
    sources and references), the model's files (``model``: ``simpe.fingerprint.model_digest``), the warm-start
    memory's pairs (``memory``; None without --warm-start) and the glossary file's content (``glossary``:
    ``simpe.filehash.file_hash``; None without ``data.glossary``), and their short ``digest`` in the group's name
    (``simpe.rundir.layout.group_digest``): runs with another glossary, or none, land in another group (their term
    figures are not comparable; a run without a glossary keeps the group it had before glossaries). A translator's
    ``simpe serve`` run loads the same stream, so it lands beside the simulated runs of the same segments.
    ``segments``/``warm_pairs``/``glossary_path``: as the loop has read them (else read here, the stream once per
    process)."""
    from simpe.fingerprint import model_digest

    if segments is None:
        key = json.dumps([cfg.data.name, cfg.data.params, cfg.data.split, cfg.data.segments, cfg.data.skip_empty],
                         sort_keys=True, default=str)
        if key not in _STREAM_DIGESTS:
            _STREAM_DIGESTS[key] = stream_hash(load_stream(cfg)[1])[:16]
        stream = _STREAM_DIGESTS[key]
    else:
        stream = stream_hash(segments)[:16]
    memory = None
    if cfg.warm_start.path:
        if warm_pairs is None:
            from simpe.datasets.parallel import read_memory

            dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
            warm_pairs = read_memory(cfg.warm_start.path, getattr(dataset, "src_lang", "en"),
                                     getattr(dataset, "tgt_lang", cfg.metrics.lang))
        memory = pairs_hash(warm_pairs)[:16]
    glossary = None
    if cfg.data.glossary is not None:
        if glossary_path is None:
            dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
            glossary_path = resolve_glossary(cfg.data.glossary, dataset)
        glossary = file_hash(Path(glossary_path))
    model = model_digest(cfg.model.path)
    languages = pair_text(stream_pair(cfg))  # None for en -> de (simpe.datasets.languages)
    return {"digest": layout.group_digest(stream, model, memory, glossary, languages), "stream": stream, "model": model,
            "memory": memory, "glossary": glossary, "languages": languages}


def run_path(cfg: RunConfig, identity: dict[str, str | None] | None = None) -> Path:
    """The run's folder: ``<runs_dir>/<dataset>-<split>--<model>--<N>seg--<digest>/<adapter>`` (``identity``: the
    run's ``group_identity`` where the caller has it, else computed here)."""
    model = model_name(cfg.model.path) if cfg.model.path else DEFAULT_MODEL.name
    warm = re.sub(r"[^A-Za-z0-9._=+,@-]", "_", Path(cfg.warm_start.path).stem).lstrip(".-") or "memory" if cfg.warm_start.path else None
    digest = (identity or group_identity(cfg))["digest"]
    path = layout.run_path(cfg.runs_dir, cfg.data.name, cfg.data.split, model, cfg.data.segments, cfg.adapter, cfg.protocol.name,
                           warm, digest)
    if not layout.inside(path, cfg.runs_dir) or Path(path).resolve() == Path(cfg.runs_dir).resolve():
        raise ConfigError(f"the run folder {path} would lie outside the runs folder {cfg.runs_dir}; check the names")
    return path


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
    phases: Phases  # the segment's clock, from its first phase to its record
    # the method's translating() context (tune-retrieve's tuned copy), entered by translate and closed by learn once
    # the correction is in, before the update; and what it yielded
    tuning: contextlib.ExitStack = dataclasses.field(default_factory=contextlib.ExitStack)
    tuned: Any = None
    terms: tuple[tuple[str, str], ...] = ()  # the glossary pairs its prompt says (data.glossary_prompt)

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
        check_languages(cfg, self.dataset)  # the stream's languages are the model's (simpe.datasets.languages)
        self.method = build_method(cfg.method.name, cfg.method.params, cfg.method.modifiers)
        self.warm_pairs, self.warm_method, self.warm_update = check_warm_start(cfg, self.languages())
        self.decoder = DECODERS.build(cfg.decoder.name, **cfg.decoder.params)
        self.glossary, terms = self.load_glossary()  # data.glossary: the term metrics, constrained_beam's terms
        self.protocol = protocol_for(cfg)  # how each segment's post-edit arrives (simpe.loop.protocols)
        # what the run's group compares
        self.identity = group_identity(cfg, self.segments, self.warm_pairs, self.glossary.path if self.glossary else None)
        self.path = run_path(cfg, self.identity)
        self.probe = probe_set(cfg, self.dataset, self.segments) if cfg.snapshots.every and cfg.snapshots.ranking else []
        self.forgetting = forgetting_set(cfg, self.dataset)
        self.probes = Probes(cfg, self.probe, self.forgetting, len(self.segments))
        self.observers = [self.probes] if cfg.snapshots.every else []  # called after each recorded segment
        if cfg.snapshots.every and cfg.snapshots.ranking:
            ranking.check(cfg.ranking)
        # the model's family and its settings (None: a hub id not in the cache, checked when it loads)
        self.family = model_family(cfg.model.path, cfg.model.family, cfg.model.family_settings())
        if self.family is not None:
            self.method.check_family(self.family)
            self.check_glossary_prompt(self.family)
        resolve_device(cfg.device)  # --device cuda without a GPU
        # truecaser, stopwords, vocabularies (novel_vocab=train: the dataset's), SentencePiece model
        self.scorer = OnlineScorer(cfg.metrics, model_folder(cfg.model.path), train_vocab=self.dataset.train_vocab(cfg.metrics.lang),
                                   terms=terms)
        self.comet = None
        if cfg.comet:  # loaded now, not after the stream: a bad --comet must not cost a run
            from simpe.metrics.comet import CometScorer

            self.comet = CometScorer(cfg.comet, device=str(resolve_device(cfg.device)))
        self.loaded: Any = None
        self.truncated = 0  # segments cut to the model's maximum length
        self.own_sentences: dict[tuple[str, int], list[tuple[str, str]]] = {}  # (split, n) -> pairs (sentences)

    def load_glossary(self) -> tuple[Glossary | None, TermCounter | None]:
        """The run's glossary (``data.glossary``: a file, or ``dataset`` for the dataset's own) checked against the
        stream's languages, and its term counter; a decoder that places terms (``Decoder.takes_glossary``) gets its
        pairs, and is refused without one. (None, None) without a glossary. Every refusal is one line, before the model
        loads (``simpe.terms.glossary``)."""
        cfg = self.cfg
        if cfg.data.glossary is None:
            if cfg.data.glossary_prompt:
                raise ConfigError("data.glossary_prompt says a glossary's terms in a causal LM's prompt, but the run has no "
                                  "glossary: give --glossary FILE, or --glossary dataset for the dataset's own")
            if self.decoder.takes_glossary:
                raise ConfigError(f"decoder {cfg.decoder.name!r} puts a glossary's terms into its output, but the run has no "
                                  "glossary: give --glossary FILE, or --glossary dataset for the dataset's own")
            return None, None
        glossary = load_glossary(resolve_glossary(cfg.data.glossary, self.dataset), *self.languages())
        if self.decoder.takes_glossary:
            self.decoder.use_glossary(glossary.pairs(), glossary.source_lang, glossary.target_lang)
        return glossary, glossary_counter(glossary, cfg.metrics.r_max_k, cfg.metrics.scope)

    def check_glossary_prompt(self, family: Any) -> None:
        """Refuse ``data.glossary_prompt`` for a family whose prompt cannot say the terms (one line): every family but
        a causal LM, and a causal LM whose ``model.prompt_template`` has no ``{terms}`` field."""
        if not self.cfg.data.glossary_prompt or family.takes_terms():
            return
        if family.name == "causal":
            raise ConfigError("data.glossary_prompt: model.prompt_template has no {terms} field to say the glossary's terms "
                              f"in ({self.cfg.model.prompt_template!r}); add one, or leave the template out")
        raise ConfigError(f"data.glossary_prompt says the glossary's terms in a causal LM's prompt; the {family.name} "
                          "family has no prompt (use --set decoder.name=constrained_beam to place the terms)")

    def prompt_terms(self, source: str) -> tuple[tuple[str, str], ...]:
        """The glossary pairs the prompt of ``source`` says (``data.glossary_prompt``): those constrained decoding would
        place (``TermMatcher.to_constrain``); none without the setting."""
        if not self.cfg.data.glossary_prompt:
            return ()
        matcher = self.scorer.terms.matcher
        return tuple(matcher.pairs[i] for i in matcher.to_constrain(matcher.source_tokens(source)))

    def check_run_dir(self, resume: bool, overwrite: bool, resume_anyway: bool = False) -> None:
        """Refuse, before the model loads, a run folder that cannot be written or resumed with these settings, or
        (without ``resume_anyway``) in another environment (``simpe.rundir.resume.check_resumable``)."""
        self.env_changes = check_resumable(self.path, self.cfg, resume, overwrite, resume_anyway,
                                           lambda: environment(resolve_device(self.cfg.device)))

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
            self.check_glossary_prompt(self.family)
        self.model, self.tokenizer = self.loaded.model, self.loaded.tokenizer
        set_dropout(self.model, cfg.update.dropout)
        self.method.attach(self.model, self.loaded.path, cfg.update)
        self.decoder.bind(self.tokenizer)
        self.timer = ModelTimer(self.model)
        self.warm_facts = self.warm_start() if self.warm_pairs else None
        self.method.prepare(self.context(), resume)
        # the base state a document boundary returns to (reset: document)
        self.base_state = self.method.state_dict() if cfg.reset == "document" else None

    def warm_start(self) -> dict[str, Any]:
        """Adapt on the translator's memory before the stream (``simpe.loop.warmstart.warm_start``)."""
        return warm_start(self.cfg, self.model, self.loaded, self.method, self.warm_pairs, self.warm_method, self.warm_update)

    def store_method(self) -> Any:
        """The method whose state the run's store holds: a warm-started baseline's is the warm start's."""
        return self.warm_method if self.warm_method is not None else self.method

    def context(self) -> Context:
        """What the method may use beyond the post-edits (``Method.prepare``): the family's encoding, sentences of the
        dataset's train or dev split (``sentences``), and fixed steps of the shared update (``Tuner``)."""
        family, tokenizer, device = self.loaded.family, self.tokenizer, self.loaded.device
        return Context(encode=lambda source, reference: family.encode_pair(tokenizer, source, reference, device),
                       sentences=self.sentences, tune=Tuner(self.model, self.cfg.update, on_backward=self.timer.add).tune, lr=self.cfg.update.lr,
                       read_pairs=self.read_pairs)

    def read_pairs(self, path: str) -> list[tuple[str, str]]:
        """A translation memory file's pairs (``simpe.datasets.parallel.read_memory``) in the run's languages."""
        from simpe.datasets.parallel import read_memory

        return read_memory(path, *self.languages())

    def languages(self) -> tuple[str, str]:
        """The (source, target) language codes of a memory file: the dataset's where it names them, else en -> metrics.lang."""
        return (getattr(self.dataset, "src_lang", "en"), getattr(self.dataset, "tgt_lang", self.cfg.metrics.lang))

    def sentences(self, split: str, n: int) -> list[tuple[str, str]]:
        """``simpe.loop.stream.method_sentences`` of this run (its stream and probes held out), read once."""
        if (split, n) not in self.own_sentences:
            held = {s.source for s in self.segments} | {s.source for s in self.forgetting} | {s.source for s in self.probe}
            self.own_sentences[(split, n)] = method_sentences(self.cfg, self.dataset, held, split, n)
        return self.own_sentences[(split, n)]

    def check_sentences(self) -> None:
        """Read, before the model loads, the sentences of the dataset the method's ``prepare`` will ask for on a new
        run (``Method.sentences_needed``: ewc's Fisher pairs, replay's training pool): a split the dataset lacks is
        refused now (DataError, one line), never replaced by another."""
        for split, n in self.method.sentences_needed():
            self.sentences(split, n)

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
        params, modifiers = (dict(made.params), [dict(m) for m in made.modifiers]) if made else warm_preset(self.cfg)
        return StoreMetadata(method=made.name if made else self.warm_method.name, method_params=params,
                             adapter=self.cfg.adapter, modifiers=modifiers or None,
                             base_model=self.loaded.name, base_model_path=str(self.cfg.model.path or ""),  # "": the demo model
                             dataset=self.cfg.data.name, split=self.cfg.data.split, segments=len(self.segments),
                             reset=self.cfg.reset, decoder=self.cfg.decoder.name, decoder_params=dict(self.cfg.decoder.params),
                             model_family=family.get("model_family"), model_config_sha256=family.get("model_config_sha256"),
                             model_settings=json.loads(family["model_settings"]) if "model_settings" in family else None)

    # ------------------------------------------------------------ one segment
    def step(self, index: int, seg: Segment, given: Correction | None = None) -> SegmentRecord:
        """One segment: translate with θ(index-1), take the translator's correction, score, update, record.

        ``given``: a person's correction (``simpe serve``), else the run's simulated protocol makes one. ``simpe serve``
        calls the two halves itself (``translate`` shows the hypothesis, ``learn`` takes the submission).
        """
        return self.learn(self.translate(index, seg), given)

    def translate(self, index: int, seg: Segment) -> Draft:
        """The first half of ``step``: segment ``index``'s hypothesis with the current parameters θ(index-1).

        ``seg.reference`` is tokenised here for the update but never reaches the decoder.
        """
        phases = Phases(self.timer)
        with phases("prepare"):  # in-context methods: earlier post-edits only (reference i is not among them)
            examples = self.method.examples(seg.source)
            terms = self.prompt_terms(seg.source)
            pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, seg.reference, self.loaded.device, examples,
                                                  terms=terms)
        tuning = contextlib.ExitStack()  # tune-retrieve's tuned copy lives until the correction is in (Draft.tuning)
        with phases("translate"), contextlib.ExitStack() as failing:
            failing.callback(tuning.close)
            tuned = tuning.enter_context(self.method.translating(seg.source))
            with torch.inference_mode():
                result = self.decoder.decode(self.model, pair.input_ids, index=index, source=seg.source)
            failing.pop_all()  # decoded: the tuned copy stays open for learn
        best = list(result.hypotheses[0].tokens) if result.hypotheses else []
        hypothesis = self.tokenizer.decode(best, skip_special_tokens=True)
        return Draft(index, seg, examples, pair, result, best, hypothesis, phases, tuning, tuned, terms)

    def learn(self, draft: Draft, given: Correction | None = None) -> SegmentRecord:
        """The second half of ``step``: correct, score, update, record (the parameters have not changed since
        ``translate`` made ``draft``)."""
        phases, protocol = draft.phases, self.protocol if given is None else Served(given)
        with draft.tuning, phases("interact"):  # the tuned copy (tune-retrieve) completes the sessions, then resets
            correction = protocol.correct(self, draft)
        with phases("prepare"):
            draft = self.corrected(draft, correction.post_edit)
        with phases("score"):
            scored = self.score(draft, correction)
        with phases("update"):
            # reference i is seen only here; the hypothesis it corrects, for a method that prefers one to the other
            upd = update(self.model, self.method, draft.pair, self.cfg.update, hypothesis=draft.hypothesis)
            self.method.after_segment(draft.pair)  # knn stores the post-edit, icl remembers the pair
        return self.record(draft, correction, scored, upd)

    def corrected(self, draft: Draft, post_edit: str) -> Draft:
        """``draft`` with ``post_edit`` as its reference (a person's post-edit differs from the stream's)."""
        if post_edit == draft.segment.reference:
            return draft
        seg = dataclasses.replace(draft.segment, reference=post_edit)
        pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, post_edit, self.loaded.device, draft.examples,
                                              terms=draft.terms)
        return dataclasses.replace(draft, segment=seg, pair=pair)

    def pieces(self, ids: list[int]) -> list[str]:
        """The subword pieces of ``ids`` without special tokens (``metrics.subword: all``)."""
        special = set(self.tokenizer.all_special_ids)
        return self.tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])

    def score(self, draft: Draft, correction: Correction) -> dict[str, Any]:
        """The hypothesis scored against the post-edit by the run's streaming scorer (per segment and cumulative)."""
        pieces = self.cfg.metrics.subword == "all"
        return self.scorer.add(draft.hypothesis, draft.segment.reference, self.pieces(draft.best) if pieces else None,
                               self.pieces(draft.pair.labels[0].tolist()) if pieces else None,
                               doc_id=draft.segment.doc_id, effort=effort_of(correction), source=draft.segment.source)

    def record(self, draft: Draft, correction: Correction, scored: dict[str, Any], upd: dict[str, Any]) -> SegmentRecord:
        """The segment's record (one line of segments.jsonl)."""
        index, seg, pair, examples, result = draft.index, draft.segment, draft.pair, draft.examples, draft.result
        if upd["skipped"]:
            logger.warning("segment %d: update skipped (%s)", index, upd["skipped"])
        backward = upd.pop("seconds_backward")
        if draft.tuned:
            upd["tune"] = draft.tuned
        seconds = draft.phases.seconds
        record = SegmentRecord(
            index=index, doc_id=seg.doc_id, seg_id=seg.seg_id, source=seg.source, reference=seg.reference,
            hypothesis=draft.hypothesis, mt=seg.mt, examples=len(examples) if examples else None,
            info=dict(seg.info) if seg.info else None, hyp_score=result.hypotheses[0].score if result.hypotheses else None,
            **scored, update=upd,
            # phases of the loop; *_model: time inside model forward passes (ModelTimer), backward: inside autograd
            seconds={"prepare": seconds["prepare"], "translate": seconds["translate"], "score": seconds["score"],
                     "update": seconds["update"], "translate_model": seconds["translate_model"],
                     "update_model": seconds["update_model"], "backward": backward},
        )
        placed = result.info or {}
        if "terms" in placed and "dropped" in placed:  # a decoder that places glossary terms (constrained_beam)
            record.constrained = {"terms": list(placed["terms"]), "dropped": list(placed["dropped"])}
        if correction.effort is not None:
            record.seconds.update({"interact": seconds["interact"], "interact_model": seconds["interact_model"]})
            record.effort = {level: e.to_dict() for level, e in correction.effort.items()}
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
        """The snapshot after ``segments_done`` segments, with the current parameters (``simpe.loop.probes``)."""
        return self.probes.take(self.model, self.loaded, self.decoder, self.method.adapts(), segments_done)

    def after_segment(self, rundir: RunDir, done: int) -> None:
        """What follows a recorded segment: the observers (the probes' snapshot when one is due), then a checkpoint
        when one is due. An observer reads the model; it never changes it or the segment's record."""
        for observer in self.observers:
            observer.after_segment(self, rundir, done)
        if done % self.cfg.checkpoint_every == 0 and done < len(self.segments):
            rundir.save_checkpoint(self.checkpoint_state(done))

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
                    self.after_segment(rundir, index + 1)
                    if bar is not None:
                        bar.set_postfix_str(running_text(record.cumulative), refresh=False)
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
            self.probes.after_resume(self.path / layout.SNAPSHOTS_FILE, self.method.adapts())
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
                              "group": self.identity, "code": run_code(self.cfg.to_dict())})
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
        logger.info("%s: %s, %d adapted parameters (%.1f kB per user)", self.cfg.adapter, running_text(summary["corpus"], full=True),
                    summary["adapted_parameters"], summary["store_bytes"] / 1000)

    def _progress(self, start: int):
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=len(self.segments), initial=start, desc=self.cfg.adapter, unit="seg", dynamic_ncols=True, leave=True)

    def summary(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The run's summary (``simpe.loop.summary.run_summary``; a served run adds the person's figures)."""
        return run_summary(self, records)


def check_runs(configs: list[RunConfig], resume: bool = False, overwrite: bool = False, resume_anyway: bool = False,
               progress: bool = True, folders: bool = True) -> list[Loop]:
    """Every run of a list checked as a whole before the model loads (``simpe simulate --preset a b c``): its settings
    and inputs (``Loop``), its run folder (unless ``folders`` is False: the caller checks them its own way), and on a
    new run the dataset's sentences its method reads (``Loop.check_sentences``). The first refusal is raised as one
    line naming the preset (when there are several); returns the loops, in order."""
    loops = []
    for cfg in configs:
        try:
            loop = Loop(cfg, progress=progress)
            if folders:
                loop.check_run_dir(resume or resume_anyway, overwrite, resume_anyway)
            if not (resume or resume_anyway) or not (loop.path / layout.STATE_DIR / layout.CHECKPOINT_FILE).exists():
                loop.check_sentences()
        except SimpeError as err:
            if len(configs) == 1:
                raise
            raise type(err)(f"preset {cfg.adapter}: {err}") from None
        loops.append(loop)
    return loops


def simulate(configs: list[RunConfig], resume: bool = False, overwrite: bool = False, resume_anyway: bool = False,
             progress: bool = True, on_done: Callable[[Path], None] | None = None) -> list[Path]:
    """Run every config in turn (``simpe.config.files.run_configs``: the presets on the same stream); return the run
    directories. Every config is checked (``check_runs``) before the first run starts."""
    paths = []
    loops = check_runs(configs, resume=resume, overwrite=overwrite, resume_anyway=resume_anyway, progress=progress)
    while loops:
        loop = loops.pop(0)  # run, then let go of (its model is freed before the next one loads)
        path = loop.run(resume=resume, overwrite=overwrite, resume_anyway=resume_anyway)
        loop.timer.remove()
        paths.append(path)
        if on_done:
            on_done(path)
    return paths
