"""Kocmi et al. (2024)'s human-agreement thresholds (simpe.metrics.thresholds) against the authors' own figures.

Three independent sources: the deltas the paper's appendix prints (MT-Thresholds, appendix/main_thresholds.tex, copied
here by hand), the example of the authors' README (``mt-thresholds bleu 1.00``: 63.989 %), and, where the authors'
package ``mt-thresholds`` is installed, their code itself on every fit.
"""
from __future__ import annotations

import importlib.util
import math
import re

import pytest

from simpe.metrics import thresholds
from simpe.metrics.thresholds import THRESHOLDS, accuracy, agreement, delta, one_family_note

# appendix/main_thresholds.tex of github kocmitom/MT-Thresholds (commit 29059920aa6d), the 80 % and 90 % columns:
# BLEU 2.34 and "-", ChrF 1.63 and 3.05, Comet_22 0.56 and 0.94
PAPER_TABLE = {"bleu": (2.34, None), "chrf": (1.63, 3.05), "comet22": (0.56, 0.94)}


@pytest.mark.parametrize("name", sorted(PAPER_TABLE))
def test_three_thresholds_are_the_papers(name: str) -> None:
    at_80, at_90 = PAPER_TABLE[name]
    assert round(delta(0.8, name), 2) == at_80
    assert (None if delta(0.9, name) is None else round(delta(0.9, name), 2)) == at_90
    kept = THRESHOLDS["paper_table"]["deltas"][name]
    assert (kept["80"], kept["90"]) == (at_80, at_90)


def test_the_authors_readme_example() -> None:
    # README of MT-Thresholds: "mt-thresholds bleu 1.00" -> "accuracy is 63.989%"; "mt-thresholds chrf 0.63989 --delta"
    # -> "ChrF needs 0.710 difference for the same accuracy as BLEU"
    assert round(accuracy(1.0, "bleu"), 3) == 63.989
    assert round(delta(0.63989, "chrf"), 3) == 0.710


def test_the_figures_carry_their_source() -> None:
    source = THRESHOLDS["source"]
    assert source["repository"] == "https://github.com/kocmitom/MT-Thresholds"
    assert source["file"] == "python-tool/mt_thresholds.py" and re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert "Kocmi" in THRESHOLDS["paper"] and "2024" in THRESHOLDS["paper"]


@pytest.mark.skipif(importlib.util.find_spec("mt_thresholds") is None, reason="the authors' mt-thresholds package is not installed")
def test_every_fit_computes_as_the_authors_code() -> None:
    import mt_thresholds

    for name in THRESHOLDS["fits"]:
        key = name.lower()
        for difference in (0.1, 0.5, 1.0, 2.5, 7.0):
            assert accuracy(difference, name) == mt_thresholds.accuracy(difference, key)
        for level in (0.55, 0.8, 0.9):
            theirs = mt_thresholds.delta(level, key)
            assert delta(level, name) is None if math.isnan(theirs) else delta(level, name) == theirs


def test_agreement_places_a_difference_at_its_level() -> None:
    assert agreement("bleu", 2.0).label == "below 80 %"
    assert agreement("bleu", -2.4).label == "80 %" and agreement("bleu", 40.0).label == "80 %"  # BLEU never reaches 90 %
    assert agreement("chrf", 3.1).label == "90 %"
    # simpe's COMET is on the 0-1 scale: 0.006 is 0.6 points of COMET-22 (>= 0.56: 80 %)
    assert agreement("comet", 0.006, "Unbabel/wmt22-comet-da").label == "80 %"
    other = agreement("comet", 0.5, "tiny-comet")
    assert not other.covered and "not COMET-22" in other.why
    assert not agreement("ter", -5.0).covered and not agreement("r0", 10.0).covered


def test_one_family_is_said() -> None:
    assert "Only string-matching metrics" in one_family_note(["bleu", "chrf", "ter"])
    assert one_family_note(["bleu", "comet"]) is None
    assert thresholds.comet_model_of("model:Unbabel/wmt22-comet-da|batch:8|version:2.2.7") == "Unbabel/wmt22-comet-da"
