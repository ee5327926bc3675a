"""simpe train-demo-model: an interrupted training resumed with --resume is the uninterrupted one, step for step."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from messages import raises_naming

from simpe.config.files import defaults
from simpe.demo.card import reproduce_command, write_model_card
from simpe.demo.train import train
from simpe.errors import ConfigError

WORDS = [("file", "Datei"), ("open", "öffnen"), ("the", "die"), ("cell", "Zelle"), ("sheet", "Tabelle"),
         ("select", "wählen"), ("column", "Spalte"), ("row", "Zeile"), ("insert", "einfügen"), ("delete", "löschen")]


def _corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    pairs = [(f"{a[0]} {b[0]} {c}", f"{a[1]} {b[1]} {c}") for c in range(6) for a in WORDS for b in WORDS[::3]]
    splits = {"train": pairs[:200], "dev": pairs[200:220], "stream": pairs[220:240]}
    for name, rows in splits.items():
        (folder / f"{name}.en").write_text("".join(s + "\n" for s, _ in rows), encoding="utf-8")
        (folder / f"{name}.de").write_text("".join(t + "\n" for _, t in rows), encoding="utf-8")


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "checkpoints" / "last.pt", weights_only=False)["model"]


def test_resume_continues_exactly_and_refuses_other_settings(tmp_path: Path):
    _corpus(tmp_path / "data")
    cfg = defaults("train", data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / "whole"), vocab_size=40, d_model=16,
                      encoder_layers=2, decoder_layers=1, heads=2, ffn_dim=32, batch_tokens=200, eval_every=5,
                      eval_segments=10, patience=100, max_minutes=0.0, max_steps=20, decay_steps=0, warmup_steps=5, average=3,
                   threads=1)
    whole = train(cfg)
    assert [h["step"] for h in whole["history"]] == [5, 10, 15, 20]
    parted = replace(cfg, out_dir=str(tmp_path / "parted"), max_steps=10)
    first = train(parted)
    assert [h["step"] for h in first["history"]] == [5, 10]
    second = train(replace(parted, max_steps=20), resume=True)
    assert [h["step"] for h in second["history"]] == [5, 10, 15, 20]
    assert [h["dev_greedy_bleu"] for h in second["history"]] == [h["dev_greedy_bleu"] for h in whole["history"]]
    a, b = _weights(tmp_path / "whole"), _weights(tmp_path / "parted")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the mean of the last 3 evaluation checkpoints was tried, and is kept only when its dev BLEU is higher
    assert "mean of the last 3" in whole["weights"]["average"]["weights"]
    assert (whole["weights"]["weights"].startswith("mean")
            == (whole["weights"]["average"]["dev_greedy_bleu"] > whole["best_dev_greedy_bleu"]))
    assert sorted(p.name for p in (tmp_path / "whole" / "checkpoints").glob("step-*.pt")) == \
        ["step-10.pt", "step-15.pt", "step-20.pt"]
    # settings that change the model are refused on --resume, naming each one
    with pytest.raises(ConfigError, match=r"d_model=16, now 32.*resumable changes are max_minutes"):
        train(replace(parted, d_model=32, max_steps=30), resume=True)
    # the card's command is the one command that trains it again (the output folder and machine aside)
    assert whole["command"] == (
        f"python -m simpe train-demo-model --data-dir {tmp_path / 'data'} --vocab-size 40 --d-model 16 --encoder-layers 2 "
        "--decoder-layers 1 --heads 2 --ffn-dim 32 --batch-tokens 200 --warmup-steps 5 --max-steps 20 --decay-steps 0 "
        "--eval-every 5 --eval-segments 10 --average 3")
    # the card renders hand-written notes of this model (a trained model has none)
    assert "## Notes" not in (tmp_path / "whole" / "README.md").read_text()
    write_model_card(tmp_path / "whole", {**whole, "notes": ["Goal not reached.", "What would reach it."]})
    assert "## Notes\n\n- Goal not reached.\n- What would reach it.\n" in (tmp_path / "whole" / "README.md").read_text()
    # a time budget becomes the steps it gave: the same weights on any machine
    assert reproduce_command(replace(defaults("train"), max_minutes=5.0), steps=700) == \
        "python -m simpe train-demo-model --max-steps 700 --decay-steps 0"  # the decay (from step 8500) had not begun
    assert reproduce_command(defaults("train"), steps=11000) == "python -m simpe train-demo-model"
    assert reproduce_command(defaults("train")) == "python -m simpe train-demo-model"  # the defaults: the shipped model's settings


def test_decay_steps_schedule_and_when_it_may_change_on_resume():
    from simpe.demo.train import check_config, check_resumable, learning_rate

    plain = defaults("train", lr=1e-3, warmup_steps=100, max_steps=1000, decay_steps=0)
    decayed = replace(plain, decay_steps=200)
    # warmup, then lr * sqrt(warmup / (step + 1)) until step 800, then linearly to 0 at step 1000
    assert learning_rate(plain, 99) == pytest.approx(1e-3)
    assert learning_rate(plain, 399) == pytest.approx(5e-4)
    assert learning_rate(decayed, 799) == learning_rate(plain, 799)
    start = 1e-3 * (100 / 801) ** 0.5
    assert learning_rate(decayed, 800) == pytest.approx(start)
    assert learning_rate(decayed, 900) == pytest.approx(start / 2)
    assert learning_rate(decayed, 999) == pytest.approx(start / 200)
    with pytest.raises(ConfigError, match="decay_steps=5: must be 0 or between 1 and max_steps \\(0\\)"):
        check_config(defaults("train", max_steps=0, decay_steps=5))
    # a decay may be added, moved or lengthened while the steps taken so far had the same rates ...
    saved = {**vars(plain), "decay_steps": 0}
    check_resumable(saved, decayed, step=800)
    check_resumable({k: v for k, v in saved.items() if k != "decay_steps"}, decayed, step=500)  # an older checkpoint
    # ... but not once the steps taken would have had other rates
    with raises_naming(ConfigError, "step 801", "decay", "step 800"):
        check_resumable(saved, decayed, step=801)
    with pytest.raises(ConfigError, match="past the start"):
        check_resumable({**vars(decayed)}, replace(decayed, max_steps=1500), step=900)
