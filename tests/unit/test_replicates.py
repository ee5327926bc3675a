"""Replicate statistics (simpe.report.replicates.spread) and document orders (simpe.datasets.base.shuffle_documents),
counted by hand."""
from __future__ import annotations

import math

import pytest

from simpe.config.files import load_config
from simpe.datasets.base import Segment, shuffle_documents
from simpe.errors import ConfigError, DataError
from simpe.report.replicates import cell, spread


def test_spread_of_three_replicates_by_hand() -> None:
    # deltas +1.0, +3.0, -0.5: mean 3.5 / 3 = 1.1667; squared deviations 0.0278 + 3.3611 + 2.7778 = 6.1667, / 2 -> std
    # sqrt(3.0833) = 1.7559; two of three have the mean's sign (+); the first is significant (p 0.01, +), the third
    # (p 0.01) has the other sign and the second (p 0.2) is not significant
    found = spread([1.0, 3.0, -0.5], [0.01, 0.2, 0.01])
    assert found.mean == pytest.approx(3.5 / 3) and found.std == pytest.approx(math.sqrt(6.1666667 / 2), abs=1e-6)
    assert (found.low, found.high, found.agree, found.significant, found.count) == (-0.5, 3.0, 2, 1, 3)
    assert cell(found, 1) == "+1.2 ± 1.8 [-0.5, +3.0], 2/3 (1†)"


def test_spread_counts_a_zero_difference_with_neither_sign_and_skips_missing_ones() -> None:
    found = spread([0.0, -2.0, None])
    assert found.mean == -1.0 and found.std == pytest.approx(math.sqrt(2.0)) and found.agree == 1 and found.count == 2
    assert spread([None, None]).mean is None and spread([2.0]).std is None


def _segments(docs: str) -> list[Segment]:
    return [Segment(doc, f"{doc}{i}", f"source {doc}{i}", f"reference {doc}{i}") for doc in docs for i in range(2)]


def test_shuffled_documents_stay_whole_and_keep_their_segments_order() -> None:
    segments = _segments("abc")
    # random.Random(7).shuffle(["a", "b", "c"]) gives ["c", "a", "b"]
    shuffled = shuffle_documents(segments, 7, "test:stream")
    assert [s.seg_id for s in shuffled] == ["c0", "c1", "a0", "a1", "b0", "b1"]
    assert shuffle_documents(segments, 7, "test:stream") == shuffled and sorted(shuffled, key=segments.index) == segments
    # a document read in two stretches is joined at its first place
    split = [*_segments("a"), *_segments("b"), Segment("a", "a9", "s", "r")]
    assert [s.seg_id for s in shuffle_documents(split, 0, "x")] == ["a0", "a1", "a9", "b0", "b1"]


def test_one_document_has_no_other_order() -> None:
    with pytest.raises(DataError, match="one document .*no document ids"):
        shuffle_documents(_segments("a"), 1, "parallel:stream")


def test_the_config_key_takes_a_seed_or_null() -> None:
    assert load_config("baseline").data.shuffle_documents is None
    assert load_config("baseline", ["data.shuffle_documents=3"]).data.shuffle_documents == 3
    with pytest.raises(ConfigError, match="data.shuffle_documents"):
        load_config("baseline", ["data.shuffle_documents=-1"])


def test_a_sweep_grid_over_document_orders_plans_each_order_in_its_own_group(tmp_path) -> None:
    """Each order of the stream's documents is a stream of its own (its own digest, group and baseline); the digests
    are read once per process (simpe.loop.plan), so the second order must not take the first's."""
    from simpe.sweep.plan import plan

    specs = plan(["bias"], {"data.shuffle_documents": [1, 2]}, overrides=[f"runs_dir={tmp_path}", "data.segments=60"])
    assert sorted(spec.name for spec in specs) == ["baseline--shuffle_documents=1", "baseline--shuffle_documents=2",
                                                   "bias--shuffle_documents=1", "bias--shuffle_documents=2"]
    groups = {spec.name: spec.path.parent for spec in specs}
    assert groups["bias--shuffle_documents=1"] == groups["baseline--shuffle_documents=1"]
    assert groups["bias--shuffle_documents=1"] != groups["bias--shuffle_documents=2"]
