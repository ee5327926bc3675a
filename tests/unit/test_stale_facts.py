"""Figures the README, the presets and the docs state about the code, computed from the code: a change that makes
one of them stale fails here (the method table, LoRA's and lasso's value counts on the demo model, the demo
model's parameter count, the stopword lists named)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.methods import METHODS

REPO = Path(__file__).resolve().parents[2]


def _text(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _write_docs():
    spec = importlib.util.spec_from_file_location("write_docs", REPO / "scripts" / "write_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_method_tables_are_the_registrys():
    """README's and docs/methods.md's methods tables are what scripts/write_docs.py writes from the registry (make test
    writes them first): one row per registered method, none typed by hand."""
    module = _write_docs()
    for page in ("README.md", "docs/methods.md"):
        text, written = module.rendered(page)
        assert text == written, f"{page}'s methods table is stale: run make write-docs"
        listed = re.findall(r"^\| `([a-z-]+)` \|", text.split(module.METHODS_BEGIN)[1].split(module.METHODS_END)[0], re.M)
        assert listed == METHODS.names(), (page, listed)


@pytest.fixture(scope="module")
def demo():
    from simpe.model import load_model

    return load_model(None, "cpu")


def _attached(name: str):
    from simpe.model import load_model

    cfg = load_config(name, [])
    method = METHODS.build(name, **cfg.method.params)
    method.attach(load_model(None, "cpu").model, None, cfg.update)  # a fresh model each: lora injects layers
    return method


def test_lora_and_lasso_value_counts_as_the_preset_and_docs_give_them(demo, one_torch_thread):
    lora = _attached("lora").adapted_parameters()
    facts = _attached("lasso").describe()
    lasso = facts["budget_nonembedding"] + facts["budget_embedding"] + demo.model.config.vocab_size
    for page in ("adapters/lora.yaml", "docs/methods.md"):
        text = _text(page)
        assert f"{lora:,}" in text and f"{lasso:,}" in text, (page, lora, lasso)


def test_the_demo_model_card_gives_its_parameter_count(demo):
    unique = sum(p.numel() for p in {id(p): p for p in demo.model.parameters()}.values())  # tied embeddings once
    assert f"parameters: {unique:,}" in _text("models/demo-en-de/README.md"), unique


def test_the_stopword_lists_the_docs_name_exist():
    for language in re.findall(r"stopwords/([a-z]{2})\.txt", _text("docs/metrics.md") + _text("README.md")):
        assert (REPO / "stopwords" / f"{language}.txt").is_file(), language
