"""``ewc``: a modifier of a parametric method; elastic weight consolidation (Kirkpatrick et al. 2017).

Each update's loss gets the penalty λ·Σ F·(θ − θ₀)² over the method's trainable tensors: θ₀ their values before the
first segment (after any warm start), F the diagonal of the empirical Fisher information at θ₀, estimated once as
the mean over ``sentences`` pairs of the squared gradient of each pair's mean token NLL (teacher-forced, no
dropout). The pairs are drawn with the run's seed from the dataset's ``split`` (``train``, the default;
``train-sample``, the LibreOffice corpus's shipped 200 pairs of train, which the presets read so that a clone without
the train split estimates the same Fisher; ``dev`` without the forgetting probe's and the ranking probe's sentences)
through the loop's ``Context.sentences``, which refuses the stream and the reserved splits (``smath``, ``sdatabase``)
and names a split that is missing. A tensor moved away from θ₀ where the
general-domain loss is sensitive (large F) is pulled back; one the Fisher finds unimportant moves freely.

The Fisher (one float32 value per trainable value) is part of the resume state, so a resumed run penalises with the
Fisher the run estimated, without the training split; θ₀ is taken again on a resume (the base model, and the warm
start, are made again before the checkpoint is loaded). Neither is part of the per-user store: the adapted tensors
are the method's own.
"""
from __future__ import annotations

import logging
import time
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import Context, Footprint, Method, RunShape, check_finite
from simpe.methods.compose import MODIFIERS, Modifier
from simpe.model import eval_mode, teacher_forced_logits

logger = logging.getLogger(__name__)

SPLITS = ("train", "train-sample", "dev")
FISHER = "fisher."  # state entries: fisher.<tensor name>
# λ, chosen on the first 300 scalc segments of the demo model with full (update.lr 0.01): the mean Fisher there is
# 1.65e-5, so one SGD step pulls a parameter of mean Fisher back by lr·2λF̄ of its drift: 0.03 % at λ = 1,000 (held-out
# BLEU and stream BLEU within noise of λ = 0), 3.3 % at 1e5, 33 % at 1e6 and 330 % at 1e7 (past SGD's bound of 200 %:
# clipping alone keeps it finite; stream R1 -7 % relative). At 1e6 the held-out BLEU after 300 segments came back from
# 32.7 (λ = 0) to 33.3 (no adaptation: 33.7) with stream BLEU 50.5 against 49.7. Parameters of more than 6x the mean
# Fisher get a step past the bound at 1e6; the update's clipping bounds them.
WEIGHT = 1e6
# Bytes per trainable value the penalty reads and writes in float32 at each step (counted from penalty_gradient's
# operations, not measured): θ - θ₀ (reads 8, writes 4), F·(θ - θ₀) (8, 4), its product with θ - θ₀ for the value (8,
# 4) and that product's sum (4), the gradient's update g += 2λ·F·(θ - θ₀) (8, 4). Below float32 the two casts to
# float32 read a weight and write 4 more each.
PENALTY_BYTES = 56


@MODIFIERS.add("ewc")
class EwcModifier(Modifier):
    """λ·Σ F·(θ − θ₀)² added to the update's loss (its gradient added to the loss's: ``penalty_gradient``); F the
    diagonal empirical Fisher on ``sentences`` pairs of ``split``."""

    parametric_only = True

    def __init__(self, weight: float = WEIGHT, sentences: int = 200, split: str = "train") -> None:
        if not weight >= 0:
            raise ConfigError(f"ewc weight must be >= 0, got {weight}")
        if isinstance(sentences, bool) or not isinstance(sentences, int) or sentences < 1:
            raise ConfigError(f"ewc sentences must be an integer >= 1, got {sentences!r}")
        if split not in SPLITS:
            raise ConfigError(f"ewc split must be one of {', '.join(SPLITS)} (never the stream or the reserved splits), "
                              f"got {split!r}")
        self.weight, self.sentences, self.split = float(weight), sentences, split
        self.fisher: dict[str, torch.Tensor] = {}
        self.anchor: dict[str, torch.Tensor] = {}
        self.estimated_on = 0

    def sentences_needed(self) -> list[tuple[str, int]]:
        return [(self.split, self.sentences)]

    def prepare(self, context: Context, resume: bool = False) -> None:
        params = self.method.trainable()
        self.anchor = {name: p.detach().clone() for name, p in params.items()}  # θ₀
        if resume:
            return  # the Fisher comes with the checkpoint's state
        pairs = context.sentences(self.split, self.sentences)
        if not pairs:
            raise ConfigError(f"ewc found no {self.split} sentences to estimate the Fisher information on")
        start = time.perf_counter()
        self.fisher = estimate_fisher(self.model, params, [context.encode(s, r) for s, r in pairs])
        self.estimated_on = len(pairs)
        logger.info("ewc: diagonal Fisher on %d %s pairs in %.1f s (mean %.3g)", len(pairs), self.split,
                    time.perf_counter() - start, _mean(self.fisher))

    def penalty_gradient(self, grads: dict[str, torch.Tensor]) -> float | None:
        """λ·Σ F·(θ − θ₀)² at the weights as they are, its gradient 2λ·F·(θ − θ₀) added to ``grads`` (float32 sums).

        Written out rather than differentiated by autograd: no graph of a cast, a difference, a square, a product and
        a sum per trainable tensor to build and run backward, but five foreach passes (on a GPU a few launches for
        all tensors). On the CPU both are bound by memory bandwidth: written out, a full+ewc segment of the demo model
        took 7 % less time (2026-11-28, docs/changelog.md), and the penalty is still about a quarter of it. The
        gradient is the one autograd gives, summed with the loss's in float32 (autograd summed a bfloat16 model's in
        bfloat16)."""
        if not self.fisher or self.weight == 0.0:
            return None
        params = self.method.trainable()
        names = [name for name in self.fisher if name in grads and params[name].requires_grad]
        if not names:
            return None
        theta = [params[name].detach() for name in names]
        anchor = [self.anchor[name] for name in names]
        if any(t.dtype != torch.float32 for t in theta):
            theta, anchor = [t.float() for t in theta], [a.float() for a in anchor]
        drift = torch._foreach_sub(theta, anchor)  # θ − θ₀, float32
        pulled = torch._foreach_mul(drift, [self.fisher[name] for name in names])  # F·(θ − θ₀)
        # Σ F·(θ − θ₀)² as the L1 norms of its non-negative terms (one foreach pass; torch has no foreach sum)
        value = torch.stack(torch._foreach_norm(torch._foreach_mul(pulled, drift), 1)).sum() * self.weight
        torch._foreach_add_([grads[name] for name in names], pulled, alpha=2.0 * self.weight)
        return float(value)

    def footprint(self, method: Method, shape: RunShape) -> Footprint:
        """The Fisher information (float32) and the anchor θ₀ (at the weights' dtype), one value each per value of the
        method's trainable tensors; while the update steps, the float32 difference θ - θ₀ and F·(θ - θ₀) (the
        penalty's gradient); the penalty's passes over them at each step (``PENALTY_BYTES``:
        ``Footprint.penalty_bytes``); the Fisher's forward and backward pass on each of its ``sentences`` pairs, once."""
        adapted = method.adapted_values()
        casts = 0 if shape.weight == 4 else 2 * (shape.weight + 4)
        return Footprint(state=adapted * (4 + shape.weight), update_bytes=adapted * 4 * 2,
                         penalty_bytes=adapted * (PENALTY_BYTES + casts), prepare_passes=self.sentences)

    def describe(self) -> dict[str, Any]:
        return {"weight": self.weight, "sentences": self.estimated_on or self.sentences, "split": self.split,
                "fisher_mean": _mean(self.fisher)}

    # ---- resume: the Fisher (not part of the per-user store)
    def state_dict(self) -> dict[str, torch.Tensor]:
        return {FISHER + name: f.clone() for name, f in self.fisher.items()}

    def check_state(self, state: dict[str, Any]) -> None:
        params = self.method.trainable()
        expected = {FISHER + name for name in params}
        if set(state) != expected:
            got = sorted(state)
            raise ModelError(f"holds {', '.join(got[:3]) or 'nothing'}{' ...' if len(got) > 3 else ''}; ewc on this method "
                             f"resumes from the Fisher of its {len(params)} trainable tensors ({FISHER}<name>)")
        for key, value in state.items():
            param = params[key[len(FISHER):]]
            if not isinstance(value, torch.Tensor) or value.shape != param.shape or not value.is_floating_point():
                raise ModelError(f"holds {key} that is not a float tensor of shape {tuple(param.shape)}")
            check_finite(key, value)

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        params = self.method.trainable()
        self.fisher = {key[len(FISHER):]: value.to(params[key[len(FISHER):]].device, torch.float32).clone()
                       for key, value in state.items()}
        self.estimated_on = self.estimated_on or self.sentences


def _mean(fisher: dict[str, torch.Tensor]) -> float | None:
    total = sum(f.numel() for f in fisher.values())
    return float(sum(float(f.sum()) for f in fisher.values()) / total) if total else None


def estimate_fisher(model: Any, params: dict[str, torch.nn.Parameter], pairs: list[Any]) -> dict[str, torch.Tensor]:
    """The diagonal empirical Fisher: name -> mean over ``pairs`` of (∂ mean-token NLL / ∂θ)², float32, shaped as θ."""
    names = [name for name, p in params.items() if p.requires_grad]
    tensors = [params[name] for name in names]
    fisher = [torch.zeros(p.shape, dtype=torch.float32, device=p.device) for p in tensors]  # shaped as each θ
    with eval_mode(model):
        for pair in pairs:
            logits = teacher_forced_logits(model, pair.input_ids, pair.labels)  # (1, tgt_len, vocab)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)).float(), pair.labels.view(-1))
            grads = torch.autograd.grad(loss, tensors, allow_unused=True)
            for acc, grad in zip(fisher, grads):
                if grad is not None:
                    acc.addcmul_(grad.float(), grad.float())
    return {name: acc.div_(len(pairs)) for name, acc in zip(names, fisher)}
