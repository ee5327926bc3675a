"""`simpe sweep`: the cross product of methods x settings x seeds as independent Ray tasks or one Slurm job array.

``plan`` (the runs: grids, names, state, the longest first), ``executor`` (Ray scheduling,
progress, moving runs between machines through ``simpe.rundir.transfer``), ``slurm`` (``--backend
slurm``: the checks, the job array through submitit, what each task runs), ``follow`` (a Slurm
sweep's runs as they stand: the driver's bars, ``--status``), ``tables`` (the comparison of each
stream group). ``simpe simulate --workers N`` runs its methods through the same executor. The
names below are the package's public ones (``slurm`` and ``follow`` are imported where used).
"""
from __future__ import annotations

from simpe.rundir.transfer import pack, unpack
from simpe.sweep.executor import Outcome, Progress, cpu_count, execute, run_task, start_ray
from simpe.sweep.plan import (
    ADAPTATION_KEYS,
    BASELINE,
    COST_FILE,
    RELATIVE_COST,
    SWEEP_FILE_KEYS,
    RunSpec,
    expected_cost,
    load_sweep_file,
    parse_grid,
    plan,
    relative_cost,
    state,
)
from simpe.sweep.tables import compare_groups

__all__ = ["ADAPTATION_KEYS", "BASELINE", "COST_FILE", "RELATIVE_COST", "SWEEP_FILE_KEYS", "Outcome", "Progress", "RunSpec",
           "compare_groups", "cpu_count", "execute", "expected_cost", "load_sweep_file", "pack", "parse_grid", "plan", "relative_cost",
           "run_task", "start_ray", "state", "unpack"]
