"""``knn`` (simpe/methods/knn.py): what it stores, the interpolation as the formula says, its state round trip,
its parameter checks, and that every decoder sees its distribution."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from messages import raises_naming
from method_pairs import HOT, PAIR, logits, snapshot

from simpe.config.files import defaults
from simpe.decoders import DECODERS
from simpe.errors import ConfigError
from simpe.loop.update import update
from simpe.methods import METHODS
from simpe.model import Pair, load_model

DEMO_MODEL = Path(__file__).resolve().parents[2] / "models" / "demo-en-de"


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
        assert record["repetitions"] == 0 and method.store.size == (sizes[-1] if sizes else 0)  # nothing to step or store
        method.after_segment(pair)  # the loop's call after the update
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
    method.after_segment(PAIR)
    state, adapted = method.state_dict(), logits(model)
    assert state["__knn_values__"].dtype == torch.int32  # the store's format: int32 values, whatever the search uses
    assert state["__knn_values__"].dtype == torch.int32  # the store's format: int32 values, whatever the search uses
    fresh_model = tiny_marian(seed=3)
    fresh = METHODS.build("knn", knn_lambda=0.5, distance_aware=False)
    fresh.attach(fresh_model, None, HOT)
    fresh.load_state_dict(state)
    assert fresh.store.size == 4 and torch.equal(logits(fresh_model), adapted)


def test_knn_state_carries_its_inverted_file_where_the_store_searches_with_one():
    """A resumed run (and a loaded store) searches the lists the run had, not lists trained afresh on every entry;
    with index: exact, or no more entries than exact_entries, the search is exact."""
    from simpe.methods.knn import IVF

    generator = torch.Generator().manual_seed(0)
    keys = torch.randn(3000, 16, generator=generator)

    def method(**params):
        built = METHODS.build("knn", **params)
        built.store = built._datastore(16, "cpu")
        return built

    run = method(index="auto", exact_entries=1000)
    for start in range(0, 3000, 20):
        run.store.add(keys[start: start + 20], torch.arange(start, start + 20))  # trained at 1,020 and 2,040
    state = run.state_dict()
    assert set(state) == {"__knn_keys__", "__knn_values__", *IVF.values()} and int(state[IVF["trained_at"]][0]) == 2040
    resumed = method(index="auto", exact_entries=1000)
    resumed.load_state_dict(state)
    assert torch.equal(resumed.store.centroids, run.store.centroids) and resumed.store._trained_at == 2040
    assert [m.tolist() for m in resumed.store.lists] == [m.tolist() for m in run.store.lists]
    assert resumed.store_bytes() == run.store_bytes() == sum(t.numel() * t.element_size() for t in state.values())
    for params in ({"index": "exact"}, {"index": "auto", "exact_entries": 5000}):
        exact = method(**params)
        exact.load_state_dict(state)
        assert exact.store.centroids is None and exact.store.size == 3000


def test_knn_parameters_are_checked():
    with pytest.raises(ConfigError, match=r"knn knn_lambda must be in \[0, 1\], got 1.5"):
        METHODS.build("knn", knn_lambda=1.5)
    with pytest.raises(ConfigError, match="knn temperature must be > 0, got 0"):
        METHODS.build("knn", temperature=0)
    with raises_naming(ConfigError, "'lambda'", "'knn'", "k, temperature, knn_lambda, distance_aware"):
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
    method.after_segment(pair)  # the loop's call after the update
    assert {"beam", "greedy", "heap_beam", "mbr", "sampling", "topk", "topk_dfs"} <= set(DECODERS.names())
    for name in DECODERS.names():
        decoder = DECODERS.build(name, **SMALL.get(name, {})).bind(tokenizer)
        with torch.inference_mode():
            result = decoder.decode(model, pair.input_ids, source=SOURCE)
        assert result.hypotheses[0].tokens == target, name
        assert result.hypotheses[0].score == pytest.approx(0.0, abs=1e-4), name  # log 1 at every step
