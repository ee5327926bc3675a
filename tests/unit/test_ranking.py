"""kRG, kQRG, random kRG (golden values worked by hand), RankingConfig checks, and snapshot() on a
tiny Marian model with the demo model's real SentencePiece tokenizer."""
from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch
from test_decoders import REFERENCES, SOURCES, make_text_model, text_tokenizer

from simpe.config import RankingConfig, defaults, from_dict
from simpe.errors import ConfigError
from simpe.ranking.evaluate import check, evaluate, snapshot
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
    # seed 000 reports a random kRG of 58.72% at k = 10 (section 5.1): only the exp gain reproduces it.
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


def test_ranking_config_checks() -> None:
    check(defaults("ranking"))
    with pytest.raises(ConfigError, match="known: bleu, chrf, chrf\\+\\+, sbleu, ter, comet"):
        check(defaults("ranking", quality="bleurt"))
    with pytest.raises(ConfigError, match="needs a COMET model"):
        check(defaults("ranking", quality="comet"))
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        defaults("ranking", k=0)
    with pytest.raises(ConfigError, match="max_seconds"):
        defaults("ranking", max_seconds=-1)
    with pytest.raises(ConfigError, match="evaluates nothing"):
        defaults("ranking", top_region=False, sampling=False)
    with pytest.raises(ConfigError, match="known: exp, linear"):
        defaults("ranking", gain="log")


# ---------------------------------------------------------------- snapshot on a real model + tokenizer
@pytest.fixture(scope="module")
def text_model():
    return make_text_model(seed=0), text_tokenizer()


def test_snapshot_figures_and_no_side_effects(text_model) -> None:
    model, tokenizer = text_model
    model.train()  # the loop's model may be in train mode: the snapshot must not change that
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(123)
    rng = torch.get_rng_state()
    cfg = defaults("ranking", k=3, samples=16, max_expansions=None, max_seconds=None)
    out = snapshot(model, tokenizer, SOURCES, REFERENCES, cfg)
    assert torch.equal(rng, torch.get_rng_state())
    assert model.training and all(m.training for m in model.modules())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    for key in ("top.krg", "top.kqrg", "top.random_krg", "top.empty_rate", "top.beam_error_rate", "top.exact_rate",
                "mc.krg", "mc.kqrg", "mc.random_krg", "probe_size", "seconds"):
        assert key in out, key
    assert out["probe_size"] == len(SOURCES)
    assert out["top.exact_rate"] == 1.0 and out["top.short_rate"] == 0.0
    assert out["top.random_krg"] == pytest.approx(random_krg(3))
    # tied sample qualities share gains, which can only raise a list's random baseline over the tie-free one
    assert random_krg(16) - 1e-12 <= out["mc.random_krg"] <= 1.0
    for key in ("top.krg", "mc.krg"):
        assert 0.0 < out[key] <= 1.0
    for key in ("top.kqrg", "mc.kqrg", "top.empty_rate", "top.beam_error_rate", "mc.mean_quality"):
        assert 0.0 <= out[key] <= 1.0
    again = snapshot(model, tokenizer, SOURCES, REFERENCES, cfg)
    assert {k: v for k, v in again.items() if "seconds" not in k} == {k: v for k, v in out.items() if "seconds" not in k}
    model.eval()


def test_evaluate_records_match_direct_decoding(text_model) -> None:
    import sacrebleu

    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.sampling import SamplingDecoder
    from simpe.decoders.topk import TopKDecoder

    model, tokenizer = text_model
    cfg = defaults("ranking", k=3, samples=12, sample_seed=5, max_expansions=None, max_seconds=None, quality="chrf")
    summary, records = evaluate(model, tokenizer, SOURCES, REFERENCES, cfg, keep_records=True)
    empty = beam_errors = 0
    for i, (record, src, ref) in enumerate(zip(records, SOURCES, REFERENCES)):
        ids = tokenizer(src, return_tensors="pt")["input_ids"]
        top = TopKDecoder(k=3, beam_size=5).decode(model, ids).hypotheses
        texts = tokenizer.batch_decode([list(h.tokens) for h in top], skip_special_tokens=True)
        q = [sacrebleu.sentence_chrf(t, [ref]).score / 100 for t in texts]
        assert [h["text"] for h in record["top"]["hypotheses"]] == texts
        assert record["top"]["krg"] == pytest.approx(krg(q)) and record["top"]["kqrg"] == pytest.approx(kqrg(q))
        beam = BeamDecoder(beam_size=5).decode(model, ids).hypotheses[0]
        empty += top[0].tokens == (0,)
        beam_errors += beam.score < top[0].score - 1e-4
        samples = SamplingDecoder(samples=12, seed=5 + i).decode(model, ids).hypotheses
        stexts = tokenizer.batch_decode([list(h.tokens) for h in samples], skip_special_tokens=True)
        sq = [sacrebleu.sentence_chrf(t, [ref]).score / 100 for t in stexts]
        assert record["mc"]["krg"] == pytest.approx(krg(sq)) and record["mc"]["kqrg"] == pytest.approx(kqrg(sq))
        assert sum(s["count"] for s in record["mc"]["samples"]) == 12
    assert summary["top.empty_rate"] == empty / len(SOURCES)
    assert summary["top.beam_error_rate"] == beam_errors / len(SOURCES)


def test_cut_short_search_is_reported(text_model) -> None:
    model, tokenizer = text_model
    # sentences whose exact top-3 needs more than 2 expansions with this tiny model and the demo vocabulary
    out = snapshot(model, tokenizer, [SOURCES[0], SOURCES[2]], [REFERENCES[0], REFERENCES[2]],
                   defaults("ranking", k=3, max_expansions=2, max_seconds=None, sampling=False))
    assert out["top.exact_rate"] == 0.0
    assert "mc.krg" not in out


def test_sbleu_quality(text_model) -> None:
    model, tokenizer = text_model
    out = snapshot(model, tokenizer, SOURCES[:2], REFERENCES[:2],
                   defaults("ranking", k=2, samples=8, quality="sbleu", max_expansions=None, max_seconds=None))
    assert 0.0 <= out["top.kqrg"] <= 1.0 and 0.0 <= out["mc.kqrg"] <= 1.0


def test_comet_quality_from_cached_embeddings(text_model, tiny_comet) -> None:
    from simpe.metrics.comet import CometScorer
    from simpe.metrics.utility import CometUtility

    model, tokenizer = text_model
    scorer = CometScorer(str(tiny_comet), batch_size=4)
    hyps = ["Wählen Sie den Zellbereich aus.", "Wählen Sie aus.", "", "Klicken Sie auf OK."]
    utility = CometUtility(scorer)
    got = utility.scores(hyps, REFERENCES[1], SOURCES[1])
    assert got == pytest.approx(scorer.score([SOURCES[1]] * 4, hyps, [REFERENCES[1]] * 4), abs=1e-5)
    matrix = utility.matrix(hyps, hyps, SOURCES[1])  # every pair, each sentence embedded once
    assert matrix.shape == (4, 4) and matrix[1, 3] == pytest.approx(scorer.score([SOURCES[1]], [hyps[1]], [hyps[3]])[0], abs=1e-5)
    out = snapshot(model, tokenizer, SOURCES[:2], REFERENCES[:2],
                   defaults("ranking", k=2, samples=6, quality="comet", max_expansions=None, max_seconds=None), comet=scorer)
    assert out["quality"] == "comet" and math.isfinite(out["top.kqrg"]) and math.isfinite(out["mc.kqrg"])
    with pytest.raises(ConfigError, match="needs a COMET model"):
        snapshot(model, tokenizer, SOURCES[:1], REFERENCES[:1], defaults("ranking", quality="comet"))


def test_ranking_config_from_a_config_block() -> None:
    block = {**dataclasses.asdict(defaults("ranking")), "k": 3, "quality": "sbleu"}
    assert from_dict(RankingConfig, block, "ranking") == defaults("ranking", k=3, quality="sbleu")
    with pytest.raises(ConfigError, match="unknown key ranking.top_k; known: k, quality, samples"):
        from_dict(RankingConfig, {**block, "top_k": 3}, "ranking")
    with pytest.raises(ConfigError, match="missing key ranking.k"):
        from_dict(RankingConfig, {key: value for key, value in block.items() if key != "k"}, "ranking")
    with pytest.raises(ConfigError, match="ranking.samples must be an integer, got 'many'"):
        from_dict(RankingConfig, {**block, "samples": "many"}, "ranking")
