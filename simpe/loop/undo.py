"""How an update step is undone, bit for bit (``Backup``): the values of the tensors a step changes, as before it,
kept until the step is known to have left finite weights. The update (``simpe.loop.update``) takes one per method; a
method never sees it.

Two modes for plain SGD (``in_place``): on the CPU the step writes the new weights into spare buffers that are then
swapped in (``outputs``, ``swap_in``: one pass, no copy); on every other device the weights are written in place,
after a copy of them (``before_change``), so that each weight keeps its address from step to step, which a CUDA graph
that reads them needs. ``IN_PLACE`` forces either mode (the tests run the in-place mode on the CPU).
"""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch

FUSE_MIN = 4096  # fused plain SGD: gradients of this many values or more get their norm and step one after the other
IN_PLACE: bool | None = None  # None: weights written in place on every device but the CPU; True / False: forced


def in_place(device: torch.device) -> bool:
    """Whether plain SGD writes the weights on ``device`` in place (their addresses kept) rather than swapping in
    spare buffers: ``IN_PLACE`` when it is set, else on every device but the CPU."""
    return device.type != "cpu" if IN_PLACE is None else IN_PLACE


def _restore(params: list[torch.Tensor], backup: list[torch.Tensor]) -> None:
    """Put the weights of ``backup`` back into ``params`` (undo one step)."""
    with torch.no_grad():
        torch._foreach_copy_(params, backup)


class Backup:
    """The values of the tensors a step changes, as before it, to undo that step bit for bit.

    A method's own ``step``, and plain SGD in the in-place mode (``in_place``: every device but the CPU),
    change tensors in place, after ``before_change`` copied them (or only the rows it will change:
    ``lasso``, which changes a few groups of its budget and a few embedding rows, as its hints
    ``changed_tensors`` / ``changed_rows`` say); on the CPU plain SGD (``_sgd_step``) writes
    every new value into a spare buffer (``spares``) and hands the buffers to ``swap_in``, which
    makes them the weights and keeps the old storage as the backup (plain SGD: the step writes
    the new weights once and copies nothing). The buffers are kept per tensor from step to step
    (a fresh clone of every weight per step costs an allocation and page faults for large tensors).
    """

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names  # id(tensor) -> parameter name
        self.tensors: list[torch.Tensor] = []
        self.copies: list[torch.Tensor] = []
        self.rows: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (tensor, row indices, their copy)
        self._buffers: dict[int, torch.Tensor] = {}
        self.finite = False  # the step vouched that the changed tensors are finite (see swap_in)
        self._checked = False  # a step's result was checked in full once

    def _buffer(self, tensor: torch.Tensor) -> torch.Tensor:
        buffer = self._buffers.get(id(tensor))
        if (buffer is None or buffer.shape != tensor.shape or buffer.stride() != tensor.stride()
                or buffer.dtype != tensor.dtype or buffer.device != tensor.device):
            buffer = self._buffers[id(tensor)] = torch.empty_like(tensor)
        return buffer

    def before_change(self, tensors: list[torch.Tensor],
                      rows: Sequence[tuple[torch.Tensor, torch.Tensor]] = ()) -> None:
        """Copy ``tensors``, and of each (tensor, (n,) row indices) in ``rows`` only those rows: the
        step then changes them in place, nothing else (``restore`` undoes it)."""
        copies = [self._buffer(tensor) for tensor in tensors]
        if tensors:  # one foreach call: a few kernel launches on a GPU for all tensors
            torch._foreach_copy_(copies, [t.detach() for t in tensors])
        self.tensors, self.copies, self.finite = list(tensors), copies, False
        self.rows = [(tensor, index, tensor.detach().index_select(0, index)) for tensor, index in rows]

    def vouch(self, finite: bool) -> None:
        """After an in-place step (``before_change``, then the step): ``finite`` as ``swap_in`` takes it."""
        self.finite = finite

    def spares(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        """Buffers shaped like ``tensors`` for the step to write their new values into (for ``swap_in``)."""
        return [self._buffer(tensor) for tensor in tensors]

    def outputs(self, tensors: list[torch.Tensor], grads: list[torch.Tensor]) -> list[torch.Tensor]:
        """Buffers for a step to write the new values of ``tensors`` into (for ``swap_in``), given their
        gradients: each gradient itself where it can hold them (its own dense storage, laid out as the
        tensor) when it is large (``FUSE_MIN`` values: for a small one the checks cost more than they save),
        a spare buffer (``spares``) otherwise. A step ``θ - lr·g`` written over ``g`` reads ``g``
        while it is still in cache and writes where it just read (into a spare it streams a third
        tensor); the gradient's storage becomes the weight. The gradients are overwritten: only for a
        step that reads nothing of them afterwards. A gradient whose storage another gradient or tensor uses
        as well is never written (another step would read what this one wrote)."""
        storages: dict[int, int] = {}  # storage address -> how many of the gradients and tensors use it
        for t in [*grads, *tensors]:  # (a small gradient sharing a large one's storage keeps that one unwritten too)
            address = t.untyped_storage().data_ptr()
            storages[address] = storages.get(address, 0) + 1
        return [grad if grad.numel() >= FUSE_MIN and _own_dense_storage(grad, tensor)
                and storages[grad.untyped_storage().data_ptr()] == 1 else self._buffer(tensor)
                for tensor, grad in zip(tensors, grads)]

    def swap_in(self, tensors: list[torch.Tensor], new: list[torch.Tensor], finite: bool = False) -> None:
        """Make ``new`` (from ``spares``) the values of ``tensors``, the same Parameter objects (tied
        weights and every module keep seeing them); the old storage becomes the backup ``restore``
        copies back, and the spare buffer of the next step.

        ``finite``: the step vouches that finite weights stay finite under it (plain SGD with a
        bounded step); ``first_non_finite`` then checks only the first such step in full, which
        establishes that the weights are finite to begin with.
        """
        old = []
        for tensor, values in zip(tensors, new):
            old.append(tensor.data)
            tensor.data = values
            self._buffers[id(tensor)] = old[-1]
        self.tensors, self.copies, self.finite = list(tensors), old, finite

    def first_non_finite(self) -> str | None:
        """The name of the first changed tensor holding inf or NaN, or None."""
        if self.finite and self._checked:
            return None
        bad = first_non_finite_tensor([self.names[id(t)] for t in self.tensors] + [self.names[id(t)] for t, _, _ in self.rows],
                                self.tensors + [t.detach().index_select(0, index) for t, index, _ in self.rows])
        self._checked = self._checked or (self.finite and bad is None)
        return bad

    def restore(self) -> None:
        """Put the changed tensors back as they were before the step."""
        if self.tensors:
            _restore(self.tensors, self.copies)
        with torch.no_grad():
            for tensor, index, copy in self.rows:
                tensor.index_copy_(0, index, copy)
        self.clear()

    def clear(self) -> None:
        self.tensors, self.copies, self.rows = [], [], []


def _own_dense_storage(grad: torch.Tensor, tensor: torch.Tensor) -> bool:
    """``grad`` can become ``tensor``'s storage: laid out as it (shape, strides, dtype, device), dense and
    alone in its storage from its start (so no other tensor's values share it), 64-byte aligned as a
    fresh buffer is (CPU kernels give other last bits at other alignments: see ``simpe.model.load``)."""
    return (grad.layout == torch.strided and not grad.requires_grad and grad.dtype == tensor.dtype
            and grad.device == tensor.device and grad.shape == tensor.shape and grad.stride() == tensor.stride()
            and grad.is_contiguous() and grad.storage_offset() == 0
            and grad.untyped_storage().nbytes() == grad.numel() * grad.element_size() and grad.data_ptr() % 64 == 0)


# One Backup per method, reused from segment to segment (its buffers with it).
_BACKUPS: "weakref.WeakKeyDictionary[Any, Backup]" = weakref.WeakKeyDictionary()


def backup_for(method: Any) -> Backup:
    """The method's Backup, emptied (made on first use, kept with its buffers from step to step)."""
    backup = _BACKUPS.get(method)
    if backup is None:
        backup = _BACKUPS[method] = Backup({id(p): name for name, p in method.trainable().items()})
    backup.clear()
    return backup


def first_non_finite_tensor(names: list[str], params: list[torch.Tensor]) -> str | None:
    """The name of the first tensor holding inf or NaN, or None.

    One fused L2-norm pass (NaN and ±inf make a norm non-finite; a finite norm means finite
    values); only tensors whose norm is not finite (possibly an overflow of huge finite
    values) are then checked element by element, so the answer is exact.
    """
    if not params:
        return None
    detached = [p.detach() for p in params]
    norms = torch.stack(torch._foreach_norm(detached))  # (tensors,)
    if bool(torch.isfinite(norms).all()):
        return None
    flagged = [i for i, finite in enumerate(torch.isfinite(norms).tolist()) if not finite]
    return next((names[i] for i in flagged if not bool(torch.isfinite(detached[i]).all())), None)
