"""``prefer``: a modifier of a parametric method; each update also prefers the post-edit to the segment's MT output.

The loss is DPO's (Rafailov et al. 2023) with the post-edit y_c as the chosen sequence and the segment's own MT output
y_r as the rejected one, both conditioned on the segment's source x, added to the method's own loss:

    L = L_method - log σ(β [(log π(y_c|x) - log π_ref(y_c|x)) - (log π(y_r|x) - log π_ref(y_r|x))])

* **The NLL term** is the method's loss as it is (weight 1, not a parameter): the post-edit's mean token NLL (with
  ``update.label_smoothing`` where set), and what the method's other modifiers add (``replay``'s pairs, ``ewc``'s
  penalty). Contrastive preference optimisation for MT (Xu et al. 2024) also adds the chosen side's NLL at weight 1
  to its preference term; here it also means that a segment without the DPO term steps exactly as the parent does,
  so a comparison against the parent measures the DPO term alone.
* **y_r** is the hypothesis the loop showed for the segment (the MT output the simulated translator post-edits), as
  text, tokenised as the post-edit is (``Context.encode``: the family's target encoding, ending in the stop token),
  so both sides are scored alike. Not a corpus's raw MT (a record's ``mt``): that is another system's output.
* **π_ref** is the model as it was before this segment's update: no copy of the model is kept. Its two sequence
  log-probabilities are taken once per segment, before the first step, under no gradient: at the first repetition
  the model is π_ref itself, so with dropout off (``update.dropout`` 0, every preset's) they are that repetition's
  own forward passes, detached (the chosen one is the update's forward for the NLL term): no extra pass, and the
  first step's term is exactly log 2, its gradient -β/2 (∇log π(y_c|x) - ∇log π(y_r|x)). With dropout the update
  runs in train mode, so π_ref's two log-probabilities are two more passes in eval mode (no dropout) under
  ``torch.no_grad``. The later repetitions (up to ``update.max_repeats``) compare the moved model with that
  reference.
* **A sequence's log-probability** is the sum of its token log-probabilities, not the mean: DPO's implicit reward
  is β log π(y|x)/π_ref(y|x) of the whole sequence, whose probability is the product of its tokens'; a mean would
  be another objective (length-normalised, as in SimPO), and the two sides' lengths differ. The log-probabilities
  are the plain ones: label smoothing regularises the NLL term only, and dropout, when set, applies to the policy's
  passes as it does to the NLL term's, never to π_ref's.
* **The perplexity rule** reads the post-edit's NLL alone, as for every method: a post-edit already at or below
  ``update.ppl_threshold`` takes no step, and then no DPO term is computed (nothing more is spent on it);
  otherwise each repetition's step carries the term, until the post-edit's perplexity is at or below the threshold,
  at most ``update.max_repeats`` steps.
* **Skipped** (the DPO term only; the step is then the parent's) when the MT output equals the post-edit, as text or
  as the tokens scored: there is nothing to prefer. The record says ``preference_skipped``; summary.json's
  ``updates`` count ``preferred`` and ``preference_skipped`` segments. A warm start's batches and ``tune-retrieve``'s
  matches have no MT output: the update steps on them without the term.

β (``beta``, default ``BETA``): below.

Cost per segment that takes a step: the MT output's forward and backward pass at each repetition, as one more pair
in the batch (``Footprint.update_pairs``), and with dropout π_ref's two forward passes once
(``Footprint.segment_passes``). The modifier keeps no state between segments: nothing in the resume state or the
per-user store (the adapted tensors are the method's own).

Records (the segment's ``update``): ``preference_margin``, log π(y_c|x) - log π(y_r|x) under π_ref (nats; negative
where the model preferred its own output, as beam search's output usually is); ``preference_loss``, the DPO term
at the last step taken (log 2 at a first step without dropout); ``preference_skipped``, why the term was left out.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import Context, Footprint, Method, RunShape
from simpe.methods.compose import MODIFIERS, Modifier
from simpe.model import eval_mode, teacher_forced_logits

# β: the sharpness of DPO's sigmoid and the scale of its gradient. 0.1 is the value Rafailov et al. (2023) use in
# most of their experiments. Here it also balances the two terms: the NLL term is a mean over the post-edit's
# tokens, the DPO term is on summed log-probabilities, so at the first step the DPO gradient on the post-edit is
# β/2·T times the NLL term's (T its tokens), and as much again pushes the MT output down; on the scalc stream's
# post-edits of about 21 tokens β = 0.1 weighs them about equally (β/2·21 ≈ 1). The update's per-tensor clipping
# bounds the step whatever β is. To be chosen on the dev split (schart) only, never on the stream reported on or on
# smath (docs/methods.md gives the check made).
BETA = 0.1
SKIPPED = "the MT output equals the post-edit"


def sequence_logprob(model: Any, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """log π(labels | input_ids): the sum of the plain token log-probabilities of ``labels`` (1, len) given
    ``input_ids`` (1, src_len) and the family's target prefix; () float32, with its graph where one is recorded."""
    logits = teacher_forced_logits(model, input_ids, labels)  # (1, len, vocab)
    return -torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)).float(), labels.view(-1), reduction="sum")


def dpo_loss(chosen: torch.Tensor, rejected: torch.Tensor, ref_chosen: torch.Tensor | float,
             ref_rejected: torch.Tensor | float, beta: float) -> torch.Tensor:
    """DPO's loss (Rafailov et al. 2023, eq. 7) of one pair: -log σ(β [(chosen - ref_chosen) - (rejected -
    ref_rejected)]), the four being sequence log-probabilities (the policy's with their graphs, the reference's
    constants). Its gradient is -β σ(-β m) (∇chosen - ∇rejected), m the bracket: -β/2 (∇chosen - ∇rejected) where
    the policy is the reference."""
    margin = (chosen - ref_chosen) - (rejected - ref_rejected)  # ()
    return -torch.nn.functional.logsigmoid(beta * margin)


@MODIFIERS.add("prefer")
class PreferModifier(Modifier):
    """DPO (Rafailov et al. 2023) beside the method's NLL: the post-edit chosen, the segment's MT output rejected."""

    parametric_only = True

    def __init__(self, beta: float = BETA) -> None:
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not math.isfinite(beta) or beta <= 0:
            raise ConfigError(f"prefer beta must be a finite number > 0, got {beta!r}")
        self.beta = float(beta)
        self._encode: Any = None
        # the segment being updated: (its pair, the MT output's labels, π_ref's log-probabilities of the post-edit and
        # of the MT output); None while no segment is, or when the segment's term is skipped
        self._segment: tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None

    def prepare(self, context: Context, resume: bool = False) -> None:
        self._encode = context.encode

    def _begin(self, pair: Any, hypothesis: str, logprob: torch.Tensor) -> None:
        """Before the segment's first step: the MT output's labels and π_ref's log-probabilities (None: skipped)."""
        self._segment = None
        if hypothesis == pair.reference:
            return
        if self._encode is None:
            raise ModelError("prefer was not prepared (Method.prepare) before its first update")
        rejected = self._encode(pair.source, hypothesis).labels.to(pair.labels.device)  # (1, mt_len)
        if torch.equal(rejected, pair.labels):
            return
        if self.model.training:  # dropout: π_ref is the model without it
            with torch.no_grad(), eval_mode(self.model):
                ref_chosen = sequence_logprob(self.model, pair.input_ids, pair.labels)
                ref_rejected: torch.Tensor | None = sequence_logprob(self.model, pair.input_ids, rejected)
        else:  # the first repetition's own passes are π_ref's (the rejected one is taken in segment_term)
            ref_chosen, ref_rejected = logprob.detach(), None
        self._segment = (pair, rejected, ref_chosen, ref_rejected)

    def segment_term(self, pair: Any, hypothesis: str, logprob: torch.Tensor,
                     repetition: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        if repetition == 0:
            self._begin(pair, hypothesis, logprob)
            if self._segment is None:
                return None, {"preference_skipped": SKIPPED}
        if self._segment is None:
            return None, {}  # skipped at its first step
        held, rejected, ref_chosen, ref_rejected = self._segment
        assert held is pair, "prefer's term was asked for a later step of a segment it did not begin"
        policy_rejected = sequence_logprob(self.model, pair.input_ids, rejected)  # ()
        if ref_rejected is None:
            ref_rejected = policy_rejected.detach()
            self._segment = (held, rejected, ref_chosen, ref_rejected)
        term = dpo_loss(logprob, policy_rejected, ref_chosen, ref_rejected, self.beta)  # ()
        facts = {"preference_loss": float(term.detach())}
        if repetition == 0:
            facts["preference_margin"] = float(ref_chosen - ref_rejected)
        return term, facts

    def after_segment(self, pair: Any) -> None:
        self._segment = None  # the segment's tensors are not kept beyond it

    def footprint(self, method: Method, shape: RunShape) -> Footprint:
        """The MT output's forward and backward pass at each repetition, as one more pair in the update's batch; with
        dropout (``update.dropout`` > 0) π_ref's two forward passes once per segment. No state: the reference's
        log-probabilities are four numbers a segment."""
        dropout = getattr(getattr(method, "update", None), "dropout", 0.0) or 0.0
        return Footprint(update_pairs=1, segment_passes=2 if dropout > 0 else 0)

    def describe(self) -> dict[str, Any]:
        return {"beta": self.beta}
