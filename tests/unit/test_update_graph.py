"""The update's repetitions on fixed shapes, one host read each (simpe.loop.update_graph), forced on the CPU, against the
eager in-place update a GPU ran before (``simpe.loop.undo.IN_PLACE``): the same records field for field, the losses and
weights equal to float noise (the pair padded to a bucket), the same undo in every failure case. The graphs need CUDA:
those tests are CUDA-marked."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch.overrides import TorchFunctionMode

from simpe.config.files import defaults
from simpe.loop import undo, update_graph
from simpe.loop.masters import master_copies
from simpe.loop.update import update
from simpe.methods import METHODS
from simpe.model import Pair

PAIRS = [Pair(torch.tensor([[5, 6, 7, 0]]), torch.tensor([[8, 9, 0]])),  # (1, 4) source, (1, 3) labels
         Pair(torch.tensor([[11, 4, 9, 12, 3, 5, 7, 8, 6, 2, 0]]), torch.tensor([[4, 4, 10, 13, 9, 2, 5, 0]])),
         Pair(torch.tensor([[7, 0]]), torch.tensor([[3, 12, 6, 0]]))]


def _attached(model, monkeypatch: pytest.MonkeyPatch, fixed: bool, preset: str = "full", **settings):
    """``preset`` attached to ``model`` with update settings (lr 0.05, no threshold reached, unless ``settings`` say
    otherwise), the fixed-shape path on or off (``fixed``) beside the eager update as a GPU runs it (in place), no
    runner left from before: (method, update config)."""
    monkeypatch.setattr(undo, "IN_PLACE", True)  # the eager update as a GPU runs it
    monkeypatch.setattr(update_graph, "ON_DEVICE", fixed)
    update_graph.clear()
    method = METHODS.build(preset)
    cfg = defaults("update", **{"lr": 0.05, "ppl_threshold": 1.0, **settings})
    method.attach(model, None, cfg)
    return method, cfg


def _updates(tiny_marian, monkeypatch: pytest.MonkeyPatch, fixed: bool, dtype: torch.dtype = torch.float32,
             preset: str = "full", rounds: int = 2, **settings) -> tuple[list[dict], dict[str, torch.Tensor], object]:
    model = tiny_marian(seed=3).to(dtype)
    method, cfg = _attached(model, monkeypatch, fixed, preset, **settings)
    records = []
    for _ in range(rounds):
        for pair in PAIRS:
            record = update(model, method, pair, cfg)
            record.pop("seconds_backward")
            records.append(record)
    return records, {n: p.detach().float().clone() for n, p in method.trainable().items()}, method


def _close(eager: list[dict], fixed: list[dict], rel: float) -> None:
    for a, b in zip(eager, fixed):
        assert {k: v for k, v in a.items() if not k.startswith(("loss", "ppl"))} == \
            {k: v for k, v in b.items() if not k.startswith(("loss", "ppl"))}
        for key in ("loss_before", "loss_after", "ppl_before", "ppl_after"):
            assert (a[key] is None) == (b[key] is None)
            if a[key] is not None:
                assert b[key] == pytest.approx(a[key], rel=rel), key


@pytest.mark.parametrize("dtype,preset", [(torch.float32, "full"), (torch.bfloat16, "full"), (torch.float32, "bias"),
                                          (torch.float32, "top"), (torch.float32, "lora")])
def test_fixed_shape_updates_give_the_eager_updates_records(tiny_marian, monkeypatch: pytest.MonkeyPatch,
                                                            dtype: torch.dtype, preset: str) -> None:
    """Six updates of three steps each (a threshold no pair reaches) on pairs padded from 2-11 tokens to a bucket of 16:
    the same repetitions, the losses within 1e-5 (float32) and the weights within 1e-5; in bfloat16 the float32 masters
    keep their addresses, and the weights are within one bfloat16 spacing."""
    eager, eager_weights, _ = _updates(tiny_marian, monkeypatch, False, dtype, preset)
    fixed, fixed_weights, method = _updates(tiny_marian, monkeypatch, True, dtype, preset)
    assert all(r["repetitions"] == 3 and r["skipped"] is None for r in fixed)
    _close(eager, fixed, 1e-5 if dtype == torch.float32 else 1e-2)
    tolerance = 1e-5 if dtype == torch.float32 else 2 ** -7
    for name, weight in eager_weights.items():
        torch.testing.assert_close(fixed_weights[name], weight, rtol=tolerance, atol=tolerance)
    if dtype == torch.bfloat16:
        assert master_copies(method).masters


@pytest.mark.parametrize("threshold", [30.0, 1e9])
def test_the_perplexity_rule_stops_where_the_eager_update_stops(tiny_marian, monkeypatch: pytest.MonkeyPatch,
                                                                threshold: float) -> None:
    """Thresholds that stop pairs after 1, 2 or 3 steps (30) and at once (1e9): the same repetitions per update (the repetition that meets
    the threshold changes no weight, though its backward pass ran)."""
    eager, eager_weights, _ = _updates(tiny_marian, monkeypatch, False, ppl_threshold=threshold)
    fixed, fixed_weights, _ = _updates(tiny_marian, monkeypatch, True, ppl_threshold=threshold)
    _close(eager, fixed, 1e-5)
    for name, weight in eager_weights.items():
        torch.testing.assert_close(fixed_weights[name], weight, rtol=1e-5, atol=1e-5)
    print(threshold, [r["repetitions"] for r in fixed])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_step_that_breaks_the_model_is_undone_as_the_eager_update_undoes_it(tiny_marian, monkeypatch: pytest.MonkeyPatch,
                                                                              dtype: torch.dtype) -> None:
    """lr 1e30 without clipping: the step's weights or loss are not finite; the record says what the eager update's
    says, and the weights and masters are those before the update, at their addresses."""
    out = {}
    for fixed in (False, True):
        model = tiny_marian(seed=3).to(dtype)
        method, sane = _attached(model, monkeypatch, fixed, lr=0.01, max_repeats=1, ppl_threshold=2.0)
        update(model, method, PAIRS[0], sane)
        before = {n: p.detach().clone() for n, p in method.trainable().items()}
        addresses = {n: p.data_ptr() for n, p in method.trainable().items()}
        masters = {n: m.clone() for n, m in master_copies(method).masters.items()}
        record = update(model, method, PAIRS[1], defaults("update", lr=1e30, clip_norm=0.0))
        assert all(torch.equal(p.detach(), before[n]) for n, p in method.trainable().items())
        assert {n: p.data_ptr() for n, p in method.trainable().items()} == addresses
        assert all(torch.equal(master_copies(method).masters[n], m) for n, m in masters.items())
        record.pop("seconds_backward")
        out[fixed] = record
        assert update(model, method, PAIRS[0], sane)["repetitions"] == 1
    assert out[True]["skipped"] == out[False]["skipped"] and out[True]["skipped"].endswith("step rolled back")
    assert out[True]["repetitions"] == out[False]["repetitions"] == 0


def test_a_non_finite_loss_changes_nothing(tiny_marian, monkeypatch: pytest.MonkeyPatch) -> None:
    """A weight at inf before the update (the loss is NaN at once): "non-finite loss", no step, every weight as it was."""
    out = {}
    for fixed in (False, True):
        model = tiny_marian(seed=3)
        method, cfg = _attached(model, monkeypatch, fixed)
        with torch.no_grad():
            model.get_decoder().layers[0].fc1.weight[0, 0] = float("inf")
        before = {n: p.detach().clone() for n, p in method.trainable().items()}
        record = update(model, method, PAIRS[0], cfg)
        record.pop("seconds_backward")
        out[fixed] = record
        assert all(torch.equal(p.detach(), before[n]) for n, p in method.trainable().items())
    assert {k: str(v) for k, v in out[True].items()} == {k: str(v) for k, v in out[False].items()}  # (NaN != NaN)
    assert out[True]["skipped"] == "non-finite loss"


class _Reads(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.reads += func in (torch.Tensor.tolist, torch.Tensor.item, torch.Tensor.__bool__, torch.Tensor.__float__)
        return func(*args, **(kwargs or {}))


def test_one_host_read_per_repetition(tiny_marian, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three steps and the measuring pass: four reads (one per repetition); the first update of a method reads the
    weights' finiteness once more (the check that makes the step's bound enough afterwards)."""
    model = tiny_marian(seed=3)
    method, cfg = _attached(model, monkeypatch, True)
    counts = []
    for _ in range(3):
        with _Reads() as reads:
            record = update(model, method, PAIRS[0], cfg)
        counts.append(reads.reads)
        assert record["repetitions"] == 3
    assert counts == [5, 4, 4]


def test_where_the_fixed_shape_update_applies(tiny_marian, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain SGD on the pair alone, with the weights written in place; everything else says why it runs eagerly."""
    model = tiny_marian(seed=3)
    assert update_graph.reason(model, METHODS.build("full"), defaults("update"), [], False, False, False,
                               list(model.parameters())) == "the weights are not written in place"  # the CPU's swap
    monkeypatch.setattr(undo, "IN_PLACE", True)
    cfg = defaults("update")
    why = {}
    for preset in ("full", "lasso", "bias", "lora"):
        method = METHODS.build(preset)
        method.attach(model, None, cfg)
        params = list(method.trainable().values())
        why[preset] = update_graph.reason(model, method, cfg, [], False, False, False, params)
    assert why["full"] is None and why["bias"] is None and why["lora"] is None
    assert "takes a step of its own" in why["lasso"]
    method = METHODS.build("full")
    method.attach(model, None, cfg)
    params = list(method.trainable().values())
    assert "replayed pairs" in update_graph.reason(model, method, cfg, [PAIRS[0]], False, False, False, params)
    assert "dropout" in update_graph.reason(model, method, dataclasses.replace(cfg, dropout=0.1), [], False, False, False, params)
    assert update_graph.ON_DEVICE is None and not update_graph.enabled("cpu") and update_graph.enabled("cuda")


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")


@pytest.mark.cuda
@CUDA
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_on_cuda_a_repetition_is_one_graph_replayed_and_equals_the_eager_repetition(tiny_marian, dtype: torch.dtype,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA (nothing forced) the repetitions are captured once per parity and replayed: the records and weights equal
    the eager repetitions' (``GRAPHS`` False) bit for bit, and every weight and master keeps its address."""
    out = {}
    for graphs in (False, None):
        monkeypatch.setattr(update_graph, "GRAPHS", graphs)
        update_graph.clear()
        model = tiny_marian(seed=3).to(device="cuda", dtype=dtype)
        method = METHODS.build("full")
        cfg = defaults("update", lr=0.05, ppl_threshold=1.0)
        method.attach(model, None, cfg)
        records = []
        for _ in range(3):
            for pair in PAIRS:
                record = update(model, method, Pair(pair.input_ids.cuda(), pair.labels.cuda()), cfg)
                record.pop("seconds_backward")
                records.append(record)
        runners = [runner for _, runner in update_graph._POOL.values()]
        if graphs is None:
            assert all(r.refused is None for r in runners), [r.refused for r in runners]
            assert any(g is not None for r in runners for g in r.graphs)
        out[graphs] = records, {n: p.detach().clone() for n, p in method.trainable().items()}
    assert out[None][0] == out[False][0]
    assert all(torch.equal(out[None][1][n], w) for n, w in out[False][1].items())


def test_a_threshold_just_above_the_pairs_perplexity_is_decided_by_the_hosts_rule(tiny_marian,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The device steps from ``MARGIN`` nats below the threshold on, and the host's rule (``exp(nll) <= threshold`` in
    double, the eager update's) decides: at a threshold 1e-5 above the pair's perplexity no step is kept, the weights
    are those before, as in the eager update."""
    from simpe.loop.update import pair_loss

    model = tiny_marian(seed=3)
    _, nll = pair_loss(model, PAIRS[1])
    threshold = math.exp(nll) * (1 + 1e-5)
    out = {}
    for fixed in (False, True):
        model = tiny_marian(seed=3)
        method, cfg = _attached(model, monkeypatch, fixed, ppl_threshold=threshold)
        before = {n: p.detach().clone() for n, p in method.trainable().items()}
        record = update(model, method, PAIRS[1], cfg)
        assert record["repetitions"] == 0 and record["skipped"] is None
        assert all(torch.equal(p.detach(), before[n]) for n, p in method.trainable().items())
        out[fixed] = record["ppl_before"]
    assert out[True] == pytest.approx(out[False], rel=1e-6)


SMALL_PAIRS = [Pair(torch.tensor([[5, 6, 7, 2]]), torch.tensor([[8, 9, 2]])),
               Pair(torch.tensor([[4, 9, 3, 5, 7, 8, 6, 10, 2]]), torch.tensor([[4, 4, 10, 3, 9, 5, 2]])),
               Pair(torch.tensor([[7, 2]]), torch.tensor([[3, 10, 6, 2]]))]


@pytest.mark.parametrize("kind", ["llama", "qwen2", "m2m100", "mbart"])
def test_every_family_updates_as_the_eager_update_does(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny random models of the other families (12 tokens): a causal LM's pair is its prompt and target in one
    sequence padded to a bucket, scored at the target's positions (the base model's states gathered there, then the
    output projection); M2M100's and mBART's as Marian's. Six updates of three steps each: the same records, the losses
    within 1e-5, the weights within 1e-5 of the eager in-place update's."""
    from tiny_families import token_model

    out = {}
    for fixed in (False, True):
        model = token_model(kind, seed=5)
        method, cfg = _attached(model, monkeypatch, fixed)
        assert update_graph.reason(model, method, cfg, [], False, False, False, list(method.trainable().values())) is None
        records = []
        for _ in range(2):
            for pair in SMALL_PAIRS:
                record = update(model, method, pair, cfg)
                record.pop("seconds_backward")
                records.append(record)
        out[fixed] = records, {n: p.detach().clone() for n, p in method.trainable().items()}
    assert all(r["repetitions"] == 3 for r in out[True][0])
    _close(out[False][0], out[True][0], 1e-5)
    for name, weight in out[False][1].items():
        torch.testing.assert_close(out[True][1][name], weight, rtol=1e-5, atol=1e-5)
