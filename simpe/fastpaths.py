"""The switches of the GPU's fast paths, read from the environment: fixed shapes (``simpe.decoders.static`` and
``simpe.loop.update_graph``) and CUDA graphs of their steps (issue 67).

Both are on by default where they apply (fixed shapes off the CPU, graphs on CUDA); ``SIMPE_FIXED_SHAPES=off`` keeps
the dynamic cache and the eager update, ``SIMPE_CUDA_GRAPHS=off`` keeps fixed shapes but steps them eagerly: the
way back when a GPU's run misbehaves, and the device check's comparisons. Fixed shapes move a GPU's floats by the
padding's noise, so the run's ``env.json`` records the effective value (``simpe.rundir.env``); graphs replay the same
kernels and do not. ``check`` validates both before anything loads (``simpe.cli``: one line, exit 2). No torch here.
"""
from __future__ import annotations

import os

from simpe.errors import ConfigError

FIXED_SHAPES = "SIMPE_FIXED_SHAPES"
CUDA_GRAPHS = "SIMPE_CUDA_GRAPHS"
VALUES = ("on", "off")


def switch(name: str) -> bool:
    """Whether the environment leaves the fast path ``name`` on (unset: on); ConfigError for a value not in ``VALUES``."""
    value = os.environ.get(name, "on")
    if value not in VALUES:
        raise ConfigError(f"{name}={value!r}: must be one of {', '.join(VALUES)} (unset: on)")
    return value == "on"


def in_effect(device_type: str) -> dict[str, bool]:
    """The fast paths a run on a device of ``device_type`` ("cpu", "cuda", ...) takes where they apply: fixed shapes off
    the CPU, CUDA graphs of them on CUDA, each unless switched off (what ``env.json`` records)."""
    fixed = device_type != "cpu" and switch(FIXED_SHAPES)
    return {"fixed_shapes": fixed, "cuda_graphs": fixed and device_type == "cuda" and switch(CUDA_GRAPHS)}


def check() -> None:
    """Raise ConfigError, naming the variable, where either switch holds another value than on or off."""
    for name in (FIXED_SHAPES, CUDA_GRAPHS):
        switch(name)
