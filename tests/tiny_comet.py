"""A tiny, seeded COMET model built offline (the ``tiny_comet`` fixture of conftest.py).

A local folder with a tiny ``XLMRobertaConfig`` and an XLM-R tokenizer saved from a small
SentencePiece model, and a ``RegressionMetric`` built on it with random weights, saved as
``checkpoints/model.ckpt`` plus ``hparams.yaml``: the real ``comet.load_from_checkpoint``
and ``predict`` run on it. unbabel-comet lives in COMET's own environment (``.venv-comet``), so
``build_tiny_comet`` runs this file there (``python tests/tiny_comet.py ROOT``), where it imports
nothing of simpe's but the worker's ``quiet_comet``.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = ["Open the Format menu.", "Click OK.", "The function returns the sum of the cells.", "Help"]
HYP = ["Öffnen Sie das Menü Format.", "Klick OK.", "Die Funktion gibt die Summe der Zellen zurück.", "Hilfe"]
REF = ["Öffnen Sie das Menü Format.", "Klicken Sie auf OK.", "Die Funktion liefert die Summe der Zellen.", "Hilfe"]
TRAIN_TEXT = SRC + HYP + REF + [
    "Wählen Sie Einfügen - Kopf- und Fußzeilen.", "Select Insert - Headers and Footers.",
    "Weitere Erklärungen finden Sie oben auf dieser Seite.", "More explanations on top of this page.",
]


def build_tiny_comet(root: Path) -> Path:
    """Build the model under ``root`` in COMET's environment; return the folder holding checkpoints/model.ckpt and hparams.yaml."""
    from simpe.metrics.comet_env import comet_python

    done = subprocess.run([str(comet_python()), __file__, str(root)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building the tiny COMET model failed: {done.stderr.strip()[-2000:]}")
    return root / "model"


def _build_here(root: Path) -> Path:
    """The build itself, in a Python that has unbabel-comet."""
    import sentencepiece as spm
    import torch
    import yaml
    quiet_comet = _worker_module().quiet_comet
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import XLMRobertaConfig, XLMRobertaTokenizerFast

    spm.SentencePieceTrainer.train(sentence_iterator=iter(TRAIN_TEXT * 5), model_prefix=str(root / "spm"),
                                   vocab_size=80, hard_vocab_limit=False, model_type="unigram", character_coverage=1.0,
                                   normalization_rule_name="identity", minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    # XLM-R's vocabulary layout (transformers' XLMRobertaConverter): <s> <pad> </s> <unk>, the spm pieces
    # after its own <unk> <s> </s>, then <mask>.
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(sp.id_to_piece(i), sp.get_score(i)) for i in range(3, sp.get_piece_size())] + [("<mask>", 0.0)]
    backend = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    backend.normalizer = normalizers.Sequence([normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
                                               normalizers.Replace(Regex(" {2,}"), " ")])
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tokenizer = XLMRobertaTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                        cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    encoder = root / "encoder"
    tokenizer.save_pretrained(str(encoder))
    XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=514, pad_token_id=1, bos_token_id=0,
                     eos_token_id=2).save_pretrained(str(encoder))

    with quiet_comet():
        import pytorch_lightning
        from comet.models import RegressionMetric

        torch.manual_seed(0)
        model = RegressionMetric(pretrained_model=str(encoder), load_pretrained_weights=False, hidden_sizes=[16],
                                 layer="mix", pool="avg", layer_transformation="softmax")
    folder = root / "model"
    (folder / "checkpoints").mkdir(parents=True)
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                "pytorch-lightning_version": pytorch_lightning.__version__}, folder / "checkpoints" / "model.ckpt")
    (folder / "hparams.yaml").write_text(yaml.safe_dump(dict(model.hparams)), encoding="utf-8")
    return folder


def _worker_module():
    """simpe/metrics/comet_worker.py read as a module of its own (not through simpe, whose packages are not here;
    not by putting its folder on sys.path, where simpe's comet.py would shadow unbabel-comet's comet)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("comet_worker", Path(__file__).resolve().parent.parent / "simpe" / "metrics" / "comet_worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    print(_build_here(Path(sys.argv[1])))
