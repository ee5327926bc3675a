"""What a run is, checked before its model loads: its settings and inputs, its group and its folder.

Everything a user can get wrong (dataset, method, decoder, metric and ranking settings, the glossary, the warm-start
memory, the device) is checked here, in one line each, without loading the model (``RunPlan``). ``group_identity`` and
``run_path`` name a run's group and folder from its config alone: ``simpe serve export`` and ``simpe sweep`` read them
without building a run. ``simpe.loop.run.Loop`` is a plan that then loads the model and runs.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from simpe.config.tree import RunConfig
from simpe.datasets import DATASETS, Segment, stream_hash
from simpe.datasets.base import pairs_hash
from simpe.datasets.languages import check_languages, pair_text, stream_pair
from simpe.decoders import DECODERS
from simpe.errors import ConfigError
from simpe.filehash import file_hash
from simpe.loop.probes import Probes
from simpe.loop.protocols import protocol_for
from simpe.loop.stream import forgetting_set, load_stream, method_sentences, probe_set
from simpe.loop.warmstart import check_warm_start
from simpe.methods.compose import build_method
from simpe.metrics.online import OnlineScorer
from simpe.model import model_family, model_folder, model_name, resolve_device
from simpe.paths import DEFAULT_MODEL
from simpe.ranking import evaluate as ranking
from simpe.rundir import layout
from simpe.rundir.env import environment
from simpe.rundir.resume import check_resumable
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
        key = json.dumps([cfg.data.name, cfg.data.params, cfg.data.split, cfg.data.segments, cfg.data.skip_empty,
                          cfg.data.shuffle_documents], sort_keys=True, default=str)  # all that load_stream reads
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


class RunPlan:
    """One run's settings and inputs, checked as a whole without loading the model: the stream, the method, the
    decoder, the glossary, the protocol, the probes, the scorer (and COMET's, where asked), the group and the folder.
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

    def check_run_dir(self, resume: bool, overwrite: bool, resume_anyway: bool = False) -> None:
        """Refuse, before the model loads, a run folder that cannot be written or resumed with these settings, or
        (without ``resume_anyway``) in another environment (``simpe.rundir.resume.check_resumable``)."""
        self.env_changes = check_resumable(self.path, self.cfg, resume, overwrite, resume_anyway,
                                           lambda: environment(resolve_device(self.cfg.device)))

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
