"""``lasso``: L1/L2 group lasso on the offsets from the base weights, within a budget.

Seed 002 (after Wuebker et al. 2018): every parameter takes the SGD step; then a
proximal step shrinks each group's offset δ_g = θ_g - θ0_g by the group lasso penalty,
δ_g ← δ_g · max(0, 1 - lr·λ·sqrt(|g|) / ||δ_g||); then only the largest groups (by
||δ_g||, greedily) within the budget keep their offsets and every other group is reset
to its base value exactly. Groups are whole tensors outside the embeddings and rows
inside embedding matrices; the second output bias (``bias``) is always kept and is not
penalised. Budgets are fractions of the model's parameter count. The step size ``lr`` of the
proximal step is the shared update's (``update.lr``), handed over by ``attach``.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ConfigError
from simpe.methods.base import INDEX_BYTES, METHODS, Method, base_parameters, is_embedding, rows_entry
from simpe.methods.bias import OUTPUT_BIAS, attach_output_bias


@METHODS.add("lasso")
class LassoMethod(Method):
    """Group lasso on the offsets from the base weights, within a budget."""

    def __init__(self, penalty: float = 1e-3, budget_nonembedding: float = 0.025, budget_embedding: float = 0.025) -> None:
        for key, value in (("penalty", penalty), ("budget_nonembedding", budget_nonembedding), ("budget_embedding", budget_embedding)):
            if value < 0:
                raise ConfigError(f"lasso {key} must be >= 0, got {value}")
        self.penalty = penalty
        self.budget_fractions = (budget_nonembedding, budget_embedding)

    def select(self, model, model_dir):
        params = base_parameters(model)
        total = sum(p.numel() for p in params.values())
        self.budget_tensor = int(self.budget_fractions[0] * total)
        self.budget_rows = int(self.budget_fractions[1] * total)
        self.tensors = {n: p for n, p in params.items() if not is_embedding(n, p)}
        self.embeddings = {n: p for n, p in params.items() if is_embedding(n, p)}
        self.base = {n: p.detach().clone() for n, p in params.items()}
        self._cache = None  # the buffers of after_update, built at its first call
        self.kept_tensors: list[str] = []
        self.kept_rows: dict[str, torch.Tensor] = {n: torch.zeros(0, dtype=torch.long) for n in self.embeddings}
        bias = attach_output_bias(model)
        return {**params, OUTPUT_BIAS: bias}

    @torch.no_grad()
    def after_update(self) -> None:
        shrink = self.update.lr * self.penalty  # the proximal step of an SGD step of size lr
        # tensors outside the embeddings: one group each (foreach ops: one pass per step, no Python loop over data)
        names, params, bases, offsets, sizes = self._groups()
        torch._foreach_copy_(offsets, params)
        torch._foreach_sub_(offsets, bases)  # θ - θ0 into reused buffers (the same arithmetic as _foreach_sub)
        norms = torch.stack(torch._foreach_norm(offsets))  # (tensors,)
        factors = (1.0 - shrink * sizes.sqrt() / norms.clamp(min=1e-30)).clamp(min=0.0)  # (tensors,)
        factors = torch.where(norms > 0, factors, torch.zeros_like(factors))
        kept_norms = (norms * factors).tolist()
        order = sorted(range(len(names)), key=lambda i: (-kept_norms[i], names[i]))
        kept, used = [], 0
        for i in order:
            size = params[i].numel()
            if kept_norms[i] > 0 and used + size <= self.budget_tensor:
                kept.append(i)
                used += size
        kept_set = set(kept)
        dropped = [i for i in range(len(names)) if i not in kept_set]
        if dropped:  # reset to the base values exactly (a copy, not base + 0 * offset)
            torch._foreach_copy_([params[i] for i in dropped], [bases[i] for i in dropped])
        if kept:  # θ ← θ0 + factor · (θ - θ0), the proximal step of the group lasso
            kept_offsets = [offsets[i] for i in kept]
            torch._foreach_mul_(kept_offsets, [factors[i] for i in kept])
            torch._foreach_add_(kept_offsets, [bases[i] for i in kept])
            torch._foreach_copy_([params[i] for i in kept], kept_offsets)
        self.kept_tensors = sorted(names[i] for i in kept)
        # embedding matrices: one group per row; rows of all embedding matrices share one budget
        if not self.embeddings:
            return
        deltas, row_factors, row_norms_all = {}, {}, []
        for name, weight in self.embeddings.items():
            deltas[name] = torch.sub(weight, self.base[name], out=self._row_buffers[name])  # (rows, dim)
            row_norms = deltas[name].norm(dim=1)  # (rows,)
            factor = (1.0 - shrink * math.sqrt(weight.size(1)) / row_norms.clamp(min=1e-30)).clamp(min=0.0)  # (rows,)
            row_factors[name] = factor
            row_norms_all.append(row_norms * factor)
        joint = torch.cat(row_norms_all)  # (all rows,)
        dim = next(iter(self.embeddings.values())).size(1)
        max_rows = min(self.budget_rows // dim, int((joint > 0).sum()))
        keep = torch.zeros(joint.numel(), dtype=torch.bool, device=joint.device)  # (all rows,)
        if max_rows > 0:
            keep[torch.topk(joint, k=max_rows).indices] = True
        sizes_rows = [w.size(0) for w in self.embeddings.values()]
        for (name, weight), mask in zip(self.embeddings.items(), keep.split(sizes_rows)):
            base = self.base[name]
            shrunk = deltas[name].mul_(row_factors[name].unsqueeze(1)).add_(base)  # (rows, dim): θ0 + factor · (θ - θ0), in place
            torch.where(mask.unsqueeze(1), shrunk, base, out=weight)
            self.kept_rows[name] = mask.nonzero().flatten().cpu()

    def _groups(self) -> tuple[list[str], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """The non-embedding groups, their bases, reused offset buffers and sizes (built once: the step runs after every update)."""
        if getattr(self, "_cache", None) is None:
            names = list(self.tensors)
            params = [self.tensors[n] for n in names]
            offsets = [torch.empty_like(p) for p in params]
            sizes = torch.tensor([p.numel() for p in params], dtype=params[0].dtype if params else torch.float32,
                                 device=params[0].device if params else None)  # (tensors,)
            self._cache = (names, params, [self.base[n] for n in names], offsets, sizes)
            self._row_buffers = {n: torch.empty_like(w) for n, w in self.embeddings.items()}
        return self._cache

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

    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": len(self._trainable), "kept_tensors": list(self.kept_tensors),
                "kept_embedding_rows": {n: len(r) for n, r in self.kept_rows.items()},
                "budget_nonembedding": self.budget_tensor, "budget_embedding": self.budget_rows}

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["__kept_tensors__"] = list(self.kept_tensors)
        state["__kept_rows__"] = {n: r.clone() for n, r in self.kept_rows.items()}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = dict(state)
        self.kept_tensors = state.pop("__kept_tensors__")
        self.kept_rows = state.pop("__kept_rows__")
        super().load_state_dict(state)
