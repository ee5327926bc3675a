"""The run axis (simpe.models.stacked): each run's block of a stacked pass is that run's own model's pass.

At one torch thread a run's block of ``baddbmm`` is the ``linear`` of that run alone, bit for bit (the same GEMM per
block), so the stacked demo model's logits equal each run's own model's exactly, in any group size. A pass's gradients
are the same run's in a group of any size bit for bit, and its own model's up to the order of a few sums. The layer
norm's two-step affine part gives what the fused one gives.
"""
from __future__ import annotations

import copy

import pytest
import torch

from simpe.model import load_model, teacher_forced_logits
from simpe.models.stacked import StackedModel, stackable


@pytest.fixture(scope="module")
def demo():
    return load_model(None, "cpu", None, "float32")


def _runs(demo, count: int) -> list:
    """``count`` copies of the demo model, each but the first moved by its own small random offset."""
    models = [copy.deepcopy(demo.model) for _ in range(count)]
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for number, model in enumerate(models[1:], 1):
            for name, param in model.named_parameters():
                if "embed_positions" not in name:  # fixed sinusoidal positions: shared by every run
                    param.add_(torch.randn(param.shape, generator=generator) * 1e-3 * number)
    return models


def _pair(demo):
    return demo.family.encode_pair(demo.tokenizer, "Select the cell range.", "Wählen Sie den Zellbereich aus.", "cpu")


def test_each_runs_block_is_its_own_models_pass_bit_for_bit(demo, one_torch_thread: None) -> None:
    models = _runs(demo, 3)
    stack = StackedModel(models, demo.family.frozen_markers)
    pair = _pair(demo)
    with torch.no_grad():
        stacked = teacher_forced_logits(stack.model, pair.input_ids.expand(3, -1), pair.labels.expand(3, -1))
        alone = StackedModel(models[2:], demo.family.frozen_markers)
        single = teacher_forced_logits(alone.model, pair.input_ids, pair.labels)
        for number, model in enumerate(models):
            assert torch.equal(stacked[number], teacher_forced_logits(model, pair.input_ids, pair.labels)[0])
    assert torch.equal(single[0], stacked[2])  # a group of one is a block of a group of three
    # every learnable tensor but the fixed positions is stacked, tied ones once (Marian: 175 tensors)
    assert len({id(p) for p in stack.names.values()}) == len(stack.names) == 175
    assert stack.nbytes() == 3 * sum(p.numel() * 4 for n, p in models[0].named_parameters() if "embed_positions" not in n)


def _stacked_grads(models: list, family, pair) -> tuple[StackedModel, tuple]:
    stack = StackedModel(models, family.frozen_markers)
    count = len(models)
    for param in stack.names.values():
        param.requires_grad_(True)
    logits = teacher_forced_logits(stack.model, pair.input_ids.expand(count, -1), pair.labels.expand(count, -1))
    losses = [torch.nn.functional.cross_entropy(logits[r].float(), pair.labels[0]) for r in range(count)]
    total = losses[0]
    for loss in losses[1:]:
        total = total + loss
    return stack, torch.autograd.grad(total, list(stack.names.values()))


def test_runs_that_do_not_change_a_tensor_read_one_base_and_get_their_own_models_pass(demo, one_torch_thread: None) -> None:
    """Run 0 changes nothing (baseline), run 1 everything (full), run 2 the top decoder layer (a top-like method), run
    3 nothing: most tensors hold two versions (the base, full's) instead of four, and each block is still its own
    model's pass, bit for bit, whether the base's runs take one product (five rows each) or one each (one row)."""
    models = _runs(demo, 4)
    top_layer = demo.family.top_layer_prefixes(demo.model)[1]  # model.decoder.layers.<last>.
    with torch.no_grad():  # the runs that change nothing hold the base
        for number in (0, 3):
            models[number].load_state_dict(demo.model.state_dict())
        for name, param in models[2].named_parameters():
            if not name.startswith(top_layer) and "embed_positions" not in name:
                param.copy_(dict(demo.model.named_parameters())[name])
    top = {name for name, _ in models[2].named_parameters() if name.startswith(top_layer)}
    everything = {name for name, _ in models[1].named_parameters()}
    stack = StackedModel(models, demo.family.frozen_markers, trainable=[set(), everything, top, set()])
    assert stack.row("model.shared.weight", 0) == stack.row("model.shared.weight", 3) == 0
    assert stack.row("model.shared.weight", 1) == 1 and stack.row("model.shared.weight", 2) == 0
    assert [stack.row(f"{top_layer}fc1.weight", r) for r in range(4)] == [0, 1, 2, 0]
    assert stack.names["model.encoder.layers.0.fc1.weight"].shape[0] == 2  # the base and full's
    pair = _pair(demo)
    for rows in (1, 5):  # a block of one row: block by block; of five: one product for the base's runs
        ids = pair.input_ids.expand(4 * rows, -1)
        labels = pair.labels.expand(4 * rows, -1)
        with torch.no_grad():
            stacked = teacher_forced_logits(stack.model, ids, labels)
            for number, model in enumerate(models):
                alone = teacher_forced_logits(model, pair.input_ids.expand(rows, -1), pair.labels.expand(rows, -1))
                assert torch.equal(stacked[number * rows:(number + 1) * rows], alone), (rows, number)


def test_the_gradients_of_a_stacked_pass_are_each_runs_own(demo, one_torch_thread: None) -> None:
    models = _runs(demo, 2)
    pair = _pair(demo)
    stack, grads = _stacked_grads(models, demo.family, pair)
    _, alone = _stacked_grads(models[1:], demo.family, pair)
    for name, got, one in zip(stack.names, grads, alone):  # a group of one: the second run's block, bit for bit
        assert torch.equal(got[1], one[0]), name
    for number, model in enumerate(models):  # the run's own model: the same up to the order of a few sums
        own = dict(model.named_parameters())
        loss = torch.nn.functional.cross_entropy(teacher_forced_logits(model, pair.input_ids, pair.labels)[0], pair.labels[0])
        expected = torch.autograd.grad(loss, [own[name] for name in stack.names])
        for name, got, want in zip(stack.names, grads, expected):
            torch.testing.assert_close(got[number], want, rtol=1e-4, atol=1e-6, msg=name)
    index = list(stack.names).index("model.shared.weight")
    pad = demo.model.config.pad_token_id
    # the padding row (Marian's decoder start) gets no gradient from the lookups, only from the output projection
    _, projection_only = _stacked_grads(models[:1], demo.family, pair)
    assert projection_only[index][0, pad].abs().sum() > 0


def test_a_layer_norms_two_step_affine_part_is_the_fused_one() -> None:
    x, weight, bias = torch.randn(40, 512), torch.randn(512), torch.randn(512)
    fused = torch.nn.functional.layer_norm(x, (512,), weight, bias)
    assert torch.equal(fused, torch.addcmul(bias, torch.nn.functional.layer_norm(x, (512,)), weight))


def test_a_module_the_run_axis_does_not_know_is_named() -> None:
    class Scaled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gain = torch.nn.Parameter(torch.ones(4))
            self.proj = torch.nn.Linear(4, 4)

    assert stackable(Scaled()) == "the model (Scaled) holds learnable tensors the run axis does not stack"
    assert stackable(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))) is None
