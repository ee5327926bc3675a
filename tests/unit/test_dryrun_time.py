"""The dry run's time model (``simpe.loop.dryrun.seconds``) on numbers worked out by hand, and the tensors it counts."""
from __future__ import annotations

import pytest

from simpe.loop.dryrun import TimeFacts, _Sizes, seconds

RATES = {"bandwidth": {"float32": 1000.0}, "macs": {"float32": 100.0}, "step_overhead": 0.5, "forward_overhead": 1.0,
         "step_passes": 2.0, "cache": 100.0, "forwards_per_repetition": {"full": 1.5, "baseline": 0.0},
         "repetitions": {"full": 0.5}}
SIZES = _Sizes(encoder=100, decoder=200, projection=50, bytes=1000)


def facts(encoder_decoder: bool, repetitions: float | None, method: str = "full", dtype: str = "float32") -> TimeFacts:
    return TimeFacts(method, dtype, 4, SIZES, encoder_decoder, beam=2, segments=[(3, 4, 5)], adapted_bytes=500,
                     repetitions=repetitions)


def test_an_encoder_decoder_run_by_hand() -> None:
    # a decoding step: 0.5 + max(200*4/1000, 2*200/100) = 4.5; 3 steps and the source's pass max(100*4/1000, 4*100/100)
    # = 4: translate 17.5. A forward pass: 1 + max(1000/1000, (4*100 + 5*200)/100) = 15; two repetitions of 1.5 forward
    # passes each and 2 passes over the 500 - 100 adapted bytes beyond the cache: 15 * 4 + 2 * 400 * 2 / 1000 = 61.6
    assert seconds(facts(True, 2.0), RATES) == pytest.approx((17.5, 61.6))


def test_a_causal_run_by_hand_with_a_trained_models_repetitions() -> None:
    # the prompt's pass reads the decoder without the projection (150): max(0.6, 4*150/100) = 6, translate 13.5 + 6;
    # a forward pass: 1 + max(1, ((4+5)*150 + 5*50)/100) = 17; the rates' 0.5 repetitions of full: 17 * 1.75 + 0.5 * 400
    # * 2 / 1000 = 30.15
    assert seconds(facts(False, None), RATES) == pytest.approx((19.5, 30.15))


def test_no_time_without_rates_for_the_method_or_the_dtype() -> None:
    assert seconds(facts(True, 0.0, method="lora"), RATES) is None
    assert seconds(facts(True, 0.0, dtype="bfloat16"), RATES) is None


def test_the_shipped_rates_cover_every_method_they_name_and_both_dtypes() -> None:
    from simpe.loop.dryrun import _speed_table
    from simpe.methods import METHODS

    table = _speed_table()
    assert set(table["forwards_per_repetition"]) <= set(METHODS.names())
    assert set(table["bandwidth"]) == set(table["macs"]) == {"float32", "bfloat16"}
    assert set(table["repetitions"]) <= set(table["forwards_per_repetition"])


def test_a_tied_embedding_is_read_once_per_reader() -> None:
    """The demo (Marian) model's embedding table is the encoder's and the decoder's input and the output projection:
    three readers, so a gradient of it is summed from three (the dry run counts two more tensors of its size)."""
    from simpe.config.files import load_config
    from simpe.loop.dryrun import _meta_model, _readers

    model, _ = _meta_model(load_config("baseline", ["model.path=null"]))
    assert sorted(_readers(model).values()) == [3]


def test_a_footprints_work_by_hand() -> None:
    """The work a method's parts declare (simpe.methods.base.Footprint), on the first test's run: a search of 2,000
    bytes and 300 multiply-adds at each step, max(2, 3) = 3 more a step: translate 3 * 7.5 + 4 = 26.5. The update:
    one more pair in every pass, 15 * 2 * (1 + 2 * 1.5) = 120; the step's 1.6; a penalty of 100 bytes passed over at
    each of the 2 steps, 0.2; 10 passes once (an update repetition's 1.5 forward passes each) over a run of 5 segments,
    10 * 15 * 1.5 / 5 = 45; and a storing pass, 15: 181.8."""
    import dataclasses

    work = dataclasses.replace(facts(True, 2.0), update_pairs=1, penalty_bytes=100, prepare_passes=10, run_segments=5,
                               segment_passes=1, search_bytes=2000.0, search_macs=300.0)
    assert seconds(work, RATES) == pytest.approx((26.5, 181.8))


def test_no_time_for_a_part_that_tunes_around_the_translation() -> None:
    """tune-retrieve's steps depend on what it retrieves: no rate says how many (``Footprint.tuned_values``)."""
    import dataclasses

    assert seconds(dataclasses.replace(facts(True, 2.0), tuned_values=1000), RATES) is None
