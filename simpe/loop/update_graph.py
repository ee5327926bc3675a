"""The update's repetitions on fixed shapes, one host read each, and each one CUDA graph on CUDA (issue 67, item 2).

``simpe.loop.update.update`` takes, per repetition, the pair's loss, reads its NLL (the perplexity rule), runs the
backward pass, reads every gradient's norm (the non-finite check and the clipping factors), then steps. On a GPU each
read is a wait for the device, and each of the repetition's ~1,400 operators (NLLB-600M) is a launch from Python.
Here one repetition is one function of fixed-shape tensors (``_Runner.repetition``), which CUDA captures as a graph
and replays:

* **The pair padded to a bucket** (``simpe.decoders.static.bucket``): the source's ids into a (1, source bucket) block
  with its mask (a causal LM: prompt and target into one sequence's bucket), the target into (1, target bucket)
  labels with -100 after its end (the loss skips them; the decoder's
  causal mask keeps the real positions from seeing them). The encoder then sums over more positions with weight 0:
  float noise, no other change (tests/unit/test_update_graph.py).
* **The whole repetition on the device**: the loss and the NLL, the backward pass, each gradient's float32 norm and
  clipping factor (``update._clip_factors``), whether to step (``go``: the perplexity above the threshold, the loss
  finite, stepping allowed this repetition), a copy of the weights about to change (the undo), the clipped step
  θ ← θ - lr·(f·g) in place with f = 0 where ``go`` is false (θ exactly), and the float32 masters' rounded values into
  the bfloat16 weights. Nothing is read back inside it.
* **One read per repetition**: after it, the NLL, the loss, ``go``, whether every gradient was finite and whether the
  step was small enough to keep finite weights finite (``update._sgd_step``'s bound), as one ``tolist``. The host then
  takes the eager update's decisions on those values, in its order, and undoes what the device did where the eager
  update would not have done it (a non-finite gradient: the step is undone; a step that made the loss non-finite: the
  step before is undone). Two copies of the weights alternate (``parity``) so that the step before is still held.
* **Graphs on CUDA** (``GRAPHS``: None = on CUDA only): a graph per parity, captured once per (model, method,
  buckets, settings) after a warm-up repetition on a side stream, replayed from then on; the inputs are copied into
  the graph's own tensors first. As for decoding (``simpe.decoders.static``), a model with a forward hook of a
  method's own is not captured, a capture that fails falls back to eager repetitions (said once in the log), and the
  weights' addresses are checked once per update.

The record is the eager update's, field for field: the same repetitions, losses, perplexities and ``skipped`` texts.
Its values equal the eager in-place update's (``simpe.loop.undo.in_place``: how a GPU steps) to float noise, which the
padding adds. One cost: the repetition that meets the threshold runs its backward pass too (the read that decides comes
after it), where the eager update stops after the forward pass.

Where it applies (``reason``, None when it does): plain SGD (``Method.step`` not overridden: ``lasso``'s budget reads
its norms on the host), no pairs beside the segment's (``replay``, a warm start's batches, ``tune-retrieve``), no loss
term, penalty or segment term (``ewc``, ``prefer``), no dropout, no checkpointing, the weights written in place, a
family whose masks ``simpe.decoders.cross.known_masks`` says (Marian, mBART-50, M2M100/NLLB; a causal LM, Llama or
Qwen2, whose pair is its prompt and target in one sequence, scored at the target's positions: the base model's
states gathered there, then the output projection), no stacked run axis, and ``ON_DEVICE`` (None = on every device
but the CPU; the tests force it on the CPU). Elsewhere the eager update runs; a run whose method cannot use it on a
GPU says why in its log, once.
"""
from __future__ import annotations

import logging
import math
import time
import weakref
from collections import OrderedDict
from typing import Any

import torch

from simpe import fastpaths
from simpe.decoders import cross, static
from simpe.loop.masters import MasterCopies, as_float32, master_copies
from simpe.loop.undo import in_place
from simpe.methods.base import Method
from simpe.models import family_of

log = logging.getLogger(__name__)

ON_DEVICE: bool | None = None  # None: off the CPU, unless SIMPE_FIXED_SHAPES=off; True / False: forced
GRAPHS: bool | None = None  # None: on CUDA, unless SIMPE_CUDA_GRAPHS=off; False: eager repetitions (the device check's)
POOL_SIZE = 4
BOUND = 2.0 ** 100  # update._sgd_step: a step below it keeps finite weights finite
MARGIN = 1e-3  # nats below log(ppl_threshold) from which the device steps (the host's rule decides: update())
_SAID: set[tuple[int, str]] = set()  # (id(method), reason) said in the log already


def enabled(device: Any) -> bool:
    """Whether updates on ``device`` take this path: ``ON_DEVICE`` when set, else off the CPU unless
    ``SIMPE_FIXED_SHAPES=off`` (``simpe.fastpaths``)."""
    if ON_DEVICE is not None:
        return ON_DEVICE
    return torch.device(device).type != "cpu" and fastpaths.switch(fastpaths.FIXED_SHAPES)


def graphs_enabled(device: Any) -> bool:
    """Whether a repetition is captured as a CUDA graph on ``device`` (as ``static.graphs_enabled``, with ``GRAPHS``)."""
    if torch.device(device).type != "cuda" or GRAPHS is False:
        return False
    return GRAPHS is True or fastpaths.switch(fastpaths.CUDA_GRAPHS)


def reason(model: Any, method: Method, cfg: Any, extra: list, composed: bool, penalized: bool, segmented: bool,
           params: list[torch.Tensor]) -> str | None:
    """Why ``update`` cannot run this update here (None: it can); see the module docstring."""
    from simpe.models.stacked import StackedModel

    family = family_of(model)
    if not params:
        return "no trainable tensors"
    if type(method).step is not Method.step:
        return f"{method.name or type(method).__name__} takes a step of its own"
    if extra or composed or penalized or segmented:
        return "the step's loss holds more than the segment's pair (replayed pairs, a penalty or a segment term)"
    if cfg.dropout > 0 or cfg.checkpointing:
        return "update.dropout or update.checkpointing is set"
    if isinstance(model, StackedModel) or not static._attention_known(model, family):
        return f"the {family.name} family's masks are not said here (T5, another attention than sdpa)"
    if not in_place(params[0].device):
        return "the weights are not written in place"
    return None


def _signature(model: Any, targets: list[torch.Tensor]) -> tuple:
    return static._signature(model), tuple(t.data_ptr() for t in targets)


class _Runner:
    """The fixed-shape tensors of one (model, method, buckets, settings), the repetition as a function of them, and its
    graphs once captured (one per parity)."""

    def __init__(self, model: Any, method: Method, params: list[torch.Tensor], src_bucket: int, tgt_bucket: int,
                 cfg: Any, masters: MasterCopies | None, low: list[torch.Tensor]) -> None:
        """``src_bucket``: the source's (an encoder-decoder) or the whole sequence's (a causal LM: prompt and target)
        positions; ``tgt_bucket``: the target's."""
        self.model, self.method, self.params, self.cfg = model, method, params, cfg
        self.family = family_of(model)
        self.causal = not self.family.encoder_decoder
        self.prefix = 0 if self.causal else len(self.family.prefix)
        device = params[0].device
        self.src = torch.zeros((1, src_bucket), dtype=torch.long, device=device)  # a causal LM: prompt, target, padding
        self.src_mask = torch.zeros_like(self.src)
        self.decoder_ids = torch.zeros((1, self.prefix + tgt_bucket - 1), dtype=torch.long, device=device)
        self.labels = torch.full((1, tgt_bucket), -100, dtype=torch.long, device=device)
        self.take = torch.zeros(tgt_bucket, dtype=torch.long, device=device)  # a causal LM: the positions scored
        self.allow = torch.zeros((), dtype=torch.bool, device=device)  # this repetition may step
        self.masters, self.low = masters, low
        self.backups: list[list[torch.Tensor]] = [[], []]  # per parity, the weights before that parity's step
        self.present: list[list[int]] = [[], []]  # per parity, which parameters got a gradient (the backup's)
        self.graphs: list[Any] = [None, None]
        self.outputs: list[Any] = [None, None]
        self.signature: tuple | None = None  # at the capture
        self.checked: tuple | None = None  # this update's (``load`` forgets it)
        self.warm = False
        self.refused: str | None = None
        self.first_checked = False  # the weights were checked finite in full once (update._sgd_step's bound then holds)
        self.float16 = any(p.dtype == torch.float16 for p in low)  # float16 overflows at 65504: every step checked

    # ------------------------------------------------------------------ inputs
    def load(self, pair: Any) -> None:
        """The pair's ids into the fixed-shape tensors (padding: 0 in the source and the decoder's input with their
        masks, -100 in the labels)."""
        self.checked = None
        src_len, tgt_len = pair.input_ids.shape[1], pair.labels.shape[1]
        pad = self.model.config.pad_token_id or 0  # masked (the source) or after the last real position (the target)
        self.src.fill_(pad)
        self.src[:, :src_len] = pair.input_ids
        self.src_mask.zero_()
        self.src_mask[:, :src_len] = 1
        self.labels.fill_(-100)
        self.labels[:, :tgt_len] = pair.labels
        if self.causal:  # the prompt, then the target but its last token: position P - 1 + t predicts target token t
            self.src[:, src_len: src_len + tgt_len - 1] = pair.labels[:, :-1]
            self.src_mask.fill_(1)  # nothing to mask (the padding comes after every position scored); said, not checked
            self.take.zero_()
            self.take[:tgt_len] = torch.arange(src_len - 1, src_len + tgt_len - 1, device=self.take.device)
            return
        self.decoder_ids.fill_(pad)
        self.decoder_ids[:, : self.prefix] = torch.tensor(self.family.prefix, dtype=torch.long, device=self.src.device)
        self.decoder_ids[:, self.prefix: self.prefix + tgt_len - 1] = pair.labels[:, :-1]

    def targets(self) -> list[torch.Tensor]:
        """The tensors the step writes: each parameter's float32 master where it has one, else the parameter."""
        if self.masters is None:
            return [p.detach() for p in self.params]
        low = {id(p) for p in self.low}
        return [self.masters.masters[id(p)] if id(p) in low else p.detach() for p in self.params]

    # ------------------------------------------------------------------ the repetition
    def repetition(self, parity: int) -> torch.Tensor:
        """One repetition on the device (see the module docstring); returns a (5,) float32 tensor: the NLL, the loss,
        ``go``, every gradient finite, the step below ``BOUND``. Reads nothing back."""
        cfg = self.cfg
        with cross.known_masks(self.model, False, not self.causal), torch.enable_grad():
            if self.causal:  # the base model's states at the scored positions, then the output projection
                base = getattr(self.model, self.model.base_model_prefix)
                states = base(input_ids=self.src, attention_mask=self.src_mask, use_cache=False).last_hidden_state
                logits = self.family.output_projection(self.model)(states.index_select(1, self.take))  # (1, tgt_bucket, vocab)
            else:
                logits = self.model(input_ids=self.src, attention_mask=self.src_mask, decoder_input_ids=self.decoder_ids,
                                    use_cache=False).logits[:, self.prefix - 1:]  # (1, tgt_bucket, vocab)
            flat = logits.reshape(-1, logits.shape[-1]).float()  # (tgt_bucket, vocab)
            nll = torch.nn.functional.cross_entropy(flat, self.labels.view(-1))  # () mean over the real positions
            loss = nll if cfg.label_smoothing == 0 else torch.nn.functional.cross_entropy(
                flat, self.labels.view(-1), label_smoothing=cfg.label_smoothing)
            grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        with torch.no_grad():
            present = [i for i, g in enumerate(grads) if g is not None]
            targets = self.targets()
            ts = [targets[i] for i in present]
            gs = [grads[i] for i in present]
            if self.masters is not None:
                gs = as_float32(gs)
            norms = torch.stack(torch._foreach_norm(gs)).float() if gs else torch.zeros(1, device=self.src.device)
            from simpe.loop.update import _clip_factors

            finite = torch.isfinite(norms).all()
            # a little below the threshold: the device steps wherever the host's rule (update._ppl(nll) <= threshold,
            # in double) may step, and the host undoes a step its rule refuses; the decision never hangs on exp's last bit
            threshold = math.log(cfg.ppl_threshold) - MARGIN if cfg.ppl_threshold > 0 else -math.inf
            go = self.allow & (nll.detach() > threshold) & torch.isfinite(loss.detach())
            factors = torch.where(go, _clip_factors(norms, cfg.clip_norm), 0.0)  # (tensors,) 0: θ stays as it is
            small = (norms * factors).amax() * cfg.lr < BOUND
            backup = self.backups[parity]
            if len(backup) != len(ts):
                backup[:] = [torch.empty_like(t) for t in ts]
            self.present[parity] = present
            if ts:
                torch._foreach_copy_(backup, ts)
                torch._foreach_mul_(gs, list(factors.unbind()))
                torch._foreach_add_(ts, gs, alpha=-cfg.lr)
                if self.masters is not None:
                    lows = [p.data for p in self.params]
                    pairs = [(lows[i], targets[i]) for i in present if lows[i] is not targets[i] and lows[i].dtype != targets[i].dtype]
                    if pairs:
                        torch._foreach_copy_([a for a, _ in pairs], [b for _, b in pairs])
            self.grads = gs  # for the name of a non-finite one
            return torch.stack([nll.detach().float(), loss.detach().float(), go.float(), finite.float(), small.float()])

    def restore(self, parity: int) -> None:
        """The weights as they were before ``parity``'s step (and the bfloat16 weights their masters' rounding)."""
        with torch.no_grad():
            targets = self.targets()
            backup = self.backups[parity]
            if backup:
                torch._foreach_copy_([targets[i] for i in self.present[parity]], backup)
            if self.masters is not None:
                for p, t in zip(self.params, targets):
                    if p.data is not t and p.dtype != t.dtype:
                        p.data.copy_(t)

    # ------------------------------------------------------------------ graphs
    def run(self, parity: int) -> torch.Tensor:
        """``repetition`` as a replay of its graph where one is held or can be captured, else eagerly."""
        if not graphs_enabled(self.src.device) or self.refused is not None:
            return self.repetition(parity)
        if self.checked is None:  # once per update: nothing moves the weights while it runs
            self.checked = _signature(self.model, self.targets())
        signature = self.checked
        if self.graphs[parity] is None or self.signature != signature:
            if self.signature != signature:
                self.graphs, self.outputs = [None, None], [None, None]
            hooked = static._foreign_hook(self.model)
            if hooked is not None:
                self.refused = f"{hooked} has a forward hook (an adaptation method's)"
            elif not self.warm:  # the first repetition on these tensors runs eagerly on a side stream (autograd's setup)
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    out = self.repetition(parity)
                torch.cuda.current_stream().wait_stream(stream)
                self.warm = True
                return out
            else:
                try:
                    graph = torch.cuda.CUDAGraph()
                    static._CAPTURING = True
                    try:
                        with torch.cuda.graph(graph):
                            self.outputs[parity] = self.repetition(parity)
                    finally:
                        static._CAPTURING = False
                    self.graphs[parity], self.signature = graph, signature
                except Exception as error:  # noqa: BLE001 - any refusal of the capture: eager repetitions, said once
                    self.refused = f"{type(error).__name__}: {error}"
            if self.refused is not None:
                log.warning("update repetition not captured as a CUDA graph (%s); it runs eagerly", self.refused)
                return self.repetition(parity)
        self.graphs[parity].replay()
        return self.outputs[parity]


# (id(model), id(method), source bucket, target bucket, settings) -> (weak reference to the method, runner)
_POOL: OrderedDict[tuple, tuple[Any, _Runner]] = OrderedDict()


def clear() -> None:
    _POOL.clear()


def _runner(model: Any, method: Method, params: list[torch.Tensor], pair: Any, cfg: Any,
            masters: MasterCopies | None, low: list[torch.Tensor]) -> _Runner:
    limit = family_of(model).max_tokens(model.config)  # a bucket past the position table: the exact length instead

    def size(length: int, extra: int = 0) -> int:
        return static.bucket(length) if static.bucket(length) + extra <= limit else length

    family = family_of(model)
    sequence = pair.input_ids.shape[1] + (pair.labels.shape[1] - 1 if not family.encoder_decoder else 0)
    key = (id(model), id(method), size(sequence), size(pair.labels.shape[1], len(family.prefix) if family.encoder_decoder else 0),
           cfg.lr, cfg.clip_norm, cfg.ppl_threshold, cfg.label_smoothing, tuple(id(p) for p in params))
    held = _POOL.get(key)
    if held is not None and held[0]() is method:
        _POOL.move_to_end(key)
        return held[1]
    runner = _Runner(model, method, params, key[2], key[3], cfg, masters, low)
    _POOL[key] = (weakref.ref(method), runner)
    while len(_POOL) > POOL_SIZE:
        _POOL.popitem(last=False)
    return runner


def say_once(method: Method, why: str) -> None:
    """Say in the log, once per method, why its updates run eagerly on a device."""
    if (id(method), why) not in _SAID:
        _SAID.add((id(method), why))
        log.info("update repetitions run eagerly, not as CUDA graphs: %s", why)


def update(model: Any, method: Method, pair: Any, cfg: Any, params: list[torch.Tensor], names: list[str],
           measure_after: bool) -> dict[str, Any]:
    """``simpe.loop.update.update`` of one plain pair on fixed shapes (``reason`` is None): the same record."""
    from simpe.loop.update import _ppl, note_loss, note_rollback

    record: dict[str, Any] = {"loss_before": None, "ppl_before": None, "loss_after": None, "ppl_after": None,
                              "repetitions": 0, "skipped": None}
    low = MasterCopies.needed(params) if cfg.master_copies else []
    masters = master_copies(method) if low else None
    if masters is not None:  # every master current (a weight written since gets a fresh one), the weights as they are
        masters.refresh(low)
    runner = _runner(model, method, params, pair, cfg, masters, low)
    runner.load(pair)
    backward_seconds = 0.0
    parity, stepped = 0, None  # the parity of the last step taken (its backup holds the weights before it)
    for repeat in range(cfg.max_repeats + 1):
        may_step = repeat < cfg.max_repeats
        if not measure_after and record["repetitions"] and repeat == cfg.max_repeats:
            break
        runner.allow.fill_(may_step)
        start = time.perf_counter()
        nll, loss, go, finite, small = runner.run(parity).tolist()  # the repetition's one read
        backward_seconds += time.perf_counter() - start  # the whole repetition: its backward is not timed apart
        if record["repetitions"] and not math.isfinite(nll):  # the last step broke the model: undo it
            if go or not finite:  # (no step this time: go is False for a non-finite loss; undo a NaN write all the same)
                runner.restore(parity)
            runner.restore(stepped)
            note_rollback(record, "non-finite loss")
            break
        note_loss(record, repeat == 0, nll)
        if not may_step or _ppl(nll) <= cfg.ppl_threshold:
            if go or not finite:  # a step the host's rule refuses (just below the threshold: MARGIN), or 0 times a
                runner.restore(parity)  # non-finite gradient (NaN): the weights as before
            break
        if not math.isfinite(nll if cfg.label_smoothing == 0 else loss):
            runner.restore(parity)
            record["skipped"] = "non-finite loss"
            break
        if not finite:
            from simpe.loop.update import _non_finite_gradient

            runner.restore(parity)
            record["skipped"] = f"non-finite gradient in {_non_finite_gradient(names, runner.grads)}"
            break
        record["repetitions"] += 1
        if not small or not runner.first_checked or runner.float16:  # update._sgd_step's bound, or the first step: the weights in full
            from simpe.loop.undo import first_non_finite_tensor

            bad = first_non_finite_tensor(names, [p.detach() for p in params])
            runner.first_checked = runner.first_checked or (small and bad is None)
            if bad is not None:
                runner.restore(parity)
                note_rollback(record, f"non-finite weights in {bad}")
                break
        stepped, parity = parity, 1 - parity
    if masters is not None:  # the weights as the masters' rounding left them: what MasterCopies.enter checks next time
        for p in low:
            masters.left[id(p)] = (p.data.data_ptr(), p._version)
    record["seconds_backward"] = backward_seconds
    return record
