"""Shape-true models of real size (simpe.models.shapes): the published parameter counts, tokenizers of the published
vocabulary size, and a folder of random weights that the ordinary loader reads and the loop can update."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from simpe.errors import ConfigError
from simpe.models import shapes

# parameters counted on the meta device (tied tensors once); the published figures: NLLB-200-distilled-600M 615M,
# M2M100 418M (484M with its embeddings), mBART-50 611M, MADLAD-400 3B (2.94B), Llama 3.2 1B (1.24B)
COUNTS = {"nllb-600m": 615_073_792, "m2m100-418m": 483_905_536, "mbart50-mmt": 610_879_488,
          "madlad400-3b": 2_940_374_016, "llama3.2-1b": 1_235_814_400}


@pytest.mark.parametrize("name", list(COUNTS))
def test_each_shape_has_the_published_parameter_count(name: str) -> None:
    assert shapes.parameter_count(name) == COUNTS[name]


def test_an_unknown_shape_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown model shape 'gpt5'; known: nllb-600m, m2m100-418m"):
        shapes.shape("gpt5")


def test_a_filled_sentencepiece_model_has_the_published_size_and_encodes_as_the_base() -> None:
    import sentencepiece as spm

    base = shapes.base_spm(shapes_repo())
    filled = shapes.filled_spm(base, 256000)
    small, big = spm.SentencePieceProcessor(model_proto=base), spm.SentencePieceProcessor(model_proto=filled)
    assert big.get_piece_size() == 256000 and big.id_to_piece(255999) == f"<unused_{255999 - small.get_piece_size()}>"
    text = "Click Insert - Chart to open the Chart Wizard."
    assert big.encode(text) == small.encode(text)  # the UNUSED pieces are never produced


def shapes_repo() -> Path:
    return Path(__file__).resolve().parents[2]


def test_a_shape_folder_loads_with_random_weights_and_updates(tmp_path: Path) -> None:
    """Llama 3.2 1B's vocabulary (128,256) with one narrow layer: the folder holds no weights; the loader draws them
    (seeded: the same twice), the tokenizer gives ids below the vocabulary size, and a full update moves the model."""
    from simpe.config.files import defaults
    from simpe.loop.update import update
    from simpe.methods import METHODS
    from simpe.model import load_model, model_family

    small = dict(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1,
                 head_dim=32)
    folder = shapes.write("llama3.2-1b", tmp_path / "llama", **small)
    assert not list(folder.glob("*.safetensors")) and (folder / shapes.RANDOM_INIT_FILE).is_file()
    loaded = load_model(folder, "cpu", model_family(folder), dtype="bfloat16")
    again = load_model(folder, "cpu", model_family(folder), dtype="bfloat16")
    assert loaded.model.config.vocab_size == 128256 and shapes.vocabulary_size(loaded.tokenizer) == 128256
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    assert all(torch.equal(a, b) for a, b in zip(loaded.model.parameters(), again.model.parameters()))
    pair = loaded.family.encode_pair(loaded.tokenizer, "Click the button.", "Klicken Sie auf die Schaltfläche.", loaded.device)
    assert int(pair.input_ids.max()) < 128256
    method = METHODS.build("full")
    cfg = defaults("update", max_repeats=1)
    method.attach(loaded.model, folder, cfg)
    record = update(loaded.model, method, pair, cfg)
    assert record["repetitions"] == 1 and record["loss_after"] < record["loss_before"]


@pytest.mark.parametrize("name", list(COUNTS))
def test_each_shapes_tokenizer_gives_the_published_vocabulary_size(name: str, tmp_path: Path) -> None:
    """(About 11 s for the five.) What write() asserts before bench-size runs a shape: its tokenizer's ids fit the model's vocabulary (mBART-50's
    user-defined pieces once made transformers 5 add two ids beyond it)."""
    tok = shapes.tokenizer(name, tmp_path / "spm", shapes_repo())
    assert shapes.vocabulary_size(tok) <= shapes.config(name).vocab_size
