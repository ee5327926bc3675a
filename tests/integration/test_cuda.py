"""The GPU path: the same records on CUDA as on the CPU (within float tolerance) for every method,
exact top-k on CUDA against brute force. Skipped without a CUDA device (none was available when
these were written: they have not run yet)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.rundir import layout

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")]

METHODS = ["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn"]
FLOAT_TOLERANCE = 2e-3  # absolute and relative, for losses, scores and metric statistics


def _records(path: Path) -> list[dict]:
    records = [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text().splitlines()]
    for record in records:
        record.pop("seconds")
    return records


def _close(cpu, gpu, where: str) -> None:
    if isinstance(cpu, dict):
        assert set(cpu) == set(gpu), where
        for key in cpu:
            _close(cpu[key], gpu[key], f"{where}.{key}")
    elif isinstance(cpu, list):
        assert len(cpu) == len(gpu), where
        for i, (a, b) in enumerate(zip(cpu, gpu)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(cpu, float) and isinstance(gpu, (int, float)):
        assert math.isclose(cpu, gpu, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE), f"{where}: cpu {cpu} gpu {gpu}"
    else:
        assert cpu == gpu, f"{where}: cpu {cpu!r} gpu {gpu!r}"


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_the_cpu_records_on_cuda(method: str, tmp_path: Path, one_torch_thread: None):
    paths = {}
    for device in ("cpu", "cuda"):
        cfg = load_config(method, [f"runs_dir={tmp_path / device}", "data.segments=5", f"device={device}"])
        loop = Loop(cfg, progress=False)
        paths[device] = loop.run()
        loop.timer.remove()
    assert json.loads((paths["cuda"] / layout.ENV_FILE).read_text())["device"].startswith("cuda")
    _close(_records(paths["cpu"]), _records(paths["cuda"]), method)


def test_a_lockstep_group_on_cuda_gives_the_cpu_records(tmp_path: Path, one_torch_thread: None):
    """Three presets as one lockstep group (simpe.loop.group) on CUDA against the same group on the CPU."""
    from simpe.loop.group import Group
    from simpe.loop.run import check_runs

    paths: dict[str, list[Path]] = {}
    for device in ("cpu", "cuda"):
        configs = [load_config(preset, [f"runs_dir={tmp_path / device}", "data.segments=5", f"device={device}"])
                   for preset in ("full", "fixed", "lasso")]
        loops = check_runs(configs, progress=False)
        paths[device] = Group(loops).run()
        for loop in loops:
            loop.timer.remove()
    for cpu, gpu in zip(paths["cpu"], paths["cuda"]):
        _close(_records(cpu), _records(gpu), cpu.name)


def test_exact_topk_on_cuda_equals_brute_force():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from test_topk import LIMIT, SOURCE, assert_exact, brute_force, model_for

    from simpe.decoders.topk import TopKDecoder

    for seed, kind in ((0, "flat"), (1, "normal"), (2, "peaky")):
        model = model_for(seed, kind)
        truth = brute_force(model, (seed, kind))  # on the CPU
        model = model.to("cuda")
        for k in (1, 5, 20):
            result = TopKDecoder(k=k, batch_size=64, **LIMIT).decode(model, SOURCE.to("cuda"))
            assert result.exact is True
            assert_exact(result.hypotheses, truth, k, tol=1e-4)
