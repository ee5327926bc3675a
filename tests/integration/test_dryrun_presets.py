"""The dry run's estimate of every preset on the demo model, against what main computed before the methods owned their
footprints (tests/golden/dryrun_presets.json, recorded at a73a748): a single method's figures are unchanged, to the
byte and the second, but for knn's time; a composition's are its method's plus what its parts add (``_added``, worked
out here by hand from the demo model's sizes, independently of ``Method.footprint``).

Two single methods change, on purpose, where main counted nothing of what they do (and counting it for a composition
but not for the method alone would have been a branch on its name): knn's time (main counted no search and no pass that
stores each post-edit: a knn run cost what baseline did; its memory is main's, to the byte), and tune-retrieve's memory
(main counted none of its tuning: 518 MiB estimated where a 200-segment run measured 706; now 642)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.config.files import known_presets, load_config
from simpe.errors import SimpeError
from simpe.loop.dryrun import estimate

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "dryrun_presets.json"
PINNED = json.loads(GOLDEN.read_text(encoding="utf-8"))["estimates"]
BYTES = ("parameters", "trainable", "weights", "gradients", "state", "activations", "datastore_per_1000", "loading")
SECONDS = ("translate_seconds", "update_seconds")

RATES = json.loads((Path(__file__).resolve().parents[2] / "simpe" / "scale_table.json").read_text(encoding="utf-8"))
ENTRIES = 21  # datastore entries a segment adds (simpe.loop.dryrun.ENTRIES_PER_SEGMENT)
WEIGHT = {"float32": 4, "bfloat16": 2}


def _knn_time(key_bytes: int, dtype: str, steps: float, forward: float) -> dict[str, float]:
    """knn's search at each decoding step and its storing pass, by hand (simpe/methods/datastore.py's docstring): a
    run of 1,000 segments of 21 entries each, beam 5; the search exact up to 16,384 entries (every key read once, its
    float32 norm with it; 5 x entries x 256 multiply-adds), an inverted file beyond (entries // 256 centroids, and 8
    lists of 256 entries for each of the 5 rows: at most 5 x 2,048 keys read, 2,048 compared per row)."""
    read = compared = 0
    for segment in range(1000):
        entries = 21 * segment
        if entries <= 16384:
            read, compared = read + entries, compared + entries
        else:
            read, compared = read + entries // 256 + min(entries, 5 * 2048), compared + entries // 256 + 2048
    search = max(read / 1000 * (256 * key_bytes + 4) / RATES["bandwidth"][dtype],  # the keys read at the run's rate
                 compared / 1000 * 256 * 5 / RATES["macs"]["float32"])  # distances in float32 whatever the model's
    return {"translate_seconds": steps * search, "update_seconds": forward}


def _tuning(preset: str, dtype: str) -> dict[str, float | None]:
    """tune-retrieve's tuning, by hand: every base value (full's trainable set) tuned around each translation; held
    through the run, the copy to return to (at the weights' dtype), the tuning's spare of each at the step's width and
    its float32 master (below float32); around the translation, beside the beam's scores (main's baseline
    activations), the gradients (float32 too below float32) and a forward and backward pass over one pair (full's
    activations). No time: its steps depend on what it retrieves."""
    b, tuned = WEIGHT[dtype], PINNED[f"full {dtype}"]["trainable"]
    masters = b < 4
    state = tuned * b + tuned * (4 if masters else b) + (tuned * 4 if masters else 0)
    around = PINNED[f"baseline {dtype}"]["activations"] + tuned * b + (tuned * 4 if masters else 0) \
        + PINNED[f"full {dtype}"]["activations"]
    activations = around - PINNED[f"{preset} {dtype}"]["activations"]  # the larger of the update's and this
    return {"state": state, "activations": activations, "running_without_runtime": state + activations,
            "translate_seconds": None, "update_seconds": None}


def _steps(preset: str, dtype: str) -> float:
    """Decoding steps per segment of the run (the dry run's lengths of its segments)."""
    facts = estimate(load_config(preset, [f"model.dtype={dtype}"]), "cpu").time_facts
    return sum(steps for steps, _, _ in facts.segments) / len(facts.segments)


def _added(preset: str, dtype: str) -> dict[str, float | None]:
    """What a composition adds to main's figures, which counted its method alone: by hand from the demo model's sizes
    (its hidden size 256; the trainable values pinned), the rates of simpe/scale_table.json and each part's docstring.
    The time of a teacher-forced pass over a stream segment is the baseline's update (it has no step)."""
    forward = PINNED[f"baseline {dtype}"]["update_seconds"]
    if preset in ("tune-retrieve", "full+tune-retrieve"):
        return _tuning(preset, dtype)
    if preset in ("knn", "knn-vanilla", "knn-fp16"):
        return _knn_time(2 if preset == "knn-fp16" else 4, dtype, _steps(preset, dtype), forward)
    if "+" not in preset:
        return {}
    b, rates = WEIGHT[dtype], RATES
    method = preset.split("+")[0]
    trainable = PINNED[f"{method} {dtype}"]["trainable"]
    repetitions, per_repetition = rates["repetitions"][method], rates["forwards_per_repetition"][method]
    bandwidth = rates["bandwidth"][dtype]
    if preset == "full+knn":  # the datastore: per entry a float32 key of 256 values, its float32 norm, its int64 value
        grown = 1000 * ENTRIES * (256 * 4 + 4 + 8)  # per 1,000 segments; a run of unbounded length counts 1,000
        return {"datastore_per_1000": grown, "running_without_runtime": grown, **_knn_time(4, dtype, _steps(preset, dtype), forward)}
    if preset == "full+replay":  # k = 2 more pairs in every forward and backward pass of the update
        return {"update_seconds": 2 * forward * (1 + repetitions * per_repetition)}
    if preset in ("full+prefer", "lora+prefer"):  # the MT output: one more pair in every forward and backward pass (its
        # reference log-probabilities are the first repetition's own passes: none more without dropout)
        return {"update_seconds": forward * (1 + repetitions * per_repetition)}
    if preset in ("full+ewc", "lasso+ewc"):  # the Fisher (float32) and θ₀ (at the weights' dtype); during the
        # update θ - θ₀ and the penalty's gradient, float32; the penalty's 56 bytes a value (and two casts to float32
        # below it) at every step, value and gradient; the Fisher's 200 passes once in 1,000 segments
        state, during = trainable * (4 + b), trainable * 4 * 2
        penalty = trainable * (56 + (0 if b == 4 else 2 * (b + 4))) * repetitions / bandwidth
        fisher = 200 * forward * per_repetition / 1000
        return {"state": state, "activations": during, "running_without_runtime": state + during,
                "update_seconds": penalty + fisher}
    return {}


def _figures(preset: str, dtype: str) -> dict[str, object]:
    try:
        est = estimate(load_config(preset, [f"model.dtype={dtype}"]), "cpu")
    except SimpeError as err:
        return {"error": str(err)}
    figures: dict[str, object] = {key: getattr(est, key) for key in BYTES + SECONDS}
    figures["running_without_runtime"] = est.running - est.runtime
    return figures


def test_every_preset_is_pinned() -> None:
    assert sorted(PINNED) == sorted(f"{p} {d}" for d in ("float32", "bfloat16") for p in known_presets())


@pytest.mark.parametrize("key", sorted(PINNED))
def test_the_estimate_is_mains_plus_what_a_compositions_parts_add(key: str) -> None:
    preset, dtype = key.split()
    got, pinned = _figures(preset, dtype), dict(PINNED[key])
    if "error" in pinned:
        assert got == pinned
        return
    for name, value in _added(preset, dtype).items():
        pinned[name] = None if value is None or pinned[name] is None else pinned[name] + value
    for name in BYTES + ("running_without_runtime",):
        assert got[name] == pinned[name], (key, name, got[name], pinned[name])
    for name in SECONDS:
        if pinned[name] is None:  # no measured rates for the method
            assert got[name] is None, (key, name)
        else:
            assert got[name] == pytest.approx(pinned[name], rel=1e-9), (key, name)
