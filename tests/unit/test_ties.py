"""The tie rule (simpe.ties) and every decision that uses it: values a few ulps apart decide nothing.

Each test perturbs the compared values by a few float32 ulps (what another kernel set or thread
count does to them) in several random ways and asserts the same choice, and asserts which choice
the tie rule makes (by hand: the stable key each call site names).
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from simpe import ties
from simpe.decoders.beam import _best, _keep_best, _may_tie, _ranked_head
from simpe.methods.fixed import choose_tensors
from simpe.methods.knn import Datastore

ULP32 = 2.0 ** -23  # float32 ulp relative to a value in [1, 2)


def wiggle(values, rng: random.Random, ulps: int = 4):
    """Each value moved by up to ``ulps`` float32 ulps of its own magnitude."""
    return [v + v * ULP32 * rng.randint(-ulps, ulps) for v in values]


def test_tolerance_is_far_above_float32_noise_and_far_below_real_differences():
    assert ties.REL >= 50 * ULP32 and ties.REL <= 1e-4
    assert ties.tied(0.01, 0.01 * (1 + 5 * ULP32))
    assert not ties.tied(0.01, 0.01 * (1 + 1e-4))
    assert ties.tied(-3.0, -3.0 + 1e-7, atol=ties.SCORE_ATOL)
    assert not ties.tied(-1e30, -math.inf) and not ties.tied(0.0, math.inf) and ties.tied(-math.inf, -math.inf)


def test_rank_orders_by_value_then_by_the_next_column_then_by_key():
    values = [0.5, 1.0, 1.0 + 3e-8, 2.0, 1.0 - 2e-8]
    wanted = [0.1, 0.7, 0.3, 0.0, 0.7]
    names = ["e", "b", "c", "a", "a2"]
    # 2.0 first; the three tied ~1.0 by the second column (0.7, 0.7 tie again: by name), then 0.5
    assert ties.rank(values, wanted, key=names) == [3, 4, 1, 2, 0]
    assert ties.rank(values, key=names) == [3, 4, 1, 2, 0]  # a2 < b < c by name
    assert ties.rank([3.0, 1.0, 2.0]) == [0, 2, 1]


def test_rank_groups_a_chain_of_neighbours_tied_to_the_noise():
    # each neighbour within the tolerance of the next: one group, whatever the noise did to their order
    base = 0.02
    values = [base * (1 + i * 0.6 * ties.REL) for i in range(5)]
    rng = random.Random(0)
    first = ties.rank(values, key=list("edcba"))
    assert first == [4, 3, 2, 1, 0]
    for _ in range(50):
        assert ties.rank(wiggle(values, rng), key=list("edcba")) == first


def test_rank_perturbed_by_ulps_never_changes():
    rng = random.Random(1)
    values = [0.009999999232937854, 0.009999999036610632, 0.00999999893822249, 0.0099, 0.0101, 0.005]
    names = [f"t{i}" for i in range(len(values))]
    first = ties.rank(values, key=names)
    assert first == [4, 0, 1, 2, 3, 5]  # 0.0101; then the three tied 0.0099999… by name; 0.0099; 0.005
    for _ in range(200):
        assert ties.rank(wiggle(values, rng), key=names) == first


@pytest.mark.parametrize("n", [1, 3, 20, 40])
def test_top_keeps_the_same_indices_when_ties_at_the_cut_are_perturbed(n: int):
    rng = random.Random(n)
    # 60 values: 10 clear leaders, then 30 tied at 1.0 (the cut falls inside them for n = 20), then 20 lower
    values = [5.0 + i for i in range(10)] + [1.0] * 30 + [0.01 * i for i in range(20)]
    tiebreak = torch.tensor([float(i % 7) for i in range(60)])
    expected = None
    for trial in range(30):
        moved = torch.tensor(values if trial == 0 else wiggle(values, rng), dtype=torch.float32)
        got = set(ties.top(moved, n, tiebreak=tiebreak).tolist())
        expected = expected or got
        assert got == expected and len(got) == n
    if n == 20:  # the 10 leaders, then 10 of the tied block: the larger tiebreak (6, 5, ...), then lower index
        block = sorted(range(10, 40), key=lambda i: (-(i % 7), i))
        assert expected == set(range(10)) | set(block[:10])


def test_top_widens_its_window_for_a_long_tied_group():
    values = torch.ones(1000)
    values[999] = 2.0
    assert ties.top(values, 3).tolist() == [999, 0, 1]  # the tied block by index
    assert ties.top(values, 1000).numel() == 1000 and ties.top(values, 0).numel() == 0


def test_smallest_per_row_takes_the_latest_of_entries_tied_at_the_cut():
    rng = random.Random(3)
    base = [4.0, 1.0, 2.0, 2.0, 2.0, 9.0, 2.0]
    for trial in range(30):
        rows = torch.tensor([base if trial == 0 else wiggle(base, rng), [3.0, 2.0, 1.0, 0.0, 5.0, 6.0, 7.0]],
                            dtype=torch.float32)
        vals, idx = ties.smallest_per_row(rows, 2)
        assert sorted(idx[0].tolist()) == [1, 6]  # 1.0, then the latest of the four tied 2.0
        assert idx[1].tolist() == [3, 2]  # no tie: plain ascending order
        _, earliest = ties.smallest_per_row(rows, 2, later_first=False)
        assert sorted(earliest[0].tolist()) == [1, 2]


def test_lasso_budget_keeps_the_same_tensors_when_step_norms_tie(tiny_marian):
    """Segment 0: every clipped tensor's step norm is lr; equal sizes give equal shrunk norms. The budget keeps
    those with the larger unclipped gradient, then by name, however the last bits fall."""
    from simpe.config.files import defaults
    from simpe.methods import METHODS

    model = tiny_marian(seed=3)
    method = METHODS.build("lasso", penalty=1e-3, budget_nonembedding=0.05, budget_embedding=0.0)
    method.attach(model, None, defaults("update"))
    lr, shrink = 0.01, 0.01 * 1e-3
    names = sorted(method.tensors)
    sizes = {n: method.tensors[n].numel() for n in names}
    square = [n for n in names if sizes[n] == 256]  # the 16 x 16 projections: one size, several tensors
    assert len(square) >= 6
    rng = random.Random(5)
    raw = {n: 2.0 + i for i, n in enumerate(square)}  # the unclipped gradient norms: all clipped to 1.0
    chosen = None
    for trial in range(40):
        step = {}
        for n in names:
            norm = 1.0 if n in square else 0.0
            if trial and n in square:
                norm *= 1 + ULP32 * rng.randint(-4, 4)
            step[n] = (method.tensors[n], None, lr, lr * norm, raw.get(n, 0.0))
        kept, _ = method._choose_tensors(step, shrink, set())
        if chosen is None:
            chosen = sorted(kept)
        assert sorted(kept) == chosen
    fits = method.budget_tensor // 256
    assert 0 < fits < len(square)
    assert chosen == sorted(sorted(square, key=lambda n: -raw[n])[:fits])  # the largest unclipped gradients


def test_fixed_selection_ranks_equal_changes_by_name():
    rng = random.Random(7)
    base = {f"layer.{c}.weight": torch.zeros(100) for c in "dcba"}
    for trial in range(20):
        adapted = {}
        for name in base:
            scale = 1.0 if trial == 0 else 1 + ULP32 * rng.randint(-4, 4)
            adapted[name] = torch.full((100,), 0.5 * scale)
        chosen = [t["name"] for t in choose_tensors(base, adapted, budget=200)]
        assert chosen == ["layer.a.weight", "layer.b.weight"]


def test_beam_candidates_tied_to_the_noise_are_ranked_by_row_then_token():
    rng = random.Random(11)
    scores = [-1.0, -1.0 - 1e-9]  # two live beams tied to the noise
    for trial in range(30):
        row = [-0.5, -0.5, -0.7, -3.0, -9.0, -9.0]
        table = torch.tensor([row if trial == 0 else wiggle(row, rng), row if trial == 0 else wiggle(row, rng)],
                             dtype=torch.float32)
        values, rows, tokens = _best(table, list(scores), 3)
        # four candidates tie at -1.5: row 0 before row 1, token 0 before token 1
        assert list(zip(rows, tokens)) == [(0, 0), (0, 1), (1, 0)]
        assert values[0] == pytest.approx(-1.5, abs=1e-5)
        # the per-row cut: 4 best of a row whose 4th and 5th tokens tie (-9.0): the lower id (4) is taken
        _, rows4, tokens4 = _best(table[:1].clone(), [0.0], 5)
        assert tokens4 == [0, 1, 2, 3, 4]


def test_the_beam_ranks_its_first_candidates_as_the_tie_rule_ranks_them_all():
    """_ranked_head (the first k only) is ties.rank(...)[:k]; _may_tie catches every row cut the float32 test calls tied."""
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 40)
        values = [rng.choice([-1.0, -1.5, -2.0, float("-inf")]) * (1 + rng.choice([0, 1e-7, -1e-7, 1e-3])) for _ in range(n)]
        keys = [(rng.randint(0, 4), rng.randint(0, 9)) for _ in range(n)]
        for k in (1, 3, 10, 50):
            assert _ranked_head(values, keys, k) == ties.rank(values, key=keys, atol=ties.SCORE_ATOL)[:k]
    at = torch.tensor([rng.uniform(-30, 0) for _ in range(20000)])  # (n,) float32
    after = at - at.abs() * torch.tensor([rng.uniform(0.9e-5, 1.1e-5) for _ in range(20000)]) - rng.choice([0.0, 1e-6])
    cut = (at - after <= torch.maximum(at.abs(), after.abs()) * ties.REL + ties.SCORE_ATOL) & torch.isfinite(after)  # (n,)
    gate = [_may_tie(a, b) for a, b in zip(at.tolist(), after.tolist())]
    assert all(g for c, g in zip(cut.tolist(), gate) if c) and sum(gate) - int(cut.sum()) < 200


def test_finished_beam_hypotheses_tied_to_the_noise_are_ranked_by_tokens():
    finished = [(-2.0, (5, 0)), (-2.0 + 3e-7, (4, 0)), (-1.0, (9, 0)), (-2.0 - 3e-7, (3, 0))]
    _keep_best(finished, 3)
    assert [t for _, t in finished] == [(9, 0), (3, 0), (4, 0)]


def test_knn_neighbours_at_equal_distance_take_the_latest_post_edit():
    rng = np.random.default_rng(0)
    store = Datastore(4)
    query = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    far = torch.tensor(rng.normal(size=(5, 4)) * 10 + 50, dtype=torch.float32)
    twin = query + torch.tensor([[0.5, 0.0, 0.0, 0.0]])
    other = query + torch.tensor([[-0.5, 0.0, 0.0, 0.0]])  # the same distance, on the other side
    store.add(far, torch.arange(5))
    store.add(twin, torch.tensor([7]))
    store.add(other, torch.tensor([8]))
    _, values = store.search(query, 1)
    assert values.tolist() == [[8]]  # the later of the two entries at distance 0.25
    for step in range(1, 4):  # a few ulps on the earlier entry's key either way: still the later one
        moved = Datastore(4)
        moved.add(far, torch.arange(5))
        moved.add(twin * (1 + step * ULP32 * (-1) ** step), torch.tensor([7]))
        moved.add(other, torch.tensor([8]))
        assert moved.search(query, 1)[1].tolist() == [[8]]


def test_smallest_per_row_breaks_ties_by_the_order_given_not_the_column():
    # columns hold entries 7, 2, 9, 4 (an inverted file's lists, not in entry order); entries 2, 9 and 4 tie
    values = torch.tensor([[5.0, 1.0, 1.0 + 1e-7, 1.0]])
    entries = torch.tensor([[7, 2, 9, 4]])
    _, latest = ties.smallest_per_row(values, 2, order=entries)  # the most recent first: entries 9, then 4
    assert entries.gather(1, latest).tolist() == [[9, 4]]
    _, earliest = ties.smallest_per_row(values, 2, order=entries, later_first=False)
    assert entries.gather(1, earliest).tolist() == [[2, 4]]
    _, by_column = ties.smallest_per_row(values, 2)  # without it: the later columns, 3 and 2
    assert sorted(by_column.tolist()[0]) == [2, 3]


@pytest.mark.parametrize("later_first", [True, False])
def test_the_nearest_of_each_row_by_a_minimum_is_the_top_k_rules_answer_bit_for_bit(later_first: bool):
    """k = 1 (k-means' nearest centroid) takes a minimum pass; rows with exact ties, ties a few ulps apart, near misses
    just past the tolerance, negative values and NaN give the general rule's values and indices exactly."""
    generator = torch.Generator().manual_seed(3)
    values = torch.randn(600, 40, generator=generator) * 50  # negative and positive, as partial distances are
    low = values.min(dim=1).values
    for row in range(0, 600, 6):  # every sixth row: another entry at the minimum, moved 0 to a few ulps, or just past
        column = (row * 7) % 40
        kind = (row // 6) % 5
        moved = {0: low[row], 1: torch.nextafter(low[row], torch.tensor(math.inf)),
                 2: low[row] * (1 + 4e-6) if low[row] > 0 else low[row] * (1 - 4e-6),
                 3: low[row] + abs(low[row]) * 2e-5, 4: torch.tensor(math.nan)}[kind]
        values[row, column] = moved
    fast = ties.smallest_per_row(values, 1, later_first=later_first)
    general = ties._smallest(values, 1, None, later_first, None)
    assert torch.equal(fast[1], general[1])
    assert torch.equal(fast[0].nan_to_num(7.0), general[0].nan_to_num(7.0))
    assert fast[1].dtype == torch.long and fast[0].shape == (600, 1)


@pytest.mark.parametrize("magnitude", [False, True])
def test_the_cut_of_a_few_rows_checked_on_python_floats_gives_the_tensor_tests_answer(magnitude: bool, monkeypatch):
    """A decoding step's search (rows <= FEW_ROWS) checks its cut on Python floats first: the same values and indices,
    bit for bit, as the tensor test alone, for cuts with exact ties, ties a few ulps apart, near misses just past or
    within the margin, negative values, NaN and infinities."""
    generator = torch.Generator().manual_seed(5)
    cases = []
    for kind in range(8):
        for _ in range(12):
            values = torch.randn(5, 60, generator=generator) * 30
            order = values.sort(dim=1)
            row, second = 2, order.indices[2, 1]  # the 2nd smallest of row 2, moved against the smallest
            low = order.values[2, 0]
            values[row, second] = {0: low, 1: torch.nextafter(low, torch.tensor(math.inf)), 2: low + abs(low) * 0.99e-5,
                                   3: low + abs(low) * 1.01e-5, 4: low + abs(low) * 3e-5, 5: torch.tensor(math.nan),
                                   6: torch.tensor(math.inf), 7: order.values[2, 1]}[kind]
            cases.append(values)
    norms = torch.rand(60, generator=generator) * 100
    scale = (lambda index: norms[index] + 7.0) if magnitude else None
    fast = [ties._smallest(v, 1 + (i % 2), scale, True, None) for i, v in enumerate(cases)]
    monkeypatch.setattr(ties, "FEW_ROWS", 0)
    slow = [ties._smallest(v, 1 + (i % 2), scale, True, None) for i, v in enumerate(cases)]
    for (fv, fi), (sv, si) in zip(fast, slow):
        assert torch.equal(fi, si) and torch.equal(fv.nan_to_num(7.0), sv.nan_to_num(7.0))
