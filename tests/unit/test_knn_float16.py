"""knn's datastore with float16 keys (``key_dtype: float16``, simpe/methods/datastore.py) on a real datastore: the demo
model's decoder states over the first 60 post-edits of the stream (621 entries), queried by the states of the next 20
(192 rows).

The neighbours are float32's except where two distances agree within float16's rounding of the keys. The tolerance,
per entry i and query q: the float16 key k' = k + δ lies at a distance E with |E - D| <= ||δ|| (2 sqrt(D) + ||δ||)
from the float32 key's D (the triangle inequality; ||δ|| <= 2^-11 ||k||, about 0.017 on the demo model's keys of
||k||² ~ 1,200), plus the float32 rounding both searches allow (``simpe.ties``: 1e-5 of ||q||² + ||k||² each). An
entry only one of the two searches returns must be no further from the other's entries than their two tolerances;
on this data one row of 192 differs at k = 8 and none at k = 2. (Rounding to float16 is IEEE round-to-nearest-even,
the same on every machine, and the float16 search decides its ties by the same ``simpe.ties`` rule, so its neighbours
are as reproducible across CPUs as float32's.)
"""
from __future__ import annotations

import copy

import pytest
import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods import METHODS, datastore
from simpe.methods.datastore import Datastore
from simpe.ties import REL

STORED, QUERIED = 60, 20  # post-edits whose states are stored, and those whose states query them


@pytest.fixture(scope="module")
def states(demo_model) -> list[torch.Tensor]:
    """The demo model's teacher-forced decoder states (knn's keys) over the stream's first non-empty post-edits."""
    from simpe.datasets import DATASETS

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    family, model, out = demo_model.family, demo_model.model.eval(), []
    with torch.no_grad():
        for seg in DATASETS.build("libreoffice").load("stream"):
            if seg.reference.strip():
                pair = family.encode_pair(demo_model.tokenizer, seg.source, seg.reference, "cpu")
                out.append(family.target_states(model, pair).float())  # (tgt_len, 256)
            if len(out) == STORED + QUERIED:
                break
    torch.set_num_threads(threads)
    return out


def _grown(states: list[torch.Tensor], key_dtype: str, **params) -> Datastore:
    """A datastore grown segment by segment as the loop grows it; each entry's value is its own number."""
    store = Datastore(256, key_dtype=key_dtype, **params)
    for keys in states[:STORED]:
        store.add(keys, torch.arange(store.size, store.size + keys.shape[0]))
    return store


def _tolerance(queries: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, n) float64: each query's true squared distance D to each float32 key, and how far float16 rounding of the
    key and the two searches' float32 rounding can move it (the module docstring)."""
    q, k = queries.double(), keys.double()
    delta = (keys.half().double() - k).norm(dim=1)  # (n,) ||δ||
    true = torch.cdist(q, k) ** 2  # (rows, n)
    noise = 2 * REL * ((q * q).sum(1, keepdim=True) + (k * k).sum(1))  # (rows, n)
    return true, delta * (2 * true.sqrt() + delta) + noise


def _agree_but_for_float16_ties(queries, keys, got32, got16) -> int:
    """Check float16's neighbours ``got16`` (distances, entries) against float32's ``got32``; returns the rows that differ."""
    true, tol = _tolerance(queries, keys)
    (d32, v32), (d16, v16) = got32, got16
    differ = 0
    for row, (a, b) in enumerate(zip(v32.tolist(), v16.tolist())):
        if set(a) == set(b):
            continue
        differ += 1
        only32, only16 = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        # float32 preferred each of only32 over each of only16, float16 the other way round: only within the tolerances
        assert max(float(true[row, x] - tol[row, x]) for x in only16) <= min(float(true[row, y] + tol[row, y]) for y in only32)
    # the distances returned, rank by rank, agree within the largest tolerance (each search's own k-th nearest)
    assert bool(((d16.double() - d32.double()).abs() <= tol.max(dim=1, keepdim=True).values).all())
    return differ


def test_float16_keys_return_float32s_neighbours_but_for_ties_within_float16s_rounding(states):
    queries, keys = torch.cat(states[STORED:]), torch.cat(states[:STORED])  # (192, 256), (621, 256)
    assert queries.shape[0] == 192 and keys.shape[0] == 621
    exact32, exact16 = _grown(states, "float32"), _grown(states, "float16")
    assert exact16.keys.dtype == torch.float16 and torch.equal(exact16.keys[:621], keys.half())
    # each stored key's norm is the rounded key's, in float32
    assert torch.equal(exact16.norms[:621], (keys.half().float() ** 2).sum(1))
    assert [_agree_but_for_float16_ties(queries, keys, exact32.search(queries, k), exact16.search(queries, k)) for k in (2, 8)] == [0, 1]


def test_float16_keys_in_an_inverted_file(states, monkeypatch: pytest.MonkeyPatch):
    """Lists of ~32 entries (19 of them), 2 probed per row: the float16 store with float32's own index (its centroids and
    lists: the same probes) returns its neighbours but for float16 ties; trained on its own rounded keys, the lists come
    out the same here, and the neighbours of all but one row."""
    monkeypatch.setattr(datastore, "LIST_SIZE", 32)
    queries, keys = torch.cat(states[STORED:]), torch.cat(states[:STORED])
    params = {"index": "auto", "exact_entries": 300, "probe_lists": 2}
    ivf32, ivf16 = _grown(states, "float32", **params), _grown(states, "float16", **params)
    assert len(ivf32.lists) == 19 and ivf16.centroids.dtype == torch.float32
    assert all(keys.dtype == torch.float16 for keys in ivf16.list_keys)
    loaded16 = Datastore(256, key_dtype="float16", **params)
    loaded16.load(keys, torch.arange(621), ivf32.index_state())
    assert [_agree_but_for_float16_ties(queries, keys, ivf32.search(queries, k), loaded16.search(queries, k)) for k in (2, 8)] == [0, 1]
    assert [m.tolist() for m in ivf16.lists] == [m.tolist() for m in ivf32.lists]
    same = sum(set(a) == set(b) for a, b in zip(ivf32.search(queries, 8)[1].tolist(), ivf16.search(queries, 8)[1].tolist()))
    assert same >= 190, same  # 191 of 192 rows measured


def test_float16_keys_take_half_the_keys_bytes_in_memory_and_in_the_store(states):
    exact32, exact16 = _grown(states, "float32"), _grown(states, "float16")
    assert exact32.keys.shape == exact16.keys.shape == (1024, 256)  # capacity: 256, doubled twice
    assert exact32.keys.nbytes == 1_048_576 and exact16.keys.nbytes == 524_288
    # memory: the keys at their dtype, int64 values and float32 norms per capacity entry
    assert exact32.memory_bytes() == 1024 * (256 * 4 + 8 + 4) == 1_060_864
    assert exact16.memory_bytes() == 1024 * (256 * 2 + 8 + 4) == 536_576
    # the store: the keys at their dtype and int32 values per entry
    assert exact32.nbytes() == 621 * (256 * 4 + 4) == 638_388
    assert exact16.nbytes() == 621 * (256 * 2 + 4) == 320_436


def test_a_float16_search_makes_no_float32_copy_of_the_keys(states, monkeypatch: pytest.MonkeyPatch):
    """With blocks of 64 keys (64 KiB), no tensor a search makes is larger than a block or the (rows, n) distances,
    and the answer is the one-block answer's."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Largest(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for tensor in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32:
                    Largest.largest = max(Largest.largest, tensor.numel())
            return out

    queries = torch.cat(states[STORED:])[:5]  # a beam's rows
    whole = _grown(states, "float16").search(queries, 8)
    monkeypatch.setattr(datastore, "UPCAST_BYTES", 64 * 256 * 4)
    store = _grown(states, "float16")
    with Largest():
        blocked = store.search(queries, 8)
    assert Largest.largest == 64 * 256 and Largest.largest < 621 * 256  # one block of keys; (5, 621) distances are less
    assert torch.equal(blocked[1], whole[1]) and torch.allclose(blocked[0], whole[0], rtol=1e-6)


def test_float16_keys_out_of_range_and_unknown_dtypes_are_refused():
    store = Datastore(4, key_dtype="float16")
    with pytest.raises(ModelError, match=r"magnitude 7e\+04, beyond float16's range \(65504\); set the knn parameter key_dtype: float32"):
        store.add(torch.tensor([[1.0, 2.0, -7e4, 0.0]]), torch.tensor([3]))
    assert store.size == 0
    with pytest.raises(ConfigError, match="unknown knn key_dtype 'bfloat16'; known: float32, float16"):
        METHODS.build("knn", key_dtype="bfloat16")


def test_a_float16_store_and_resume_state_round_trip_at_float16(demo_model, tmp_path, one_torch_thread):
    """export_store -> a store file -> read_store -> load_store on a fresh base model; state_dict -> torch.save ->
    check_state -> load_state_dict (a resume): float16 keys bit for bit, the same logits. A float32 knn refuses the
    float16 store and state, and a float16 knn a float32 one."""
    from simpe.config.files import defaults
    from simpe.store.user import read_store
    from simpe.storefile import StoreMetadata, write_store_file

    model = copy.deepcopy(demo_model.model)  # hooks on a copy: the session's demo model stays as it is
    family, tokenizer = demo_model.family, demo_model.tokenizer
    method = METHODS.build("knn", key_dtype="float16")
    method.attach(model, None, defaults("update"))
    pairs = [family.encode_pair(tokenizer, s, t, "cpu") for s, t in
             (("Click the Save button.", "Klicken Sie auf Speichern."), ("Open a file.", "Öffnen Sie eine Datei."))]
    for pair in pairs:
        method.after_segment(pair)
    tensors = method.export_store()
    assert tensors["__knn_keys__"].dtype == torch.float16 and tensors["__knn_values__"].dtype == torch.int32
    entries = method.store.size
    assert sum(t.nbytes for t in tensors.values()) == method.store_bytes() == entries * (256 * 2 + 4)
    path = tmp_path / "knn-fp16.safetensors"
    write_store_file(path, tensors, StoreMetadata(method="knn", base_model="demo-en-de", method_params={"key_dtype": "float16"}))
    read, metadata = read_store(path)
    with torch.no_grad():
        adapted = model(input_ids=pairs[0].input_ids, labels=pairs[0].labels).logits
    fresh_model = copy.deepcopy(demo_model.model)
    loaded = METHODS.build(metadata.method, **metadata.method_params)
    loaded.load_store(fresh_model, read)
    assert loaded.store.keys.dtype == torch.float16 and torch.equal(loaded.store.keys[:entries], method.store.keys[:entries])
    with torch.no_grad():
        assert torch.equal(fresh_model(input_ids=pairs[0].input_ids, labels=pairs[0].labels).logits, adapted)
    # a resume: the checkpoint's state, saved and loaded as the loop does
    torch.save(method.state_dict(), tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    resumed = METHODS.build("knn", key_dtype="float16")
    resumed.attach(copy.deepcopy(demo_model.model), None, defaults("update"))
    resumed.check_state(state)
    resumed.load_state_dict(state)
    assert resumed.store.keys.dtype == torch.float16 and torch.equal(resumed.store.keys[:entries], method.store.keys[:entries])
    assert torch.equal(resumed.store.norms[:entries], method.store.norms[:entries])
    refusal = "the knn store's keys are float16; this knn stores them as float32 (its key_dtype): was the store made with another key_dtype?"
    as32 = METHODS.build("knn")
    with pytest.raises(ModelError, match=refusal.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        as32.load_store(copy.deepcopy(demo_model.model), read)
    as32.attach(copy.deepcopy(demo_model.model), None, defaults("update"))
    with pytest.raises(ModelError, match="the knn store's keys are float16; this knn stores them as float32"):
        as32.check_state(state)
    with pytest.raises(ModelError, match="the knn store's keys are float32; this knn stores them as float16"):
        resumed.check_state({**state, "__knn_keys__": state["__knn_keys__"].float()})
