"""The loop's clock: seconds per phase of a segment (``Phases``), and the time inside the model's forward passes
(``ModelTimer``), for the records' ``seconds`` and the overhead figures of ``make bench-loop``.

``Phases`` is a context manager per phase (``with phases("update"): ...``): it adds the phase's wall time and, with a
``ModelTimer``, the part of it spent inside model forwards (``<phase>_model``). The loop opens one per segment.

``ModelTimer`` hooks the model's own forward and, for the calls that go around it (the decoders run the encoder by
itself once per source; ``knn`` runs the encoder-decoder without the output projection to store a post-edit's states),
the modules the model's family names (``timed_modules``: the base model, the encoder, the decoder and the output
projection); only the outermost call is timed, so nothing is counted twice. The model's forward counts whole: Hugging
Face's code around the submodules (``final_logits_bias``, the output objects) is the model's work as much as the
layers are. A method's forward hook on the model's output (``knn``'s interpolation) runs after the timer has stopped:
that is the method's work, counted outside. The loop's update records its backward time itself (the record's
``backward``); a backward pass inside another phase (tune-retrieve's tuning before a translation) is added to the timer
by the ``Tuner`` that runs it (``add``), so it counts as the model's work of that phase.

On CUDA the timer never synchronises inside a forward: each outermost forward records a pair of CUDA events, and their
times are summed when ``seconds`` is read (the phase's end: one wait for the device per phase, where a synchronise at
both ends of every forward cost two per decoding step). It measures; it changes nothing. A decoding step or an update
repetition replayed as a CUDA graph (``simpe.decoders.static``, ``simpe.loop.update_graph``) runs no hook: its time is
not the model's then, and while one is recorded the timer stands aside (``static.capturing``).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch

from simpe.decoders import static
from simpe.models import family_of

# The one list of a segment's phases, in order (a record's ``seconds``, the summary's sums, the benchmarks read it):
# ``interact`` only under the interactive protocol; ``<phase>_model``: the part inside the model's forward passes
# (``ModelTimer``); ``backward``: inside the update's autograd.
PHASES = ("prepare", "translate", "interact", "score", "update")
MODEL_PHASES = ("translate", "interact", "update")
SEGMENT_PHASES = (*PHASES, *(f"{phase}_model" for phase in MODEL_PHASES), "backward")


def record_seconds(seconds: dict[str, float], backward: float, interactive: bool) -> dict[str, float]:
    """A segment record's ``seconds`` from its ``Phases.seconds``: every phase of ``SEGMENT_PHASES`` (the interactive
    ones only with ``interactive``), 0.0 for one it did not enter."""
    keep = [k for k in SEGMENT_PHASES if interactive or not k.startswith("interact")]
    return {k: backward if k == "backward" else seconds.get(k, 0.0) for k in keep}


class ModelTimer:
    """Seconds inside the model's outermost forward passes (``seconds``) and their number (``calls``)."""

    stands_aside_in_capture = True  # its hooks do nothing while a CUDA graph records (simpe.decoders.static._foreign_hook)

    def __init__(self, model: Any) -> None:
        self._seconds = 0.0
        self.calls = 0
        self._depth = 0  # model forwards running now, nested ones included
        self._start: Any = 0.0  # perf_counter at the outermost forward's start, or its CUDA event
        self._cuda = next(model.parameters()).device.type == "cuda"
        self._pending: list[tuple[Any, Any]] = []  # CUDA (start, end) events not yet summed
        self._handles = []
        for module in family_of(model).timed_modules(model):
            self._handles.append(module.register_forward_pre_hook(self._pre))
            # first among the forward hooks, so another hook's work on the output is not counted as the model's;
            # always_call: a forward that raises still ends its timing
            self._handles.append(module.register_forward_hook(self._post, prepend=True, always_call=True))

    @property
    def seconds(self) -> float:
        """The seconds so far (on CUDA: waits for the last timed forward to end on the device)."""
        if self._pending:
            self._pending[-1][1].synchronize()
            self._seconds += sum(start.elapsed_time(end) for start, end in self._pending) / 1000.0
            self._pending.clear()
        return self._seconds

    def add(self, seconds: float) -> None:
        """Count ``seconds`` of model work the hooks cannot see: a backward pass outside the loop's own update
        (``simpe.loop.update.Tuner``: tune-retrieve's tuning, which its translation phase holds)."""
        self._seconds += seconds

    def _mark(self) -> Any:
        if not self._cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _pre(self, module: Any, args: Any) -> None:
        if static.capturing():  # a decoding step recorded into a CUDA graph: nothing runs, nothing to time
            return
        if self._depth == 0:
            self._start = self._mark()
        self._depth += 1

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if static.capturing():
            return
        self._depth -= 1
        if self._depth == 0:
            end = self._mark()
            if self._cuda:
                self._pending.append((self._start, end))
            else:
                self._seconds += end - self._start
            self.calls += 1

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class Phases:
    """Wall seconds per phase (``seconds[name]``) and, with a timer, the seconds inside the model's forwards during it
    (``seconds[name + "_model"]``); a phase entered twice adds up."""

    def __init__(self, timer: ModelTimer | None = None) -> None:
        self.timer = timer
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        model = self.timer.seconds if self.timer is not None else 0.0
        wall = time.perf_counter()
        try:
            yield
        finally:
            inside = self.timer.seconds - model if self.timer is not None else 0.0  # on CUDA: waits for the device first
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - wall
            if self.timer is not None:
                self.seconds[f"{name}_model"] = self.seconds.get(f"{name}_model", 0.0) + inside
