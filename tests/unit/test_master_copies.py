"""bfloat16 / float16 updates that keep their step: float32 master copies of the adapted tensors (update.master_copies),
and activation checkpointing (update.checkpointing) that changes no number."""
from __future__ import annotations

import pytest
import torch

from simpe.config.files import defaults
from simpe.loop.masters import MasterCopies, master_copies
from simpe.loop.update import checkpoint_layers, update
from simpe.methods import METHODS
from simpe.methods.bias import OUTPUT_BIAS
from simpe.model import Pair

PAIR = Pair(torch.tensor([[5, 6, 7, 0]]), torch.tensor([[8, 9, 0]]))  # (1, 4) source, (1, 3) labels: targets 8, 9 and eos 0
TARGETS = [8, 9, 0]


def _bias_run(tiny_marian, masters: bool, steps: int = 30, dtype: torch.dtype = torch.bfloat16):
    """``bias`` on a tiny Marian model at ``dtype``, its second output bias set to 1.0 everywhere, ``steps`` updates
    of lr 0.001 on one pair; returns (the bias after, the method)."""
    model = tiny_marian(seed=3).to(dtype)
    method = METHODS.build("bias")
    cfg = defaults("update", lr=0.001, max_repeats=1, master_copies=masters)
    method.attach(model, None, cfg)
    bias = method.trainable()[OUTPUT_BIAS]
    with torch.no_grad():
        bias.fill_(1.0)
    for _ in range(steps):
        record = update(model, method, PAIR, cfg)
        assert record["repetitions"] == 1 and record["skipped"] is None
    return bias.detach().clone(), method


def test_a_step_below_bfloat16s_spacing_is_lost_without_a_master_copy_and_kept_with_one(tiny_marian) -> None:
    """At 1.0, bfloat16's spacing is 2**-7 above and 2**-8 below: a step smaller than 2**-9 rounds back to 1.0.
    Every element's step is at most lr · clip_norm = 0.001 (the clipped gradient's norm is at most 1), so without a
    master copy the bias never moves, however many steps; with one, the steps add up in float32 and the target
    tokens' entries (gradient about -(1 - p)/3 each, so about +0.0003 a step) cross 1 + 2**-8 within 30 steps and
    round to the next bfloat16 value, 1 + 2**-7."""
    lost, _ = _bias_run(tiny_marian, masters=False)
    assert torch.equal(lost, torch.ones_like(lost))  # 30 steps, not one bit moved
    kept, method = _bias_run(tiny_marian, masters=True)
    assert kept.dtype == torch.bfloat16
    assert kept[TARGETS].tolist() == [1.0078125] * 3  # 1 + 2**-7: the next bfloat16 value above 1.0
    master = master_copies(method).masters[id(method.trainable()[OUTPUT_BIAS])]  # (vocab,) float32
    assert master.dtype == torch.float32
    assert torch.equal(master.to(torch.bfloat16), kept)  # the weight is the master, rounded
    assert all(0.0045 < float(master[i]) - 1.0 < 0.011 for i in TARGETS)  # 30 steps of about 0.0002-0.0003
    others = [i for i in range(kept.numel()) if i not in TARGETS]
    assert float((master[others] - 1.0).max()) < 0  # the other tokens' bias went down, below bfloat16's spacing
    assert torch.equal(kept[others], torch.ones(len(others), dtype=torch.bfloat16))


def test_float16_keeps_the_step_too(tiny_marian) -> None:
    """float16 at 1.0: spacing 2**-10 above; lr 0.001 steps of about 0.0003 cross half of it in two steps."""
    lost, _ = _bias_run(tiny_marian, masters=False, steps=8, dtype=torch.float16)
    kept, _ = _bias_run(tiny_marian, masters=True, steps=8, dtype=torch.float16)
    assert float((kept[TARGETS] - lost[TARGETS]).float().min()) > 0.001  # the master copy moved them further


def test_float32_models_get_no_master_copy(tiny_marian) -> None:
    model = tiny_marian(seed=3)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.01)
    method.attach(model, None, cfg)
    update(model, method, PAIR, cfg)
    assert master_copies(method).masters == {} and MasterCopies.needed(list(method.trainable().values())) == []


def test_a_weight_written_outside_the_update_gets_a_fresh_master(tiny_marian) -> None:
    """A document reset (``Method.load_state_dict``) writes the weights: the next step starts from them, not from the
    float32 master of before the reset."""
    model = tiny_marian(seed=3).to(torch.bfloat16)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.01, max_repeats=1)
    method.attach(model, None, cfg)
    base = method.state_dict()
    first = update(model, method, PAIR, cfg)
    method.load_state_dict(base)  # the reset
    again = update(model, method, PAIR, cfg)
    assert again["loss_before"] == first["loss_before"] and again["loss_after"] == first["loss_after"]


@pytest.mark.parametrize("name", ["full", "lasso"])
def test_a_non_finite_step_is_rolled_back_on_the_master_copies(tiny_marian, name: str) -> None:
    """lr 1e30 at bfloat16: the step is undone, weights and masters as before it, and the model learns afterwards."""
    model = tiny_marian(seed=3).to(torch.bfloat16)
    method = METHODS.build(name)
    sane = defaults("update", lr=0.01, max_repeats=1)
    method.attach(model, None, sane)
    update(model, method, PAIR, sane)  # masters exist
    masters = master_copies(method)
    before = {n: p.detach().clone() for n, p in method.trainable().items()}
    master_before = {n: masters.masters[id(p)].clone() for n, p in method.trainable().items()}
    record = update(model, method, PAIR, defaults("update", lr=1e30, clip_norm=0.0))
    assert record["repetitions"] == 0 and record["skipped"].endswith("step rolled back")
    for n, p in method.trainable().items():
        assert torch.equal(p.detach(), before[n]), n
        assert torch.equal(masters.masters[id(p)], master_before[n]), n
    assert update(model, method, PAIR, sane)["repetitions"] == 1


@pytest.mark.parametrize("name", ["full", "lora"])
def test_activation_checkpointing_changes_no_number(tiny_marian, name: str) -> None:
    """update.checkpointing: the layers' activations are recomputed in the backward pass; the same losses and weights,
    bit for bit, and decoding (no gradient) runs the layers as before."""
    results = []
    for checkpointing in (False, True):
        model = tiny_marian(seed=3, layers=2)
        torch.manual_seed(0)  # lora's A matrices
        method = METHODS.build(name)
        cfg = defaults("update", lr=0.01, checkpointing=checkpointing)
        method.attach(model, None, cfg)
        records = [update(model, method, PAIR, cfg) for _ in range(2)]
        results.append((records, {n: p.detach().clone() for n, p in method.trainable().items()}))
    (plain, plain_weights), (checked, checked_weights) = results
    assert [r["loss_after"] for r in plain] == [r["loss_after"] for r in checked]
    assert all(torch.equal(plain_weights[n], checked_weights[n]) for n in plain_weights)
    assert checkpoint_layers(model) == 4  # two encoder and two decoder layers, wrapped once


def test_refresh_makes_masters_current_and_leaves_the_weights_bit_for_bit() -> None:
    """``refresh``: a weight written since its master was left gets a fresh master (its own value in float32), a current
    master keeps its finer value; no weight changes, and ``enter`` afterwards finds every master current (the same
    tensors)."""
    params = [torch.nn.Parameter(torch.randn(5, 3).to(torch.bfloat16)) for _ in range(2)]
    masters = MasterCopies()
    masters.refresh(params)
    kept = {id(p): masters.masters[id(p)] for p in params}
    with torch.no_grad():
        kept[id(params[0])].add_(1e-4)  # a finer value the bfloat16 weight does not show
        params[1].mul_(2.0)  # a weight written since: its master is stale
    before = [p.detach().clone() for p in params]
    masters.refresh(params)
    assert all(torch.equal(p.detach(), b) and p.dtype == torch.bfloat16 for p, b in zip(params, before))
    current = masters.masters[id(params[0])]  # current: kept where it was, finer value and all
    assert current.data_ptr() == kept[id(params[0])].data_ptr() and torch.equal(current, kept[id(params[0])])
    assert torch.equal(masters.masters[id(params[1])], params[1].detach().float())  # stale: fresh from the weight
    lows = masters.enter(params)
    assert [masters.masters[id(p)].data_ptr() for p in params] == [p.data_ptr() for p in params]
    masters.leave(params, lows)
