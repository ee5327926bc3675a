"""One rule for bands (docs/replicate.md, "The bands"): every counted claim names the kinds of band it uses, each kind
has its rule, and a band that is a judgement says so in the row's rule. The checks on the committed records (every
row follows its kinds, no "reproduced" without a size test, no stream row judged on segments where document ids exist)
are in tests/integration/test_replication_page.py."""
from __future__ import annotations

from simpe.replicate.bands import BANDS, CORRELATION, DIRECTION, JUDGEMENT, KINDS, NONE, NULL_JUDGEMENT, SHAPE
from simpe.replicate.claims import CLAIMS, PROBES
from simpe.replicate.verdicts import DIRECTION_ONLY


def test_every_counted_claim_names_its_kinds_of_band_and_every_kind_has_its_rule():
    counted = {c.id for c in CLAIMS if not c.probe}
    assert set(BANDS) == counted
    assert all(kinds and set(kinds) <= set(KINDS) for kinds in BANDS.values())
    assert not set(BANDS) & PROBES


def test_a_band_that_is_a_judgement_says_so_in_the_rule():
    rules = {c.id: c.rule for c in CLAIMS}
    for cid, kinds in BANDS.items():
        if NULL_JUDGEMENT in kinds or CORRELATION in kinds:
            assert JUDGEMENT in rules[cid], cid
        if DIRECTION in kinds:  # no size: the rule says the row is at most partly, direction only
            assert DIRECTION_ONLY in rules[cid] or "at most partly" in rules[cid], cid
        if SHAPE in kinds:
            assert "not counted" in rules[cid], cid
        if kinds == (NONE,):
            assert rules[cid] == "–", cid
