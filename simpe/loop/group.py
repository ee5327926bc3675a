"""A lockstep group: runs of one model on one stream advancing through it together, one pass for all.

The online loop cannot batch segments (segment i+1 is translated by the model that learned from segment i), but a
comparison's runs can be batched: ``make simulate``'s presets, a sweep's settings. Their steps have the same shapes,
so a group holds them as one ``StackedModel`` (``simpe.models.stacked``: each learnable tensor with a leading run
axis) and, for every segment:

* translates it for every run in one beam search over the stacked model (each run's beams a block of rows, each run's
  search its own: ``beam_search_many(..., even=True)``);
* takes each run's correction, score and record with the run's own ``Loop`` (its scorer, records, store, snapshots,
  checkpoints, resume point and progress bar);
* updates every run together (``simpe.loop.group_update``: one forward and one backward pass per repetition, each
  run's perplexity rule, clipping, step and rollback its own).

Which runs may go together (``lockstep_key``, ``why_alone``): the same model (folder, dtype, family settings, device),
stream, decoder (a beam search) with its length rule, and protocol (post-edit); methods whose update is the shared
one on the pair alone (``LOCKSTEP_METHODS``, with the ``ewc`` modifier): the others (knn, icl, tune-retrieve, lora,
replay, prefer) and the interactive protocol run alone as before. A run alone of a method that may go together runs as
a group of one, through the same code: its records are those of the same run in any group (bit for bit at one torch
thread, where each run's block of a batched product is the product a run alone computes; tests/integration/
test_lockstep.py compares the files).

Each run keeps its own random state (swapped in around its own work: its snapshots' samples), and a run that fails
leaves the group without stopping the others; the failures are raised together at the end.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import time
from pathlib import Path
from typing import Any, Callable

import torch

from simpe import log
from simpe.decoders.base import DecodeResult
from simpe.decoders.beam import _BeamBase
from simpe.decoders.incremental import decoding, encode
from simpe.loop.draft import Draft
from simpe.loop.group_update import RunUpdate, update_group
from simpe.loop.lockstep import lockstep_key, why_alone
from simpe.loop.phases import ModelTimer, Phases
from simpe.metrics.online import running_text
from simpe.models.stacked import StackedModel, stackable
from simpe.rundir import layout
from simpe.rundir.writer import RunDir

logger = logging.getLogger(__name__)

def plan_groups(loops: list[Any], lockstep: bool = True) -> list[list[Any]]:
    """The loops in groups, in the order given: the runs that may go together in one group per key (``lockstep``),
    each other run a group of its own (run alone by its ``Loop``)."""
    groups: dict[str, list[Any]] = {}
    order: list[list[Any]] = []
    for loop in loops:
        if not lockstep or why_alone(loop.cfg) is not None:
            order.append([loop])
            continue
        key = lockstep_key(loop.cfg, loop.identity)
        if key not in groups:
            groups[key] = []
            order.append(groups[key])
        groups[key].append(loop)
    return order


def fit_groups(groups: list[list[Any]], budget: int | None = None) -> list[list[Any]]:
    """``groups`` with each lockstep group too large for its device's memory (``budget`` bytes; default: what the
    device has available) split into groups that fit (``simpe.loop.dryrun.group_parts``), saying so."""
    from simpe.loop.dryrun import available, estimate
    from simpe.loop.lockstep import group_parts
    from simpe.model import resolve_device

    out: list[list[Any]] = []
    for group in groups:
        if len(group) < 2:
            out.append(group)
            continue
        device = resolve_device(group[0].cfg.device).type
        room = available(device) if budget is None else budget
        parts = group_parts([estimate(loop.cfg, device) for loop in group], room)
        size = -(-len(group) // parts)
        if parts > 1:
            logger.warning("the lockstep group of %d runs needs more than the %.1f GiB available on %s: split into %d "
                           "groups of at most %d", len(group), room / 1024 ** 3, device, parts, size)
        out += [group[i:i + size] for i in range(0, len(group), size)]
    return out


def describe_groups(groups: list[list[Any]], lockstep: bool = True) -> list[str]:
    """Console lines saying which runs share their passes and which run alone, and why."""
    lines = []
    for group in groups:
        if len(group) > 1:
            lines.append(f"in lockstep (one pass for {len(group)} runs): {', '.join(loop.cfg.adapter for loop in group)}")
        elif not lockstep:
            lines.append(f"alone (--lockstep off): {group[0].cfg.adapter}")
        else:
            why = why_alone(group[0].cfg)
            lines.append(f"alone: {group[0].cfg.adapter}" + (f" ({why})" if why else " (no other run to share its passes)"))
    return lines


def steps_in_lockstep(loop: Any) -> bool:
    """Whether ``loop`` runs through the lockstep code (as a group of one when alone)."""
    return why_alone(loop.cfg) is None


class _RunSlot:
    """One run of a group: its loop, run folder, records, start, progress bar and random state."""

    def __init__(self, loop: Any, index: int) -> None:
        self.loop, self.index = loop, index
        self.rundir: RunDir | None = None
        self.records: list[dict[str, Any]] = []
        self.start = 0
        self.bar: Any = None
        self.rng: torch.Tensor | None = None
        self.error: BaseException | None = None
        self.done = False

    @contextlib.contextmanager
    def own_random_state(self):
        """The run's own torch random state (its snapshots' samples) and log file for the duration; the state is kept
        afterwards."""
        torch.set_rng_state(self.rng)
        try:
            with log.for_run(self.index):
                yield
        finally:
            self.rng = torch.get_rng_state()


class Group:
    """Runs in lockstep: ``run`` takes the loops (each checked already: ``check_runs``) through the stream together."""

    def __init__(self, loops: list[Any], shared_update: bool | None = None) -> None:
        self.slots = [_RunSlot(loop, i) for i, loop in enumerate(loops)]
        self.stack: StackedModel | None = None
        self.shared_update = shared_update  # one stacked update pass for all (default: on a GPU; update_group)

    @property
    def names(self) -> list[str]:
        return [slot.loop.cfg.adapter for slot in self.slots]

    def load(self, resume: list[bool]) -> str | None:
        """Load every run's model (its method attached, prepared or restored), then stack their weights; or, where the
        model holds a tensor the run axis does not stack (a family's own norm: T5's, a causal LM's RMSNorm), why not,
        with only the first run loaded."""
        for slot in self.slots:
            loop = slot.loop
            checkpoint = (loop.path / layout.STATE_DIR / layout.CHECKPOINT_FILE).exists()
            loop.load(resume=resume[slot.index] and checkpoint)
            slot.rng = torch.get_rng_state()
            if slot.index == 0:
                why = stackable(loop.model, loop.loaded.family.frozen_markers)
                if why is not None:
                    return why
        family = self.slots[0].loop.loaded.family
        # a tensor no run's method changes is read by all from one base (simpe.models.stacked.Versions)
        self.stack = StackedModel([slot.loop.model for slot in self.slots], family.frozen_markers,
                                  trainable=[set(slot.loop.method.trainable()) for slot in self.slots])
        self.timer = ModelTimer(self.stack.model)
        return None

    def write_all(self, slot: _RunSlot) -> None:
        """The run's current weights into the stack (after a resume, a reset to the base state)."""
        self.stack.write(slot.index, slot.loop.model)

    def run(self, resume: bool | list[bool] = False, overwrite: bool | list[bool] = False, resume_anyway: bool = False,
            progress_position: int = 0, stop_after: int | None = None,
            on_done: Callable[[Path], None] | None = None) -> list[Path]:
        """Run (or resume) every run of the group over the stream; return the run folders of the complete runs.
        ``resume``/``overwrite``: for all runs, or one each; ``stop_after``: stop before that segment without DONE
        (tests)."""
        count = len(self.slots)
        resumes = [bool(r) or resume_anyway for r in (resume if isinstance(resume, list) else [resume] * count)]
        overwrites = overwrite if isinstance(overwrite, list) else [overwrite] * count
        why = self.load(resumes)
        if why is not None:  # each run alone, as before lockstep
            logger.info("%s: each run alone (%s)", ", ".join(self.names), why)
            for slot in self.slots:
                try:
                    slot.loop.run_alone(resumes[slot.index], overwrites[slot.index], stop_after, resume_anyway)
                except Exception as err:  # noqa: BLE001 - one run's failure must not stop the others
                    self._fail(slot, err)
                    continue
                slot.done = (slot.loop.path / layout.DONE_FILE).exists()
                if on_done and slot.done:
                    on_done(slot.loop.path)
            self._raise_failures()
            return [slot.loop.path for slot in self.slots if slot.done]
        with contextlib.ExitStack() as stack:
            for slot in self.slots:
                slot.rundir = stack.enter_context(RunDir(slot.loop.path))
                slot.rundir.open(resume=resumes[slot.index], overwrite=overwrites[slot.index])
                with slot.own_random_state():
                    slot.start, slot.records = slot.loop.restore(slot.rundir, resumes[slot.index])
                self.write_all(slot)
                slot.bar = slot.loop.progress_bar(slot.start, position=progress_position + slot.index)
            log.add_files([slot.rundir.log_file for slot in self.slots])
            if len(self.slots) > 1:
                logger.debug("lockstep group of %d runs: %s (one pass for all)", len(self.slots), ", ".join(self.names))
            for slot in self.slots:
                with log.for_run(slot.index):
                    slot.loop.log_start()
            frozen = gc.get_freeze_count() == 0
            if frozen:
                gc.freeze()
            try:
                self._stream(stop_after)
            finally:
                if frozen:
                    gc.unfreeze()
                for slot in self.slots:
                    if slot.bar is not None:
                        slot.bar.close()
                log.remove_file()
        paths = [slot.loop.path for slot in self.slots if slot.done]
        if on_done:
            for path in paths:
                on_done(path)
        self._raise_failures()
        return paths

    def _raise_failures(self) -> None:
        """The runs' failures raised together (their first's type), once every other run has gone on."""
        failed = [slot for slot in self.slots if slot.error is not None]
        if failed:
            first = failed[0].error
            if len(failed) == 1 and len(self.slots) == 1:
                raise first
            raise type(first)("; ".join(f"{slot.loop.cfg.adapter}: {slot.error}" for slot in failed)) from first

    def _fail(self, slot: _RunSlot, err: BaseException) -> None:
        logger.error("run %s failed at a segment and leaves the group: %s", slot.loop.cfg.adapter, err)
        slot.error = err
        if slot.rundir is not None:  # as a run alone leaves its folder (RunDir.__exit__): none if nothing was logged
            log.remove_run_file(slot.index)
            slot.rundir.abandon()

    def _stream(self, stop_after: int | None) -> None:
        loops = [slot.loop for slot in self.slots]
        first = loops[0]
        total = len(first.segments)
        for index in range(min(slot.start for slot in self.slots), total):
            if stop_after is not None and index >= stop_after:
                return
            active = [slot for slot in self.slots if slot.error is None and slot.start <= index]
            if not active:
                break
            self._segment(index, active)
        for slot in self.slots:
            if slot.error is None and not slot.done:
                try:
                    with slot.own_random_state():
                        if slot.bar is not None:
                            slot.bar.close()
                            slot.bar = None
                        slot.loop.finish(slot.rundir, slot.records)
                    slot.done = True
                except Exception as err:  # noqa: BLE001 - one run's failure must not stop the others
                    self._fail(slot, err)

    def _segment(self, index: int, active: list[_RunSlot]) -> None:
        """One segment for the active runs: translate all, then each run's correction and score, then the update of
        all, then each run's record, observers and checkpoint."""
        first = active[0].loop
        seg = first.segments[index]
        shared = Phases(self.timer)  # the passes all runs share: their time is split evenly among the active runs
        resets = {}
        for slot in active:
            resets[slot.index] = slot.loop.begin_segment(index)
            if resets[slot.index]:
                self.write_all(slot)
        with shared("prepare"):
            pair = first.loaded.family.encode_pair(first.tokenizer, seg.source, seg.reference, first.loaded.device)
        with shared("translate"):
            results = self._translate(pair, index)
        drafts, corrections, scored = {}, {}, {}
        for slot in active:
            try:
                with slot.own_random_state():
                    loop = slot.loop
                    result = results[slot.index]
                    best = list(result.hypotheses[0].tokens) if result.hypotheses else []
                    hypothesis = loop.tokenizer.decode(best, skip_special_tokens=True)
                    draft = Draft(index, seg, [], pair, result, best, hypothesis, Phases(None))
                    with draft.phases("interact"):
                        correction = loop.protocol.correct(loop, draft)
                    with draft.phases("score"):
                        scored[slot.index] = loop.score(draft, correction)
                    drafts[slot.index], corrections[slot.index] = draft, correction
            except Exception as err:  # noqa: BLE001
                self._fail(slot, err)
        learning = [slot for slot in active if slot.index in drafts]
        updates = [RunUpdate(slot.index, slot.loop.method, slot.loop.cfg.update, slot.loop.model) for slot in learning]
        with shared("update"):
            records = update_group(self.stack, updates, pair, self.shared_update)
        share = 1.0 / max(1, len(learning))
        for slot, upd in zip(learning, records):
            try:
                with slot.own_random_state():
                    loop = slot.loop
                    draft = drafts[slot.index]
                    for name, seconds in shared.seconds.items():
                        draft.phases.seconds[name] = draft.phases.seconds.get(name, 0.0) + seconds * share
                    loop.method.after_segment(draft.pair)
                    record = loop.record(draft, corrections[slot.index], scored[slot.index], upd)
                    if loop.cfg.reset != "none":
                        record.reset = resets[slot.index]
                    slot.records.append(slot.rundir.append_segment(record))
                    loop.after_segment(slot.rundir, index + 1)
                    if slot.bar is not None:
                        slot.bar.set_postfix_str(running_text(record.cumulative), refresh=False)
                        slot.bar.update(1)
            except Exception as err:  # noqa: BLE001
                self._fail(slot, err)

    def _translate(self, pair: Any, index: int) -> list[DecodeResult]:
        """Every run's translation of the pair's source: one beam search over the stacked model."""
        decoder = self.slots[0].loop.decoder
        assert isinstance(decoder, _BeamBase), type(decoder)
        model = self.stack.model
        t0 = time.perf_counter()  # the encoder's pass counted, as a run alone's decode counts it
        with decoding(model):
            sources = encode(model, pair.input_ids, decoder.limit, runs=self.stack.runs)
            return decoder.decode_sources(model, sources, t0=t0, even=True)
