"""The command line: one-line errors with exit code 2, nothing written on bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.methods import METHODS

REPO = Path(__file__).resolve().parents[2]


def simpe(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simpe", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


# Each case spawns a process (about 3.5 s): make test keeps two (a registry name, a missing corpus) for the whole
# path from argv to exit 2; the rest are make test-slow's, since tests/integration/test_bad_input.py checks the same
# messages in process (cases lr-word, key-typo, optimizer, segments-zero, method-param-typo, data-param-typo, quality...)
SUBPROCESS_TWIN = pytest.mark.slow
# the presets are the adapters/ folder's files, whatever they are (a new preset is its file: no list to edit here)
PRESETS = ", ".join(sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "adapters").glob("*.yaml")
                           if p.name != "defaults.yaml"))


@pytest.mark.parametrize("args, message", [
    (["simulate", "--preset", "sparse"], f"simpe: error: no preset 'sparse' in adapters/; known: {PRESETS} (or a path to a .yaml file)"),
    pytest.param(["simulate", "--dataset", "wmt"], "simpe: error: unknown dataset 'wmt'; known: autodesk, hf, libreoffice, text, tmx, tsv", marks=SUBPROCESS_TWIN),  # noqa: E501
    pytest.param(["simulate", "--set", "update.optimiser=adam"], "simpe: error: unknown key update.optimiser; known: optimizer, lr, clip_norm, max_repeats, ppl_threshold, dropout, label_smoothing, master_copies, checkpointing", marks=SUBPROCESS_TWIN),  # noqa: E501
    pytest.param(["simulate", "--set", "update.optimizer=adam"], "simpe: error: unknown update.optimizer 'adam'; known: sgd", marks=SUBPROCESS_TWIN),
    pytest.param(["simulate", "--segments", "0"], "simpe: error: data.segments must be >= 1 or null, got 0", marks=SUBPROCESS_TWIN),
    (["simulate", "--dataset", "autodesk"], "simpe: error: the Autodesk corpus is not at"),
    pytest.param(["simulate", "--preset", "lasso", "--set", "method.params.budgt=0.1"],
     "simpe: error: unknown parameter 'budgt' of method 'lasso'; known: penalty, budget_nonembedding, budget_embedding", marks=SUBPROCESS_TWIN),
    pytest.param(["simulate", "--set", "data.params.sourse=a.en"], "simpe: error: unknown parameter 'sourse' of dataset 'libreoffice'; known: path", marks=SUBPROCESS_TWIN),  # noqa: E501
    pytest.param(["simulate", "--set", "update.lr=fast"], "simpe: error: update.lr must be a finite number, got 'fast'", marks=SUBPROCESS_TWIN),
    pytest.param(["simulate", "--set", "decoder.name=mbr", "--set", "decoder.params={utility: comet}"],
     "simpe: error: utility/quality 'comet' needs a COMET model", marks=SUBPROCESS_TWIN),
    pytest.param(["simulate", "--snapshot-every", "5", "--set", "ranking.quality=bleurt"], "simpe: error: unknown utility 'bleurt'; known: bleu", marks=SUBPROCESS_TWIN),  # noqa: E501
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    result = simpe(*args, "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert not (tmp_path / "runs").exists()  # nothing half-written


def test_bad_device_choice_is_rejected_by_argparse():
    result = simpe("simulate", "--device", "tpu")
    assert result.returncode == 2 and "invalid choice: 'tpu'" in result.stderr


def test_list_prints_every_registry():
    result = simpe("list")
    assert result.returncode == 0
    out = result.stdout
    assert "datasets: autodesk, hf, libreoffice, text, tmx, tsv" in out
    assert f"methods: {', '.join(METHODS.names())}\n" in out
    assert f"presets: {PRESETS}" in out
    assert "decoders: beam, constrained_beam, greedy, heap_beam, mbr, sampling, topk, topk_dfs" in out
    assert "metrics: bleu, chrf, chrf++, comet, sbleu, ter" in out
    assert "utilities: bleu, chrf, chrf++, sbleu, ter, comet" in out
    assert "model families: causal, m2m100, marian, mbart, t5" in out
    assert "  m2m100   model_type m2m_100; settings: src_lang, tgt_lang; e.g. facebook/nllb-200-distilled-600M" in out


def test_missing_model_folder_names_the_problem(tmp_path):
    result = simpe("simulate", "--model", str(tmp_path / "nomodel"), "--segments", "1", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"simpe: error: model folder {tmp_path / 'nomodel'} does not exist"


def test_threads_apply_to_a_run_in_this_process_too(tmp_path):
    """--threads without --workers: the one run at a time gets that many torch threads (env.json says so). In this
    process (a subprocess costs 3 s of imports): from 2 threads, --threads 1 gives the run 1."""
    import torch

    from simpe.cli import main

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main(["simulate", "--segments", "1", "--snapshot-every", "0", "--device", "cpu", "--threads", "1",
                     "--runs-dir", str(tmp_path / "runs"), "--no-progress"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    env = json.loads(next((tmp_path / "runs").glob("*/baseline/env.json")).read_text())
    assert env["torch_threads"] == 1
