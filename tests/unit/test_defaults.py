"""One owner per default: where a registered variant's constructor repeats a setting ``defaults.yaml`` states
(the decoders' length limit and beam size), they agree, and a parameter name means one default across a
family. (The constructors keep their defaults, so a test or a script builds ``DECODERS.build("beam")``; this
test is what keeps those copies from drifting from the file every command reads.)"""
from __future__ import annotations

import inspect

import pytest

from simpe.config.files import read_yaml
from simpe.decoders import DECODERS
from simpe.methods import METHODS
from simpe.paths import DEFAULTS_FILE
from simpe.registry import Registry

DEFAULTS = read_yaml(DEFAULTS_FILE)


def signature_defaults(registry: Registry, name: str) -> dict[str, object]:
    params = inspect.signature(registry.get(name).__init__).parameters
    return {key: p.default for key, p in params.items() if key != "self" and p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("name", DECODERS.names())
def test_every_decoder_limits_length_as_defaults_yaml_says(name: str):
    """The length limit min(cap, a * source length + b): the ranking section's values, in every decoder."""
    found = signature_defaults(DECODERS, name)
    for key in ("max_len_a", "max_len_b", "max_len_cap"):
        assert found[key] == DEFAULTS["ranking"][key], (name, key)
    if found.get("beam_size") is not None:  # (the exact searches' beam_size None: no beam bound, another setting)
        assert found["beam_size"] == DEFAULTS["decoder"]["params"]["beam_size"] == DEFAULTS["ranking"]["beam_size"], name


# Names that mean different settings in different variants, each with its reason.
DIFFERENT = {
    "samples": "mbr's candidates per sentence (100) are not sampling's draws (200, the ranking's Monte Carlo samples)",
    "beam_size": "topk's optional beam bound (None: exact) is not beam's width (5)",
}


@pytest.mark.parametrize("registry", [DECODERS, METHODS], ids=["decoders", "methods"])
def test_a_parameter_name_has_one_default_across_a_family(registry: Registry):
    seen: dict[str, tuple[str, object]] = {}
    for name in registry.names():
        for key, value in signature_defaults(registry, name).items():
            if key in DIFFERENT:
                continue
            first = seen.setdefault(key, (name, value))
            assert first[1] == value, f"{key}: {first[0]} says {first[1]!r}, {name} says {value!r}"


def test_the_exact_search_defaults_are_the_ranking_sections():
    for name in ("topk", "topk_dfs"):
        found = signature_defaults(DECODERS, name)
        assert found["k"] == DEFAULTS["ranking"]["k"] and found["bound_slack"] == 1e-4, name
    assert signature_defaults(DECODERS, "topk")["batch_size"] == DEFAULTS["ranking"]["batch_size"]
    assert signature_defaults(DECODERS, "sampling")["samples"] == DEFAULTS["ranking"]["samples"]


def test_defaults_yaml_builds_its_decoder_and_method():
    assert DEFAULTS["decoder"]["name"] in DECODERS.names() and DEFAULTS["method"]["name"] in METHODS.names()
    DECODERS.build(DEFAULTS["decoder"]["name"], **DEFAULTS["decoder"]["params"])
    METHODS.build(DEFAULTS["method"]["name"], **DEFAULTS["method"]["params"])


def test_the_train_section_trains_the_shipped_demo_model_again():
    """``simpe train-demo-model`` with no flag has the settings the shipped model's card records (where it ran aside)."""
    import dataclasses
    import json

    from simpe.config.files import defaults
    from simpe.paths import DEFAULT_MODEL

    card = json.loads((DEFAULT_MODEL / "model_card.json").read_text(encoding="utf-8"))
    where = ("out_dir", "device", "threads")
    ours = {k: v for k, v in dataclasses.asdict(defaults("train")).items() if k not in where}
    assert ours == {k: v for k, v in card["config"].items() if k not in where}
    assert ours["max_steps"] == 11000 and ours["decay_steps"] == 2500 and ours["max_minutes"] == 0.0
