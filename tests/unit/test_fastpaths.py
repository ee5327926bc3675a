"""The switches of the GPU's fast paths (simpe.fastpaths): on by default where they apply, off by SIMPE_FIXED_SHAPES=off
or SIMPE_CUDA_GRAPHS=off, any other value refused in one line before anything loads; what env.json records."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from simpe import fastpaths
from simpe.decoders import static
from simpe.errors import ConfigError
from simpe.loop import update_graph

REPO = Path(__file__).resolve().parents[2]


def test_the_fast_paths_are_on_where_they_apply_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpaths.FIXED_SHAPES, raising=False)
    monkeypatch.delenv(fastpaths.CUDA_GRAPHS, raising=False)
    assert fastpaths.in_effect("cpu") == {"fixed_shapes": False, "cuda_graphs": False}
    assert fastpaths.in_effect("cuda") == {"fixed_shapes": True, "cuda_graphs": True}
    assert fastpaths.in_effect("mps") == {"fixed_shapes": True, "cuda_graphs": False}
    cuda = torch.device("cuda")
    assert static.enabled(cuda) and update_graph.enabled(cuda) and static.graphs_enabled(cuda) and update_graph.graphs_enabled(cuda)
    monkeypatch.setenv(fastpaths.CUDA_GRAPHS, "off")
    assert fastpaths.in_effect("cuda") == {"fixed_shapes": True, "cuda_graphs": False}
    assert static.enabled(cuda) and not static.graphs_enabled(cuda) and not update_graph.graphs_enabled(cuda)
    with static.forced(None, True):  # a forced flag overrides the variable (the device check's graphs-on row)
        assert static.graphs_enabled(cuda)
    monkeypatch.setenv(fastpaths.FIXED_SHAPES, "off")
    assert fastpaths.in_effect("cuda") == {"fixed_shapes": False, "cuda_graphs": False}
    assert not static.enabled(cuda) and not update_graph.enabled(cuda)
    with static.forced(True):
        assert static.enabled(torch.device("cpu"))
    monkeypatch.setenv(fastpaths.FIXED_SHAPES, "Off")
    with pytest.raises(ConfigError, match=r"SIMPE_FIXED_SHAPES='Off': must be one of on, off \(unset: on\)"):
        fastpaths.check()


def test_a_bad_switch_is_refused_in_one_line_before_anything_loads(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "simpe", "list"], cwd=REPO,
                          env={"PATH": "/usr/bin:/bin", "SIMPE_CUDA_GRAPHS": "1", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "simpe: error: SIMPE_CUDA_GRAPHS='1': must be one of on, off (unset: on)\n"


def test_env_json_records_the_fast_paths_and_a_resume_sees_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    from simpe.rundir.env import env_changes, environment

    monkeypatch.delenv(fastpaths.FIXED_SHAPES, raising=False)
    on_cpu = environment(torch.device("cpu"))
    assert (on_cpu["fixed_shapes"], on_cpu["cuda_graphs"]) == (False, False)
    saved = {**on_cpu, "fixed_shapes": True}
    assert env_changes(saved, on_cpu) == ["fixed_shapes (the run has True, now False)"]
    assert env_changes({k: v for k, v in on_cpu.items() if k != "fixed_shapes"}, on_cpu) == []  # an older run
