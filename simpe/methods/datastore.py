"""The ``knn`` method's datastore: (key, value) entries and their k-nearest-neighbour search.

Exact search (squared L2 over every entry) reads the whole store at every decoding step, so
its cost grows with the stream: about 20 entries a segment, 300,000 after the 15,000
segments of ``scalc``. With ``index="auto"`` (the default) the search is exact up to
``exact_entries`` entries and an inverted file (IVF, Jégou et al. 2011) beyond:

- the entries are split into lists by their nearest centroid (k-means, ``LIST_SIZE`` entries
  a list on average, trained on the store when it first passes ``exact_entries`` and again
  each time it has doubled since, over at most ``KMEANS_SAMPLE`` entries; new entries join
  their nearest centroid's list meanwhile). Once a training has seen more than ``KMEANS_SAMPLE``
  entries the store is not retrained again (each retraining would cost 4x the one before it and
  stop the stream for all of it: 22 s in one segment at 262,144 entries): instead a list that
  grows to ``SPLIT_AT`` entries (or to a doubling of that) is split in two by 2-means
  over its own members, a pause of milliseconds, and the lists stay about as long;
- a query reads the ``probe_lists`` lists whose centroids are nearest to it, and only those. Each
  list keeps its own keys contiguous (a copy of its entries' keys: the index doubles the keys'
  memory), so a list is read in place, once per step for all the rows that probe it.

A step then reads about ``rows * probe_lists * LIST_SIZE`` keys whatever the store's size,
plus one pass over the centroids (``size / LIST_SIZE`` of them). (A first version read the
union of the rows' lists, gathered into one copy: with the 20 rows of a teacher-forced pass
that union is most of the store, and the search cost more than exact search; bench-scale
measured x3.2 per segment at 4,000 segments.) The search is approximate: a neighbour in an
unprobed list is missed. ``make bench-scale`` measures its recall against exact search on a
real datastore. ``index="exact"`` keeps exact search at every size.

Every choice among near-equal floats (the nearest entries, the probed lists, an entry's list,
k-means' assignments, a split's second seed) goes through ``simpe.ties``, so the same stream gives
the same neighbours on every CPU; k-means starts from entries chosen by a fixed seed, a split from
its list's first entry and the entry farthest from it. The index (``index_state``: the centroids,
each entry's list, the size at the last training) is part of the state: a resumed run and a
loaded store search the lists the run had, not lists trained afresh on the whole store.

Keys in float16 (``key_dtype="float16"``) halve the keys' memory and the per-user store: each key is rounded to
float16 once, as it is stored, and its squared norm is taken from the rounded key in float32. Every distance is
still computed in float32: a float16 store is read in blocks of ``UPCAST_BYTES`` that are copied to float32 one
at a time (an exact search, a k-means pass, an inverted list), so no float32 copy of all the keys is ever made;
the centroids stay float32. A float32 store (the default) is read as it always was, in one piece, bit for bit.
A key with a value beyond float16's range (65504) is refused rather than stored as an infinity.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ModelError
from simpe.methods.base import INDEX_BYTES
from simpe.ties import smallest_per_row

LIST_SIZE = 256  # entries per inverted list on average
KMEANS_ITERATIONS = 8
KMEANS_SEED = 0
# k-means' Lloyd steps run over at most this many entries (chosen by the same seed), every entry then joins its
# nearest list: a retraining costs entries x lists, 4x the one before it as the store doubles (71 s at 262,144
# entries of the whole scalc stream); the sample bounds the Lloyd steps' share. Stores of up to this size (about
# 3,400 segments) train on every entry, as before the bound existed, so their neighbours are unchanged.
KMEANS_SAMPLE = 65536
# past KMEANS_SAMPLE entries a list is split in two when it grows to SPLIT_AT entries, or to a doubling of it (a list
# whose members a split cannot part, duplicates of one context, is tried again at twice the size, not at every add)
SPLIT_AT = 2 * LIST_SIZE
INDEXES = ("auto", "exact")
KEY_DTYPES = {"float32": torch.float32, "float16": torch.float16}  # what a key is stored as; distances are float32
# a float16 store is read in float32 blocks of at most this many bytes (4,096 keys of d_model 1024): the extra memory
# a search or a k-means pass needs beyond the float16 keys, whatever the store's size
UPCAST_BYTES = 16 * 1024 ** 2


class Datastore:
    """Growing (key, value) store with k-nearest-neighbour search by squared L2 distance (exact, or IVF past a size)."""

    def __init__(self, dim: int, device: Any = "cpu", index: str = "exact", exact_entries: int = 16384,
                 probe_lists: int = 8, key_dtype: str = "float32") -> None:
        self.dim = dim
        self.key_dtype = KEY_DTYPES[key_dtype]
        self.keys = torch.zeros((0, dim), dtype=self.key_dtype, device=device)  # (capacity, dim)
        self.values = torch.zeros(0, dtype=torch.long, device=device)  # (capacity,) int64, as gather/scatter take them
        self.norms = torch.zeros(0, dtype=torch.float32, device=device)  # (capacity,) squared key norms
        self.size = 0
        self.index, self.exact_entries, self.probe_lists = index, exact_entries, probe_lists
        self.centroids: torch.Tensor | None = None  # (lists, dim) once the IVF is trained
        self.lists: list[torch.Tensor] = []  # per list: (members,) int64 entry indices, ascending
        self.list_keys: list[torch.Tensor] = []  # per list: (members, dim) its entries' keys, contiguous
        self.list_norms: list[torch.Tensor] = []  # per list: (members,) their squared norms
        self._trained_at = 0  # entries when the IVF was last trained

    def add(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Append ``keys`` (n, dim) and their ``values`` (n,), and index them (once the search uses an inverted file)."""
        start = self._append(keys, values)
        if self.index == "auto" and self.size > self.exact_entries:
            if self.centroids is None or (self.size >= 2 * self._trained_at and self._trained_at <= KMEANS_SAMPLE):
                self._train()
            else:
                grown = self._assign(torch.arange(start, self.size, device=self.keys.device))
                if self._trained_at > KMEANS_SAMPLE:  # no retraining any more: lists split as they grow
                    for list_id, before in sorted(grown.items()):
                        if _crosses(before, len(self.lists[list_id])):
                            self._split(list_id)

    def _append(self, keys: torch.Tensor, values: torch.Tensor) -> int:
        """Store ``keys`` (n, dim) and their ``values`` (n,) as entries, unindexed (capacity doubles as it fills);
        returns the first new entry's number."""
        n = int(keys.shape[0])
        if self.size + n > self.keys.shape[0]:
            capacity = max(2 * self.keys.shape[0], self.size + n, 256)
            grown = torch.zeros((capacity, self.dim), dtype=self.key_dtype, device=self.keys.device)  # (capacity, dim)
            grown[: self.size] = self.keys[: self.size]
            grown_values = torch.zeros(capacity, dtype=torch.long, device=self.keys.device)  # (capacity,)
            grown_values[: self.size] = self.values[: self.size]
            grown_norms = torch.zeros(capacity, dtype=torch.float32, device=self.keys.device)  # (capacity,)
            grown_norms[: self.size] = self.norms[: self.size]
            self.keys, self.values, self.norms = grown, grown_values, grown_norms
        keys = keys.detach().to(self.keys.device, torch.float32)  # (n, dim)
        if self.key_dtype != torch.float32:
            keys = _rounded(keys, self.key_dtype)  # the key as stored: its norm is the stored key's
        start = self.size
        self.keys[start: start + n] = keys
        self.values[start: start + n] = values.to(self.keys.device, torch.long)
        self.norms[start: start + n] = (keys * keys).sum(dim=1)
        self.size += n
        return start

    # ------------------------------------------------------------ search
    def search(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``min(k, size)`` nearest entries of each query (exact, or among the probed lists once the IVF is on).

        Args:
            queries: (rows, dim) float32.
        Returns:
            squared distances (rows, k'), and their values (rows, k') as int64: the nearest entries;
            of entries tied at the k-th distance, the most recent.
        """
        if self.centroids is None:
            return self._nearest(queries, k)
        return self._probed(queries, k)

    def _nearest(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact search over every entry."""
        keys, norms = self.keys[: self.size], self.norms[: self.size]  # (n, dim), (n,)
        partial = _partial(keys, norms, queries)  # (rows, n), a float16 store read block by block
        squares = (queries * queries).sum(dim=1, keepdim=True)  # (rows, 1)
        # entries at equal distance (to rounding noise of terms the size of ||q||² + ||key||², simpe.ties)
        # are taken the most recent first: the translator's latest post-edit of that context
        nearest, index = smallest_per_row(partial, k, magnitude=lambda index: norms[index] + squares)  # (rows, k'), (rows, k')
        nearest = nearest.add_(squares).clamp_(min=0.0)  # (rows, k')
        return nearest, torch.take(self.values, index)  # (rows, k') int64

    def _probed(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Each row searched over the entries of its own ``probe_lists`` nearest lists (the IVF)."""
        rows = queries.shape[0]
        _, probes = smallest_per_row(_partial(self.centroids, (self.centroids * self.centroids).sum(dim=1), queries),
                                     min(self.probe_lists, self.centroids.shape[0]), later_first=False)  # (rows, probes)
        readers: dict[int, list[int]] = {}  # list -> the rows that probe it
        for row, chosen in enumerate(probes.tolist()):
            for list_id in chosen:
                readers.setdefault(list_id, []).append(row)
        parts: list[list[torch.Tensor]] = [[] for _ in range(rows)]  # per row: partial distances, list by list
        members: list[list[torch.Tensor]] = [[] for _ in range(rows)]  # per row: the entries they belong to
        for list_id, readers_of in readers.items():
            if self.lists[list_id].numel() == 0:
                continue
            partial = _partial(self.list_keys[list_id], self.list_norms[list_id], queries[readers_of])  # (readers, members)
            for j, row in enumerate(readers_of):
                parts[row].append(partial[j])
                members[row].append(self.lists[list_id])
        if any(not part for part in parts):  # a row whose probed lists are all empty: exact search for this call
            return self._nearest(queries, k)
        fill = float("inf")
        distance = torch.nn.utils.rnn.pad_sequence([torch.cat(p) for p in parts], batch_first=True, padding_value=fill)
        entry = torch.nn.utils.rnn.pad_sequence([torch.cat(m) for m in members], batch_first=True,
                                                padding_value=self.size)  # (rows, m): past every entry, so last
        k = min(k, min(sum(int(t.numel()) for t in m) for m in members))
        squares = (queries * queries).sum(dim=1, keepdim=True)  # (rows, 1)
        norms = torch.cat([self.norms[: self.size], self.norms.new_zeros(1)])  # a padding entry's magnitude: 0
        # the same tie rule as exact search: at equal distance the most recent entry (the columns are in list order,
        # so "later" is the entry's index, not the column's)
        nearest, column = smallest_per_row(distance, k, magnitude=lambda index: norms[entry.gather(1, index)] + squares,
                                           order=entry)
        nearest = nearest.add_(squares).clamp_(min=0.0)  # (rows, k')
        return nearest, torch.take(self.values, entry.gather(1, column))  # (rows, k') int64

    # ------------------------------------------------------------ the inverted file
    def _train(self) -> None:
        """k-means: ``size // LIST_SIZE`` centroids from entries chosen by a fixed seed, then ``KMEANS_ITERATIONS``
        Lloyd steps over every entry, or over ``KMEANS_SAMPLE`` of them (the same seed) in a larger store; every
        entry joins its nearest centroid's list."""
        keys, count = self.keys[: self.size], max(1, self.size // LIST_SIZE)
        generator = torch.Generator().manual_seed(KMEANS_SEED)
        start = torch.randperm(self.size, generator=generator)[:count].sort().values.to(keys.device)  # (count,)
        centroids = keys.index_select(0, start).to(torch.float32)  # (count, dim) float32 whatever the keys' dtype
        train, train_norms = keys, self.norms[: self.size]  # (n, dim), (n,): every entry, or the sample
        if self.size > KMEANS_SAMPLE:
            sample = torch.randperm(self.size, generator=generator)[:KMEANS_SAMPLE].sort().values.to(keys.device)
            train, train_norms = keys.index_select(0, sample), train_norms.index_select(0, sample)
        for _ in range(KMEANS_ITERATIONS):
            owner = self._owners(train, train_norms, centroids)  # (n,)
            sums = _index_add(torch.zeros_like(centroids), owner, train)  # (count, dim)
            counts = torch.bincount(owner, minlength=count).to(centroids.dtype)  # (count,)
            filled = counts > 0
            centroids[filled] = sums[filled] / counts[filled, None]  # an empty list keeps its centroid
        self.centroids, self._trained_at = centroids, self.size
        self._set_lists(self._owners(keys, self.norms[: self.size], centroids))

    def _set_lists(self, owner: torch.Tensor) -> None:
        """The lists from each entry's list ``owner`` (size,): its entries ascending, their keys and norms."""
        keys = self.keys[: self.size]
        order = torch.argsort(owner * self.size + torch.arange(self.size, device=keys.device))  # by list, then entry
        sizes = torch.bincount(owner, minlength=self.centroids.shape[0]).tolist()
        self.lists = list(torch.split(order, sizes))
        self.list_keys = [keys.index_select(0, members) for members in self.lists]  # (members, dim) each
        self.list_norms = [self.norms.index_select(0, members) for members in self.lists]  # (members,) each

    def _assign(self, entries: torch.Tensor) -> dict[int, int]:
        """Add ``entries`` (m,) (new, ascending) to their nearest centroids' lists; returns {list: its size before}."""
        owner = self._owners(self.keys.index_select(0, entries), self.norms.index_select(0, entries), self.centroids)
        grown = {}
        for list_id in torch.unique(owner).tolist():
            joining = entries[owner == list_id]  # (j,) ascending, after every member
            grown[list_id] = len(self.lists[list_id])
            self.lists[list_id] = torch.cat([self.lists[list_id], joining])
            self.list_keys[list_id] = torch.cat([self.list_keys[list_id], self.keys.index_select(0, joining)])
            self.list_norms[list_id] = torch.cat([self.list_norms[list_id], self.norms.index_select(0, joining)])
        return grown

    def _split(self, list_id: int) -> None:
        """Split list ``list_id`` in two by 2-means over its members (seeds: its first entry and the entry farthest
        from it): one half keeps the list's number, the other becomes the last list. Members that a split cannot
        part (every one nearest the same seed) stay together."""
        members, keys, norms = self.lists[list_id], self.list_keys[list_id], self.list_norms[list_id]
        first = keys[:1].float()  # (1, dim)
        # the farthest entry from the first: the nearest to it by the negated distance (a near-tie: the earliest)
        _, far = smallest_per_row(-_partial(keys, norms, first), 1, later_first=False)  # (1, 1)
        centroids = torch.cat([first, keys[far[0]].float()]).clone()  # (2, dim) float32
        for _ in range(KMEANS_ITERATIONS):
            owner = self._owners(keys, norms, centroids)  # (members,) 0 or 1
            sums = _index_add(torch.zeros_like(centroids), owner, keys)  # (2, dim)
            counts = torch.bincount(owner, minlength=2).to(centroids.dtype)  # (2,)
            filled = counts > 0
            centroids[filled] = sums[filled] / counts[filled, None]
        owner = self._owners(keys, norms, centroids)  # (members,)
        second = owner == 1
        if not bool(second.any()) or bool(second.all()):
            return
        self.centroids = torch.cat([self.centroids, centroids[1:]])  # (lists + 1, dim)
        self.centroids[list_id] = centroids[0]
        self.lists[list_id], self.list_keys[list_id], self.list_norms[list_id] = members[~second], keys[~second], norms[~second]
        self.lists.append(members[second])
        self.list_keys.append(keys[second])
        self.list_norms.append(norms[second])

    # ------------------------------------------------------------ the index as state
    def index_state(self) -> dict[str, torch.Tensor]:
        """The inverted file as tensors (none while the search is exact): ``centroids`` (lists, dim) float32,
        ``lists`` (entries,) int32, each entry's list, and ``trained_at`` (1,) int64, the size at the last training."""
        if self.centroids is None:
            return {}
        owner = torch.empty(self.size, dtype=torch.int32, device=self.keys.device)  # (entries,)
        for list_id, members in enumerate(self.lists):
            owner[members] = list_id
        return {"centroids": self.centroids.clone(), "lists": owner,
                "trained_at": torch.tensor([self._trained_at], dtype=torch.int64)}

    def load(self, keys: torch.Tensor, values: torch.Tensor, ivf: dict[str, torch.Tensor] | None = None) -> None:
        """Fill an empty store with ``keys`` (n, dim) and ``values`` (n,) and its inverted file from ``ivf``
        (``index_state``'s tensors, checked by the caller); without one, the store is indexed as ``add`` indexes it."""
        assert self.size == 0
        if not ivf:
            self.add(keys, values)
            return
        self._append(keys, values)
        self.centroids = ivf["centroids"].to(self.keys.device, torch.float32).clone()
        self._trained_at = int(ivf["trained_at"].flatten()[0])
        self._set_lists(ivf["lists"].to(self.keys.device, torch.long))

    @staticmethod
    def _owners(keys: torch.Tensor, norms: torch.Tensor, centroids: torch.Tensor) -> torch.Tensor:
        """(n,) the nearest centroid of each key (a near-tie: the lower centroid, by ``simpe.ties``)."""
        owners = []
        step = 8192 if keys.dtype == torch.float32 else min(8192, _block_rows(keys.shape[1]))
        for chunk in range(0, keys.shape[0], step):  # (8192, lists) at a time: bounded memory
            rows = keys[chunk: chunk + step].float()  # (chunk, dim): a float16 store's block in float32
            partial = _partial(centroids, (centroids * centroids).sum(dim=1), rows)  # (chunk, lists)
            owners.append(smallest_per_row(partial, 1, later_first=False)[1][:, 0])
        return torch.cat(owners)

    def nbytes(self) -> int:
        """Bytes of the entries as a per-user store holds them (keys at ``key_dtype``, int32 values), and of the inverted
        file (``index_state``: float32 centroids, an int32 list per entry, the int64 size at the last training)."""
        index = 0 if self.centroids is None else self.centroids.numel() * 4 + self.size * INDEX_BYTES + 8
        return self.size * (self.dim * self.keys.element_size() + INDEX_BYTES) + index

    def searched(self, entries: int, rows: int) -> tuple[int, int]:
        """(keys read, keys compared per row) of one search of ``rows`` queries in a store of ``entries`` entries: every
        entry while the search is exact; past ``exact_entries`` (``index="auto"``) the centroids, ``entries / LIST_SIZE``,
        and the ``probe_lists`` lists of each row, at most one read of each list for all the rows that probe it."""
        if self.index == "exact" or entries <= self.exact_entries:
            return entries, entries
        centroids = max(1, entries // LIST_SIZE)
        probed = min(self.probe_lists, centroids) * LIST_SIZE
        return centroids + min(entries, rows * probed), centroids + probed

    def entry_bytes(self) -> int:
        """Bytes an entry takes in memory while the search is exact: its key at ``key_dtype``, its float32 squared norm
        and its int64 value (``memory_bytes`` of a store filled to its capacity, without an inverted file)."""
        return self.dim * self.keys.element_size() + 4 + 8

    def memory_bytes(self) -> int:
        """Bytes this datastore holds in memory: its capacity (keys at ``key_dtype``, int64 values, float32 norms) and
        the IVF (float32 centroids; per entry its index, its key's copy at ``key_dtype`` and its norm)."""
        key = self.keys.element_size()
        held = self.keys.numel() * key + self.values.numel() * 8 + self.norms.numel() * 4
        if self.centroids is not None:
            held += self.centroids.numel() * 4 + sum(lst.numel() for lst in self.lists) * (8 + key * self.dim + 4)
        return held


def _crosses(before: int, after: int) -> bool:
    """A list that grew from ``before`` to ``after`` members reached ``SPLIT_AT`` or a doubling of it on the way."""
    threshold = SPLIT_AT
    while threshold <= before:
        threshold *= 2
    return after >= threshold


def _partial(keys: torch.Tensor, norms: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """(rows, n) ||key||² - 2 q·key, the part of ||q - key||² that varies over keys, in float32.

    Taken as keys · queriesᵀ, (n, rows), read as its transpose: with few query rows the store in
    its own row-major layout is streamed once (1.5× with 1 thread, 2.8× with 2, faster than
    queries · keysᵀ at 25k entries on an AMD EPYC with MKL). Float16 ``keys`` are taken in float32
    blocks of ``UPCAST_BYTES`` (``_blocks``), the products written into one (rows, n) result."""
    if keys.dtype == torch.float32:
        return torch.addmm(norms[:, None], keys, queries.T, alpha=-2.0).T
    out = torch.empty((queries.shape[0], keys.shape[0]), dtype=torch.float32, device=keys.device)  # (rows, n)
    for start, stop in _blocks(keys):
        out[:, start:stop] = torch.addmm(norms[start:stop, None], keys[start:stop].float(), queries.T, alpha=-2.0).T
    return out


def _blocks(keys: torch.Tensor) -> list[tuple[int, int]]:
    """(start, stop) row ranges of ``keys`` whose float32 copy takes at most ``UPCAST_BYTES`` (at least one row)."""
    step = _block_rows(keys.shape[1])
    return [(start, min(start + step, keys.shape[0])) for start in range(0, keys.shape[0], step)]


def _block_rows(dim: int) -> int:
    """Rows of ``dim`` float32 values in ``UPCAST_BYTES`` (at least one)."""
    return max(1, UPCAST_BYTES // (4 * max(1, dim)))


def _index_add(sums: torch.Tensor, owner: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """``sums.index_add_(0, owner, keys)`` in float32; float16 ``keys`` block by block (the same additions, in order)."""
    if keys.dtype == torch.float32:
        return sums.index_add_(0, owner, keys)
    for start, stop in _blocks(keys):
        sums.index_add_(0, owner[start:stop], keys[start:stop].float())
    return sums


def _rounded(keys: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``keys`` (n, dim) float32 rounded to ``dtype`` and back to float32: the values a store of ``dtype`` holds.
    A finite value beyond ``dtype``'s range is refused (ModelError, one line), never stored as an infinity (a NaN or an
    infinity is stored as a float32 store stores it, and refused where a store or state is read)."""
    largest = torch.finfo(dtype).max
    peak = float(keys.abs().nan_to_num(nan=0.0).max()) if keys.numel() else 0.0
    if largest < peak < math.inf:
        raise ModelError(f"a knn key holds a value of magnitude {peak:.4g}, beyond {str(dtype).removeprefix('torch.')}'s "
                         f"range ({largest:.0f}); set the knn parameter key_dtype: float32")
    return keys.to(dtype).float()
