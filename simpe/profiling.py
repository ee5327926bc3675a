"""Time spent inside model forward and backward passes, for the loop's overhead figures.

``ModelTimer`` hooks the encoder, the decoder and the output projection (siblings, so
nothing is counted twice); the update adds its backward time itself. On CUDA the hooks
synchronise so the seconds are real. It measures; it changes nothing.
"""
from __future__ import annotations

import time
from typing import Any

import torch


class ModelTimer:
    def __init__(self, model: Any) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._starts: list[float] = []
        self._cuda = next(model.parameters()).device.type == "cuda"
        self._handles = []
        for module in (model.model.encoder, model.model.decoder, model.lm_head):
            self._handles.append(module.register_forward_pre_hook(self._pre))
            self._handles.append(module.register_forward_hook(self._post))

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize()

    def _pre(self, module: Any, args: Any) -> None:
        self._sync()
        self._starts.append(time.perf_counter())

    def _post(self, module: Any, args: Any, output: Any) -> None:
        self._sync()
        self.seconds += time.perf_counter() - self._starts.pop()
        self.calls += 1

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
