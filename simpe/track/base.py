"""The tracker contract: a complete run's logs sent to a tool researchers browse runs in (``mlflow``, ``tensorboard``).

Tracking is derived from a run directory, never hooked into the loop: ``Tracker.log(run)`` reads what the run logged
(``simpe.rundir.reader``; what every tracker logs: ``simpe.track.extract``) and sends it once. Logging a run that the
destination holds already, unchanged, is skipped; a run made again since (another digest) replaces its old entry.
``simpe simulate --track`` logs each run as it completes, ``simpe sweep --track`` every run of its grid once they are
done, ``simpe track`` runs made before.

A tracker imports its package in its constructor, so that a missing one is a one-line error before any run starts.
"""
from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from simpe.errors import ConfigError, RunDirError
from simpe.registry import Registry
from simpe.rundir.layout import DONE_FILE, is_run_dir
from simpe.rundir.reader import Run, expand_run_paths, load_run

logger = logging.getLogger(__name__)

TRACK_EXTRA = "pip install 'simpe[track]'"
# Where a tracker writes by default: inside the run's group folder, beside compare/ and plots/ (one store or log folder
# per group, its runs side by side). Not inside the run's own folder: a folder holding files that no run writes is
# "foreign" to simpe.rundir.state, which `--overwrite`, `--resume` and `simpe sweep` then refuse to touch. These names
# belong in rundir/layout.py, whose source is part of every run's code fingerprint (simpe/fingerprint.py): they move
# there with the next change that edits it anyway.
MLFLOW_DIR = "mlruns"
TENSORBOARD_DIR = "tensorboard"


class Tracker(ABC):
    """Sends complete runs to one tracking tool. ``name`` is set by ``TRACKERS.add``."""

    name: str

    @abstractmethod
    def log(self, run: Run) -> str:
        """Send ``run`` (complete) unless the destination holds it already; return one line saying what became of it."""


TRACKERS: Registry[Tracker] = Registry("tracker")


def require(package: str, tracker: str) -> ModuleType:
    """Import ``package`` for tracker ``tracker``; ConfigError naming the extra to install when it is missing."""
    try:
        return importlib.import_module(package)
    except ImportError as err:
        raise ConfigError(f"tracker {tracker!r} needs the package {package!r} ({err}); install it: {TRACK_EXTRA}") from None


def tracker_names(values: Iterable[str]) -> list[str]:
    """Tracker names from flags given once per name or as comma lists (``mlflow,tensorboard``), each checked, in order."""
    names: list[str] = []
    for value in values:
        for name in (part.strip() for part in str(value).split(",")):
            if not name:
                continue
            TRACKERS.get(name)  # ConfigError: unknown tracker 'x'; known: mlflow, tensorboard
            if name not in names:
                names.append(name)
    return names


def build_trackers(names: Iterable[str], params: dict[str, dict[str, Any]] | None = None) -> list[Tracker]:
    """The trackers ``names`` (checked), each built with its entry of ``params`` (``{"mlflow": {"uri": ...}}``; a
    None value is a parameter not given).

    A parameter for a tracker that is not among ``names`` is refused: it would be silently ignored otherwise.
    """
    names = tracker_names(names)
    params = {name: {key: value for key, value in given.items() if value is not None} for name, given in (params or {}).items()}
    params = {name: given for name, given in params.items() if given}
    for name in params:
        TRACKERS.get(name)
        if name not in names:
            flags = ", ".join(sorted(params[name]))
            raise ConfigError(f"the {name} setting ({flags}) goes with tracking to {name}, which is not asked for "
                              f"(asked: {', '.join(names) or 'none'})")
    return [TRACKERS.build(name, **params.get(name, {})) for name in names]


def complete_run(path: Path) -> Run:
    """The run at ``path``, loaded; RunDirError when it is not a run directory or not complete (no DONE)."""
    path = Path(path)
    if not is_run_dir(path):
        raise RunDirError(f"{path} is not a run directory (no segments.jsonl)")
    if not (path / DONE_FILE).exists():
        raise RunDirError(f"run {path} is incomplete (no {DONE_FILE}): only a complete run is tracked; finish it first "
                          f"(simpe simulate ... --resume), then track it")
    return load_run(path)


def run_paths(paths: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """The runs to track from run directories and group folders: (complete runs, incomplete runs of the groups given).

    A run directory given by name must be complete (RunDirError otherwise); a group folder gives its complete runs,
    and its incomplete ones are returned apart, to be named and left out.
    """
    runs: list[Path] = []
    left_out: list[Path] = []
    for path in map(Path, paths):
        if is_run_dir(path) and not (path / DONE_FILE).exists():
            complete_run(path)  # refused, naming the run
        for run in expand_run_paths([path]):
            if not (run / DONE_FILE).exists():
                left_out.append(run)
            elif run.resolve() not in {known.resolve() for known in runs}:
                runs.append(run)
    return runs, left_out
