"""Time spent inside model forward and backward passes, for the loop's overhead figures.

``ModelTimer`` hooks the model's own forward and, for the calls that go around it (the
decoders run the encoder by itself once per source; ``knn`` runs the encoder-decoder without
the output projection to store a post-edit's states), the modules the model's family names
(``timed_modules``: the base model, the encoder, the decoder and the output projection); only
the outermost call is timed, so nothing is counted twice. The model's
forward counts whole: Hugging Face's code around the submodules (``final_logits_bias``, the
output objects) is the model's work as much as the layers are. A method's forward hook on the
model's output (``knn``'s interpolation) runs after the timer has stopped: that is the
method's work, counted outside. The update adds its backward time itself. On CUDA the hooks
synchronise so the seconds are real. It measures; it changes nothing.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from simpe.models import family_of


class ModelTimer:
    def __init__(self, model: Any) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._depth = 0  # model forwards running now, nested ones included
        self._start = 0.0
        self._cuda = next(model.parameters()).device.type == "cuda"
        self._handles = []
        for module in family_of(model).timed_modules(model):
            self._handles.append(module.register_forward_pre_hook(self._pre))
            # first among the forward hooks, so another hook's work on the output is not counted as the model's;
            # always_call: a forward that raises still ends its timing
            self._handles.append(module.register_forward_hook(self._post, prepend=True, always_call=True))

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize()

    def _pre(self, module: Any, args: Any) -> None:
        if self._depth == 0:
            self._sync()
            self._start = time.perf_counter()
        self._depth += 1

    def _post(self, module: Any, args: Any, output: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._sync()
            self.seconds += time.perf_counter() - self._start
            self.calls += 1

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
