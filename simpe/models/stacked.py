"""The run axis: one model whose learnable tensors hold the weights of several runs, stacked on a leading axis.

A lockstep group (``simpe.loop.group``) advances several runs of one model through one stream together. Their
passes have the same shapes, so one pass serves all of them: this module turns a copy of the model into a
``StackedModel`` whose ``nn.Linear``, ``nn.Embedding`` and ``nn.LayerNorm`` modules hold a ``(runs, ...)`` tensor
per weight and treat the batch as ``runs`` equal blocks of rows, block ``r`` computed with run ``r``'s weights:

* a linear layer is one batched matrix product (``baddbmm``) over the run axis, where each run alone would take one
  ``linear``: at one torch thread each block's product is the one ``linear`` computes, bit for bit (the same GEMM
  per block: tests/unit/test_stacked.py checks it);
* an embedding reads row ``token + r * vocab`` of the weights flattened to ``(runs * vocab, dim)``, with
  ``embedding``'s own backward, in which each run's padding row gets no gradient from the lookup, as ``padding_idx``
  gives a run alone;
* a layer norm normalises without an affine part, then multiplies and adds each run's own weight and bias
  (``addcmul``): one function for a group and a run alone, the same values whichever the group's size.

A run's forward pass is its own model's bit for bit (at one thread). Its gradients are those of the same run in any
group bit for bit, and its own model's up to the order of a few sums (a batched product's backward and the layer
norm's affine part reduce in their own order: relative differences about 1e-7, tests/unit/test_stacked.py).

Everything else in the model (attention, activations, the sinusoidal positions, Marian's ``final_logits_bias``)
works row by row and is shared. A run alone in lockstep is a group of one, so its records are those of the same run
in any group. Why a leading axis and not ``torch.func.stack_module_state`` with ``vmap``: the decoders step the
model through transformers' own forward with a key/value cache that lives across calls (``simpe.decoders``);
with the run axis inside the modules the cache, the cross-attention states by source and the masks stay as they
are, rows grouped by run as they are grouped by source, and no pass is traced.

Each run keeps its own model (the method attached to it, its optimiser and undo state, its snapshots): the stacked
tensors are a copy of the runs' weights that the group writes after every change (``write``), and whose gradients
the group hands to each run's own step (``simpe.loop.group_update``).
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from simpe.errors import ModelError

OUTPUT_BIAS = "simpe_output_bias"  # simpe.methods.bias's second output bias (a name, not an import: models/ is below methods/)


def _blocks(x: torch.Tensor, runs: int) -> torch.Tensor:
    """``x`` (rows, ..., dim) as (runs, rows / runs * ..., dim): the rows of each run are one block."""
    if x.shape[0] % runs:
        raise ModelError(f"a stacked pass needs the same number of rows for each of its {runs} runs, got {x.shape[0]}")
    return x.reshape(runs, -1, x.shape[-1])


class _Lookup(torch.autograd.Function):
    """The lookup of rows of the (runs * vocab, dim) weights, with ``embedding``'s own backward: rows of ``padding``
    positions (each run's padding row) get no gradient, as ``padding_idx`` gives a run alone."""

    @staticmethod
    def forward(ctx: Any, flat: torch.Tensor, weight: torch.Tensor, skipped: torch.Tensor, padding: int) -> torch.Tensor:
        ctx.save_for_backward(skipped)
        ctx.rows, ctx.padding = weight.shape[0], padding
        return nn.functional.embedding(flat, weight)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (skipped,) = ctx.saved_tensors
        weight = torch.ops.aten.embedding_dense_backward(grad, skipped, ctx.rows, ctx.padding, False)
        return None, weight, None, None


class StackedLinear(nn.Module):
    """``nn.Linear`` with a (runs, out, in) weight and a (runs, out) bias (or none); ``extra``: a (runs, out) bias added
    after the product, as a forward hook adds ``bias``'s second output bias to the output projection."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter | None) -> None:
        super().__init__()
        self.weight, self.bias = weight, bias
        self.extra: nn.Parameter | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        runs, out_features = self.weight.shape[0], self.weight.shape[1]
        blocks = _blocks(x, runs)  # (runs, rows per run, in)
        if self.bias is None:
            out = torch.bmm(blocks, self.weight.transpose(1, 2))  # (runs, rows per run, out)
        else:
            out = torch.baddbmm(self.bias.unsqueeze(1), blocks, self.weight.transpose(1, 2))
        if self.extra is not None:
            out = out + self.extra.unsqueeze(1)
        return out.view(*x.shape[:-1], out_features)


class StackedEmbedding(nn.Module):
    """``nn.Embedding`` (and the families' scaled subclasses: ``embed_scale``) with a (runs, vocab, dim) weight."""

    def __init__(self, weight: nn.Parameter, padding_idx: int | None, scale: Any = None) -> None:
        super().__init__()
        self.weight, self.padding_idx, self.scale = weight, padding_idx, scale

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        runs, vocab, dim = self.weight.shape
        if ids.shape[0] % runs:
            raise ModelError(f"a stacked pass needs the same number of rows for each of its {runs} runs, got {ids.shape[0]}")
        offsets = torch.arange(runs, device=ids.device).repeat_interleave(ids.shape[0] // runs) * vocab  # (rows,)
        flat = ids + offsets.view(-1, *([1] * (ids.dim() - 1)))  # (rows, ...) rows of the flattened weights
        weight = self.weight.view(runs * vocab, dim)
        if not (torch.is_grad_enabled() and self.weight.requires_grad):
            out = nn.functional.embedding(flat, weight)  # (rows, ..., dim)
        elif self.padding_idx is None:
            out = _Lookup.apply(flat, weight, flat, -1)
        else:  # every run's padding positions read as run 0's padding row in the backward, which skips it
            out = _Lookup.apply(flat, weight, flat.masked_fill(ids == self.padding_idx, self.padding_idx), self.padding_idx)
        if self.scale is not None:
            out = out * self.scale
        return out


class StackedLayerNorm(nn.Module):
    """``nn.LayerNorm`` with (runs, dim) weight and bias: normalised, then each run's affine part (``addcmul``)."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter | None, shape: tuple[int, ...], eps: float) -> None:
        super().__init__()
        self.weight, self.bias, self.shape, self.eps = weight, bias, shape, eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        runs = self.weight.shape[0]
        normed = _blocks(nn.functional.layer_norm(x, self.shape, None, None, self.eps), runs)  # (runs, rows, dim)
        if self.bias is None:
            out = normed * self.weight.unsqueeze(1)
        else:
            out = torch.addcmul(self.bias.unsqueeze(1), normed, self.weight.unsqueeze(1))
        return out.view(x.shape)


def _scaled(module: nn.Embedding) -> Any:
    """The factor a family's scaled embedding multiplies its lookup by (M2M100, NLLB, mBART), None for a plain one."""
    if type(module) is nn.Embedding:
        return None
    forward = type(module).forward
    if "embed_scale" in getattr(forward, "__code__", compile("", "", "exec")).co_names and hasattr(module, "embed_scale"):
        return module.embed_scale
    raise ModelError(f"{type(module).__name__} cannot be stacked (an embedding with a forward of its own)")


def stackable(model: Any, frozen_markers: Sequence[str] = ()) -> str | None:
    """None when every learnable tensor of ``model`` sits in a module the run axis knows (``nn.Linear``,
    ``nn.Embedding`` and its scaled subclasses, ``nn.LayerNorm``), else why not (one line)."""
    known = (nn.Linear, nn.LayerNorm)
    for name, module in model.named_modules():
        own = [n for n, _ in module.named_parameters(recurse=False)]
        if not own:
            continue
        full = [f"{name}.{n}" if name else n for n in own]
        if all(any(marker in f for marker in frozen_markers) for f in full):
            continue  # shared by every run (Marian's sinusoidal positions)
        if type(module) in known:
            continue
        if isinstance(module, nn.Embedding):
            try:
                _scaled(module)
            except ModelError as err:
                return str(err)
            continue
        if name == "" and all(n == OUTPUT_BIAS for n in own):
            continue
        return f"{name or 'the model'} ({type(module).__name__}) holds learnable tensors the run axis does not stack"
    return None


class StackedModel:
    """A copy of ``models[0]``'s structure whose learnable tensors hold every run's weights on a leading axis.

    ``model``: the stacked ``transformers`` model (call it as the family calls a model, with ``runs`` equal blocks of
    rows); ``names``: run parameter name -> the stacked tensor (tied tensors share one); ``write(run, names)`` copies a
    run's current values in; ``gradients(run, names, grads)``: that run's slices of the stacked gradients.
    """

    def __init__(self, models: Sequence[Any], frozen_markers: Sequence[str] = ()) -> None:
        first = models[0]
        why = stackable(first, frozen_markers)
        if why is not None:
            raise ModelError(why)
        self.runs = len(models)
        template = copy.deepcopy(first)
        for module in template.modules():  # the methods' hooks (bias's output bias) are the stack's own business here
            module._forward_hooks.clear()
            module._forward_pre_hooks.clear()
        if OUTPUT_BIAS in template._parameters:
            del template._parameters[OUTPUT_BIAS]
        self.model = template
        self.names: dict[str, nn.Parameter] = {}
        by_id: dict[int, nn.Parameter] = {}  # a template tensor -> its stacked tensor (tied tensors stacked once)
        template_params = dict(template.named_parameters())

        def stacked(param: nn.Parameter | None) -> nn.Parameter | None:
            if param is None:
                return None
            if id(param) not in by_id:
                values = param.detach().unsqueeze(0).expand(self.runs, *param.shape).clone()  # (runs, ...)
                by_id[id(param)] = nn.Parameter(values, requires_grad=False)
            return by_id[id(param)]

        replaced: dict[int, nn.Module] = {}  # a module -> its stacked one (a module held under two names: one each)
        for name, module in list(template.named_modules(remove_duplicate=False)):
            own = list(module.named_parameters(recurse=False))
            if not own or any(any(marker in (f"{name}.{n}" if name else n) for marker in frozen_markers) for n, _ in own):
                continue
            if id(module) in replaced:
                new: nn.Module = replaced[id(module)]
            elif type(module) is nn.Linear:
                new = StackedLinear(stacked(module.weight), stacked(module.bias))
            elif isinstance(module, nn.Embedding):
                new = StackedEmbedding(stacked(module.weight), module.padding_idx, _scaled(module))
            elif type(module) is nn.LayerNorm:
                new = StackedLayerNorm(stacked(module.weight), stacked(module.bias), tuple(module.normalized_shape), module.eps)
            else:
                continue
            replaced[id(module)] = new
            parent, _, attr = name.rpartition(".")
            setattr(template.get_submodule(parent) if parent else template, attr, new)
        # run parameter name -> stacked tensor, through the template's tensor of the same name
        for name, param in template_params.items():
            if id(param) in by_id:
                self.names[name] = by_id[id(param)]
        if any(OUTPUT_BIAS in dict(m.named_parameters()) for m in models):  # bias: a second output bias per run
            projection = self._projection()
            extra = torch.zeros(self.runs, projection.weight.shape[1], dtype=projection.weight.dtype,
                                device=projection.weight.device)  # (runs, vocab)
            projection.extra = nn.Parameter(extra, requires_grad=False)
            self.names[OUTPUT_BIAS] = projection.extra
        self.model.eval()
        for r, model in enumerate(models):
            self.write(r, model)

    def _projection(self) -> StackedLinear:
        from simpe.models import family_of

        projection = family_of(self.model).output_projection(self.model)
        assert isinstance(projection, StackedLinear), type(projection)
        return projection

    def write(self, run: int, model: Any, names: Sequence[str] | None = None) -> None:
        """Copy run ``run``'s current values of ``names`` (default: every stacked tensor it has) into the stack."""
        params = dict(model.named_parameters())
        chosen = [n for n in (self.names if names is None else names) if n in params and n in self.names]
        if not chosen:
            return
        with torch.no_grad():
            torch._foreach_copy_([self.names[n][run] for n in chosen], [params[n].detach() for n in chosen])

    def parameters_of(self, names: Sequence[str]) -> list[nn.Parameter]:
        """The stacked tensors of run parameter ``names`` (each once, in order)."""
        seen: dict[int, nn.Parameter] = {}
        for name in names:
            param = self.names[name]
            seen.setdefault(id(param), param)
        return list(seen.values())

    def nbytes(self) -> int:
        """Bytes the stacked tensors hold (the dry run's "stacked copies")."""
        unique = {id(p): p for p in self.names.values()}
        return sum(p.numel() * p.element_size() for p in unique.values())
