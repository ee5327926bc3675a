"""Composition (simpe/methods/compose.py): the modifiers replay and ewc, tune-retrieve, and their states, on the tiny model."""
from __future__ import annotations

import pytest
import torch
from method_pairs import PAIR, snapshot

from simpe.config.files import defaults, load_config
from simpe.errors import ConfigError, ModelError
from simpe.loop.update import Tuner, update
from simpe.methods.base import Context
from simpe.methods.compose import ComposedMethod, build_method
from simpe.methods.tune_retrieve import TuneRetrieveMethod, _ngrams, f1_bleu, words
from simpe.model import Pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SOFT = defaults("update", lr=0.1, ppl_threshold=1.0, max_repeats=1)  # one step a segment
OTHER = [Pair(torch.tensor([[7, 8, 9, 0]]), torch.tensor([[12, 13, 0]]), source=f"s{i}", reference=f"r{i}") for i in range(3)]


def _context(model, pairs=None) -> Context:
    by_text = {p.source: p for p in OTHER}
    return Context(encode=lambda s, r: by_text[s], sentences=lambda split, n: [(p.source, p.reference) for p in OTHER][:n],
                   tune=Tuner(model, SOFT).tune, lr=SOFT.lr, read_pairs=lambda path: [])


def _attached(tiny_marian, name, modifiers):
    model = tiny_marian()
    method = build_method(name, {}, modifiers)
    method.attach(model, None, SOFT)
    method.prepare(_context(model))
    return model, method


def test_without_modifiers_the_method_is_built_alone():
    assert type(build_method("full")).__name__ == "FullMethod"
    assert isinstance(build_method("full", {}, [{"name": "replay", "params": {}}]), ComposedMethod)


@pytest.mark.parametrize("name, modifiers, message", [
    ("full", [{"name": "nope"}], "unknown modifier 'nope' of method 'full'; known: ewc, knn, prefer, replay, tune-retrieve"),
    ("knn", [{"name": "replay"}], "modifier 'replay' changes the update of a method that trains tensors"),
    ("baseline", [{"name": "ewc"}], "method 'baseline' trains none"),
    ("full", [{"name": "replay"}, {"name": "replay"}], "names 'replay' twice"),
    ("knn", [{"name": "knn"}], "cannot be its own modifier"),
    ("full", [{"name": "replay", "params": {"k": 0}}], "replay k must be an integer >= 1"),
    ("full", [{"name": "ewc", "params": {"split": "smath"}}], "never the stream or the reserved splits"),
    ("full", [{"name": "ewc", "params": {"lambda": 1}}], "unknown parameter 'lambda' of modifier 'ewc'; known: weight"),
])
def test_bad_compositions_are_refused_in_one_line(name, modifiers, message):
    with pytest.raises(ConfigError, match=message):
        build_method(name, {}, [{"params": {}, **m} for m in modifiers])


def test_the_config_tree_checks_the_modifiers_list():
    cfg = load_config("full+replay")
    assert cfg.method.modifiers == [{"name": "replay", "params": {"k": 2, "source": "post-edits", "seed": 1}}]
    assert load_config("full", ["method.modifiers=[ewc]"]).method.modifiers == [{"name": "ewc", "params": {}}]
    with pytest.raises(ConfigError, match=r"unknown key method.modifiers\[0\].with; known: name, params"):
        load_config("full", ["method.modifiers=[{name: ewc, with: 1}]"])
    with pytest.raises(ConfigError, match=r"method.modifiers\[0\].params must be a mapping"):
        load_config("full", ["method.modifiers=[{name: ewc, params: 3}]"])


def test_replay_steps_on_earlier_pairs_drawn_with_its_seed_and_resumes_the_same_draws(tiny_marian):
    model, method = _attached(tiny_marian, "full", [{"name": "replay", "params": {"k": 2}}])
    record = update(model, method, PAIR, SOFT)
    assert "replayed" not in record  # nothing earlier yet: the update of Simianer et al. (2019), unchanged
    for pair in OTHER:
        method.after_segment(pair)
    state = method.state_dict()
    record = update(model, method, PAIR, SOFT)
    assert record["replayed"] == 2 and record["repetitions"] == 1
    drawn = [[p.source for p in method.update_pairs(PAIR)] for _ in range(4)]
    again = build_method("full", {}, [{"name": "replay", "params": {"k": 2}}])
    again.attach(tiny_marian(), None, SOFT)
    again.prepare(_context(model), resume=True)
    again.check_state(state)
    again.load_state_dict(state)
    again.update_pairs(PAIR)  # the draw the first one's update took
    assert [[p.source for p in again.update_pairs(PAIR)] for _ in range(4)] == drawn
    assert all(len(set(d)) == 2 for d in drawn)  # without replacement within a draw
    with pytest.raises(ModelError, match="replay"):
        again.check_state({**state, "replay/buffer": torch.zeros(3)})


def _penalty(method) -> tuple[float, dict[str, torch.Tensor]]:
    """The method's penalty value at its weights and its gradient (added to zero gradients)."""
    grads = {n: torch.zeros(p.shape, dtype=torch.float32) for n, p in method.trainable().items()}
    return method.penalty_gradient(grads), grads


def test_ewc_penalty_is_zero_at_the_anchor_and_pulls_back_where_the_fisher_is(tiny_marian):
    model, method = _attached(tiny_marian, "full", [{"name": "ewc", "params": {"weight": 10.0, "sentences": 3}}])
    ewc = method.modifiers[0]
    assert set(ewc.fisher) == set(method.trainable()) and ewc.estimated_on == 3
    assert all(f.shape == method.trainable()[n].shape and bool((f >= 0).all()) for n, f in ewc.fisher.items())
    assert method.loss_term() is None and _penalty(method)[0] == 0.0
    before = snapshot(model)
    record = update(model, method, PAIR, SOFT)
    assert record["penalty"] == 0.0 and record["repetitions"] == 1  # the first step starts at θ₀
    term, gradient = _penalty(method)
    expected = 10.0 * sum(float((ewc.fisher[n] * (p.detach() - before[n]).pow(2)).sum()) for n, p in method.trainable().items())
    assert term == pytest.approx(expected, rel=1e-5) and term > 0
    # the gradient written out is autograd's gradient of the penalty as a loss term (computed here independently)
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in method.trainable().items()}
    as_loss = 10.0 * sum((ewc.fisher[n] * (leaves[n] - before[n]).pow(2)).sum() for n in leaves)
    by_autograd = dict(zip(leaves, torch.autograd.grad(as_loss, list(leaves.values()))))
    for n in leaves:
        torch.testing.assert_close(gradient[n], by_autograd[n], rtol=1e-5, atol=1e-9)
    assert any(bool(g.abs().sum() > 0) for g in gradient.values())
    # the state holds the Fisher; a resumed method takes θ₀ again and the Fisher from the state
    state = method.state_dict()
    assert {k for k in state if k.startswith("ewc/")} == {f"ewc/fisher.{n}" for n in method.trainable()}
    fresh_model = tiny_marian()
    again = build_method("full", {}, [{"name": "ewc", "params": {"weight": 10.0, "sentences": 3}}])
    again.attach(fresh_model, None, SOFT)
    again.prepare(_context(fresh_model), resume=True)
    assert again.modifiers[0].fisher == {}
    again.check_state(state)
    again.load_state_dict(state)
    assert _penalty(again)[0] == pytest.approx(term, rel=1e-5)
    bad = dict(state)
    bad[next(k for k in bad if k.startswith("ewc/"))] = torch.full((1,), float("nan"))
    with pytest.raises(ModelError, match="modifier 'ewc'"):
        again.check_state(bad)


def test_lasso_with_ewc_keeps_lassos_store_and_frozen_set(tiny_marian):
    model, method = _attached(tiny_marian, "lasso", [{"name": "ewc", "params": {"sentences": 2}}])
    before = snapshot(model)
    update(model, method, PAIR, SOFT)
    update(model, method, PAIR, SOFT)
    moved = {n for n, p in model.named_parameters() if n in before and not torch.equal(before[n], p)}
    assert moved and moved <= set(method.trainable())
    assert not any(k.startswith("ewc/") for k in method.export_store())  # the Fisher is the run's, not the user's
    assert method.store_bytes() == method.method.store_bytes()


def test_f1_bleu_is_modernmts():
    a = words("Select the cell range .")
    assert f1_bleu(a, _ngrams(a), a, _ngrams(a)) == pytest.approx(1.0)
    b = words("Select the cells .")
    # matches 1-4: 3, 1, 0, 0 of 5/4/3/2 (query) and 4/3/2/1 (entry) n-grams, smoothed by 0.1
    p = ((3.1 / 4.1) * (1.1 / 3.1) * (0.1 / 2.1) * (0.1 / 1.1)) ** 0.25
    r = ((3.1 / 5.1) * (1.1 / 4.1) * (0.1 / 3.1) * (0.1 / 2.1)) ** 0.25
    assert f1_bleu(a, _ngrams(a), b, _ngrams(b)) == pytest.approx(2 * p * r / (p + r))
    long = words("Select the cell range and then the other cell range .")
    assert f1_bleu(words("Select ."), _ngrams(words("Select .")), long, _ngrams(long)) == 0.0  # over twice as long


def test_tune_retrieve_retrieves_schedules_tunes_and_resets(tiny_marian):
    model = tiny_marian()
    method = TuneRetrieveMethod(matches=2)
    method.attach(model, None, SOFT)
    method.prepare(_context(model))
    with method.translating("anything") as facts:
        assert facts is None  # empty memory: nothing to tune on
    for source, reference in [("Open the file .", "r0"), ("Select the cell range .", "r1"), ("Select a cell .", "r2")]:
        method.memory.append((source, reference))  # (as after_segment does, without the ids)
        method._words.append(words(source))
        method._grams.append(_ngrams(words(source)))
        for word in set(words(source)):
            method._index.setdefault(word, []).append(len(method.memory) - 1)
    found = method.retrieve("Select the cell range .")
    assert [i for i, _ in found] == [1, 2] and found[0][1] == pytest.approx(1.0)
    assert method.schedule([1.0]) == (4, pytest.approx(SOFT.lr))  # int(4 x 1), lr x sqrt(1)
    steps, lr = method.schedule([0.24])
    assert steps == 0 and lr == pytest.approx(SOFT.lr * 0.24 ** 0.5)  # below 1/4: ModernMT tunes no epoch
    method._encoded = {1: OTHER[0], 2: OTHER[1]}
    before = snapshot(model)
    with method.translating("Select the cell range .") as facts:
        changed = any(not torch.equal(before[n], p.detach()) for n, p in model.named_parameters())
    assert changed and facts["matches"] == 2 and facts["steps"] >= 1
    assert all(torch.equal(before[n], p.detach()) for n, p in model.named_parameters())  # reset, bit for bit
