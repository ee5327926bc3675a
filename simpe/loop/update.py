"""The online update shared by every method: plain SGD on one (source, reference) pair.

Simianer et al. (2019), section 4: batch of one pair, no dropout, no label smoothing (both settable),
gradient L2 norm clipped to ``clip_norm`` per tensor, repeated until the pair's
perplexity is <= ``ppl_threshold``, at most ``max_repeats`` times. A non-finite loss or
gradient skips the update (logged in the record) and the run goes on; a step that leaves a
trainable weight, or the loss measured after it, non-finite is rolled back (the weights are
restored bit for bit from a copy taken before the step) and ends the update. Which parameters
move is the method's business (``Method.select``), and so is the step itself
(``Method.step``: SGD, or ``lasso``'s constrained step); this module never touches others. How a step
is undone (``simpe.loop.undo.Backup``: spare buffers swapped in for SGD, copies of what a method's own step says it
changes) only this module uses: a method never sees it. The loop, not the update, then shows the
method the pair (``Method.after_segment``: ``knn`` stores it).

At bfloat16 or float16 (``model.dtype``) an SGD step of lr 0.01 is often smaller than half the spacing
of the weight's format and rounds away. With ``update.master_copies`` (the default) each adapted tensor
held at such a dtype has a float32 master copy (``simpe.loop.masters.MasterCopies``; only those tensors: a frozen weight
never gets one): the step, its clipping and its undo work on the master, and the weight the model
computes with gets the master's rounded value; the steps below the spacing add up in the master until
the weight moves. ``update.checkpointing`` recomputes each layer's activations in the backward pass
(``checkpoint_layers``) instead of keeping them: less memory for long segments on big models, about one
more forward pass of time.
"""
from __future__ import annotations

import dataclasses
import math
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from simpe.config.tree import UpdateConfig
from simpe.loop import update_graph
from simpe.loop.masters import MasterCopies, as_float32, master_copies
from simpe.loop.undo import FUSE_MIN, Backup, backup_for, in_place
from simpe.methods.base import Gradients, Method
from simpe.model import Pair, teacher_forced_logits


def _checkpointed(forward: Any, *args: Any, **kwargs: Any) -> Any:
    """``forward`` under activation checkpointing when a gradient is being recorded, plain otherwise (decoding)."""
    if torch.is_grad_enabled():
        from torch.utils.checkpoint import checkpoint

        return checkpoint(forward, *args, use_reentrant=False, **kwargs)
    return forward(*args, **kwargs)


def checkpoint_layers(model: Any) -> int:
    """Wrap every encoder and decoder layer of ``model`` (the lists holding the family's top layers) in activation
    checkpointing, once; return how many layers are wrapped.

    Not transformers' ``gradient_checkpointing_enable``: that acts only in train mode, where a model's own dropout
    rates (set at its construction, 0.1 in NLLB's config) would apply; this works in eval mode and only while a
    gradient is recorded (the update's forward), never in decoding. Non-reentrant checkpointing: the gradient
    reaches trainable tensors inside a layer whose input needs none (LoRA, a frozen embedding).
    """
    import functools

    from simpe.models import family_of

    wrapped = 0
    for prefix in family_of(model).top_layer_prefixes(model):
        layers = model.get_submodule(prefix.rstrip(".").rsplit(".", 1)[0])  # model.encoder.layers, decoder.block, ...
        for layer in layers:
            if not getattr(layer, "simpe_checkpointed", False):
                layer.forward = functools.partial(_checkpointed, layer.forward)
                layer.simpe_checkpointed = True
            wrapped += 1
    return wrapped


# the pair's pass under simpe.decoders.cross.known_masks: None (auto) off the CPU only; True / False forced (the tests
# and make bench-launches force it on the CPU). A pair is one unpadded row, so its masks mask nothing, and transformers
# would read each one back to find that out (a GPU synchronisation per pass; the same masks, None, either way)
KNOWN_MASKS: bool | None = None


def _pair_logits(model: Any, pair: Pair) -> torch.Tensor:
    """(1, tgt_len, vocab) teacher-forced logits of ``pair``, its masks said rather than read back off the CPU."""
    known = pair.input_ids.device.type != "cpu" if KNOWN_MASKS is None else KNOWN_MASKS
    if not known:
        return teacher_forced_logits(model, pair.input_ids, pair.labels)
    from simpe.decoders import cross

    with cross.known_masks(model, False, False):
        return teacher_forced_logits(model, pair.input_ids, pair.labels)


def _pair_losses(model: Any, pair: Pair, label_smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean token loss (for the gradient) and mean token NLL (for perplexity, and a segment term's log-probability:
    its graph kept where one is recorded) of ``pair``; the same tensor when ``label_smoothing`` is 0."""
    logits = _pair_logits(model, pair)  # (1, tgt_len, vocab)
    # float32 for a bf16/fp16 model's logits (a no-op at float32): a loss near 12 rounded to bf16's spacing of 1/16
    # hides a step's change and decides the perplexity threshold on rounding
    flat = logits.view(-1, logits.size(-1)).float()  # (tgt_len, vocab)
    nll = torch.nn.functional.cross_entropy(flat, pair.labels.view(-1))
    if label_smoothing > 0:
        loss = torch.nn.functional.cross_entropy(flat, pair.labels.view(-1), label_smoothing=label_smoothing)
        return loss, nll
    return nll, nll


def pair_loss(model: Any, pair: Pair, label_smoothing: float = 0.0) -> tuple[torch.Tensor, float]:
    """Mean token loss (for the gradient) and mean token NLL (for perplexity) of ``pair``."""
    loss, nll = _pair_losses(model, pair, label_smoothing)
    return loss, float(nll.detach())


def is_dropout_rate(name: str, value: Any) -> bool:
    """Whether an attribute is a dropout probability: a float (not a bool) whose name ends in ``dropout``,
    ``dropout_rate`` or ``_pdrop`` (``dropout``, ``attention_dropout``, ``activation_dropout``, T5's ``dropout_rate``,
    GPT-2's ``attn_pdrop``)."""
    return isinstance(value, float) and name.endswith(("dropout", "dropout_rate", "_pdrop"))


def is_layerdrop(name: str, value: Any) -> bool:
    """Whether an attribute is a LayerDrop probability (``layerdrop``, ``encoder_layerdrop``: whole layers skipped at
    random in training mode; M2M100-418M's config has 0.05)."""
    return isinstance(value, float) and name.endswith("layerdrop")


def set_dropout(model: Any, p: float) -> None:
    """Set every dropout probability of the model to ``p`` (the update runs in train mode when p > 0): the
    ``torch.nn`` dropout modules' ``p``, and the float rates that transformers' layers keep as attributes of their own
    and pass to ``nn.functional.dropout`` (Marian, mBART, M2M100 and the causal LMs' attention read
    ``self.dropout``, ``self.activation_dropout``, ``self.attention_dropout``, set from the config when the layer was
    built, so changing the config alone changes nothing), and the config's rates, for what is built later. LayerDrop
    is turned off (0.0, whatever the config says): the update's only randomness is ``update.dropout``, so at 0.0 a
    training-mode pass is deterministic. A LoRA adapter's own dropout is the method's setting (``lora``: none) and is
    not changed here."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = p
        for name, value in list(vars(module).items()):
            if not name.startswith("_") and is_dropout_rate(name, value):
                setattr(module, name, p)
            elif not name.startswith("_") and is_layerdrop(name, value):
                setattr(module, name, 0.0)
    config = getattr(model, "config", None)
    if config is not None:
        for name, value in config.to_dict().items():
            if is_dropout_rate(name, value):
                setattr(config, name, p)
            elif is_layerdrop(name, value):
                setattr(config, name, 0.0)
        config.dropout = p


def _ppl(nll: float) -> float:
    return math.exp(nll) if nll < 700 else float("inf")


def note_loss(record: dict[str, Any], first: bool, nll: float) -> None:
    """An update record's losses after a forward pass of ``nll``: the one before any step (``first``) and the last."""
    if first:
        record["loss_before"], record["ppl_before"] = nll, _ppl(nll)
    record["loss_after"], record["ppl_after"] = nll, _ppl(nll)


def note_rollback(record: dict[str, Any], why: str) -> None:
    """An update record's last step undone: one repetition fewer, and ``why`` (before "after step N") said in
    ``skipped``. The three update loops (``update``, ``update_graph.update``, ``group_update``) write it alike."""
    record["repetitions"] -= 1
    record["skipped"] = f"{why} after step {record['repetitions'] + 1}; step rolled back"


CLIP_EPS = 1e-6  # added to a gradient's norm before the clip norm is divided by it
FUSE_BYTES = 16 << 20  # ... when the gradients hold this many bytes or more: fewer stay in cache from one pass to the next


def clip_scales(norms: torch.Tensor, clip_norm: float) -> list[float]:
    """Per-tensor clipping as a factor on the step size (the gradients are not rescaled):
    ``min(1, clip_norm / (norm + 1e-6))`` of (tensors,) float32 norms, computed in float32; all 1.0 when
    ``clip_norm`` is 0 (no clipping). Written as reciprocal, then product: what ``clip_norm / tensor`` computes."""
    if clip_norm <= 0:
        return [1.0] * norms.numel()
    return _clip_factors(norms, clip_norm).tolist()


def _clip_factors(norms: torch.Tensor, clip_norm: float) -> torch.Tensor:
    """``clip_scales`` as a (tensors,) float32 tensor on the norms' device."""
    if clip_norm <= 0:
        return torch.ones_like(norms)
    return (norms + CLIP_EPS).reciprocal_().mul_(clip_norm).clamp_(max=1.0)


def _norms_and_scales(grads: list[torch.Tensor], clip_norm: float) -> tuple[list[float], list[float]]:
    """Every gradient's float32 L2 norm (one foreach call) and its clipping factor (``clip_scales``), read to the host
    in one transfer: on a GPU one wait for the device per step, for the non-finite check and the clipping both."""
    norms = torch.stack(torch._foreach_norm(grads))  # (tensors,)
    read = torch.stack([norms, _clip_factors(norms, clip_norm)]).tolist()  # (2, tensors)
    return read[0], read[1]


def _f32(value: float) -> float:
    """``value`` rounded to float32: a float32 sum, product or quotient of float32 values is the double one rounded once."""
    return struct.unpack("f", struct.pack("f", value))[0]


_CLIP_EPS32 = _f32(CLIP_EPS)


def clip_scale(norm: float, clip_norm: float) -> float:
    """``clip_scales`` of one finite float32 ``norm`` (as a float), in Python: the same float32 operations, each rounded
    as float32 rounds it, so the same factor bit for bit (a unit test compares them)."""
    if clip_norm <= 0:
        return 1.0
    return min(_f32(_f32(1.0 / _f32(norm + _CLIP_EPS32)) * _f32(clip_norm)), 1.0)


def _non_finite_gradient(names: list[str], grads: list[torch.Tensor]) -> str:
    """The name of the first gradient holding inf or NaN ('?' when none does: a norm overflowed)."""
    return next((name for name, grad in zip(names, grads) if not bool(torch.isfinite(grad).all())), "?")


def _sgd_step(params: list[torch.Tensor], grads: list[torch.Tensor], lr: float, scales: list[float], norms: list[float],
              backup: Backup) -> None:
    """``Method.step``'s plain SGD, θ ← θ - lr·scale·g, written so that it can be undone without a copy.

    The new weights go into the gradients' own buffers where they can take them (else spare buffers,
    ``Backup.outputs``), and the old ones stay where they are as the backup for a rollback (``Backup.swap_in``):
    one pass writes the step, where stepping in place needs a copy first. Nothing reads the gradients after.
    """
    new = backup.outputs(params, grads)
    for param, grad, scale, out in zip(params, grads, scales, new):  # scale: the clipping, the gradient is not rewritten
        torch.add(param, grad, alpha=-lr * scale, out=out)
    # Finite weights stay finite under a step whose entries are all below 2**100 in magnitude
    # (|lr·scale·g_i| <= lr·scale·||g||, the norms): float32 rounds to infinity only from
    # 2**128·(1 - 2**-25) up, 2**103 beyond the largest finite value. The gradients are finite
    # (the update skips the step otherwise), so the update need not scan the new weights.
    backup.swap_in(params, new, finite=lr * max(norms, default=0.0) < 2.0 ** 100)


def _storage_shared(grads: list[torch.Tensor], params: list[torch.Tensor]) -> bool:
    """Whether a gradient shares its storage with another gradient or a weight (then none may be written in place)."""
    addresses = [t.untyped_storage().data_ptr() for t in [*grads, *params]]
    return len(set(addresses)) < len(addresses)


def _sgd_step_in_place(params: list[torch.Tensor], grads: list[torch.Tensor], lr: float, scales: list[float],
                       norms: list[float], backup: Backup) -> None:
    """``Method.step``'s plain SGD written into the weights themselves, each keeping its address (a CUDA graph reads
    them there): ``Backup.before_change`` copies them for the undo, the clipped gradients are scaled by their factors,
    then θ ← θ - lr·g; three foreach calls, a few kernel launches each on a GPU, for every tensor.

    An unclipped tensor's step is ``_sgd_step``'s bit for bit (θ - lr·g); a clipped one's rounds the scaled gradient
    first, θ - lr·(scale·g) where ``_sgd_step`` takes θ - (lr·scale)·g: within float32's rounding of the step. The
    gradients are written over (nothing reads them after), unless one shares its storage (then scaled copies)."""
    backup.before_change(params)
    clipped = [i for i, scale in enumerate(scales) if scale != 1.0]
    if clipped:
        factors = [scales[i] for i in clipped]
        if _storage_shared(grads, params):
            scaled = torch._foreach_mul([grads[i] for i in clipped], factors)
            grads = list(grads)
            for i, grad in zip(clipped, scaled):
                grads[i] = grad
        else:
            torch._foreach_mul_([grads[i] for i in clipped], factors)
    torch._foreach_add_(params, grads, alpha=-lr)
    backup.vouch(lr * max(norms, default=0.0) < 2.0 ** 100)  # finite weights stay finite: see _sgd_step


def _method_step(method: Method, grads: Gradients, lr: float, backup: Backup) -> None:
    """A method's own ``step``, in place, after a copy of what it says it changes (its hints ``changed_tensors``
    and ``changed_rows``: ``lasso`` changes a few groups of its budget and a few embedding rows)."""
    trainable = method.trainable()
    tensors = method.changed_tensors(grads, lr)
    rows = method.changed_rows(grads, lr)
    backup.before_change([trainable[name] for name in tensors], rows=[(trainable[name], index) for name, index in rows.items()])
    method.step(grads, lr)


def clip_and_step(method: Method, names: list[str], params: list[torch.Tensor], grads: list[torch.Tensor], lr: float,
                  clip_norm: float, backup: Backup) -> str | None:
    """Clip each gradient's step (``clip_scales``) and take the method's step; None, or, when a gradient holds inf
    or NaN, its name (then no tensor has changed).

    A method with a step of its own (``lasso``: its budget compares every step's norm) gets every norm first, then
    ``Method.step`` (``_method_step``), and so does plain SGD (``_sgd_step``) on gradients small enough to stay in cache
    between the two passes (under ``FUSE_BYTES``: there a Python call per tensor costs more than the pass it saves).
    Where the weights are written in place (``simpe.loop.undo.in_place``: every device but the CPU), plain SGD is
    ``_sgd_step_in_place``: foreach calls for all tensors, the norms read once. On the CPU, plain SGD on more is fused
    with the clipping:
    each large gradient's norm, then at once its step, which reads the gradient again while it is still in cache
    (norms of every gradient first stream them all twice; 1.3 ms a step of 40 MB, a third of it, on the demo model).
    The same factors, norms (the same kernel per tensor as ``torch._foreach_norm``) and step, bit for bit;
    a gradient found not finite midway leaves the weights as they were: the step writes into the gradients or
    spare buffers (``Backup.outputs``), which become the weights only at the end (``Backup.swap_in``).
    """
    own_step = type(method).step is not Method.step
    device = grads[0].device
    writes_in_place = in_place(device)  # every device but the CPU: the weights keep their addresses
    # fused on the CPU only: on a GPU each large gradient's norm read back alone is a wait for the device, where the
    # foreach norms of every gradient need one
    fuse = not own_step and not writes_in_place and device.type == "cpu" and \
        sum(grad.numel() * grad.element_size() for grad in grads) >= FUSE_BYTES
    if not fuse:
        read, scales = _norms_and_scales(grads, clip_norm)  # one read of every norm and factor
        if not all(math.isfinite(norm) for norm in read):
            return _non_finite_gradient(names, grads)
        norms = [s * n for s, n in zip(scales, read)]
        if own_step:
            _method_step(method, Gradients(dict(zip(names, grads)), dict(zip(names, scales)), dict(zip(names, norms))),
                         lr, backup)
        elif writes_in_place:
            _sgd_step_in_place(params, grads, lr, scales, norms, backup)
        else:
            _sgd_step(params, grads, lr, scales, norms, backup)
        return None
    scales, norms = [1.0] * len(grads), [0.0] * len(grads)
    small = [i for i, grad in enumerate(grads) if grad.numel() < FUSE_MIN]  # one foreach call for the many small ones
    if small:
        read, factors = _norms_and_scales([grads[i] for i in small], clip_norm)  # one read
        if not all(math.isfinite(norm) for norm in read):
            return _non_finite_gradient(names, grads)
        for i, scale, norm in zip(small, factors, read):
            scales[i], norms[i] = scale, norm
    new = backup.outputs(params, grads)
    for i, (param, grad, out) in enumerate(zip(params, grads, new)):
        if grad.numel() >= FUSE_MIN:
            norm = float(torch.linalg.vector_norm(grad))
            if not math.isfinite(norm):  # the gradients before it are finite and written over; those from it on are not
                return _non_finite_gradient(names[i:], grads[i:])
            scales[i], norms[i] = clip_scale(norm, clip_norm), norm
        torch.add(param, grad, alpha=-lr * scales[i], out=out)  # _sgd_step's step
    # finite weights stay finite under this step: see _sgd_step
    backup.swap_in(params, new, finite=lr * max((s * n for s, n in zip(scales, norms)), default=0.0) < 2.0 ** 100)
    return None


def _batch_loss(model: Any, method: Method, loss: torch.Tensor, extra: Sequence[Pair],
                label_smoothing: float) -> tuple[torch.Tensor, float | None]:
    """The loss of one step on ``pair`` (its ``loss``) and ``extra``: the mean of the pairs' mean token losses, plus
    the method's penalty; and the penalty's value (None when it has none)."""
    losses = [loss, *(pair_loss(model, other, label_smoothing)[0] for other in extra)]
    total = torch.stack(losses).mean() if len(losses) > 1 else loss  # () mean of the pairs' losses
    penalty = method.loss_term()
    if penalty is None:
        return total, None
    return total + penalty, float(penalty.detach())


class _Given(Method):
    """A trainable set handed over from outside (``tune``): plain SGD on it; never attached, never registered."""

    def __init__(self, params: dict[str, torch.nn.Parameter]) -> None:
        self._trainable = dict(params)

    def select(self, model: Any) -> dict[str, torch.nn.Parameter]:
        return self._trainable


class Tuner:
    """Fixed numbers of steps of the shared update on a batch, on a trainable set a method names (``Context.tune``:
    ``tune-retrieve``'s fine-tuning before a translation). One per model and update settings; the set's undo buffers
    are kept from call to call (``Backup``), as the loop's own update keeps its method's."""

    def __init__(self, model: Any, cfg: UpdateConfig, on_backward: Callable[[float], None] | None = None) -> None:
        self.model, self.cfg = model, cfg
        self.on_backward = on_backward  # told each call's backward seconds (the loop's ModelTimer.add)
        self._given: dict[tuple[int, ...], _Given] = {}

    def tune(self, params: dict[str, torch.nn.Parameter], pairs: list[Pair], lr: float, steps: int) -> dict[str, Any]:
        """``steps`` SGD steps of size ``lr`` (clipped per tensor, as every update) on the batch ``pairs``, changing
        only ``params``; the record of ``update`` (its losses are the first pair's)."""
        if steps < 1 or not pairs or not params:
            return {"repetitions": 0}
        key = tuple(id(p) for p in params.values())
        method = self._given.get(key)
        if method is None:
            method = self._given[key] = _Given(params)
        # called around a translation, which may run under inference mode (simpe translate): record gradients here,
        # on copies of ids that may have been made under it (an inference tensor cannot be saved for backward)
        with torch.inference_mode(False), torch.enable_grad():
            pairs = [dataclasses.replace(p, input_ids=p.input_ids.clone(), labels=p.labels.clone()) for p in pairs]
            flags = [p.requires_grad for p in params.values()]
            for p in params.values():
                p.requires_grad_(True)
            try:
                # a threshold of 1.0 is met only by a perplexity of exactly 1: the steps are the number asked for
                cfg = dataclasses.replace(self.cfg, lr=lr, max_repeats=steps, ppl_threshold=1.0)
                record = update(self.model, method, pairs[0], cfg, batch=pairs[1:], measure_after=False)
                if self.on_backward is not None:
                    self.on_backward(record["seconds_backward"])
                return record
            finally:
                for p, flag in zip(params.values(), flags):
                    p.requires_grad_(flag)


def update(model: Any, method: Method, pair: Pair, cfg: UpdateConfig, batch: Sequence[Pair] = (),
           measure_after: bool = True, hypothesis: str | None = None) -> dict[str, Any]:
    """Adapt ``model`` on one pair; return the record's ``update`` field.

    Returns ``loss_before``/``ppl_before`` (before any step), ``loss_after``/``ppl_after``
    (after the last step, measured with one more forward pass), ``repetitions`` (steps
    taken), ``skipped`` (None, or why a step was skipped) and ``seconds_backward``.

    ``batch``: more pairs stepped on with ``pair`` (the warm start's batches, ``tune-retrieve``'s matches), and so are
    the method's ``update_pairs(pair)`` (``replay``'s drawn pairs, once per call): the loss of a step is then the
    mean of the pairs' mean token losses, plus the method's ``loss_term()``; a method's ``penalty_gradient`` (``ewc``)
    adds its penalty's gradient to the loss's at each step; the perplexity threshold and the
    record's losses are ``pair``'s alone. The record then says ``replayed`` (the pairs beside ``pair``) and
    ``penalty`` (its last value). Without either the step is the one of Simianer et al. (2019), bit for bit. ``measure_after`` False
    skips the forward pass that measures the loss after the last step (``loss_after`` is then the last one before it).

    ``hypothesis``: the MT output that ``pair``'s post-edit corrects (the loop passes the segment's own; None for
    other pairs). With it, before each step, the method's ``segment_term`` (``prefer``'s DPO term) is added to the
    step's loss, and its facts go into the record; the perplexity threshold is still the post-edit's NLL alone.
    """
    extra = [*batch, *method.update_pairs(pair)]  # (pairs,) beside ``pair``, fixed across the repetitions
    params = list(method.trainable().values())
    names = list(method.trainable().keys())
    record: dict[str, Any] = {"loss_before": None, "ppl_before": None, "loss_after": None, "ppl_after": None,
                              "repetitions": 0, "skipped": None}
    composed = type(method).loss_term is not Method.loss_term  # a method with a loss term of its own
    penalized = type(method).penalty_gradient is not Method.penalty_gradient  # one that adds its penalty's gradient (ewc)
    segmented = hypothesis is not None and type(method).segment_term is not Method.segment_term  # (prefer)
    if params and update_graph.enabled(params[0].device):  # fixed shapes, one read per repetition, a CUDA graph
        why = update_graph.reason(model, method, cfg, extra, composed, penalized, segmented, params)
        if why is None:
            return update_graph.update(model, method, pair, cfg, params, names, measure_after)
        update_graph.say_once(method, why)
    if extra:
        record["replayed"] = len(extra)
    backward_seconds = 0.0
    if cfg.dropout > 0 and params:
        model.train()
    if cfg.checkpointing and params:
        checkpoint_layers(model)
    backup = backup_for(method)  # the weights the last step changed, as before it, while it may still be undone
    low = MasterCopies.needed(params) if cfg.master_copies else []  # the tensors stepped through a float32 master
    masters = master_copies(method) if low else None

    def undo() -> None:  # the last step, on the masters where there are some (the weights then get their rounded value)
        if masters is None:
            backup.restore()
            return
        lows = masters.enter(low)
        backup.restore()
        masters.leave(low, lows)
    try:
        for repeat in range(cfg.max_repeats + 1):
            may_step = bool(params) and repeat < cfg.max_repeats
            if not measure_after and record["repetitions"] and repeat == cfg.max_repeats:
                break
            with torch.set_grad_enabled(may_step):
                loss, nll_tensor = _pair_losses(model, pair, cfg.label_smoothing)
                nll = float(nll_tensor.detach())
                plain = cfg.label_smoothing == 0  # the loss is the pair's NLL, whose value nll holds already
                if may_step and (extra or composed):
                    loss, penalty = _batch_loss(model, method, loss, extra, cfg.label_smoothing)
                    plain = False
                    if penalty is not None:
                        record["penalty"] = penalty
            if record["repetitions"] and not math.isfinite(nll):  # the last step broke the model: undo it
                undo()
                note_rollback(record, "non-finite loss")
                break
            note_loss(record, repeat == 0, nll)
            if not may_step or _ppl(nll) <= cfg.ppl_threshold:
                break
            if segmented:  # only before a step: a pair below the threshold costs the term nothing
                with torch.enable_grad():  # as the forward above was (may_step): the term joins its graph
                    logprob = nll_tensor * -pair.labels.numel()  # () the post-edit's summed token log-probabilities
                    term, facts = method.segment_term(pair, hypothesis, logprob, record["repetitions"])
                    if term is not None:
                        loss, plain = loss + term, False
                record.update(facts)
            if not math.isfinite(nll if plain else float(loss.detach())):  # no second wait for the device
                record["skipped"] = "non-finite loss"
                break
            start = time.perf_counter()
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            backward_seconds += time.perf_counter() - start
            present = [i for i, g in enumerate(grads) if g is not None]
            if not present:
                break
            ns, ps, gs = [names[i] for i in present], [params[i] for i in present], [grads[i] for i in present]
            with torch.no_grad():
                if masters is not None:  # the step on float32 masters and float32 gradients
                    gs = as_float32(gs)
                if penalized:  # the penalty at the weights the loss saw; its gradient joins the loss's before clipping
                    penalty = method.penalty_gradient(dict(zip(ns, gs)))
                    if penalty is not None:
                        record["penalty"] = penalty
                        if not math.isfinite(penalty):
                            record["skipped"] = "non-finite penalty"
                            break
                if masters is None:
                    bad = clip_and_step(method, ns, ps, gs, cfg.lr, cfg.clip_norm, backup)
                else:  # the weights get the rounded result
                    lows = masters.enter(low)
                    try:
                        bad = clip_and_step(method, ns, ps, gs, cfg.lr, cfg.clip_norm, backup)
                    finally:
                        masters.leave(low, lows)
                    backup.finite = backup.finite and not any(p.dtype == torch.float16 for p in low)  # float16 overflows at 65504
            if bad is not None:
                record["skipped"] = f"non-finite gradient in {bad}"
                break
            record["repetitions"] += 1
            bad = backup.first_non_finite()
            if bad is not None:
                undo()
                note_rollback(record, f"non-finite weights in {bad}")
                break
    finally:
        if cfg.dropout > 0 and params:
            model.eval()
    record["seconds_backward"] = backward_seconds
    return record
