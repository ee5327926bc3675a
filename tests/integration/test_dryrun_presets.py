"""The dry run's estimate of every preset on the demo model, against what main computed before the methods owned their
footprints (tests/golden/dryrun_presets.json, recorded at a73a748): a single method's figures are unchanged, to the
byte and the second; a composition's are its method's plus what its parts add (``ADDED``, worked out here by hand from
the demo model's sizes, independently of ``Method.footprint``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.configfile import known_presets, load_config
from simpe.dryrun import estimate
from simpe.errors import SimpeError

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "dryrun_presets.json"
PINNED = json.loads(GOLDEN.read_text(encoding="utf-8"))["estimates"]
BYTES = ("parameters", "trainable", "weights", "gradients", "state", "activations", "datastore_per_1000", "loading")
SECONDS = ("translate_seconds", "update_seconds")

# What a composition adds to the pinned figures of main, which counted its method alone (bytes; seconds). Filled in
# as the parts' footprints are counted.
ADDED: dict[str, dict[str, float]] = {}


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
    for name, value in ADDED.get(key, {}).items():
        pinned[name] = pinned[name] + value
    for name in BYTES + ("running_without_runtime",):
        assert got[name] == pinned[name], (key, name, got[name], pinned[name])
    for name in SECONDS:
        if pinned[name] is None:  # no measured rates for the method
            assert got[name] is None, (key, name)
        else:
            assert got[name] == pytest.approx(pinned[name], rel=1e-9), (key, name)
