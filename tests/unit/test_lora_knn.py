"""``lora`` and ``knn``: what each adapts and stores, and that every decoder sees ``knn``'s distribution."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from simpe.config import defaults
from simpe.decoders import DECODERS
from simpe.errors import ConfigError
from simpe.methods import METHODS
from simpe.model import Pair, load_model
from simpe.update import update

DEMO_MODEL = Path(__file__).resolve().parents[2] / "models" / "demo-en-de"
PAIR = Pair(torch.tensor([[5, 6, 7, 8, 0]]), torch.tensor([[9, 10, 11, 0]]))  # (1, src_len), (1, tgt_len)
HOT = defaults("update", lr=0.5, ppl_threshold=1.0, max_repeats=3)  # never satisfied: always three steps


def snapshot(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def logits(model, pair: Pair = PAIR) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=pair.input_ids, labels=pair.labels).logits  # (1, tgt_len, vocab)


# ---------------------------------------------------------------- lora
def test_lora_changes_only_its_adapter_weights(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    base_logits = logits(model)
    base = snapshot(model)
    method = METHODS.build("lora", rank=2, alpha=4.0)
    method.attach(model, None, HOT)
    assert torch.equal(logits(model), base_logits)  # B starts at zero: the adapted model starts as the base model
    names = set(method.trainable())
    # tiny model: d_model 16, ffn 32, one encoder and one decoder layer; rank 2 on every target:
    # 12 attention projections (encoder self, decoder self + cross) x 2 (16 + 16), fc1 and fc2 of 2 layers x 2 (16 + 32)
    assert len(names) == 2 * 16 and method.adapted_parameters() == 12 * 2 * 32 + 4 * 2 * 48 == 1152
    assert method.store_bytes() == 4 * 1152
    record = update(model, method, PAIR, HOT)
    assert record["repetitions"] == 3 and record["loss_after"] < record["loss_before"]
    now = {n.replace(".base_layer.", "."): p.detach() for n, p in model.named_parameters()}  # peft moves W to <layer>.base_layer
    assert set(now) == set(base) | names
    moved = {n for n, p in now.items() if n not in base or not torch.equal(base[n], p)}
    assert moved and moved <= names  # only lora_A / lora_B tensors moved ...
    assert any(".lora_B." in n for n in moved)
    assert all(torch.equal(base[n], now[n]) for n in base)  # ... every base weight is bit-identical
    with torch.no_grad():  # and the adapters are all the change: zeroing B restores the base model's output exactly
        for name, p in method.trainable().items():
            if ".lora_B." in name:
                p.zero_()
    assert torch.equal(logits(model), base_logits)


def test_lora_state_dict_round_trips(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    method = METHODS.build("lora", rank=2)
    method.attach(model, None, HOT)
    update(model, method, PAIR, HOT)
    method.after_segment(PAIR)
    state, adapted = method.state_dict(), logits(model)
    fresh_model = tiny_marian(seed=3)
    fresh = METHODS.build("lora", rank=2)
    fresh.attach(fresh_model, None, HOT)
    fresh.load_state_dict(state)
    assert torch.equal(logits(fresh_model), adapted)


def test_lora_parameters_are_checked():
    """The targets come from the model's family: checked against it (before the model loads, in the loop)."""
    from simpe.models import FAMILIES

    marian = FAMILIES.build("marian")
    with pytest.raises(ConfigError, match=r"lora targets must be a non-empty list of q_proj, k_proj, v_proj, out_proj, fc1, fc2 "
                                          r"\(the marian family's linear layers\); got \['q_proj', 'lm_head'\]"):
        METHODS.build("lora", targets=["q_proj", "lm_head"]).check_family(marian)
    with pytest.raises(ConfigError, match="lora rank must be an integer >= 1, got 0"):
        METHODS.build("lora", rank=0)
    with pytest.raises(ConfigError, match="lora targets must be null"):
        METHODS.build("lora", targets=[])
    method = METHODS.build("lora", targets=["fc2", "q_proj"])
    method.check_family(marian)
    assert method.targets == ["q_proj", "fc2"]
    default = METHODS.build("lora")
    default.check_family(FAMILIES.build("t5"))
    assert default.targets == list(FAMILIES.get("t5").lora_targets)


# ---------------------------------------------------------------- knn
def test_knn_changes_no_parameter_and_grows_by_each_post_edit(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    base_logits = logits(model)
    method = METHODS.build("knn")
    method.attach(model, None, HOT)
    assert method.trainable() == {} and method.store.size == 0
    assert torch.equal(logits(model), base_logits)  # an empty datastore leaves the model alone
    before = snapshot(model)
    sizes = []
    for labels in ([9, 10, 11, 0], [12, 13, 0], [9, 10, 11, 14, 15, 0]):
        pair = Pair(PAIR.input_ids, torch.tensor([labels]))
        record = update(model, method, pair, HOT)
        assert record["repetitions"] == 0  # nothing to step
        assert method.store.size == sum(sizes[-1:])  # the update does not store: the loop calls after_segment
        method.after_segment(pair)
        sizes.append(method.store.size)
    assert sizes == [4, 7, 13]  # by the post-edit's length (its EOS included) each segment
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters()) and set(before) == {n for n, _ in model.named_parameters()}
    assert method.store.values[:13].tolist() == [9, 10, 11, 0, 12, 13, 0, 9, 10, 11, 14, 15, 0]
    assert method.adapted_parameters() == 0 and method.store_bytes() == 13 * (16 * 4 + 4)
    assert method.describe()["datastore_entries"] == 13


def test_knn_interpolates_as_the_formula_says(tiny_marian, one_torch_thread):
    """k = 1, fixed lambda 0.25: each teacher-forced position of a stored pair finds itself (distance 0),
    so p = 0.25 * onehot(next token) + 0.75 * softmax(model logits), computed here by hand."""
    model = tiny_marian(seed=3)
    base_logits = logits(model)[0]  # (tgt_len, vocab)
    method = METHODS.build("knn", k=1, temperature=10.0, knn_lambda=0.25, distance_aware=False)
    method.attach(model, None, HOT)
    method.after_segment(PAIR)
    expected = 0.75 * torch.softmax(base_logits, dim=-1)  # (tgt_len, vocab)
    expected[torch.arange(4), PAIR.labels[0]] += 0.25
    got = logits(model)[0]
    assert torch.allclose(got.exp(), expected, atol=1e-6)
    assert torch.allclose(torch.log_softmax(got, dim=-1), got, atol=1e-6)  # decoders' log_softmax leaves log p as it is
    # distance-aware lambda (SK-MT): 1 - d0 / T with d0 = 0 here, so lambda = knn_lambda
    method.distance_aware = True
    assert torch.allclose(logits(model)[0].exp(), expected, atol=1e-6)


def test_knn_sums_the_weights_of_a_token_retrieved_twice(tiny_marian, one_torch_thread):
    """The pair stored twice, k = 2: each position finds two entries at distance 0 with the same next
    token, weights 1/2 each, so p_kNN of that token is 1 and p is again 0.25 * onehot + 0.75 * model."""
    model = tiny_marian(seed=3)
    base_logits = logits(model)[0]  # (tgt_len, vocab)
    method = METHODS.build("knn", k=2, temperature=10.0, knn_lambda=0.25, distance_aware=False)
    method.attach(model, None, HOT)
    method.after_segment(PAIR)
    method.after_segment(PAIR)
    expected = 0.75 * torch.softmax(base_logits, dim=-1)  # (tgt_len, vocab)
    expected[torch.arange(4), PAIR.labels[0]] += 0.25
    assert torch.allclose(logits(model)[0].exp(), expected, atol=1e-6)


def test_knn_state_dict_round_trips(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    method = METHODS.build("knn", knn_lambda=0.5, distance_aware=False)
    method.attach(model, None, HOT)
    update(model, method, PAIR, HOT)
    method.after_segment(PAIR)
    state, adapted = method.state_dict(), logits(model)
    assert state["__knn_values__"].dtype == torch.int32  # the store's format: int32 values, whatever the search uses
    assert state["__knn_values__"].dtype == torch.int32  # the store's format: int32 values, whatever the search uses
    fresh_model = tiny_marian(seed=3)
    fresh = METHODS.build("knn", knn_lambda=0.5, distance_aware=False)
    fresh.attach(fresh_model, None, HOT)
    fresh.load_state_dict(state)
    assert fresh.store.size == 4 and torch.equal(logits(fresh_model), adapted)


def test_knn_parameters_are_checked():
    with pytest.raises(ConfigError, match=r"knn knn_lambda must be in \[0, 1\], got 1.5"):
        METHODS.build("knn", knn_lambda=1.5)
    with pytest.raises(ConfigError, match="knn temperature must be > 0, got 0"):
        METHODS.build("knn", temperature=0)
    with pytest.raises(ConfigError, match="unknown parameter 'lambda' of method 'knn'; known: k, temperature, knn_lambda, distance_aware"):
        METHODS.build("knn", **{"lambda": 0.5})


SOURCE = "Click the Save button."
POST_EDIT = "Klicken Sie bitte auf Speichern."
SMALL = {"sampling": {"samples": 4}, "mbr": {"samples": 4}, "topk": {"k": 2}, "topk_dfs": {"k": 2}}  # every other decoder: its defaults


def test_knn_with_lambda_one_reproduces_a_just_seen_post_edit_in_every_decoder(one_torch_thread):
    """λ = 1 and a tiny temperature: the same source again gives the post-edit, token for token, whatever the decoder."""
    loaded = load_model(DEMO_MODEL, "cpu")  # its own copy: the session's demo model stays without hooks
    model, tokenizer = loaded.model, loaded.tokenizer
    pair = loaded.family.encode_pair(tokenizer, SOURCE, POST_EDIT, "cpu")
    target = tuple(pair.labels[0].tolist())
    beam = DECODERS.build("beam", beam_size=5).bind(tokenizer)
    with torch.inference_mode():
        assert beam.decode(model, pair.input_ids).hypotheses[0].tokens != target  # the base model does not say it
    method = METHODS.build("knn", k=8, temperature=1e-4, knn_lambda=1.0, distance_aware=False)
    method.attach(model, None, defaults("update"))
    update(model, method, pair, defaults("update"))
    method.after_segment(pair)
    assert {"beam", "greedy", "heap_beam", "mbr", "sampling", "topk", "topk_dfs"} <= set(DECODERS.names())
    for name in DECODERS.names():
        decoder = DECODERS.build(name, **SMALL.get(name, {})).bind(tokenizer)
        with torch.inference_mode():
            result = decoder.decode(model, pair.input_ids, source=SOURCE)
        assert result.hypotheses[0].tokens == target, name
        assert result.hypotheses[0].score == pytest.approx(0.0, abs=1e-4), name  # log 1 at every step


def test_datastore_search_is_the_exact_nearest_neighbours():
    from simpe.methods.knn import Datastore

    generator = torch.Generator().manual_seed(0)
    keys = torch.randn(300, 16, generator=generator)
    store = Datastore(16)
    store.add(keys[:100], torch.arange(100))
    store.add(keys[100:], torch.arange(100, 300))  # grows past its first capacity
    queries = torch.randn(7, 16, generator=generator)
    dist, values = store.search(queries, k=4)
    brute = ((queries[:, None, :].double() - keys[None, :, :].double()) ** 2).sum(-1)  # (7, 300)
    expected, index = torch.topk(brute, k=4, dim=1, largest=False)
    assert torch.equal(values, index) and values.dtype == torch.int64  # the values are the keys' positions here
    torch.testing.assert_close(dist.double(), expected, rtol=1e-5, atol=1e-4)
