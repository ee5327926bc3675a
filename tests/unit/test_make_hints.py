"""The `make compare` / `make plot` lines that `make simulate` prints carry the protocol (make -n: nothing runs)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from simpe.paths import REPO_ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("extra, suffix", [(["PROTOCOL=interactive"], " PROTOCOL=interactive"),
                                           (["ARGS=--protocol interactive"], " PROTOCOL=interactive"), ([], "")])
def test_the_printed_commands_name_the_protocol(extra, suffix):
    out = subprocess.run(["make", "-n", "simulate", "PRESETS=baseline bias", *extra], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert f"make compare DATASET=libreoffice SEGMENTS=500{suffix}  (" in out
    assert f"make plot DATASET=libreoffice SEGMENTS=500{suffix}     (" in out
