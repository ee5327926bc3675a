"""``lasso``: L1/L2 group lasso on the offsets from the base weights, within a budget.

Simianer et al. (2019) (after Wuebker et al. 2018): every parameter takes the SGD step; then a
proximal step shrinks each group's offset δ_g = θ_g - θ0_g by the group lasso penalty,
δ_g ← δ_g · max(0, 1 - lr·λ·sqrt(|g|) / ||δ_g||); then only the largest groups (by
||δ_g||, greedily) within the budget keep their offsets and every other group is reset
to its base value exactly. Groups are whole tensors outside the embeddings and rows
inside embedding matrices; the second output bias (``bias``) is always kept and is not
penalised. Budgets are fractions of the model's parameter count. The step size ``lr`` of the
proximal step is the shared update's (``update.lr``), handed to ``step``. The step is
computed only where it changes something (the groups in the budget before or after it): the
rest of the model is never read or written, which keeps lasso's step cheaper than full's.

What the paper leaves open: which of several equally large groups the budget keeps. Ties are
not rare: on the first segment every clipped tensor's step has norm ``lr`` exactly, so every
tensor of one size has the same shrunk norm, and a greedy budget that compares those floats
keeps whichever group the last rounding bit favours (another CPU kernel set, another thread
count: another selection, another run). simpe compares the norms with ``simpe.ties``'
tolerance (1e-5 relative): groups tied there are ranked by the norm of their unclipped
gradient (the group that wanted to move most), then by name; embedding rows tied at the cut by
their unclipped gradient row norm, then by matrix and row.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import INDEX_BYTES, METHODS, Footprint, Method, RunShape, base_parameters, embedding_names
from simpe.methods.bias import OUTPUT_BIAS, attach_output_bias
from simpe.storefile import rows_entry
from simpe.ties import rank, top


@METHODS.add("lasso")
class LassoMethod(Method):
    """Group lasso on the offsets from the base weights, within a budget."""
    store_markers = (OUTPUT_BIAS,)  # beside its kept rows and dense tensors: a store of the bias alone may be bias's too

    def __init__(self, penalty: float = 1e-3, budget_nonembedding: float = 0.025, budget_embedding: float = 0.025) -> None:
        for key, value in (("penalty", penalty), ("budget_nonembedding", budget_nonembedding), ("budget_embedding", budget_embedding)):
            if value < 0:
                raise ConfigError(f"lasso {key} must be >= 0, got {value}")
        self.penalty = penalty
        self.budget_fractions = (budget_nonembedding, budget_embedding)

    def select(self, model):
        params = base_parameters(model)
        total = sum(p.numel() for p in params.values())
        self.budget_tensor = int(self.budget_fractions[0] * total)
        self.budget_rows = int(self.budget_fractions[1] * total)
        embeddings = embedding_names(model)
        self.tensors = {n: p for n, p in params.items() if n not in embeddings}
        self.embeddings = {n: p for n, p in params.items() if n in embeddings}
        self.base = {n: p.detach().clone() for n, p in params.items()}
        self.kept_tensors: list[str] = []
        self.kept_rows: dict[str, torch.Tensor] = {n: torch.zeros(0, dtype=torch.long) for n in self.embeddings}
        self._planned = None  # (the gradients, the plan of their step): see _plan
        bias = attach_output_bias(model)
        return {**params, OUTPUT_BIAS: bias}

    @torch.no_grad()
    def _plan(self, grads, lr):
        """The step's plan, made once per step (the update asks the hints, then steps, with the same ``grads``):
        (name -> (tensor, gradient, step size lr·scale, step norm lr·scale·||g||, unclipped gradient norm ||g||),
        the shrink lr·penalty, the tensors kept before, the tensors kept after with their shrink factors, the
        offsets measured, the rows chosen)."""
        if self._planned is not None and self._planned[0] is grads:
            return self._planned[1]
        trainable = self.trainable()
        shrink = lr * self.penalty  # the proximal step of an SGD step of size lr
        step = {name: (trainable[name], grad, lr * grads.scales[name], lr * grads.norms[name],
                       grads.norms[name] / grads.scales[name] if grads.scales[name] > 0 else 0.0)
                for name, grad in grads.items()}
        previous = set(self.kept_tensors)
        kept, offsets = self._choose_tensors(step, shrink, previous)
        rows = self._choose_rows(step, shrink) if self.embeddings else {}
        plan = (step, previous, kept, offsets, rows)
        self._planned = (grads, plan)
        return plan

    def changed_tensors(self, grads, lr):
        """The bias term and the tensors in the budget before or after the step."""
        step, previous, kept, _, _ = self._plan(grads, lr)
        plain = [name for name in step if name not in self.tensors and name not in self.embeddings]  # the bias term
        return plain + sorted(previous | kept.keys())

    def changed_rows(self, grads, lr):
        """The embedding rows in the budget before or after the step, not whole matrices."""
        rows = self._plan(grads, lr)[4]
        return {name: torch.cat([now, gone]) for name, (now, gone, _) in rows.items() if len(now) or len(gone)}

    @torch.no_grad()
    def step(self, grads, lr) -> None:
        """The SGD step, the proximal step and the budget, computed where they change something.

        The same result as stepping every tensor, shrinking every offset and resetting the groups
        outside the budget, without touching most of the model: a group outside the budget holds
        its base values exactly (the invariant this method keeps), so after the SGD step its
        offset is -lr·g and its norm lr·||g||, known from the gradient norms without a pass over
        the weights. Only the groups in the budget before or after the step are read and written.
        (Those norms can differ from a norm of the stepped weights minus the base in the last
        float bits; the budget compares them with ``simpe.ties``' tolerance, so the groups kept
        are the same.)
        """
        step, previous, kept, offsets, rows = self._plan(grads, lr)
        self._planned = None
        for name in step:  # plain SGD, no penalty: the bias term
            if name not in self.tensors and name not in self.embeddings:
                step[name][0].add_(step[name][1], alpha=-step[name][2])
        # (the tensors are many and mostly small: each operation below is one foreach call over them, which runs
        # the same per-tensor kernel as a loop of calls would, without a Python round trip per tensor)
        gone = [name for name in self.tensors if name in previous and name not in kept]
        if gone:  # out of the budget now: back to the base values exactly
            torch._foreach_copy_([self.tensors[n] for n in gone], [self._base(n) for n in gone])
        offsets.update(self._offsets([name for name in kept if name not in offsets], step))
        if kept:  # θ ← θ0 + factor · (θ - lr·g - θ0), the proximal step of the group lasso
            new = [offsets[name] for name in kept]
            torch._foreach_mul_(new, list(kept.values()))
            torch._foreach_add_(new, [self._base(name) for name in kept])
            torch._foreach_copy_([self.tensors[name] for name in kept], new)
        self.kept_tensors = sorted(kept)
        for name, (now, gone, factors) in rows.items():
            weight, base = self.embeddings[name], self.base[name]  # rows converted where a dtype must match
            if len(gone):
                weight[gone] = base[gone].to(weight.dtype)
            if len(now):
                grad, rate = step[name][1:3] if name in step else (None, 0.0)
                offset = self._offset(weight[now], base[now], None if grad is None else grad[now], rate)  # (kept, dim)
                weight[now] = offset.mul_(factors[now].unsqueeze(1)).add_(base[now])
            self.kept_rows[name] = now.cpu()

    def _offsets(self, names, step):
        """{name: (θ - rate·g) - θ0} of the named tensors outside the embeddings, as ``_offset`` computes each
        (new tensors; the weights are not changed), in a few foreach calls: one per step size."""
        stepped, by_rate = {}, {}
        for name in names:
            if name in step:
                by_rate.setdefault(step[name][2], []).append(name)
            else:
                stepped[name] = self.tensors[name].clone()
        for rate, group in by_rate.items():  # torch.add(θ, g, alpha=-rate) per tensor
            stepped.update(zip(group, torch._foreach_add([self.tensors[n] for n in group], [step[n][1] for n in group],
                                                         alpha=-rate)))
        offsets = {name: stepped[name] for name in names}
        if offsets:
            torch._foreach_sub_(list(offsets.values()), [self._base(name) for name in offsets])
        return offsets

    def _base(self, name: str) -> torch.Tensor:
        """The base value of ``name`` at the dtype the step sees it in: float32 under the update's master copies of a
        bfloat16 / float16 model (``simpe.loop.masters.MasterCopies``: the base is kept at the model's dtype, converted
        exactly, and only for the groups a step touches), else the base itself."""
        base, dtype = self.base[name], self._trainable[name].dtype
        return base if base.dtype == dtype else base.to(dtype)

    def _offset(self, param, base, grad, rate):
        """(θ - rate·g) - θ0, the offset after the SGD step of size ``rate`` (a new tensor; ``param`` is not changed)."""
        stepped = param.clone() if grad is None else torch.add(param, grad, alpha=-rate)
        return stepped.sub_(base)

    def _choose_tensors(self, step, shrink, previous):
        """Tensors outside the embeddings, one group each: ({kept name: shrink factor}, {name: offset measured})."""
        # the tensors holding an offset already: measure the stepped one exactly (below, in one pass)
        offsets = self._offsets([name for name in self.tensors if name in previous], step)
        # at their base values: the offset is the step alone
        norms = {name: step[name][3] if name in step else 0.0 for name in self.tensors if name not in previous}
        if offsets:
            norms.update(zip(offsets, torch.stack(torch._foreach_norm(list(offsets.values()))).tolist()))
        shrunk = {}
        for name, norm in norms.items():
            factor = max(0.0, 1.0 - shrink * math.sqrt(self.tensors[name].numel()) / max(norm, 1e-30)) if norm > 0 else 0.0
            shrunk[name] = (norm * factor, factor)
        names = list(self.tensors)
        # the largest first, greedily; norms tied to rounding noise: the larger unclipped gradient, then the name
        order = rank([shrunk[n][0] for n in names], [step[n][4] if n in step else 0.0 for n in names], key=names)
        kept, used = {}, 0
        for name in (names[i] for i in order):
            size = self.tensors[name].numel()
            if shrunk[name][0] > 0 and used + size <= self.budget_tensor:
                kept[name] = shrunk[name][1]
                used += size
        return kept, offsets

    def _choose_rows(self, step, shrink):
        """Embedding matrices, one group per row, one budget for the rows of all of them:
        {name: (rows kept now, rows that held an offset and are out now, (rows,) shrink factors)}."""
        norms, before, wanted = {}, {}, {}
        for name, weight in self.embeddings.items():
            grad, rate = step[name][1:3] if name in step else (None, 0.0)
            rows = self.kept_rows[name].to(weight.device)  # (kept,) rows holding an offset
            # rows at their base values: the offset is the step alone; rows holding one: measured exactly
            wanted[name] = grad.norm(dim=1) if grad is not None else weight.new_zeros(weight.size(0))  # (rows,) unclipped
            row_norms = wanted[name] * rate  # (rows,)
            if len(rows):
                offset = self._offset(weight[rows], self.base[name][rows], None if grad is None else grad[rows], rate)  # (kept, dim)
                row_norms[rows] = offset.norm(dim=1)
            norms[name], before[name] = row_norms, rows
        dim = next(iter(self.embeddings.values())).size(1)
        factors = {name: (1.0 - shrink * math.sqrt(dim) / n.clamp(min=1e-30)).clamp(min=0.0) for name, n in norms.items()}  # (rows,)
        joint = torch.cat([norms[name] * factors[name] for name in self.embeddings])  # (all rows,)
        max_rows = min(self.budget_rows // dim, int((joint > 0).sum()))
        keep = torch.zeros(joint.numel(), dtype=torch.bool, device=joint.device)  # (all rows,)
        if max_rows > 0:  # rows tied at the cut: the larger unclipped gradient row, then matrix and row order
            keep[top(joint, max_rows, tiebreak=torch.cat([wanted[name] for name in self.embeddings]))] = True
        chosen = {}
        for name, mask in zip(self.embeddings, keep.split([w.size(0) for w in self.embeddings.values()])):
            chosen[name] = (mask.nonzero().flatten(), before[name][~mask[before[name]]], factors[name])  # (kept now,), (out now,)
        return chosen

    def kept_names(self) -> list[str]:
        return self.kept_tensors

    def adapted_parameters(self) -> int:
        rows = sum(len(r) * self.embeddings[n].size(1) for n, r in self.kept_rows.items())
        tensors = sum(self.tensors[n].numel() for n in self.kept_tensors)
        return tensors + rows + self._trainable[OUTPUT_BIAS].numel()

    def store_bytes(self) -> int:
        itemsize = self._trainable[OUTPUT_BIAS].element_size()
        rows = sum(len(r) for r in self.kept_rows.values())
        return self.adapted_parameters() * itemsize + rows * INDEX_BYTES

    def export_store(self) -> dict[str, torch.Tensor]:
        """The kept tensors (dense), the kept embedding rows with their int32 indices, and the second bias."""
        store = {n: self.tensors[n].detach().cpu().contiguous() for n in self.kept_tensors}
        for name, rows in self.kept_rows.items():
            if len(rows):
                store.update(rows_entry(name, self.embeddings[name], rows))
        store[OUTPUT_BIAS] = self._trainable[OUTPUT_BIAS].detach().cpu().contiguous()
        return store

    def load_store(self, model, tensors):
        attach_output_bias(model)
        super().load_store(model, tensors)

    def footprint(self, shape: RunShape) -> Footprint:
        """The copy of the base weights the offsets are measured from, at the weights' dtype; and the step's new
        values: each adapted group is written into a new tensor before the old one is dropped (measured at float32),
        while under master copies the float32 masters take the step and no such copy shows in the peaks measured
        (NLLB-600M, Llama 3.2 1B)."""
        base = sum(p.numel() for p in self.base.values())
        return Footprint(state=base * shape.weight + self.adapted_values() * (4 if shape.masters else shape.weight))

    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": len(self._trainable), "kept_tensors": list(self.kept_tensors),
                "kept_embedding_rows": {n: len(r) for n, r in self.kept_rows.items()},
                "budget_nonembedding": self.budget_tensor, "budget_embedding": self.budget_rows}

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["__kept_tensors__"] = list(self.kept_tensors)
        state["__kept_rows__"] = {n: r.clone() for n, r in self.kept_rows.items()}
        return state

    def check_state(self, state: Any) -> None:
        if not isinstance(state, dict) or "__kept_tensors__" not in state or "__kept_rows__" not in state:
            raise ModelError("lacks lasso's kept tensors and rows (__kept_tensors__, __kept_rows__)")
        state = dict(state)
        kept, rows = state.pop("__kept_tensors__"), state.pop("__kept_rows__")
        if not isinstance(kept, list) or not all(isinstance(name, str) and name in self._trainable for name in kept):
            raise ModelError("names kept tensors that are not lasso's trainable tensors on this model")
        if not isinstance(rows, dict) or not all(isinstance(name, str) and name in self._trainable for name in rows):
            raise ModelError("names kept embedding rows of tensors that are not lasso's trainable tensors on this model")
        for name, indices in rows.items():
            if not isinstance(indices, torch.Tensor) or indices.is_floating_point() or indices.dim() != 1:
                raise ModelError(f"holds the kept rows of {name} as something other than a 1-D integer tensor")
            size = self._trainable[name].size(0)
            if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= size):
                raise ModelError(f"keeps rows of {name} outside its {size} rows")
        super().check_state(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = dict(state)
        self.kept_tensors = state.pop("__kept_tensors__")
        self.kept_rows = state.pop("__kept_rows__")
        super().load_state_dict(state)
