"""Method invariants: every parameter outside the trainable set stays bit-identical."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from messages import raises_naming
from method_pairs import HOT, PAIR, snapshot

from simpe.config.files import defaults
from simpe.errors import ConfigError
from simpe.loop.update import update
from simpe.methods import METHODS
from simpe.methods.base import Gradients, base_parameters
from simpe.methods.bias import OUTPUT_BIAS


def changed(before, model) -> set[str]:
    """Pre-existing parameters (the added output bias excluded) whose values moved."""
    return {n for n, p in model.named_parameters() if n in before and n != OUTPUT_BIAS and not torch.equal(before[n], p.detach())}


def run_method(name: str, tiny_marian, model_dir=None, **params):
    model = tiny_marian(seed=3)
    method = METHODS.build(name, **params)
    method.attach(model, model_dir, HOT)  # lasso's proximal step takes HOT's lr
    before = snapshot(model)
    record = update(model, method, PAIR, HOT)
    return model, method, before, record


def test_baseline_changes_nothing(tiny_marian):
    model, method, before, record = run_method("baseline", tiny_marian)
    assert changed(before, model) == set()
    assert record["repetitions"] == 0 and record["loss_before"] == record["loss_after"]
    assert method.adapted_parameters() == 0 and method.store_bytes() == 0


def test_full_changes_every_learnable_tensor_and_lowers_the_loss(tiny_marian):
    model, method, before, record = run_method("full", tiny_marian)
    learnable = set(base_parameters(model))
    assert changed(before, model) <= learnable
    assert "model.shared.weight" in changed(before, model)
    assert not any("embed_positions" in n for n in changed(before, model))  # fixed sinusoids never move
    assert record["repetitions"] == 3 and record["loss_after"] < record["loss_before"]
    assert method.adapted_parameters() == sum(p.numel() for p in learnable and base_parameters(model).values())
    assert method.store_bytes() == 4 * method.adapted_parameters()


def test_bias_changes_only_the_second_output_bias(tiny_marian):
    model, method, before, record = run_method("bias", tiny_marian)
    assert changed(before, model) == set()  # no pre-existing parameter moved
    bias = getattr(model, OUTPUT_BIAS)
    assert bias.shape == (50,) and bias.abs().sum() > 0
    assert method.adapted_parameters() == 50 and method.store_bytes() == 200
    # the bias enters the logits: zeroing it restores the base model's output exactly
    with torch.no_grad():
        adapted = model(input_ids=PAIR.input_ids, labels=PAIR.labels).logits
        saved = bias.clone()
        bias.zero_()
        base = model(input_ids=PAIR.input_ids, labels=PAIR.labels).logits
    assert torch.allclose(adapted - base, saved.expand_as(adapted), atol=1e-5)


def test_top_changes_only_the_topmost_layers(tiny_marian):
    model = tiny_marian(seed=3, layers=2)
    method = METHODS.build("top")
    method.attach(model, None, HOT)
    before = snapshot(model)
    update(model, method, PAIR, HOT)
    moved = changed(before, model)
    assert moved and all(n.startswith(("model.encoder.layers.1.", "model.decoder.layers.1.")) for n in moved)
    assert set(method.trainable()) == {n for n in base_parameters(model) if n.startswith(("model.encoder.layers.1.", "model.decoder.layers.1."))}


def test_fixed_needs_a_selection_and_changes_only_it(tiny_marian, tmp_path: Path):
    with pytest.raises(ConfigError, match=r"needs a tensor selection .* `simpe select-fixed --model"):
        run_method("fixed", tiny_marian, model_dir=tmp_path)
    chosen = ["model.decoder.layers.0.fc1.weight", "model.encoder.layers.0.self_attn.q_proj.weight"]
    (tmp_path / "fixed-selection.json").write_text(json.dumps({"tensors": [{"name": n} for n in chosen]}))
    model, method, before, _ = run_method("fixed", tiny_marian, model_dir=tmp_path)
    assert changed(before, model) == set(chosen)
    assert method.adapted_parameters() == 32 * 16 + 16 * 16
    (tmp_path / "fixed-selection.json").write_text(json.dumps({"tensors": [{"name": "no.such.tensor"}]}))
    with pytest.raises(ConfigError, match="lacks \\(no.such.tensor\\)"):
        run_method("fixed", tiny_marian, model_dir=tmp_path)


def test_lasso_keeps_within_budget_and_resets_the_rest_exactly(tiny_marian):
    model, method, before, _ = run_method("lasso", tiny_marian, penalty=0.0, budget_nonembedding=0.05, budget_embedding=0.05)
    total = sum(p.numel() for p in base_parameters(model).values())
    moved = changed(before, model)
    tensors = {n for n in moved if n != "model.shared.weight"}
    assert tensors == set(method.kept_names()) and tensors
    assert sum(before[n].numel() for n in tensors) <= int(0.05 * total)
    rows = (before["model.shared.weight"] != model.model.shared.weight).any(dim=1).nonzero().flatten()
    assert 0 < len(rows) <= int(0.05 * total) // 16
    assert torch.equal(rows, method.kept_rows["model.shared.weight"])
    assert getattr(model, OUTPUT_BIAS).abs().sum() > 0  # the bias term is always in
    assert method.adapted_parameters() == sum(before[n].numel() for n in tensors) + 16 * len(rows) + 50
    assert method.store_bytes() == 4 * method.adapted_parameters() + 4 * len(rows)


def test_lasso_with_a_large_penalty_zeroes_every_group(tiny_marian):
    model, method, before, _ = run_method("lasso", tiny_marian, penalty=1e6)
    assert changed(before, model) == set()  # every offset shrunk to zero: bit-identical to the base
    assert method.kept_names() == [] and all(len(r) == 0 for r in method.kept_rows.values())
    assert getattr(model, OUTPUT_BIAS).abs().sum() > 0  # the unpenalised bias still adapts


def test_update_stops_when_perplexity_is_low_enough(tiny_marian):
    model = tiny_marian(seed=3)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.5, ppl_threshold=1e9)
    method.attach(model, None, cfg)
    record = update(model, method, PAIR, cfg)
    assert record["repetitions"] == 0 and record["ppl_before"] == pytest.approx(torch.tensor(record["loss_before"]).exp().item())


def test_non_finite_loss_skips_the_update(tiny_marian):
    model = tiny_marian(seed=3)
    method = METHODS.build("full")
    method.attach(model, None, HOT)
    with torch.no_grad():
        model.model.decoder.layers[0].fc1.weight.fill_(float("nan"))
    before = snapshot(model)
    record = update(model, method, PAIR, HOT)
    assert record["skipped"] == "non-finite loss" and record["repetitions"] == 0
    assert all(torch.equal(before[n], p) or torch.isnan(before[n]).all() for n, p in model.named_parameters())


def test_per_tensor_clipping_bounds_each_step(tiny_marian):
    model = tiny_marian(seed=3)
    method = METHODS.build("full")
    cfg = defaults("update", lr=0.1, clip_norm=1.0, max_repeats=1, ppl_threshold=1.0)
    method.attach(model, None, cfg)
    before = snapshot(model)
    update(model, method, PAIR, cfg)
    for name, p in base_parameters(model).items():
        assert float((p.detach() - before[name]).norm()) <= 0.1 * 1.0 + 1e-6, name


def test_unknown_method_param_is_an_error():
    with raises_naming(ConfigError, "'budget'", "'full'", "(none)"):
        METHODS.build("full", budget=3)
    with raises_naming(ConfigError, "'budgt'", "'lasso'", "penalty, budget_nonembedding, budget_embedding"):
        METHODS.build("lasso", budgt=3)
    with pytest.raises(ConfigError, match="unknown parameter 'lr' of method 'lasso'"):  # the step size is update.lr
        METHODS.build("lasso", lr=0.1)
    with raises_naming(ConfigError, "'lasso'", "penalty", "number", "'strong'"):
        METHODS.build("lasso", penalty="strong")
    assert METHODS.build("lasso", penalty="1e-3").penalty == 0.001  # YAML reads 1e-3 as a string
    with raises_naming(ConfigError, "'sparse'", ", ".join(METHODS.names())):
        METHODS.build("sparse")


def reference_lasso_step(weights, base, grads, lr, penalty, budget_tensor, budget_rows, embedding="model.shared.weight"):
    """The step of Simianer et al. (2019) written out plainly: SGD on every group, shrink every offset, keep the largest within the budgets."""
    stepped = {n: w - lr * grads[n] if n in grads else w.clone() for n, w in weights.items()}
    offsets = {n: stepped[n] - base[n] for n in weights}
    factor = {n: max(0.0, 1 - lr * penalty * offsets[n].numel() ** 0.5 / float(offsets[n].norm())) if float(offsets[n].norm()) > 0 else 0.0
              for n in weights if n != embedding}
    kept, used = [], 0
    for n in sorted(factor, key=lambda n: (-float(offsets[n].norm()) * factor[n], n)):
        if float(offsets[n].norm()) * factor[n] > 0 and used + weights[n].numel() <= budget_tensor:
            kept.append(n)
            used += weights[n].numel()
    out = {n: base[n] + factor[n] * offsets[n] if n in kept else base[n].clone() for n in factor}
    row_norms = offsets[embedding].norm(dim=1)
    row_factor = (1 - lr * penalty * offsets[embedding].size(1) ** 0.5 / row_norms.clamp(min=1e-30)).clamp(min=0)
    shrunk = row_norms * row_factor
    rows = torch.topk(shrunk, k=min(budget_rows // offsets[embedding].size(1), int((shrunk > 0).sum()))).indices.sort().values
    out[embedding] = base[embedding].clone()
    out[embedding][rows] = base[embedding][rows] + row_factor[rows, None] * offsets[embedding][rows]
    return out, sorted(kept), rows


def test_lasso_step_equals_the_plain_computation_over_several_steps(tiny_marian):
    """step touches only the groups in the budget (as its hints announce); the result is the plain algorithm's (to float rounding)."""
    model = tiny_marian(seed=3)
    cfg = defaults("update", lr=0.5)
    method = METHODS.build("lasso", penalty=0.05, budget_nonembedding=0.05, budget_embedding=0.05)
    method.attach(model, None, cfg)
    groups = base_parameters(model)
    base = {n: p.detach().clone() for n, p in groups.items()}
    generator = torch.Generator().manual_seed(0)
    for step in range(4):
        weights = {n: p.detach().clone() for n, p in groups.items()}
        grads = {n: 0.1 * torch.randn(p.shape, generator=generator) for n, p in groups.items()
                 if step != 2 or "encoder" not in n}  # step 2: the encoder gets no gradient (its kept offsets still shrink)
        names = list(grads)
        scales = [0.5 if i % 3 == 0 else 1.0 for i in range(len(names))]  # as clipping hands them over
        norms = [scale * float(grads[n].norm()) for scale, n in zip(scales, names)]
        handed = Gradients({n: grads[n].clone() for n in names}, dict(zip(names, scales)), dict(zip(names, norms)))
        # lasso changes in place what its hints announce: whole tensors, and rows of the embedding
        announced = [groups[n] for n in method.changed_tensors(handed, cfg.lr)]
        announced_rows = {id(groups[n]): set(index.tolist()) for n, index in method.changed_rows(handed, cfg.lr).items()}
        method.step(handed, cfg.lr)
        grads = {n: scale * grads[n] for scale, n in zip(scales, names)}  # the clipped gradients
        moved = {n for n, p in groups.items() if not torch.equal(p.detach(), weights[n])}
        # the update can undo every change: whole tensors announced, or the embedding rows that moved
        whole = {n for n in moved if id(groups[n]) in {id(t) for t in announced}}
        assert moved and whole
        for name in moved - whole:
            moved_rows = set((groups[name].detach() != weights[name]).any(dim=1).nonzero().flatten().tolist())
            assert moved_rows and moved_rows <= announced_rows[id(groups[name])], name
            assert len(announced_rows[id(groups[name])]) < groups[name].shape[0]  # not the whole matrix
        assert len(announced) < len(groups) // 2  # and copies only what changes
        expected, kept, rows = reference_lasso_step(weights, base, grads, cfg.lr, 0.05, method.budget_tensor, method.budget_rows)
        assert method.kept_names() == kept and kept
        assert torch.equal(method.kept_rows["model.shared.weight"], rows) and len(rows)
        for name, value in expected.items():
            if name in kept or name == "model.shared.weight":
                torch.testing.assert_close(groups[name].detach(), value, rtol=0, atol=1e-6)
            else:
                assert torch.equal(groups[name].detach(), base[name]), name  # outside the budget: the base, bit for bit
