"""ModelTimer: each model forward is timed once (nested submodule calls are not added again), the
encoder or the encoder-decoder called by itself is timed, and a method's hook on the model's output is not counted."""
from __future__ import annotations

import pytest
import torch

from simpe.loop.phases import ModelTimer


def test_outermost_forward_is_timed_once_and_output_hooks_are_not(tiny_marian, monkeypatch):
    model = tiny_marian()
    ids = torch.tensor([[5, 6, 7, 0]])
    # a clock that moves only when the output hook runs (1,000 s a call): no wall-clock bound in the test
    clock = {"now": 0.0}
    monkeypatch.setattr("simpe.loop.phases.time.perf_counter", lambda: clock["now"])
    model.register_forward_hook(lambda module, args, output: clock.update(now=clock["now"] + 1000.0))  # like knn's hook
    timer = ModelTimer(model)
    with torch.no_grad():
        model(input_ids=ids, decoder_input_ids=ids)  # encoder, decoder and lm_head inside: one call
        assert timer.calls == 1
        model.get_encoder()(input_ids=ids)  # the decoders' one encoder pass per source
        assert timer.calls == 2
        model.model(input_ids=ids, decoder_input_ids=ids)  # the encoder-decoder without lm_head (knn storing states): one call
        assert timer.calls == 3
    assert timer.seconds == 0.0  # three timed calls, none of the hook's 3,000 s in them
    # a forward that raises ends its timing: the next call is counted again
    with pytest.raises(IndexError), torch.no_grad():
        model(input_ids=ids, decoder_input_ids=torch.tensor([[10_000]]))
    with torch.no_grad():
        model.get_encoder()(input_ids=ids)
    assert timer.calls == 5 and timer._depth == 0
    timer.remove()
    with torch.no_grad():
        model.get_encoder()(input_ids=ids)
    assert timer.calls == 5
