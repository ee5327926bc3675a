"""knn's datastore: exact search up to ``exact_entries``, an inverted file (IVF) beyond.

Invariants checked on seeded clustered data: the lists partition the entries (each exactly once)
as the store grows, through a retraining at twice the size and, past ``KMEANS_SAMPLE``, through lists
split as they grow; a store loaded with its index searches and grows exactly as the store it came from; the distances returned are the true
squared distances of the entries returned; a row reads only its own lists (its answer does not depend
on the other rows of the step), and each list holds its entries' keys; probing every list gives exact search's answer; an
IVF search never returns an entry nearer than exact search's nearest. The recall of the default
probe on a real datastore of the demo model is measured by ``make bench-scale``, not here.
"""
from __future__ import annotations

import pytest
import torch

from simpe.methods import datastore
from simpe.methods.datastore import LIST_SIZE, SPLIT_AT, Datastore


def _clustered(n: int, dim: int = 16, centres: int = 40, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(centres, dim, generator=g) * 4
    return means[torch.randint(0, centres, (n,), generator=g)] + torch.randn(n, dim, generator=g)


def _filled(n: int, index: str = "auto", exact_entries: int = 1000, probe_lists: int = 8, step: int = 20) -> Datastore:
    keys = _clustered(n)
    store = Datastore(16, index=index, exact_entries=exact_entries, probe_lists=probe_lists)
    for start in range(0, n, step):  # a segment's worth of entries at a time, as the loop adds them
        store.add(keys[start: start + step], torch.arange(start, min(n, start + step)))
    return store


def _partition(store: Datastore) -> list[int]:
    return torch.cat(store.lists).sort().values.tolist()


def test_exact_below_the_limit_and_lists_that_partition_the_entries_beyond():
    store = _filled(900)
    assert store.centroids is None and store.lists == []
    store = _filled(3000)
    assert store.centroids is not None
    # trained at 1,020 entries (the first add past 1,000), again at 2,040: 2,040 // 256 lists
    assert store._trained_at == 2040 and store.centroids.shape[0] == 2040 // LIST_SIZE
    assert _partition(store) == list(range(3000))  # every entry in exactly one list, the later ones added to lists
    assert all(bool((lst[1:] > lst[:-1]).all()) for lst in store.lists if lst.numel() > 1)  # ascending: recency order kept


def test_distances_are_the_true_squared_distances_of_the_entries_returned():
    store = _filled(3000)
    queries = _clustered(7, seed=1)
    dist, values = store.search(queries, 4)
    keys = store.keys[: store.size]
    true = ((queries[:, None, :] - keys[values]) ** 2).sum(-1)  # values are the entry numbers here
    assert torch.allclose(dist, true, rtol=1e-4, atol=1e-3)
    assert bool((dist[:, 1:] >= dist[:, :-1] - 1e-3).all())


def test_probing_every_list_is_exact_search_and_the_default_probe_is_never_nearer():
    queries = _clustered(10, seed=2)
    exact = _filled(3000, index="exact")
    every = _filled(3000, probe_lists=10_000)
    default = _filled(3000)
    d_exact, v_exact = exact.search(queries, 3)
    d_every, v_every = every.search(queries, 3)
    assert torch.equal(v_exact, v_every) and torch.allclose(d_exact, d_every)
    d_default, _ = default.search(queries, 3)
    assert bool((d_default[:, 0] >= d_exact[:, 0] - 1e-3).all())


def test_a_store_loaded_at_once_is_indexed_and_partitioned():
    keys = _clustered(2048)
    grown = _filled(2048)  # retrained at 2,040, then 8 more assigned
    loaded = Datastore(16, index="auto", exact_entries=1000)
    loaded.add(keys, torch.arange(2048))  # one add: trained on all 2,048
    assert _partition(loaded) == _partition(grown) == list(range(2048))
    assert loaded.memory_bytes() > loaded.nbytes() > 0


def test_each_row_reads_its_own_lists_alone_and_the_lists_keep_their_keys():
    store = _filled(3000, probe_lists=2)
    queries = _clustered(12, seed=3)
    d_all, v_all = store.search(queries, 3)
    for row in range(12):  # a row's neighbours do not depend on the other rows of its step
        d_one, v_one = store.search(queries[row: row + 1], 3)
        assert torch.equal(v_one[0], v_all[row]) and torch.allclose(d_one[0], d_all[row])
    for members, keys, norms in zip(store.lists, store.list_keys, store.list_norms):
        assert torch.equal(keys, store.keys[members]) and torch.equal(norms, store.norms[members])


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


def test_past_the_sample_lists_split_as_they_grow_instead_of_a_retraining(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(datastore, "KMEANS_SAMPLE", 1500)  # trained at 1,020 and 2,040 (2,040 > 1,500: the last time)
    store = _filled(8000)
    assert store._trained_at == 2040 and store.centroids.shape[0] == len(store.lists) > 2040 // LIST_SIZE
    assert _partition(store) == list(range(8000))
    assert all(bool((lst[1:] > lst[:-1]).all()) for lst in store.lists if lst.numel() > 1)
    assert max(len(lst) for lst in store.lists) < 2 * SPLIT_AT  # every list that reached SPLIT_AT was split
    for members, keys, norms in zip(store.lists, store.list_keys, store.list_norms):
        assert torch.equal(keys, store.keys[members]) and torch.equal(norms, store.norms[members])
    queries = _clustered(10, seed=2)
    every = store.probe_lists
    store.probe_lists = 10_000
    exact = _filled(8000, index="exact")
    assert torch.equal(store.search(queries, 3)[1], exact.search(queries, 3)[1])
    store.probe_lists = every


def test_members_a_split_cannot_part_stay_one_list_and_are_tried_again_at_twice_the_size(monkeypatch: pytest.MonkeyPatch):
    """One context over and over (duplicate post-edits): every entry the same key. The list's split at SPLIT_AT
    cannot part them; the next try is at twice the size, not at every entry added."""
    monkeypatch.setattr(datastore, "KMEANS_SAMPLE", 5)
    store = Datastore(16, index="auto", exact_entries=10)
    same = torch.ones(1, 16)
    store.add(same.expand(11, -1), torch.arange(11))  # trained on a sample of 5: one list, the last training
    tried = []
    real = Datastore._split
    monkeypatch.setattr(Datastore, "_split", lambda self, list_id: (tried.append(len(self.lists[list_id])), real(self, list_id)))
    for i in range(2 * SPLIT_AT):
        store.add(same, torch.tensor([100 + i]))
    assert tried == [SPLIT_AT, 2 * SPLIT_AT] and len(store.lists) == 1
    assert _partition(store) == list(range(11 + 2 * SPLIT_AT))


def test_a_store_loaded_with_its_index_searches_and_grows_as_the_store_it_came_from(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(datastore, "KMEANS_SAMPLE", 1500)
    keys = _clustered(9000)
    grown = Datastore(16, index="auto", exact_entries=1000)
    for start in range(0, 6000, 20):
        grown.add(keys[start: start + 20], torch.arange(start, start + 20))
    state = grown.index_state()
    assert state["lists"].dtype == torch.int32 and int(state["trained_at"][0]) == 2040
    loaded = Datastore(16, index="auto", exact_entries=1000)
    loaded.load(keys[:6000], torch.arange(6000), state)
    assert [m.tolist() for m in loaded.lists] == [m.tolist() for m in grown.lists] and torch.equal(loaded.centroids, grown.centroids)
    afresh = Datastore(16, index="auto", exact_entries=1000)
    afresh.load(keys[:6000], torch.arange(6000))  # no index: trained on all 6,000, other lists
    assert afresh.centroids.shape != grown.centroids.shape or not torch.equal(afresh.centroids, grown.centroids)
    for start in range(6000, 9000, 20):  # the stream goes on: both grow and split alike
        for store in (grown, loaded):
            store.add(keys[start: start + 20], torch.arange(start, start + 20))
    queries = _clustered(10, seed=4)
    assert [m.tolist() for m in loaded.lists] == [m.tolist() for m in grown.lists]
    assert all(torch.equal(a, b) for a, b in zip(loaded.search(queries, 3), grown.search(queries, 3)))
    assert grown.nbytes() == 9000 * (16 * 4 + 4) + grown.centroids.numel() * 4 + 9000 * 4 + 8
