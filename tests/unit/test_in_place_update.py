"""The update's in-place mode (``simpe.loop.undo.in_place``, CUDA's): foreach steps that keep every weight's and master's
address, an undo that keeps them too, and the float32 conversions in one foreach call; run on the CPU by forcing it."""
from __future__ import annotations

import pytest
import torch

from simpe.config.files import defaults
from simpe.loop import undo
from simpe.loop.masters import as_float32, master_copies
from simpe.loop.undo import FUSE_MIN, Backup, in_place
from simpe.loop.update import clip_and_step, clip_scales, update
from simpe.methods import METHODS
from simpe.model import Pair

PAIR = Pair(torch.tensor([[5, 6, 7, 0]]), torch.tensor([[8, 9, 0]]))  # (1, 4) source, (1, 3) labels


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-place mode on the CPU (as every other device runs it)."""
    monkeypatch.setattr(undo, "IN_PLACE", True)


def _case(shared_grad: bool = False, nan_at: int | None = None):
    """Four tensors, two small and two of FUSE_MIN values, with gradients of norm about 3·sqrt(n)."""
    generator = torch.Generator().manual_seed(1)
    shapes = [(8,), (FUSE_MIN,), (4, 4), (FUSE_MIN // 4, 4)]
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in shapes]
    grads = [torch.randn(shape, generator=generator) * 3 for shape in shapes]
    if shared_grad:
        grads[3] = grads[1].view(FUSE_MIN // 4, 4)  # one storage, two gradients
    if nan_at is not None:
        grads[nan_at][0] = float("nan")
    return [f"t{i}" for i in range(4)], params, grads


def test_the_mode_is_in_place_on_every_device_but_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not in_place(torch.device("cpu"))
    assert in_place(torch.device("cuda")) and in_place(torch.device("mps"))
    monkeypatch.setattr(undo, "IN_PLACE", True)
    assert in_place(torch.device("cpu"))
    monkeypatch.setattr(undo, "IN_PLACE", False)
    assert not in_place(torch.device("cuda"))


@pytest.mark.parametrize("shared", [False, True])
def test_the_in_place_step_is_sgd_on_the_clipped_gradient_at_the_same_addresses(forced: None, shared: bool) -> None:
    """clip_norm 1.0 clips all four (norms of 8 to 190): θ - lr·(scale·g), the scaled gradient rounded to float32 first
    (torch's own two operations as the reference); undone bit for bit, every address kept; gradients that share a
    storage are not written."""
    names, params, grads = _case(shared_grad=shared)
    keep, original = [g.clone() for g in grads], [p.detach().clone() for p in params]
    addresses = [p.data_ptr() for p in params]
    scales = clip_scales(torch.stack(torch._foreach_norm(keep)), 1.0)
    assert all(s < 1.0 for s in scales)
    expected = [p.detach().add(g.mul(s), alpha=-0.1) for p, g, s in zip(params, keep, scales)]
    backup = Backup({id(p): n for n, p in zip(names, params)})
    with torch.no_grad():
        assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1.0, backup) is None
    assert all(torch.equal(p.detach(), e) for p, e in zip(params, expected))
    assert [p.data_ptr() for p in params] == addresses
    if shared:
        assert all(torch.equal(g, k) for g, k in zip(grads, keep))
    assert backup.first_non_finite() is None
    backup.restore()
    assert all(torch.equal(p.detach(), o) for p, o in zip(params, original))
    assert [p.data_ptr() for p in params] == addresses


def test_an_unclipped_in_place_step_is_the_swapped_step_bit_for_bit(forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """clip_norm 1e4 clips none: θ - lr·g, the same bits as the CPU's swapped step (torch.add with alpha)."""
    names, params, grads = _case()
    expected = [torch.add(p.detach(), g, alpha=-0.1) for p, g in zip(params, grads)]
    backup = Backup({id(p): n for n, p in zip(names, params)})
    with torch.no_grad():
        assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1e4, backup) is None
    assert all(torch.equal(p.detach(), e) for p, e in zip(params, expected))
    monkeypatch.setattr(undo, "IN_PLACE", False)  # the swap mode, the same step
    names, params, grads = _case()
    with torch.no_grad():
        assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1e4, Backup({id(p): n for n, p in zip(names, params)})) is None
    assert all(torch.equal(p.detach(), e) for p, e in zip(params, expected))


@pytest.mark.parametrize("nan_at", [0, 3])
def test_a_non_finite_gradient_changes_nothing_in_place(forced: None, nan_at: int) -> None:
    names, params, grads = _case(nan_at=nan_at)
    before = [p.detach().clone() for p in params]
    backup = Backup({id(p): n for n, p in zip(names, params)})
    with torch.no_grad():
        assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1.0, backup) == f"t{nan_at}"
    assert all(torch.equal(p.detach(), b) for p, b in zip(params, before))
    assert backup.tensors == []


def _addresses(method) -> dict[str, int]:
    return {n: p.data_ptr() for n, p in method.trainable().items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_updates_in_place_keep_every_address_and_the_records_of_the_swap_mode(tiny_marian, dtype: torch.dtype,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """full on a tiny Marian, four updates of up to three steps each, in both modes: the same losses (the clipped
    tensors' steps round once more in place: within 1e-5), and in place every weight and float32 master keeps its
    address from the first step on."""
    records, weights = {}, {}
    for mode in (False, True):
        monkeypatch.setattr(undo, "IN_PLACE", mode)
        model = tiny_marian(seed=3).to(dtype)
        method = METHODS.build("full")
        cfg = defaults("update", lr=0.05, ppl_threshold=1.0)
        method.attach(model, None, cfg)
        records[mode] = [update(model, method, PAIR, cfg)]
        addresses = _addresses(method)
        masters = {n: m.data_ptr() for n, m in master_copies(method).masters.items()}
        assert (dtype == torch.bfloat16) == bool(masters)
        for _ in range(3):
            records[mode].append(update(model, method, PAIR, cfg))
            if mode:
                assert _addresses(method) == addresses
                assert {n: m.data_ptr() for n, m in master_copies(method).masters.items()} == masters
        weights[mode] = {n: p.detach().float().clone() for n, p in method.trainable().items()}
    for swapped, placed in zip(records[False], records[True]):
        assert swapped["repetitions"] == placed["repetitions"] == 3 and placed["skipped"] is None
        assert placed["loss_after"] == pytest.approx(swapped["loss_after"], rel=1e-5)
    tolerance = 1e-5 if dtype == torch.float32 else 2 ** -7  # bfloat16: one spacing where a master crossed a rounding
    for n, w in weights[False].items():
        torch.testing.assert_close(weights[True][n], w, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_non_finite_step_is_rolled_back_in_place(tiny_marian, forced: None, dtype: torch.dtype) -> None:
    """lr 1e30: the step overflows and is undone: weights (and masters) as before it, at their addresses."""
    model = tiny_marian(seed=3).to(dtype)
    method = METHODS.build("full")
    sane = defaults("update", lr=0.01, max_repeats=1)
    method.attach(model, None, sane)
    update(model, method, PAIR, sane)  # masters and undo buffers exist
    before = {n: p.detach().clone() for n, p in method.trainable().items()}
    addresses = _addresses(method)
    masters = {n: m.clone() for n, m in master_copies(method).masters.items()}
    record = update(model, method, PAIR, defaults("update", lr=1e30, clip_norm=0.0))
    assert record["repetitions"] == 0 and record["skipped"].endswith("step rolled back")
    assert all(torch.equal(p.detach(), before[n]) for n, p in method.trainable().items())
    assert _addresses(method) == addresses
    assert all(torch.equal(master_copies(method).masters[n], m) for n, m in masters.items())
    assert update(model, method, PAIR, sane)["repetitions"] == 1


def test_float32_copies_in_one_call_are_those_of_float() -> None:
    """as_float32: the values and layout of ``.float()`` (a transposed gradient keeps its strides); float32 ones are
    themselves."""
    generator = torch.Generator().manual_seed(0)
    low = torch.randn(6, 5, generator=generator).to(torch.bfloat16).t()  # (5, 6) non-contiguous
    half = torch.randn(7, generator=generator).to(torch.float16)
    full = torch.randn(3, generator=generator)
    out = as_float32([low, full, half])
    assert out[1] is full
    for got, tensor in ((out[0], low), (out[2], half)):
        want = tensor.float()
        assert got.dtype == torch.float32 and torch.equal(got, want) and got.stride() == want.stride()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")
def test_on_cuda_the_update_writes_weights_and_masters_in_place(tiny_marian) -> None:
    """Without forcing anything: on CUDA every weight and master keeps its address from update to update."""
    model = tiny_marian(seed=3).to(device="cuda", dtype=torch.bfloat16)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.05, ppl_threshold=1.0)
    method.attach(model, None, cfg)
    update(model, method, Pair(PAIR.input_ids.cuda(), PAIR.labels.cuda()), cfg)
    addresses = _addresses(method)
    masters = {n: m.data_ptr() for n, m in master_copies(method).masters.items()}
    record = update(model, method, Pair(PAIR.input_ids.cuda(), PAIR.labels.cuda()), cfg)
    assert record["repetitions"] == 3 and record["skipped"] is None
    assert _addresses(method) == addresses
    assert {n: m.data_ptr() for n, m in master_copies(method).masters.items()} == masters


@pytest.mark.parametrize("preset", ["full", "bias"])
def test_a_pairs_masks_said_rather_than_read_back_give_the_same_update(tiny_marian, preset: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Off the CPU the update's pass runs under ``cross.known_masks`` (``update.KNOWN_MASKS``): transformers would read
    the unpadded pair's all-ones decoder mask back to drop it. Forced on the CPU, two updates of up to three steps:
    the same records and weights, bit for bit, and one host read fewer per forward pass (a TorchDispatchMode counts
    aten's reads back)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    import simpe.loop.update as upd

    reads = {"aten._local_scalar_dense.default", "aten.nonzero.default", "aten.equal.default", "aten.is_nonzero.default"}

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.reads = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            self.reads += str(func) in reads
            return func(*args, **(kwargs or {}))

    out = {}
    for known in (False, True):
        monkeypatch.setattr(upd, "KNOWN_MASKS", known)
        model = tiny_marian(seed=3)
        method = METHODS.build(preset)
        cfg = defaults("update", lr=0.05, ppl_threshold=1.0)
        method.attach(model, None, cfg)
        with Count() as counter:
            records = [update(model, method, PAIR, cfg) for _ in range(2)]
        for record in records:
            record.pop("seconds_backward")
        out[known] = (records, {n: p.detach().clone() for n, p in model.named_parameters()}, counter.reads)
    assert out[True][0] == out[False][0] and all(r["repetitions"] == 3 for r in out[True][0])
    assert all(torch.equal(out[True][1][n], w) for n, w in out[False][1].items())
    passes = sum(r["repetitions"] + 1 for r in out[False][0])  # a forward per step and the measuring pass after the last
    assert out[False][2] - out[True][2] == passes
