"""CometScorer through the real unbabel-comet code, offline, on a tiny randomly initialised COMET model.

The fixture builds, once per session: a SentencePiece model trained in the tmp dir, an
XLM-R fast tokenizer made from it (tokenizer.json written with the ``tokenizers`` library,
so no slow->fast conversion, which breaks with protobuf 4), a tiny ``XLMRobertaConfig``,
and a ``RegressionMetric`` on top, saved as ``<dir>/checkpoints/model.ckpt`` with
``<dir>/hparams.yaml`` (what ``comet.load_from_checkpoint`` expects).
"""
from __future__ import annotations

import logging

import pytest
from messages import raises_naming
from tiny_comet import HYP, REF, SRC

from simpe.errors import ConfigError, DataError, ModelError


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
    with raises_naming(ModelError, "simpe-tests/no-such-comet", "huggingface-cli download simpe-tests/no-such-comet"):
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
