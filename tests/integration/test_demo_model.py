"""The committed demo model loads like any Marian checkpoint and translates (golden outputs)."""
from __future__ import annotations

import json

import pytest
import torch

from simpe.decoders import DECODERS
from tests.conftest import DEMO_MODEL

# beam 5 outputs of the committed checkpoint, recorded when it was trained (update on purpose
# when the model is retrained); the loop's beam and HF generate agree on them
GOLDEN = [
    ("Choose Format - Cells.", "Wählen Sie Format – Zellen..."),
    ("Inserts a new sheet.", "Fügt eine neue Tabelle ein."),
    ("Deletes the selected cells.", "Löscht die ausgewählten Zellen."),
]


def test_demo_model_is_a_complete_marian_checkpoint(demo_model):
    assert demo_model.name == "demo-en-de" and str(demo_model.device) == "cpu"
    assert sum(p.numel() for p in demo_model.model.parameters()) == 10_209_024
    assert len(demo_model.tokenizer) == 8000 and demo_model.tokenizer.pad_token_id == 7999
    card = json.loads((DEMO_MODEL / "model_card.json").read_text())
    assert card["parameters"] == 10_209_024 and "stream_first_1000" in card["scores_beam5"]
    assert (DEMO_MODEL / "truecase.de.model").exists() and (DEMO_MODEL / "fixed-selection.json").exists()


@pytest.mark.parametrize("source, expected", GOLDEN)
def test_demo_model_translates_golden_sentences(demo_model, source, expected):
    tok, model = demo_model.tokenizer, demo_model.model
    ids = tok(source, return_tensors="pt")["input_ids"]  # (1, src_len)
    with torch.inference_mode():
        result = DECODERS.build("beam", beam_size=5).decode(model, ids)
        # the loop's beam ranks by raw log-probability: generate's length_penalty 0 (its default 1.0 divides by length)
        generated = model.generate(ids, num_beams=5, max_new_tokens=64, length_penalty=0.0, early_stopping=False)  # (1, tgt_len)
    best = result.hypotheses[0]
    assert tok.decode(list(best.tokens), skip_special_tokens=True) == expected
    assert tok.decode(generated[0], skip_special_tokens=True) == expected
    # the decoder's score is the teacher-forced log-probability of its output
    labels = torch.tensor([list(best.tokens)])  # (1, tgt_len)
    with torch.inference_mode():
        logits = model(input_ids=ids, labels=labels).logits  # (1, tgt_len, vocab)
    logp = torch.log_softmax(logits, -1).gather(-1, labels.unsqueeze(-1)).sum().item()
    assert best.score == pytest.approx(logp, abs=1e-4)
