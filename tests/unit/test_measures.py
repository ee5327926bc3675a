"""kRG, kQRG, random kRG: golden values worked by hand."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from simpe.errors import ConfigError
from simpe.ranking.measures import hr_ranks, item_gains, kqrg, krg, random_krg, random_krg_of

D1, D2, D3 = 1.0, 1 / math.log2(3), 0.5  # discounts 1/log2(j+1) for j = 1, 2, 3


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py


# ---------------------------------------------------------------- golden values
# Model order Y_M has qualities [0.2, 0.9, 0.5]. Y_HR = [0.9, 0.5, 0.2], so the HR ranks (0-based) of
# the model-ordered hypotheses are [2, 0, 1] and f = 3 - rank = [1, 3, 2].
#   DCG(Y_M)  = 1*1 + 3/log2(3) + 2*0.5 = 3.8927892607
#   DCG(Y_HR) = 3*1 + 2/log2(3) + 1*0.5 = 4.7618595071
#   kRG = 0.8174935138
#   kQRG = (0.2 + 0.9/log2(3) + 0.5*0.5) / (1 + 1/log2(3) + 0.5) = 1.0178367782 / 2.1309297536 = 0.4776491466
#   random kRG(3) = mean(f) * sum(disc) / DCG(Y_HR) = 2 * 2.1309297536 / 4.7618595071 = 0.8949990021
#   exp gain f = 2^(3-1-rank) - 1 = [0, 3, 1]: (3/log2(3) + 0.5) / (3 + 1/log2(3)) = 2.39278926 / 3.63092975 = 0.6590018048
def test_krg_golden() -> None:
    # n = 3: Y_HR position r -> f = 2 - r; exp gain 2^f - 1 = 3, 1, 0; linear gain f = 2, 1, 0.
    assert hr_ranks([0.2, 0.9, 0.5]) == [2, 0, 1]
    assert krg([0.2, 0.9, 0.5]) == pytest.approx((0 * D1 + 3 * D2 + 1 * D3) / (3 * D1 + 1 * D2 + 0 * D3), abs=1e-12)
    assert krg([0.2, 0.9, 0.5]) == pytest.approx(0.6590018048, abs=1e-9)  # exp is the default
    assert krg([0.9, 0.5, 0.2]) == 1.0  # model order = quality order
    assert krg([0.2, 0.9, 0.5], gain="linear") == pytest.approx((0 * D1 + 2 * D2 + 1 * D3) / (2 * D1 + 1 * D2), abs=1e-12)
    assert krg([0.2, 0.5, 0.9], gain="linear") == pytest.approx((0 * D1 + 1 * D2 + 2 * D3) / (2 * D1 + 1 * D2), abs=1e-12)
    assert krg([0.2, 0.5, 0.9]) == pytest.approx((0 * D1 + 1 * D2 + 3 * D3) / (3 * D1 + 1 * D2), abs=1e-12)


def test_kqrg_golden() -> None:
    assert kqrg([0.2, 0.9, 0.5]) == pytest.approx(0.4776491466, abs=1e-9)
    assert kqrg([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert kqrg([0.0, 0.0]) == 0.0
    assert kqrg([0.7]) == pytest.approx(0.7)


def test_random_krg_is_the_mean_over_all_permutations() -> None:
    # n = 3, exp: mean gain 4/3, sum of discounts 1 + D2 + D3, ideal 3 + D2
    assert random_krg(3) == pytest.approx((4 / 3) * (D1 + D2 + D3) / (3 * D1 + D2), abs=1e-12)
    for n, gain in [(3, "linear"), (4, "linear"), (5, "exp"), (6, "linear")]:
        qualities = [0.1 * (i + 1) for i in range(n)]  # distinct
        mean = sum(krg([qualities[i] for i in p], gain) for p in itertools.permutations(range(n))) / math.factorial(n)
        assert random_krg(n, gain) == pytest.approx(mean, abs=1e-12)


@pytest.mark.parametrize("qualities", [[0.3, 0.3, 0.2, 0.1], [0.5, 0.5, 0.5], [0.9, 0.2, 0.2, 0.2, 0.1], [0.5, 0.5, 0.3, 0.3, 0.1]])
@pytest.mark.parametrize("ties", ["mean", "model"])
@pytest.mark.parametrize("gain", ["exp", "linear"])
def test_random_krg_of_a_list_with_ties_is_the_mean_over_all_its_orders(qualities, ties, gain) -> None:
    orders = list(itertools.permutations(qualities))
    mean = sum(krg(list(order), gain, ties) for order in orders) / len(orders)
    assert random_krg_of(qualities, gain, ties) == pytest.approx(mean, abs=1e-12)


def test_random_krg_k10_and_the_papers_baseline() -> None:
    # Yan et al. (2022) report a random kRG of 58.72% at k = 10 (section 5.1): only the exp gain reproduces it.
    assert random_krg(10) == pytest.approx(0.5874922179, abs=1e-9)
    assert abs(random_krg(10) - 0.5872) < 1e-3
    # the formula as printed (f = k - Rank in [0, k-1], linear gain) gives 80.4%; simpe 0.1's f in [1, k] gave 83.4%
    assert random_krg(10, gain="linear") == pytest.approx(0.8042472959, abs=1e-9)


def test_ties_share_the_mean_gain_of_their_positions() -> None:
    # exp, n = 3: positions 0, 1, 2 have gains 3, 1, 0; a tie over positions 0 and 1 gives both (3 + 1) / 2 = 2.
    assert item_gains([0.5, 0.5, 0.1]) == [2.0, 2.0, 0.0]
    assert krg([0.5, 0.5, 0.1]) == 1.0
    assert krg([0.1, 0.5, 0.5]) == pytest.approx((0 * D1 + 2 * D2 + 2 * D3) / (2 * D1 + 2 * D2), abs=1e-12)
    assert krg([0.1, 0.5, 0.5]) == pytest.approx(0.6934264036, abs=1e-9)
    assert random_krg_of([0.5, 0.5, 0.1]) == pytest.approx((4 / 3) * (D1 + D2 + D3) / (2 * D1 + 2 * D2), abs=1e-12)
    # ties="model" (simpe 0.1): the tied pair is ordered as the model ordered it, gains 0, 3, 1
    assert hr_ranks([0.1, 0.5, 0.5]) == [2, 0, 1]
    assert krg([0.1, 0.5, 0.5], ties="model") == pytest.approx(0.6590018048, abs=1e-9)
    assert krg([0.5, 0.5, 0.1], ties="model") == 1.0


def test_a_list_of_ties_scores_its_random_baseline_not_skill() -> None:
    tied = [0.4] * 10
    assert krg(tied) == 1.0 and random_krg_of(tied) == pytest.approx(1.0, abs=1e-12)  # no gap over random: no skill shown
    # under the model-order rule, any order of an all-tied list scores 1.0, and so does its random baseline
    assert krg(tied, ties="model") == 1.0 and random_krg_of(tied, ties="model") == pytest.approx(1.0)
    mostly = [0.5, 0.5, 0.5, 0.5, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert krg(mostly) - random_krg_of(mostly) < krg(mostly, ties="model") - random_krg(10)


def test_short_lists_and_bad_names() -> None:
    assert krg([0.3]) == 1.0 and random_krg(1) == 1.0 and krg([0.3], gain="linear") == 1.0
    assert krg([]) is None and kqrg([]) is None and random_krg(0) is None and random_krg_of([]) is None
    with pytest.raises(ConfigError, match="known:"):
        krg([0.1, 0.2], gain="cubic")
    with pytest.raises(ConfigError, match="known: mean, model"):
        krg([0.1, 0.2], ties="random")


def test_krg_bounds_random_lists() -> None:
    gen = torch.Generator().manual_seed(0)
    for n in (2, 5, 10, 200):
        q = torch.rand(n, generator=gen).tolist()
        assert 0.0 < krg(q) <= 1.0
        assert 0.0 <= kqrg(q) <= 1.0
        assert krg(sorted(q, reverse=True)) == pytest.approx(1.0)


# ---------------------------------------------------------------- snapshot on a real model + tokenizer


