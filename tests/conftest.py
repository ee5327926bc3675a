"""Shared fixtures: a seeded tiny Marian model (token ids only) and the shipped demo model."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
DEMO_MODEL = REPO / "models" / "demo-en-de"


def make_tiny_marian(seed: int = 0, vocab: int = 50, d_model: int = 16, layers: int = 1):
    """A seeded random MarianMTModel: pad = vocab-1 (decoder start), eos = 0, as in OPUS-MT."""
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(seed)
    cfg = MarianConfig(vocab_size=vocab, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                       max_position_embeddings=64, pad_token_id=vocab - 1, eos_token_id=0,
                       decoder_start_token_id=vocab - 1, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                       share_encoder_decoder_embeddings=True)
    model = MarianMTModel(cfg)
    model.eval()
    return model


@pytest.fixture
def tiny_marian():
    return make_tiny_marian


@pytest.fixture(scope="session")
def demo_model():
    """The committed demo model (loaded once per test session)."""
    from simpe.model import load_model

    return load_model(DEMO_MODEL, "cpu")


@pytest.fixture(scope="session")
def tiny_comet(tmp_path_factory) -> Path:
    """Folder of a tiny, seeded COMET RegressionMetric (checkpoints/model.ckpt + hparams.yaml), built once."""
    from tiny_comet import build_tiny_comet

    return build_tiny_comet(tmp_path_factory.mktemp("tiny_comet"))


@pytest.fixture
def one_torch_thread():
    """Run a test with one torch thread: tiny models lose ~10-100x to thread sync on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test when any model is loaded (what must be refused, or planned, before a model loads)."""
    import transformers

    def guard(*args, **kwargs):
        raise AssertionError("the model was loaded")

    for cls in (transformers.MarianMTModel, transformers.AutoModelForSeq2SeqLM, transformers.AutoModelForCausalLM):
        monkeypatch.setattr(cls, "from_pretrained", guard)


@pytest.fixture(scope="session")
def family_model(tmp_path_factory):
    """``family_model(kind)``: the folder of a tiny seeded checkpoint of family ``kind`` with its real tokenizer
    (mbart, m2m100, nllb, t5, llama, qwen2: ``tests/tiny_families.py``), built once per session."""
    from tiny_families import build

    root = tmp_path_factory.mktemp("families")
    return lambda kind: build(kind, root)


@pytest.fixture(autouse=True)
def _restore_root_logger():
    """Put the root logger's handlers and level back after each test: ``cli.main`` calls ``log.setup``, which binds a
    console handler to the ``sys.stderr`` of the moment (capsys's, closed after the test), and later tests would then
    print "--- Logging error --- ValueError: I/O operation on closed file"."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
