"""CometScorer through the real unbabel-comet code in its own environment, offline, on a tiny random COMET model.

The fixture builds, once per session, in COMET's environment (``.venv-comet``): a SentencePiece
model trained in the tmp dir, an XLM-R fast tokenizer made from it (tokenizer.json written with
the ``tokenizers`` library, so no slow->fast conversion, which breaks with protobuf 4), a tiny
``XLMRobertaConfig``, and a ``RegressionMetric`` on top, saved as ``<dir>/checkpoints/model.ckpt``
with ``<dir>/hparams.yaml`` (what ``comet.load_from_checkpoint`` expects). The scorer talks to
the COMET worker process (``simpe.metrics.comet_worker``), which runs the real comet code.
"""
from __future__ import annotations

import logging

import pytest
from messages import raises_naming
from tiny_comet import HYP, REF, SRC

from simpe.errors import ConfigError, DataError, ModelError

# every test of this module on one torch thread (conftest's one_torch_thread): on a 2-core machine shared with a
# training job, torch's default 2 OpenMP threads spin-wait for each other, and a tiny forward pass took ~100x longer
# (measured: 4 s vs 0.04 s for 4 triples)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def scorer(tiny_comet):
    from simpe.metrics.comet import CometScorer

    return CometScorer(str(tiny_comet), batch_size=3)


def test_loaded_weights_are_the_saved_ones(tiny_comet, scorer):
    import hashlib

    import torch

    saved = torch.load(tiny_comet / "checkpoints" / "model.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    loaded = scorer.weights_digest()
    assert set(saved) == set(loaded) and len(loaded) > 20
    assert all(hashlib.sha256(saved[k].contiguous().numpy().tobytes()).hexdigest() == loaded[k] for k in saved)


# COMET scores of the tiny checkpoint (tiny_comet.py, seed 0) as simpe computed them in its own process before COMET
# moved to its environment (commit 4e6b671, transformers 4.57.6, numpy 1.26.4, torch 2.13.0, unbabel-comet 2.2.7):
# the worker must give the same within 1e-6 (COMET's own noise across batch sizes is ~1e-8).
BEFORE_THE_MOVE = [-0.3315863013267517, -0.37191060185432434, -0.40384024381637573, -0.3704632520675659]
BEFORE_THE_MOVE_MATRIX_ROW0 = [-0.3315863013267517, -0.3490402102470398, -0.360088586807251, -0.2791236639022827]


def test_scores_equal_comet_predict(tiny_comet, scorer):
    scores = scorer.score(SRC, HYP, REF)
    assert len(scores) == 4 and all(isinstance(s, float) for s in scores)
    samples = [{"src": s, "mt": h, "ref": r} for s, h, r in zip(SRC, HYP, REF)]
    expected = scorer.predict(samples, batch_size=2)
    assert scores == pytest.approx(expected, abs=1e-6)
    assert scores == pytest.approx(BEFORE_THE_MOVE, abs=1e-6)


def test_encode_once_matrix_equals_scoring_each_triple(scorer):
    from simpe.metrics.utility import CometUtility

    matrix = CometUtility(scorer).matrix(HYP, REF, SRC[0])  # (hyps, refs)
    assert matrix.shape == (4, 4)
    assert matrix[0].tolist() == pytest.approx(BEFORE_THE_MOVE_MATRIX_ROW0, abs=1e-6)
    direct = scorer.score([SRC[0]] * 4, HYP, [REF[2]] * 4)
    assert matrix[:, 2].tolist() == pytest.approx(direct, abs=1e-6)


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
    from simpe.metrics.comet import CometScorer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never touch the network here (the worker starts with this environment)
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
