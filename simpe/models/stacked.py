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
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from simpe.errors import ModelError

OUTPUT_BIAS = "simpe_output_bias"  # simpe.methods.bias's second output bias (a name, not an import: models/ is below methods/)


SHARED_MIN_ROWS = 5  # a shared weight's product takes every sharing run's rows at once from this many rows per run


@dataclass
class Versions:
    """Which runs read which version of one stacked tensor: a run that may change it (its method's trainable
    tensor) has a version of its own; the others read version 0, the base they all hold unchanged."""

    runs: int
    of_run: list[int]  # run -> its row of the stacked tensor
    own: list[int]  # the runs with a version of their own, in the order of their rows
    shared: list[int]  # the runs that read the base (version 0)
    index: dict[str, torch.Tensor] = field(default_factory=dict)  # on the tensor's device: own, shared, of_run

    @classmethod
    def of(cls, runs: int, owners: set[int]) -> Versions:
        own = sorted(owners)
        shared = [r for r in range(runs) if r not in owners]
        first = 1 if shared else 0
        of_run = [first + own.index(r) if r in owners else 0 for r in range(runs)]
        return cls(runs, of_run, own, shared)

    def on(self, device: torch.device) -> Versions:
        self.index = {name: torch.tensor(values, dtype=torch.long, device=device)
                      for name, values in (("own", self.own), ("shared", self.shared), ("of_run", self.of_run))}
        return self

    @property
    def own_rows(self) -> slice:
        """The stacked tensor's rows of the runs' own versions."""
        return slice(1 if self.shared else 0, None)


def _blocks(x: torch.Tensor, runs: int) -> torch.Tensor:
    """``x`` (rows, ..., dim) as (runs, rows / runs * ..., dim): the rows of each run are one block."""
    if x.shape[0] % runs:
        raise ModelError(f"a stacked pass needs the same number of rows for each of its {runs} runs, got {x.shape[0]}")
    return x.reshape(runs, -1, x.shape[-1])


def _product(blocks: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """(count, rows, out) = each block by its own (count, out, in) weight, plus its (count, out) bias."""
    if bias is None:
        return torch.bmm(blocks, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), blocks, weight.transpose(1, 2))


def _shared_product(blocks: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """(count, rows, out) = every block by one (out, in) weight: one product over all the blocks' rows, whose rows are
    each the product of that block alone (one weight read for all); blocks of fewer than ``SHARED_MIN_ROWS`` rows go
    block by block, where a product's rows depend on how many there are (BLAS kernels for a few rows)."""
    count, rows, width = blocks.shape
    if rows >= SHARED_MIN_ROWS:
        return nn.functional.linear(blocks.reshape(count * rows, width), weight, bias).view(count, rows, -1)
    return _product(blocks, weight.unsqueeze(0).expand(count, *weight.shape),
                    None if bias is None else bias.unsqueeze(0).expand(count, *bias.shape))


class _Lookup(torch.autograd.Function):
    """The lookup of rows of the (versions * vocab, dim) weights, with ``embedding``'s own backward: rows of
    ``padding`` positions (each run's padding row) get no gradient, as ``padding_idx`` gives a run alone."""

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


def _versions(param: torch.Tensor) -> Versions:
    return param.simpe_versions  # type: ignore[attr-defined]


class StackedLinear(nn.Module):
    """``nn.Linear`` with a (versions, out, in) weight and a (versions, out) bias (or none): the runs that share the
    base take one product, each other run its own block's; ``extra``: a second output bias of the runs that have one
    (``bias``'s, which a forward hook adds to the output projection of a run alone), added after the product."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter | None) -> None:
        super().__init__()
        self.weight, self.bias = weight, bias
        self.extra: nn.Parameter | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        versions = _versions(self.weight)
        out_features = self.weight.shape[1]
        blocks = _blocks(x, versions.runs)  # (runs, rows per run, in)
        bias = self.bias
        if not versions.own:  # every run reads the base: one product
            out = _shared_product(blocks, self.weight[0], None if bias is None else bias[0])
        elif not versions.shared:  # every run its own, a version per run in run order
            out = _product(blocks, self.weight, bias)
        else:
            own, shared = versions.index["own"], versions.index["shared"]
            rows = versions.own_rows
            out = blocks.new_empty(versions.runs, blocks.shape[1], out_features)  # (runs, rows per run, out)
            out = out.index_copy(0, own, _product(blocks.index_select(0, own), self.weight[rows],
                                                  None if bias is None else bias[rows]))
            out = out.index_copy(0, shared, _shared_product(blocks.index_select(0, shared), self.weight[0],
                                                            None if bias is None else bias[0]))
        if self.extra is not None:
            extra = _versions(self.extra)
            owners = extra.index["own"]
            added = self.extra[extra.own_rows].unsqueeze(1).expand(len(extra.own), out.shape[1], out_features)
            out = out.index_add(0, owners, added) if extra.shared else out + added
        return out.view(*x.shape[:-1], out_features)


class StackedEmbedding(nn.Module):
    """``nn.Embedding`` (and the families' scaled subclasses: ``embed_scale``) with a (versions, vocab, dim) weight."""

    def __init__(self, weight: nn.Parameter, padding_idx: int | None, scale: Any = None) -> None:
        super().__init__()
        self.weight, self.padding_idx, self.scale = weight, padding_idx, scale

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        count, vocab, dim = self.weight.shape
        versions = _versions(self.weight)
        runs = versions.runs
        if ids.shape[0] % runs:
            raise ModelError(f"a stacked pass needs the same number of rows for each of its {runs} runs, got {ids.shape[0]}")
        offsets = versions.index["of_run"].repeat_interleave(ids.shape[0] // runs) * vocab  # (rows,)
        flat = ids + offsets.view(-1, *([1] * (ids.dim() - 1)))  # (rows, ...) rows of the flattened weights
        weight = self.weight.view(count * vocab, dim)
        if not (torch.is_grad_enabled() and self.weight.requires_grad):
            out = nn.functional.embedding(flat, weight)  # (rows, ..., dim)
        elif self.padding_idx is None:
            out = _Lookup.apply(flat, weight, flat, -1)
        else:  # every run's padding positions read as version 0's padding row in the backward, which skips it
            out = _Lookup.apply(flat, weight, flat.masked_fill(ids == self.padding_idx, self.padding_idx), self.padding_idx)
        if self.scale is not None:
            out = out * self.scale
        return out


class StackedLayerNorm(nn.Module):
    """``nn.LayerNorm`` with (versions, dim) weight and bias: normalised, then each run's affine part (``addcmul``,
    which gives what the fused affine part gives, bit for bit: tests/unit/test_stacked.py)."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter | None, shape: tuple[int, ...], eps: float) -> None:
        super().__init__()
        self.weight, self.bias, self.shape, self.eps = weight, bias, shape, eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        versions = _versions(self.weight)
        if not versions.own:  # every run reads the base
            return nn.functional.layer_norm(x, self.shape, self.weight[0], None if self.bias is None else self.bias[0], self.eps)
        weight = self.weight if not versions.shared else self.weight.index_select(0, versions.index["of_run"])  # (runs, dim)
        bias = self.bias if self.bias is None or not versions.shared else self.bias.index_select(0, versions.index["of_run"])
        normed = _blocks(nn.functional.layer_norm(x, self.shape, None, None, self.eps), versions.runs)  # (runs, rows, dim)
        if bias is None:
            out = normed * weight.unsqueeze(1)
        else:
            out = torch.addcmul(bias.unsqueeze(1), normed, weight.unsqueeze(1))
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
    """A copy of ``models[0]``'s structure whose learnable tensors hold the runs' weights on a leading axis.

    ``trainable``: per run, the names of the tensors its method may change (None: every tensor, for every run). A
    tensor holds one version per run that may change it, and one base (version 0) that every other run reads, the
    same values in each of them: one product serves all those runs' rows at once, and the weights are read once
    (``Versions``). ``model``: the stacked ``transformers`` model (call it as the family calls a model, with ``runs``
    equal blocks of rows); ``names``: run parameter name -> the stacked tensor (tied tensors share one);
    ``write(run, model, names)`` copies a run's current values of its own versions in; ``row(name, run)``: the row of
    run ``run`` in ``names[name]`` (its slice of a gradient too).
    """

    def __init__(self, models: Sequence[Any], frozen_markers: Sequence[str] = (),
                 trainable: Sequence[set[str]] | None = None) -> None:
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
        template_params = dict(template.named_parameters())
        names_of: dict[int, list[str]] = {}  # a template tensor -> its names (tied tensors: one of them, as deduplicated)
        for name, param in template_params.items():
            names_of.setdefault(id(param), []).append(name)
        runs_params = [dict(model.named_parameters()) for model in models]

        def owners(names: list[str]) -> set[int]:
            """The runs that may change a tensor of these names; a run whose values differ from the others' owns one too."""
            if trainable is None:
                return set(range(self.runs))
            own = {r for r in range(self.runs) if any(n in trainable[r] for n in names)}
            readers = [r for r in range(self.runs) if r not in own]
            if readers:
                base = runs_params[readers[0]][names[0]]
                own |= {r for r in readers[1:] if not torch.equal(runs_params[r][names[0]], base)}
            return own

        by_id: dict[int, nn.Parameter] = {}  # a template tensor -> its stacked tensor (tied tensors stacked once)

        def stacked(*params: nn.Parameter | None) -> list[nn.Parameter | None]:
            """A module's tensors stacked, with one ``Versions`` for all of them (a weight and its bias: the runs that
            may change either own both); a tensor stacked already (tied) keeps its versions, and gives them."""
            present = [p for p in params if p is not None]
            known = [by_id[id(p)] for p in present if id(p) in by_id]
            if known:
                versions = _versions(known[0])
            else:
                runs_owning: set[int] = set()
                for param in present:
                    runs_owning |= owners(names_of[id(param)])
                versions = Versions.of(self.runs, runs_owning).on(present[0].device)
            for param in present:
                if id(param) not in by_id:
                    count = len(versions.own) + (1 if versions.shared else 0)
                    values = param.detach().unsqueeze(0).expand(count, *param.shape).clone()  # (versions, ...)
                    stack = nn.Parameter(values, requires_grad=False)
                    stack.simpe_versions = versions  # type: ignore[attr-defined]
                    by_id[id(param)] = stack
            return [None if p is None else by_id[id(p)] for p in params]

        replaced: dict[int, nn.Module] = {}  # a module -> its stacked one (a module held under two names: one each)
        for name, module in list(template.named_modules(remove_duplicate=False)):
            own = list(module.named_parameters(recurse=False))
            if not own or any(any(marker in (f"{name}.{n}" if name else n) for marker in frozen_markers) for n, _ in own):
                continue
            if id(module) in replaced:
                new: nn.Module = replaced[id(module)]
            elif type(module) is nn.Linear:
                new = StackedLinear(*stacked(module.weight, module.bias))
            elif isinstance(module, nn.Embedding):
                new = StackedEmbedding(stacked(module.weight)[0], module.padding_idx, _scaled(module))
            elif type(module) is nn.LayerNorm:
                new = StackedLayerNorm(*stacked(module.weight, module.bias), tuple(module.normalized_shape), module.eps)
            else:
                continue
            replaced[id(module)] = new
            parent, _, attr = name.rpartition(".")
            setattr(template.get_submodule(parent) if parent else template, attr, new)
        # run parameter name -> stacked tensor, through the template's tensor of the same name
        for name, param in template_params.items():
            if id(param) in by_id:
                self.names[name] = by_id[id(param)]
        with_bias = {r for r, params in enumerate(runs_params) if OUTPUT_BIAS in params}
        if with_bias:  # bias: a second output bias, for the runs that have one
            projection = self._projection()
            versions = Versions.of(self.runs, with_bias).on(projection.weight.device)
            extra = torch.zeros(len(versions.own) + (1 if versions.shared else 0), projection.weight.shape[1],
                                dtype=projection.weight.dtype, device=projection.weight.device)  # (versions, vocab)
            projection.extra = nn.Parameter(extra, requires_grad=False)
            projection.extra.simpe_versions = versions  # type: ignore[attr-defined]
            self.names[OUTPUT_BIAS] = projection.extra
        self.model.eval()
        for r, model in enumerate(models):
            self.write(r, model)

    def _projection(self) -> StackedLinear:
        from simpe.models import family_of

        projection = family_of(self.model).output_projection(self.model)
        assert isinstance(projection, StackedLinear), type(projection)
        return projection

    def row(self, name: str, run: int) -> int:
        """Run ``run``'s row of the stacked tensor ``names[name]``."""
        return _versions(self.names[name]).of_run[run]

    def owns(self, name: str, run: int) -> bool:
        """Whether run ``run`` has a version of its own of ``names[name]`` (else it reads the base)."""
        return run in _versions(self.names[name]).own

    def write(self, run: int, model: Any, names: Sequence[str] | None = None) -> None:
        """Copy run ``run``'s current values of ``names`` (default: every stacked tensor it has) into its own versions
        (the base is every other run's, unchanged)."""
        params = dict(model.named_parameters())
        chosen = [n for n in (self.names if names is None else names)
                  if n in params and n in self.names and self.owns(n, run)]
        if not chosen:
            return
        with torch.no_grad():
            torch._foreach_copy_([self.names[n][self.row(n, run)] for n in chosen], [params[n].detach() for n in chosen])

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
