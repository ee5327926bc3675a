"""knn's datastore: exact search up to ``exact_entries``, an inverted file (IVF) beyond.

Invariants checked on seeded clustered data: the lists partition the entries (each exactly once)
as the store grows, through a retraining at twice the size; the distances returned are the true
squared distances of the entries returned; probing every list gives exact search's answer; an
IVF search never returns an entry nearer than exact search's nearest. The recall of the default
probe on a real datastore of the demo model is measured by ``make bench-scale``, not here.
"""
from __future__ import annotations

import torch

from simpe.methods.datastore import LIST_SIZE, Datastore


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
