"""The run directory: the only code that reads or writes under ``runs/``.

layout.py names every file; writer.py creates, locks, appends to, checkpoints and completes
a run; env.py records the environment it ran in; output.py writes the outputs derived from runs (compare tables,
plots, ranking records); reader.py loads runs and checks that a group of them is comparable. Format:
docs/run-format.md.
"""
from simpe.rundir.layout import group_name, run_path
from simpe.rundir.output import OutputDir
from simpe.rundir.reader import Run, RunGroup, load_group, load_run, read_jsonl
from simpe.rundir.writer import RunDir

__all__ = ["OutputDir", "Run", "RunDir", "RunGroup", "group_name", "load_group", "load_run", "read_jsonl", "run_path"]
