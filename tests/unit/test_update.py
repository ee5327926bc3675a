"""The shared update: a non-finite step rolled back, the SGD swap, the clipping factor, the fused step."""
from __future__ import annotations

import math

import pytest
import torch

from simpe.config.files import defaults
from simpe.loop.undo import FUSE_MIN, Backup
from simpe.loop.update import clip_and_step, clip_scale, clip_scales, set_dropout, update
from simpe.methods import METHODS
from simpe.model import Pair


@pytest.mark.parametrize("name", ["full", "lasso"])  # lasso announces only the groups its step changes
def test_a_step_that_makes_the_model_non_finite_is_rolled_back(tiny_marian, name: str) -> None:
    """update.lr=1e30: the first step overflows; the weights are restored bit for bit and the record says so."""
    model = tiny_marian(seed=3)
    method = METHODS.build(name)
    cfg = defaults("update", lr=1e30, clip_norm=0.0)
    method.attach(model, None, cfg)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    pair = Pair(torch.tensor([[5, 6, 7, 0]]), torch.tensor([[8, 9, 0]]))  # (1, 4) source, (1, 3) labels
    record = update(model, method, pair, cfg)
    assert record["repetitions"] == 0
    assert record["skipped"].startswith("non-finite") and record["skipped"].endswith("after step 1; step rolled back")
    assert all(torch.equal(p, before[name]) for name, p in model.named_parameters())
    assert math.isfinite(record["loss_after"]) and record["loss_after"] == record["loss_before"]
    sane = update(model, method, pair, defaults("update", lr=0.01))  # the model still learns afterwards
    assert sane["skipped"] is None and sane["repetitions"] >= 1


def test_the_sgd_step_swaps_in_new_weights_with_the_in_place_result(tiny_marian) -> None:
    """full's step writes the new weights into the gradients' buffers (or spare ones) and makes them the
    parameters' values: the same Parameter objects (tied embeddings stay tied), the same numbers as
    stepping in place, step after step."""
    model = tiny_marian(seed=3)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.05, clip_norm=1.0, max_repeats=1)
    method.attach(model, None, cfg)
    params = dict(model.named_parameters())
    shared = model.model.shared.weight
    pair = Pair(torch.tensor([[5, 6, 7, 0]]), torch.tensor([[8, 9, 0]]))  # (1, 4) source, (1, 3) labels
    reference = tiny_marian(seed=3)  # the same weights, stepped in place by hand
    ref_params = dict(reference.named_parameters())
    names = [n for n in method.trainable() if n in ref_params]
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(reference(input_ids=pair.input_ids, labels=pair.labels).logits.flatten(0, 1),
                                                 pair.labels.view(-1))
        grads = torch.autograd.grad(loss, [ref_params[n] for n in names], allow_unused=True)
        with torch.no_grad():
            for n, g in zip(names, grads):
                if g is not None:
                    ref_params[n].add_(g, alpha=-cfg.lr * min(1.0, cfg.clip_norm / (float(g.norm()) + 1e-6)))
        record = update(model, method, pair, cfg)
        assert record["repetitions"] == 1 and record["skipped"] is None
    assert dict(model.named_parameters()) == params  # the same objects
    assert model.lm_head.weight is shared and model.model.decoder.embed_tokens.weight is shared
    for n in names:
        torch.testing.assert_close(params[n].detach(), ref_params[n].detach(), rtol=0, atol=1e-6)
    assert not torch.equal(shared, tiny_marian(seed=3).model.shared.weight)  # it moved


def test_the_clipping_factor_of_one_norm_is_the_float32_one_of_the_tensor_formula() -> None:
    """clip_scale (Python, one norm at a time, for the fused SGD step) equals clip_scales (float32 tensor) bit for bit."""
    generator = torch.Generator().manual_seed(0)
    norms = torch.cat([torch.exp(torch.randn(20000, generator=generator) * 6), torch.rand(20000, generator=generator) + 0.5,
                       torch.tensor([0.0, 1e-6, 1.0, 0.999999, 1e30, 3e38])])  # (n,) float32
    for clip_norm in (0.0, 1.0, 0.05, 3.3):
        assert [clip_scale(n, clip_norm) for n in norms.tolist()] == clip_scales(norms, clip_norm)


def _sgd_case(nan_at: int | None = None, shared_grad: bool = False):
    """Four tensors, two small and two of FUSE_MIN values, with gradients (one NaN-filled at ``nan_at``)."""
    generator = torch.Generator().manual_seed(1)
    shapes = [(8,), (FUSE_MIN,), (4, 4), (FUSE_MIN // 4, 4)]
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in shapes]
    grads = [torch.randn(shape, generator=generator) * 3 for shape in shapes]
    if nan_at is not None:
        grads[nan_at][0] = float("nan")
    if shared_grad:
        grads[3] = grads[1].view(FUSE_MIN // 4, 4)  # one storage, two gradients
    return [f"t{i}" for i in range(4)], params, grads


def test_the_fused_sgd_step_is_the_plain_step_with_every_norm_first(monkeypatch) -> None:
    """Plain SGD (the norm of each large gradient, then its step at once) gives the weights the generic path gives
    (every norm, then the unfused SGD step, update._sgd_step), bit for bit, also when gradients share a storage (then none is written)."""
    monkeypatch.setattr("simpe.loop.update.FUSE_BYTES", 0)  # fused for these few kB too
    for shared in (False, True):
        names, params, grads = _sgd_case(shared_grad=shared)
        keep, original = [g.clone() for g in grads], [p.detach().clone() for p in params]
        stacked = torch.stack(torch._foreach_norm(keep))
        scales = clip_scales(stacked, 1.0)
        expected = [torch.add(p.detach(), g, alpha=-0.1 * s) for p, g, s in zip(params, keep, scales)]
        backup = Backup({id(p): n for n, p in zip(names, params)})
        with torch.no_grad():
            assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1.0, backup) is None
        assert all(torch.equal(p.detach(), e) for p, e in zip(params, expected))
        if shared:
            assert torch.equal(grads[1], keep[1]) and torch.equal(grads[3], keep[3])  # not written over
        backup.restore()  # and the step can be undone, bit for bit
        assert all(torch.equal(p.detach(), o) for p, o in zip(params, original))


@pytest.mark.parametrize("nan_at", [0, 1, 3])  # a small one (found first), the first large one, the last large one
def test_a_non_finite_gradient_found_midway_leaves_the_weights_as_they_were(nan_at: int, monkeypatch) -> None:
    monkeypatch.setattr("simpe.loop.update.FUSE_BYTES", 0)
    names, params, grads = _sgd_case(nan_at=nan_at)
    before = [p.detach().clone() for p in params]
    backup = Backup({id(p): n for n, p in zip(names, params)})
    with torch.no_grad():
        assert clip_and_step(METHODS.build("full"), names, params, grads, 0.1, 1.0, backup) == f"t{nan_at}"
    assert all(torch.equal(p.detach(), b) for p, b in zip(params, before))
    assert backup.tensors == [] and backup.first_non_finite() is None  # nothing to undo


# ---------------------------------------------------------------- update.dropout reaches every layer
DROPOUT_KINDS = ("demo", "mbart", "m2m100", "t5", "llama", "qwen2")


def _dropout_model(kind: str):
    """The demo model (Marian, the default's own config: every rate 0.0) or a tiny model of another family, with the
    ids of a source and a target."""
    from test_models import token_source
    from tiny_families import token_model

    from simpe.model import load_model

    if kind == "demo":
        loaded = load_model(None, "cpu")
        return loaded.model, loaded.family.encode_source(loaded.tokenizer, "Format Cells", "cpu")[0], (5, 6, 7, 0)
    return token_model(kind, 0), token_source(kind), (3, 4, 5, 6)


def _rates_used(model, source, target, monkeypatch: pytest.MonkeyPatch) -> set[float]:
    """The dropout probabilities one training-mode forward pass hands to torch (``nn.functional.dropout``, what
    ``nn.Dropout`` and transformers' layers call, and the fused attention's ``dropout_p``), recorded on the way."""
    from test_models import full_scores

    used: list[float] = []
    dropout, attention = torch.nn.functional.dropout, torch.nn.functional.scaled_dot_product_attention

    def recording_dropout(tensor, p=0.5, training=True, inplace=False):
        if training:
            used.append(float(p))
        return dropout(tensor, p, training, inplace)

    def recording_attention(*args, dropout_p=0.0, **kwargs):
        used.append(float(dropout_p))
        return attention(*args, dropout_p=dropout_p, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "dropout", recording_dropout)
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording_attention)
    try:
        model.train()
        full_scores(model, source, [target])
    finally:
        model.eval()
        monkeypatch.undo()
    return set(used)


@pytest.mark.parametrize("kind", DROPOUT_KINDS)
def test_update_dropout_is_the_rate_every_dropout_of_the_model_uses(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """set_dropout(model, p): every rate a training-mode forward pass uses is p (under transformers 5 Marian's layers
    keep float rates of their own, which the config and nn.Dropout modules do not reach); at 0.0 training-mode passes
    are deterministic and equal the eval-mode pass (LayerDrop, which the tiny M2M100 has at 0.05 as M2M100-418M does,
    turned off); at 0.25 two training-mode passes differ (dropout acts)."""
    from test_models import full_scores

    model, source, target = _dropout_model(kind)
    eval_score = full_scores(model, source, [target])[0]
    set_dropout(model, 0.25)
    assert _rates_used(model, source, target, monkeypatch) == {0.25}, kind
    assert all(m.p == 0.25 for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd))
    assert model.config.dropout == 0.25
    assert all(v == 0.0 for m in model.modules() for k, v in vars(m).items() if k.endswith("layerdrop"))
    model.train()
    torch.manual_seed(0)
    noisy = [full_scores(model, source, [target])[0] for _ in range(2)]
    assert noisy[0] != noisy[1], kind
    set_dropout(model, 0.0)
    assert _rates_used(model, source, target, monkeypatch) <= {0.0}, kind
    model.train()
    quiet = [full_scores(model, source, [target])[0] for _ in range(2)]
    model.eval()
    assert quiet[0] == quiet[1], kind  # deterministic
    assert quiet[0] == pytest.approx(eval_score, abs=1e-5), kind  # the eval pass (kernels may round otherwise in train mode)
