"""``lora`` (simpe/methods/lora.py): what it adapts and stores, its state round trip, its parameter checks."""
from __future__ import annotations

import pytest
import torch
from messages import raises_naming
from method_pairs import HOT, PAIR, logits, snapshot

from simpe.errors import ConfigError
from simpe.loop.update import update
from simpe.methods import METHODS


def test_lora_changes_only_its_adapter_weights(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    base_logits = logits(model)
    base = snapshot(model)
    method = METHODS.build("lora", rank=2, alpha=4.0)
    method.attach(model, None, HOT)
    assert torch.equal(logits(model), base_logits)  # B starts at zero: the adapted model starts as the base model
    names = set(method.trainable())
    # tiny model: d_model 16, ffn 32, one encoder and one decoder layer; rank 2 on every target:
    # 12 attention projections (encoder self, decoder self + cross) x 2 (16 + 16), fc1 and fc2 of 2 layers x 2 (16 + 32)
    assert len(names) == 2 * 16 and method.adapted_parameters() == 12 * 2 * 32 + 4 * 2 * 48 == 1152
    assert method.store_bytes() == 4 * 1152
    record = update(model, method, PAIR, HOT)
    assert record["repetitions"] == 3 and record["loss_after"] < record["loss_before"]
    now = {n.replace(".base_layer.", "."): p.detach() for n, p in model.named_parameters()}  # peft moves W to <layer>.base_layer
    assert set(now) == set(base) | names
    moved = {n for n, p in now.items() if n not in base or not torch.equal(base[n], p)}
    assert moved and moved <= names  # only lora_A / lora_B tensors moved ...
    assert any(".lora_B." in n for n in moved)
    assert all(torch.equal(base[n], now[n]) for n in base)  # ... every base weight is bit-identical
    with torch.no_grad():  # and the adapters are all the change: zeroing B restores the base model's output exactly
        for name, p in method.trainable().items():
            if ".lora_B." in name:
                p.zero_()
    assert torch.equal(logits(model), base_logits)


def test_lora_state_dict_round_trips(tiny_marian, one_torch_thread):
    model = tiny_marian(seed=3)
    method = METHODS.build("lora", rank=2)
    method.attach(model, None, HOT)
    update(model, method, PAIR, HOT)
    method.after_segment(PAIR)
    state, adapted = method.state_dict(), logits(model)
    fresh_model = tiny_marian(seed=3)
    fresh = METHODS.build("lora", rank=2)
    fresh.attach(fresh_model, None, HOT)
    fresh.load_state_dict(state)
    assert torch.equal(logits(fresh_model), adapted)


def test_lora_parameters_are_checked():
    """The targets come from the model's family: checked against it (before the model loads, in the loop)."""
    from simpe.models import FAMILIES

    marian = FAMILIES.build("marian")
    with raises_naming(ConfigError, "q_proj, k_proj, v_proj, out_proj, fc1, fc2", "marian", "['q_proj', 'lm_head']"):
        METHODS.build("lora", targets=["q_proj", "lm_head"]).check_family(marian)
    with pytest.raises(ConfigError, match="lora rank must be an integer >= 1, got 0"):
        METHODS.build("lora", rank=0)
    with pytest.raises(ConfigError, match="lora targets must be null"):
        METHODS.build("lora", targets=[])
    method = METHODS.build("lora", targets=["fc2", "q_proj"])
    method.check_family(marian)
    assert method.targets == ["q_proj", "fc2"]
    default = METHODS.build("lora")
    default.check_family(FAMILIES.build("t5"))
    assert default.targets == list(FAMILIES.get("t5").lora_targets)
