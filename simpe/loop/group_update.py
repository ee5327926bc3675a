"""The shared update of a lockstep group: every run's repetitions on one pair, one forward and one backward pass each.

``simpe.loop.update.update`` adapts one run on one pair: repeat (forward, perplexity rule, backward, clipping, the
method's step, the rollback of a non-finite step) until the pair's perplexity is at most ``ppl_threshold``, at most
``max_repeats`` times. Here the runs of a group do the same together on the stacked model
(``simpe.models.stacked``): each repetition is one forward pass for every run still repeating, and one backward pass
of the sum of the losses of the runs that step, whose gradient for each run's weights is its own loss's (each run's
rows read only its own weights, and the sum's gradient is 1 for every loss). Every decision stays the run's own, per
run and per tensor, with ``update``'s own code: the perplexity rule (a run that has met its threshold, or used its
repetitions, takes no further step while the others repeat), the clipping and the method's step
(``simpe.loop.update.clip_and_step`` on the run's own weights, with its undo buffers and float32 masters), the
rollback of a non-finite step and the record. After a run's step its new weights are written into the stack
(``StackedModel.write``) before the next pass reads them.

A run's record is the one ``update`` writes for it alone, bit for bit (at one torch thread: tests/unit/test_group.py);
its ``seconds_backward`` is its share of the group's backward passes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from simpe.config.tree import UpdateConfig
from simpe.loop.masters import MasterCopies, as_float32, master_copies
from simpe.loop.undo import Backup, backup_for
from simpe.loop.update import _ppl, clip_and_step, note_loss, note_rollback, update
from simpe.methods.base import Method
from simpe.model import Pair, teacher_forced_logits
from simpe.models.stacked import StackedModel


@dataclass
class RunUpdate:
    """One run's side of a group update: its method, settings, trainable tensors, undo state and record."""

    index: int  # the run's block in the stack
    method: Method
    cfg: UpdateConfig
    model: Any  # the run's own model (whose weights its step changes)
    names: list[str] = field(default_factory=list)
    params: list[torch.Tensor] = field(default_factory=list)
    backup: Backup | None = None
    low: list[torch.Tensor] = field(default_factory=list)
    masters: MasterCopies | None = None
    record: dict[str, Any] = field(default_factory=dict)
    repeating: bool = True  # another forward pass is due for this run
    backward: float = 0.0

    def __post_init__(self) -> None:
        trainable = self.method.trainable()
        self.names, self.params = list(trainable.keys()), list(trainable.values())
        self.record = {"loss_before": None, "ppl_before": None, "loss_after": None, "ppl_after": None,
                       "repetitions": 0, "skipped": None}
        self.backup = backup_for(self.method)
        self.low = MasterCopies.needed(self.params) if self.cfg.master_copies else []
        self.masters = master_copies(self.method) if self.low else None

    def may_step(self, repeat: int) -> bool:
        return bool(self.params) and repeat < self.cfg.max_repeats

    def undo(self) -> None:
        """``update``'s undo of the last step (on the masters where there are some)."""
        if self.masters is None:
            self.backup.restore()
            return
        lows = self.masters.enter(self.low)
        self.backup.restore()
        self.masters.leave(self.low, lows)


def _losses(logits: torch.Tensor, pair: Pair, label_smoothing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``simpe.loop.update._pair_losses`` of one run's (1, tgt_len, vocab) block of the stacked logits."""
    flat = logits.view(-1, logits.size(-1)).float()  # (tgt_len, vocab)
    nll = torch.nn.functional.cross_entropy(flat, pair.labels.view(-1))
    if label_smoothing > 0:
        return torch.nn.functional.cross_entropy(flat, pair.labels.view(-1), label_smoothing=label_smoothing), nll
    return nll, nll


def _step(run: RunUpdate, grads: list[torch.Tensor | None]) -> None:
    """``update``'s step for one run on its gradients (its own order of trainable tensors; None: no gradient)."""
    record, cfg, method = run.record, run.cfg, run.method
    present = [i for i, g in enumerate(grads) if g is not None]
    if not present:
        run.repeating = False
        return
    ns, ps, gs = [run.names[i] for i in present], [run.params[i] for i in present], [grads[i] for i in present]
    with torch.no_grad():
        if run.masters is not None:
            gs = as_float32(gs)
        if type(method).penalty_gradient is not Method.penalty_gradient:  # ewc
            penalty = method.penalty_gradient(dict(zip(ns, gs)))
            if penalty is not None:
                record["penalty"] = penalty
                if not math.isfinite(penalty):
                    record["skipped"] = "non-finite penalty"
                    run.repeating = False
                    return
        if run.masters is None:
            bad = clip_and_step(method, ns, ps, gs, cfg.lr, cfg.clip_norm, run.backup)
        else:
            lows = run.masters.enter(run.low)
            try:
                bad = clip_and_step(method, ns, ps, gs, cfg.lr, cfg.clip_norm, run.backup)
            finally:
                run.masters.leave(run.low, lows)
            run.backup.finite = run.backup.finite and not any(p.dtype == torch.float16 for p in run.low)
    if bad is not None:
        record["skipped"] = f"non-finite gradient in {bad}"
        run.repeating = False
        return
    record["repetitions"] += 1
    bad = run.backup.first_non_finite()
    if bad is not None:
        run.undo()
        note_rollback(record, f"non-finite weights in {bad}")
        run.repeating = False


def shared_pass(device: torch.device) -> bool:
    """Whether a group's update takes one stacked pass for all runs (``update_group``), or each run its own.

    On a GPU the update is bound by the launches of its many small kernels, which one stacked pass pays once for all
    runs. On the CPU it is bound by arithmetic and the weights' memory traffic (tests and docs/lockstep.md give the
    figures: a stacked pass of make simulate's six presets cost 2.4x their own passes), and a run's own backward
    stops where its trainable tensors do (bias: at the output layer), where a stacked one goes through every run's
    rows; there each run takes ``simpe.loop.update.update`` on its own model, bit for bit as a run alone always did.
    """
    return device.type != "cpu"


def update_group(stack: StackedModel, runs: list[RunUpdate], pair: Pair, shared: bool | None = None) -> list[dict[str, Any]]:
    """Adapt every run of ``runs`` on ``pair``; each run's record as ``simpe.loop.update.update`` gives it.

    ``runs``: the runs that learn from this segment (a run resumed later than the others sits out the segments it has
    already done: its block of the stack is computed and never read). ``shared``: one stacked pass per repetition for
    all runs, or each run's own update on its own model, its new weights then written into the stack (default:
    ``shared_pass`` of the stack's device).
    """
    if not runs:
        return []
    if shared is None:
        shared = shared_pass(next(iter(stack.names.values())).device)
    if not shared:
        out = []
        for run in runs:
            record = update(run.model, run.method, pair, run.cfg)
            stack.write(run.index, run.model, run.names)
            out.append(record)
        return out
    count = stack.runs
    input_ids = pair.input_ids.expand(count, -1)  # (runs, src_len)
    labels = pair.labels.expand(count, -1)  # (runs, tgt_len)
    for repeat in range(max(run.cfg.max_repeats for run in runs) + 1):
        active = [run for run in runs if run.repeating]
        if not active:
            break
        stepping = [run for run in active if run.may_step(repeat)]
        needed = stack.parameters_of([name for run in stepping for name in run.names])
        for param in needed:
            param.requires_grad_(True)
        try:
            with torch.set_grad_enabled(bool(stepping)):
                logits = teacher_forced_logits(stack.model, input_ids, labels)  # (runs, tgt_len, vocab)
                losses = {}
                for run in active:
                    loss, nll_tensor = _losses(logits[run.index:run.index + 1], pair, run.cfg.label_smoothing)
                    nll = float(nll_tensor.detach())
                    record = run.record
                    if record["repetitions"] and not math.isfinite(nll):  # the last step broke the model: undo it
                        run.undo()
                        stack.write(run.index, run.model, run.names)
                        note_rollback(record, "non-finite loss")
                        run.repeating = False
                        continue
                    note_loss(record, repeat == 0, nll)
                    if not run.may_step(repeat) or _ppl(nll) <= run.cfg.ppl_threshold:
                        run.repeating = False
                        continue
                    plain = run.cfg.label_smoothing == 0
                    if not math.isfinite(nll if plain else float(loss.detach())):
                        record["skipped"] = "non-finite loss"
                        run.repeating = False
                        continue
                    losses[run.index] = loss
            if not losses:
                continue
            learning = [run for run in active if run.index in losses]
            total = None
            for run in learning:  # the sum's gradient is each loss's own
                total = losses[run.index] if total is None else total + losses[run.index]
            start = time.perf_counter()
            grads = torch.autograd.grad(total, needed, allow_unused=True)
            seconds = time.perf_counter() - start
            by_param = {id(param): grad for param, grad in zip(needed, grads)}
            for run in learning:
                run.backward += seconds / len(learning)
                grads_of = [by_param.get(id(stack.names[name])) for name in run.names]
                # contiguous: a gradient summed from several readers (a tied embedding) takes the layout of the first
                # to arrive, which differs with the group; a norm reduces in memory order (the same values, other bits)
                _step(run, [None if g is None else g[stack.row(name, run.index)].contiguous()
                            for name, g in zip(run.names, grads_of)])
                stack.write(run.index, run.model, run.names)
        finally:
            for param in needed:
                param.requires_grad_(False)
    out = []
    for run in runs:
        run.record["seconds_backward"] = run.backward
        out.append(run.record)
    return out
