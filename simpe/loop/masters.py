"""float32 master copies of the tensors a method adapts at bfloat16 or float16 (``update.master_copies``): the
update's step works on them, and the weights the model computes with get their rounded value."""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch

LOW_PRECISION = (torch.bfloat16, torch.float16)


def as_float32(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """``[t.float() for t in tensors]`` in one foreach call (on a GPU a few kernel launches, where a conversion per
    tensor is one each): the same values, each in a fresh tensor laid out as ``.float()`` lays it out; a float32 tensor
    is itself."""
    low = [i for i, t in enumerate(tensors) if t.dtype != torch.float32]
    if not low:
        return list(tensors)
    out = list(tensors)
    fresh = [torch.empty_like(tensors[i], dtype=torch.float32) for i in low]  # preserve_format: the strides of .float()
    torch._foreach_copy_(fresh, [tensors[i] for i in low])
    for i, tensor in zip(low, fresh):
        out[i] = tensor
    return out


class MasterCopies:
    """float32 master copies of a method's adapted tensors held at bfloat16 or float16, and the swap around a step.

    ``enter`` makes each such parameter hold its float32 master (the same Parameter object: the step, the clipping,
    ``Backup`` and a method's own step see float32 tensors and float32 gradients); ``leave`` keeps what the step left
    as the new master and gives the parameter the rounded value, in its own storage at the model's dtype. A master is
    valid while the parameter's storage and version are the ones ``leave`` left: a weight written since (a document
    reset or a resume through ``Method.load_state_dict``, a store applied) gets a fresh master from its value.
    Memory: 4 bytes per adapted value (plus ``Backup``'s float32 spare buffer of each), none for the frozen ones.
    Where the step writes the weights in place (``simpe.loop.undo.in_place``: every device but the CPU), a master
    keeps its address from step to step, and so does the weight the model computes with.
    """

    def __init__(self) -> None:
        self.masters: dict[int, torch.Tensor] = {}  # id(parameter) -> its float32 master, shaped as it
        self.left: dict[int, tuple[int, int]] = {}  # id(parameter) -> (data pointer, version) as ``leave`` left it

    @staticmethod
    def needed(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The parameters of ``params`` held at bfloat16 or float16 (the ones a master copy is for)."""
        return [p for p in params if p.dtype in LOW_PRECISION]

    def enter(self, params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Make each low-precision parameter of ``params`` hold its float32 master; return their own tensors."""
        lows = [param.data for param in params]
        masters = [self.masters.get(id(param)) for param in params]
        stale = [i for i, (param, low, master) in enumerate(zip(params, lows, masters))
                 if master is None or self.left.get(id(param)) != (low.data_ptr(), param._version)]
        if stale:  # fresh masters, the weights as they are now, in one foreach call (as ``.float()`` lays them out)
            fresh = [torch.empty_like(lows[i], dtype=torch.float32) for i in stale]
            torch._foreach_copy_(fresh, [lows[i] for i in stale])
            for i, master in zip(stale, fresh):
                masters[i] = master
        for param, master in zip(params, masters):
            param.data = master
        return lows

    def leave(self, params: Sequence[torch.Tensor], lows: Sequence[torch.Tensor]) -> None:
        """Keep each parameter's float32 value as its master and give it back its own tensor, holding the rounded value."""
        with torch.no_grad():
            masters = [param.data for param in params]
            # round to nearest even, as every bfloat16 / float16 conversion of torch; one foreach call (on a GPU a few
            # kernel launches for all tensors, where a copy per tensor was 500 launches on NLLB-600M)
            if lows:
                torch._foreach_copy_(list(lows), masters)
            for param, low, master in zip(params, lows, masters):
                self.masters[id(param)] = master
                param.data = low
                self.left[id(param)] = (low.data_ptr(), param._version)

    def refresh(self, params: Sequence[torch.Tensor]) -> None:
        """Make each low-precision parameter's master current (``enter``: a fresh one where the weight was written
        since) and leave the weights as they are: ``leave`` without its write-back, which would round each master to
        the value its weight holds already (a pass over every adapted weight for nothing)."""
        lows = self.enter(params)
        for param, low in zip(params, lows):
            self.masters[id(param)] = param.data
            param.data = low
            self.left[id(param)] = (low.data_ptr(), param._version)

    def bytes(self) -> int:
        """Bytes held by the master copies."""
        return sum(m.numel() * m.element_size() for m in self.masters.values())


# One MasterCopies per method, kept from segment to segment (as its Backup).
_MASTERS: "weakref.WeakKeyDictionary[Any, MasterCopies]" = weakref.WeakKeyDictionary()


def master_copies(method: Any) -> MasterCopies:
    """The method's master copies (made empty on first use)."""
    masters = _MASTERS.get(method)
    if masters is None:
        masters = _MASTERS[method] = MasterCopies()
    return masters
