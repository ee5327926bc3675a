"""The preference modifier (simpe/methods/prefer.py): DPO's loss by hand, its term in the update on the tiny model,
the skip, dropout's reference, the footprint and the refusals."""
from __future__ import annotations

import math

import pytest
import torch
from messages import one_line_error, simulate_args

from simpe.config.files import defaults
from simpe.errors import ConfigError
from simpe.loop.update import set_dropout, update
from simpe.methods.base import Context, Footprint, RunShape
from simpe.methods.compose import build_method
from simpe.methods.prefer import BETA, SKIPPED, dpo_loss, sequence_logprob
from simpe.model import Pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SOURCE, POST_EDIT, MT = "open the file", "die Datei öffnen", "Datei offen"
ONE = defaults("update", lr=0.1, clip_norm=0.0, ppl_threshold=1.0, max_repeats=1)  # one unclipped step
THREE = defaults("update", lr=0.1, ppl_threshold=1.0, max_repeats=3)  # never satisfied: three steps


def _ids(text: str) -> list[int]:
    """A text as tiny-model ids: one id per character in 1..40, then eos 0 (the tiny Marian of tests/conftest.py)."""
    return [ord(c) % 40 + 1 for c in text] + [0]


def encode(source: str, reference: str) -> Pair:
    return Pair(torch.tensor([_ids(source)]), torch.tensor([_ids(reference)]), source=source, reference=reference)


PAIR = encode(SOURCE, POST_EDIT)


def _context() -> Context:
    return Context(encode=encode, sentences=lambda split, n: [], tune=lambda *a: {}, lr=0.1, read_pairs=lambda path: [])


def _method(model, modifiers, cfg=ONE, name: str = "full"):
    method = build_method(name, {}, modifiers)
    method.attach(model, None, cfg)
    method.prepare(_context())
    return method


PREFER = [{"name": "prefer", "params": {"beta": 0.5}}]


# ---------------------------------------------------------------- the loss, by hand
def test_dpo_loss_where_the_policy_is_the_reference_is_log_2_and_its_gradient_is_half_beta() -> None:
    """σ(0) = 1/2: L = -log(1/2) = log 2; dL/dm = -β σ(-βm) = -β/2, so dL/d log π(y_c) = -β/2 (raise the post-edit)
    and dL/d log π(y_r) = +β/2 (lower the MT output)."""
    chosen, rejected = torch.tensor(-12.0, requires_grad=True), torch.tensor(-7.0, requires_grad=True)
    loss = dpo_loss(chosen, rejected, -12.0, -7.0, beta=0.1)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(math.log(2), abs=1e-7)
    assert float(chosen.grad) == pytest.approx(-0.05, abs=1e-7) and float(rejected.grad) == pytest.approx(0.05, abs=1e-7)


def test_dpo_loss_of_a_moved_policy_by_hand() -> None:
    """log π(y_c) rose from -12 to -10 and log π(y_r) stayed at -8, β = 0.5: m = (−10 + 12) − (−8 + 8) = 2, βm = 1;
    L = log(1 + e^-1) = 0.3132617; dL/d log π(y_c) = −β σ(−1) = −0.5 × 0.2689414 = −0.1344707, and +0.1344707 for
    log π(y_r): the loss still pushes them apart, less than at the start."""
    chosen, rejected = torch.tensor(-10.0, requires_grad=True), torch.tensor(-8.0, requires_grad=True)
    loss = dpo_loss(chosen, rejected, torch.tensor(-12.0), torch.tensor(-8.0), beta=0.5)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(0.3132617, abs=1e-6)
    assert float(chosen.grad) == pytest.approx(-0.1344707, abs=1e-6)
    assert float(rejected.grad) == pytest.approx(0.1344707, abs=1e-6)
    # the other way round (the MT output gained on the post-edit): m = -2, L = log(1 + e) = 1.3132617, gradient β σ(1)
    loss = dpo_loss(torch.tensor(-12.0), torch.tensor(-6.0), -12.0, -8.0, beta=0.5)
    assert float(loss) == pytest.approx(1.3132617, abs=1e-6)


def test_sequence_logprob_is_the_sum_of_the_token_log_probabilities(tiny_marian) -> None:
    model = tiny_marian()
    with torch.no_grad():
        logits = model(input_ids=PAIR.input_ids, labels=PAIR.labels).logits  # (1, T, vocab): Hugging Face's own shift
        by_hand = float(torch.log_softmax(logits, -1)[0, torch.arange(PAIR.labels.size(1)), PAIR.labels[0]].sum())
        assert float(sequence_logprob(model, PAIR.input_ids, PAIR.labels)) == pytest.approx(by_hand, abs=1e-4)


# ---------------------------------------------------------------- the term in the update
def test_one_step_is_the_nll_plus_the_dpo_term_stepped_by_hand(tiny_marian) -> None:
    """full+prefer, one unclipped SGD step: the weights are those of a step on CE(y_c) + DPO computed by hand with
    Hugging Face's forward (π_ref = the model before the step, so the term is log 2); the record says so."""
    model = tiny_marian(seed=2)
    method = _method(model, PREFER)
    rejected = encode(SOURCE, MT).labels
    reference = tiny_marian(seed=2)
    params = [p for p in reference.parameters() if p.requires_grad]
    chosen_logits = reference(input_ids=PAIR.input_ids, labels=PAIR.labels).logits[0]  # (T, vocab)
    rejected_logits = reference(input_ids=PAIR.input_ids, labels=rejected).logits[0]  # (T', vocab)
    chosen = torch.log_softmax(chosen_logits, -1).gather(1, PAIR.labels[0, :, None]).sum()
    mt = torch.log_softmax(rejected_logits, -1).gather(1, rejected[0, :, None]).sum()
    nll = torch.nn.functional.cross_entropy(chosen_logits, PAIR.labels[0])
    term = -torch.nn.functional.logsigmoid(0.5 * ((chosen - chosen.detach()) - (mt - mt.detach())))
    grads = torch.autograd.grad(nll + term, params, allow_unused=True)
    with torch.no_grad():
        for p, g in zip(params, grads):
            if g is not None:
                p.add_(g, alpha=-ONE.lr)
    record = update(model, method, PAIR, ONE, hypothesis=MT)
    assert record["repetitions"] == 1 and record["skipped"] is None
    assert record["preference_loss"] == pytest.approx(math.log(2), abs=1e-6)
    assert record["preference_margin"] == pytest.approx(float((chosen - mt).detach()), abs=1e-4)
    for (name, got), want in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(got.detach(), want.detach(), rtol=0, atol=2e-6, msg=name)


def test_the_steps_raise_the_post_edit_over_the_mt_output_more_than_the_nll_alone(tiny_marian) -> None:
    """Three steps of full and of full+prefer from the same weights: the preference's margin rises more with the term,
    and its DPO loss falls below log 2 after the first step (the later steps compare with the same π_ref)."""
    rejected = encode(SOURCE, MT).labels
    margins = {}
    for modifiers in ([], PREFER):
        model = tiny_marian(seed=4)
        with torch.no_grad():
            before = float(sequence_logprob(model, PAIR.input_ids, PAIR.labels) - sequence_logprob(model, PAIR.input_ids, rejected))
        record = update(model, _method(model, modifiers, THREE), PAIR, THREE, hypothesis=MT)
        assert record["repetitions"] == 3
        with torch.no_grad():
            margins[bool(modifiers)] = float(sequence_logprob(model, PAIR.input_ids, PAIR.labels)
                                             - sequence_logprob(model, PAIR.input_ids, rejected)) - before
        if modifiers:
            assert record["preference_margin"] == pytest.approx(before, abs=1e-4)
            assert record["preference_loss"] < math.log(2) - 1e-3
    assert margins[True] > margins[False] + 0.1, margins


def test_it_is_skipped_when_the_mt_output_is_the_post_edit_and_then_steps_as_its_parent(tiny_marian) -> None:
    """The MT output equals the post-edit: no DPO term, the record says why, and the weights are full's bit for bit;
    so they are without an MT output (a warm start's batch, tune-retrieve's matches)."""
    plain = tiny_marian(seed=5)
    update(plain, _method(plain, [], THREE), PAIR, THREE)
    for hypothesis in (POST_EDIT, None):
        model = tiny_marian(seed=5)
        record = update(model, _method(model, PREFER, THREE), PAIR, THREE, hypothesis=hypothesis)
        assert "preference_loss" not in record and "preference_margin" not in record
        assert record.get("preference_skipped") == (SKIPPED if hypothesis is not None else None)
        assert all(torch.equal(a, b) for a, b in zip(model.parameters(), plain.parameters()))


def test_a_post_edit_below_the_perplexity_threshold_takes_no_step_and_no_term(tiny_marian) -> None:
    model = tiny_marian(seed=5)
    cfg = defaults("update", ppl_threshold=1e9)
    record = update(model, _method(model, PREFER, cfg), PAIR, cfg, hypothesis=MT)
    assert record["repetitions"] == 0 and not any(key.startswith("preference") for key in record)


def test_with_dropout_the_reference_is_the_model_without_it(tiny_marian) -> None:
    """update.dropout > 0: the policy's passes are dropout samples, π_ref's two are taken in eval mode: the margin
    recorded is the model's without dropout, and the first step's term is no longer exactly log 2."""
    model = tiny_marian(seed=6)
    rejected = encode(SOURCE, MT).labels
    with torch.no_grad():
        before = float(sequence_logprob(model, PAIR.input_ids, PAIR.labels) - sequence_logprob(model, PAIR.input_ids, rejected))
    set_dropout(model, 0.5)  # Marian's layers' own float rates included (tests/unit/test_update.py)
    cfg = defaults("update", lr=0.1, ppl_threshold=1.0, max_repeats=1, dropout=0.5)
    torch.manual_seed(0)
    record = update(model, _method(model, PREFER, cfg), PAIR, cfg, hypothesis=MT)
    assert record["preference_margin"] == pytest.approx(before, abs=1e-4)
    assert abs(record["preference_loss"] - math.log(2)) > 1e-4
    assert not model.training  # the update puts it back in eval mode


def test_the_footprint_is_one_more_pair_per_repetition_and_the_references_passes_under_dropout(tiny_marian) -> None:
    shape = RunShape(weight=4)
    for dropout, passes in ((0.0, 0), (0.1, 2)):
        model = tiny_marian()
        method = _method(model, PREFER, defaults("update", dropout=dropout))
        assert method.footprint(shape) == method.method.footprint(shape) + Footprint(update_pairs=1, segment_passes=passes)
    assert method.state_dict().keys() == method.method.state_dict().keys()  # no state of its own, nothing stored
    assert method.export_store().keys() == method.method.export_store().keys()
    assert method.describe()["modifiers"] == {"prefer": {"beta": 0.5}}


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("name", ["baseline", "knn", "tune-retrieve", "icl"])
def test_a_method_that_trains_nothing_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=f"modifier 'prefer' changes the update of a method that trains tensors; method '{name}' trains none"):
        build_method(name, {}, [{"name": "prefer", "params": {}}])


@pytest.mark.parametrize("beta, message", [(0, "prefer beta must be a finite number > 0, got 0"),
                                           (-0.1, "prefer beta must be a finite number > 0, got -0.1"),
                                           (float("nan"), "parameter beta must be a finite number, got nan"),
                                           (float("inf"), "parameter beta must be a finite number, got inf"),
                                           (True, "parameter beta must be a finite number, got True")])
def test_a_bad_beta_is_refused(beta, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_method("full", {}, [{"name": "prefer", "params": {"beta": beta}}])
    assert BETA == 0.1


def test_the_cli_refuses_it_on_baseline_in_one_line_before_the_model_loads(tmp_path, capsys, no_model_load) -> None:
    one_line_error(simulate_args(tmp_path, "--preset", "baseline", "--set", "method.modifiers=[prefer]"), capsys,
                   "modifier 'prefer'", "method 'baseline' trains none", seconds=30)
    one_line_error(simulate_args(tmp_path, "--preset", "full+prefer", "--set",
                                 "method.modifiers=[{name: prefer, params: {beta: -1}}]"), capsys, "beta", "-1", seconds=30)
