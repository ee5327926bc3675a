"""A run over the stream: the model loaded, the method attached, each segment stepped, checkpoints, resume, the end.

For segment i of the stream: translate the source with the current parameters θ(i-1),
score the output against the reference (the post-edit), then update the model on
(source_i, reference_i), then log (``simpe.loop.segment``). The hypothesis of segment i is always produced before
the model sees reference i. Every N segments a ranking snapshot may be taken on a fixed
probe set. Everything a user can get wrong is checked before the model is loaded (``simpe.loop.plan``); then the
method is attached with the update settings and the decoder is bound to the tokenizer. ``simpe.rundir`` writes the
files. With ``reset: document`` the adapted state returns to the base model's before the first
segment of every document (a change of ``doc_id``), as adaptive translation servers work
per project. At the end the run writes its final adapted state as the method's per-user
store (``store.safetensors``; ``simpe export-store`` hands it out, ``simpe translate
--store`` applies it). A run of a lockstep method goes through ``simpe.loop.group`` (a group of one alone).

The loop sees methods, decoders and metrics only through their base classes.
"""
from __future__ import annotations

import gc
import json
import logging
from pathlib import Path
from typing import Any, Callable

import torch

from simpe import log
from simpe.config.tree import RunConfig
from simpe.datasets import stream_hash
from simpe.errors import ModelError, SimpeError
from simpe.fingerprint import run_code
from simpe.loop.draft import Draft  # noqa: F401 - simpe.loop.run.Draft, as before
from simpe.loop.malloc import reuse_freed_memory
from simpe.loop.phases import ModelTimer
from simpe.loop.plan import RunPlan, group_identity, run_path  # noqa: F401 - as before
from simpe.loop.segment import SegmentSteps
from simpe.loop.summary import run_summary
from simpe.loop.update import Tuner, set_dropout
from simpe.loop.warmstart import warm_preset, warm_start
from simpe.methods.base import Context
from simpe.metrics.online import running_text
from simpe.model import load_model
from simpe.rundir import layout
from simpe.rundir.env import environment
from simpe.rundir.writer import RunDir
from simpe.storefile import StoreMetadata

logger = logging.getLogger(__name__)


class Loop(RunPlan, SegmentSteps):
    """One run: a model with a method attached, a decoder, a scorer and a run directory.

    The constructor checks every setting and input without loading the model (``RunPlan``); ``run``
    checks the run folder (writable, not locked, resumable with the same settings), then
    loads the model, then writes. A segment's steps are ``SegmentSteps``'.
    """

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
        self.check_run_dir(resume or resume_anyway, overwrite, resume_anyway)
        from simpe.loop.group import Group, steps_in_lockstep

        if steps_in_lockstep(self):  # a group of one: the records of this run in any lockstep group
            Group([self]).run(resume=resume, overwrite=overwrite, resume_anyway=resume_anyway, stop_after=stop_after)
            return self.path
        return self.run_alone(resume, overwrite, stop_after, resume_anyway)

    def run_alone(self, resume: bool = False, overwrite: bool = False, stop_after: int | None = None,
                  resume_anyway: bool = False) -> Path:
        """``run`` without a lockstep group: this run's own model through the stream (a method or a model the run axis
        does not take; the run folder checked already)."""
        cfg = self.cfg
        resume = resume or resume_anyway
        self.load(resume=resume and (self.path / layout.STATE_DIR / layout.CHECKPOINT_FILE).exists())
        with RunDir(self.path) as rundir:
            rundir.open(resume=resume, overwrite=overwrite)
            start, records = self.restore(rundir, resume)
            log.add_file(rundir.log_file)
            self.log_start()
            bar = self.progress_bar(start)
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
                self.finish(rundir, records)
            finally:
                if frozen:
                    gc.unfreeze()
                if bar is not None:
                    bar.close()
                log.remove_file()
        return self.path

    def restore(self, rundir: RunDir, resume: bool) -> tuple[int, list[dict[str, Any]]]:
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

    def log_start(self) -> None:
        """The run's first lines in its log: method, trainable tensors, segments, decoder, device."""
        cfg = self.cfg
        logger.info("run %s: method %s with %d trainable tensors (%d parameters), %d segments, decoder %s %s, device %s",
                    cfg.adapter, cfg.method.name, len(self.method.trainable()),
                    sum(p.numel() for p in self.method.trainable().values()), len(self.segments), cfg.decoder.name,
                    cfg.decoder.params, self.loaded.device)
        logger.debug("method facts: %s", self.method.describe())

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

    def finish(self, rundir: RunDir, records: list[dict[str, Any]]) -> None:
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

    def progress_bar(self, start: int, position: int | None = None):
        """The run's progress bar from segment ``start`` (None without ``progress``); ``position``: its line among a
        lockstep group's bars."""
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=len(self.segments), initial=start, desc=self.cfg.adapter, unit="seg", dynamic_ncols=True, leave=True,
                    position=position)

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
             progress: bool = True, on_done: Callable[[Path], None] | None = None, lockstep: bool = True) -> list[Path]:
    """Run every config (``simpe.config.files.run_configs``: the presets on the same stream); return the run
    directories. Every config is checked (``check_runs``) before the first run starts. With ``lockstep`` the runs that
    may share their passes run as one group each (``simpe.loop.group``: the same records as each run alone), the
    others one after another; the groups are said on the console."""
    from simpe.loop.group import Group, describe_groups, fit_groups, plan_groups

    loops = check_runs(configs, resume=resume, overwrite=overwrite, resume_anyway=resume_anyway, progress=progress)
    groups = fit_groups(plan_groups(loops, lockstep))
    for line in describe_groups(groups, lockstep) if len(loops) > 1 else []:  # one run: nothing to say
        logger.info("%s", line)
    paths: list[Path] = []
    while groups:
        group = groups.pop(0)  # run, then let go of (their models are freed before the next group loads)
        if len(group) == 1:
            loop = group[0]
            done = [loop.run(resume=resume, overwrite=overwrite, resume_anyway=resume_anyway)]
        else:
            done = Group(group).run(resume=resume, overwrite=overwrite, resume_anyway=resume_anyway)
        for loop in group:
            if getattr(loop, "timer", None) is not None:
                loop.timer.remove()
        for path in done:
            paths.append(path)
            if on_done:
                on_done(path)
        del group, done
    return paths
