"""A run's environment (``env.json``): the package versions, device, threads, CPU kernel set and git state it ran in,
and what differs between two of them (a resume in another environment: ``simpe simulate --resume-anyway``)."""
from __future__ import annotations

import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from simpe import fastpaths
from simpe.paths import REPO_ROOT

# unbabel-comet runs in its own environment: its version is in each COMET signature (simpe.metrics.comet)
PACKAGES = ("torch", "transformers", "tokenizers", "sentencepiece", "peft", "sacrebleu", "sacremoses", "numpy", "tqdm", "pyyaml")


def environment(device: Any) -> dict[str, Any]:
    """Package versions, device, git commit and dirty flag, host facts."""
    import torch

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    commit, dirty = None, None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout
        dirty = bool(status.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "python": sys.version.split()[0], "packages": versions, "device": str(device),
        "cuda": torch.cuda.get_device_name(device) if getattr(device, "type", "") == "cuda" else None,
        "torch_threads": torch.get_num_threads(),
        # the CPU kernel set torch dispatches (AVX512, AVX2, DEFAULT...; ATEN_CPU_CAPABILITY overrides it):
        # floats differ in their last bits between kernel sets (docs/reproducibility.md)
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        # the GPU's fast paths in effect on this device (simpe.fastpaths): fixed shapes move a GPU's floats by the
        # padding's noise; CUDA graphs replay the same kernels
        **fastpaths.in_effect(torch.device(device or "cpu").type),
        "cpu": _cpu_model(),
        "git_commit": commit, "git_dirty": dirty,
        "host": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv,
    }


def _cpu_model() -> str | None:
    """The CPU's model name (Linux /proc/cpuinfo; else what ``platform`` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


# What decides a run's records beyond its config: a resume under another value of any of these would log records an
# uninterrupted run does not (docs/reproducibility.md); env.json holds them.
RECORD_ENV = ("torch_threads", "cpu_capability", "device", "packages.torch", "packages.transformers", "fixed_shapes")


def env_changes(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``key (the run has A, now B)`` for each RECORD_ENV value that differs; a key the run did not record (older
    runs have no cpu_capability) is not a difference."""
    def value(env: dict[str, Any], key: str) -> Any:
        for part in key.split("."):
            env = env.get(part) if isinstance(env, dict) else None
        return env

    changes = []
    for key in RECORD_ENV:
        was, is_now = value(saved, key), value(now, key)
        if was is not None and was != is_now:
            changes.append(f"{key} (the run has {was!r}, now {is_now!r})")
    return changes
