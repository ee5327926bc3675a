"""CometScorer through the real unbabel-comet code, offline, on a tiny randomly initialised COMET model.

The fixture builds, once per session: a SentencePiece model trained in the tmp dir, an
XLM-R fast tokenizer made from it (tokenizer.json written with the ``tokenizers`` library,
so no slow->fast conversion, which breaks with protobuf 4), a tiny ``XLMRobertaConfig``,
and a ``RegressionMetric`` on top, saved as ``<dir>/checkpoints/model.ckpt`` with
``<dir>/hparams.yaml`` (what ``comet.load_from_checkpoint`` expects).
"""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from simpe.errors import ConfigError, DataError, ModelError

SRC = ["Open the Format menu.", "Click OK.", "The function returns the sum of the cells.", "Help"]
HYP = ["Öffnen Sie das Menü Format.", "Klick OK.", "Die Funktion gibt die Summe der Zellen zurück.", "Hilfe"]
REF = ["Öffnen Sie das Menü Format.", "Klicken Sie auf OK.", "Die Funktion liefert die Summe der Zellen.", "Hilfe"]
TRAIN_TEXT = SRC + HYP + REF + [
    "Wählen Sie Einfügen - Kopf- und Fußzeilen.", "Select Insert - Headers and Footers.",
    "Weitere Erklärungen finden Sie oben auf dieser Seite.", "More explanations on top of this page.",
]


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run each test's forwards on one intra-op thread, then restore the setting.

    On a 2-core machine shared with a training job, torch's default 2 OpenMP threads spin-wait
    for each other: a tiny forward pass took ~100x longer (measured: 4 s vs 0.04 s for 4 triples).
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


_BUILT: dict[str, Path] = {}  # test_score_cli imports the fixture too: build once per session, not per module


@pytest.fixture(scope="session")
def tiny_comet(tmp_path_factory) -> Path:
    """Folder of a tiny, seeded COMET RegressionMetric (checkpoints/model.ckpt + hparams.yaml)."""
    if "folder" not in _BUILT:
        _BUILT["folder"] = build_tiny_comet(tmp_path_factory.mktemp("tiny_comet"))
    return _BUILT["folder"]


def build_tiny_comet(root: Path) -> Path:
    spm = pytest.importorskip("sentencepiece")
    import torch
    import yaml
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import XLMRobertaConfig, XLMRobertaTokenizerFast

    from simpe.metrics.comet import quiet_comet

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


@pytest.fixture(scope="session")
def scorer(tiny_comet):
    from simpe.metrics.comet import CometScorer

    return CometScorer(str(tiny_comet), batch_size=3)


def test_loaded_weights_are_the_saved_ones(tiny_comet, scorer):
    import torch

    saved = torch.load(tiny_comet / "checkpoints" / "model.ckpt", map_location="cpu", weights_only=False)["state_dict"]
    loaded = scorer.model.state_dict()
    assert set(saved) == set(loaded)
    assert all(torch.equal(saved[k], loaded[k]) for k in saved)


def test_scores_equal_comet_predict(tiny_comet, scorer):
    scores = scorer.score(SRC, HYP, REF)
    assert len(scores) == 4 and all(isinstance(s, float) for s in scores)
    samples = [{"src": s, "mt": h, "ref": r} for s, h, r in zip(SRC, HYP, REF)]
    from simpe.metrics.comet import quiet_comet

    with quiet_comet():
        expected = scorer.model.predict(samples, batch_size=2, gpus=0, progress_bar=False).scores
    assert scores == pytest.approx(expected, abs=1e-6)


def test_order_batch_size_and_file_forms_do_not_change_scores(tiny_comet, scorer):
    from simpe.metrics.comet import CometScorer

    scores = scorer.score(SRC, HYP, REF)
    one_by_one = [scorer.score([s], [h], [r])[0] for s, h, r in zip(SRC, HYP, REF)]
    assert one_by_one == pytest.approx(scores, abs=1e-6)
    reversed_scores = scorer.score(SRC[::-1], HYP[::-1], REF[::-1])
    assert reversed_scores[::-1] == pytest.approx(scores, abs=1e-6)
    by_ckpt = CometScorer(str(tiny_comet / "checkpoints" / "model.ckpt"), batch_size=16)
    assert by_ckpt.score(SRC, HYP, REF) == pytest.approx(scores, abs=1e-6)
    assert scorer.score([], [], []) == []


def test_scoring_is_quiet(scorer, capsys):
    root = logging.getLogger()
    handlers = list(root.handlers)
    scorer.score(SRC[:2], HYP[:2], REF[:2])
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert root.handlers == handlers


def test_bad_inputs(scorer):
    from simpe.metrics.comet import CometScorer

    with pytest.raises(DataError, match="as many"):
        scorer.score(SRC, HYP[:2], REF)
    with pytest.raises(ConfigError, match="device"):
        CometScorer("whatever", device="tpu")


def test_unreachable_hub_says_what_to_download(monkeypatch, tmp_path):
    import huggingface_hub.constants

    from simpe.metrics.comet import CometScorer

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never touch the network here
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(ModelError, match=r"simpe-tests/no-such-comet.*huggingface-cli download simpe-tests/no-such-comet"):
        CometScorer("simpe-tests/no-such-comet")
    with pytest.raises(ModelError, match="does not exist"):
        CometScorer(str(tmp_path / "missing" / "model.ckpt"))


def test_a_checkpoint_missing_weights_is_refused(tiny_comet, tmp_path):
    import shutil

    import torch

    from simpe.metrics.comet import CometScorer

    broken = tmp_path / "broken"
    shutil.copytree(tiny_comet, broken)
    ckpt = broken / "checkpoints" / "model.ckpt"
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    dropped = next(k for k in state["state_dict"] if k.startswith("estimator."))
    del state["state_dict"][dropped]
    torch.save(state, ckpt)
    with pytest.raises(ModelError, match="lacks 1 of the model's weights"):
        CometScorer(str(broken))
