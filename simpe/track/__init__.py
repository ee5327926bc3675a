"""Trackers: complete runs logged to the tools researchers browse runs in (``--track mlflow``, ``--track tensorboard``).

base.py (Tracker, TRACKERS, build_trackers, complete_run, run_paths: the contract, and which runs may be tracked);
extract.py (what every tracker logs of a run: flat config, (name, step, value) points, tags); one file per tracker:
mlflow.py, tensorboard.py, each importing its package only when built. docs/tracking.md says what lands where.
"""
from simpe.registry import import_all
from simpe.track.base import TRACKERS, Tracker, build_trackers, complete_run, run_paths, tracker_names

import_all(__name__, __path__)

__all__ = ["TRACKERS", "Tracker", "build_trackers", "complete_run", "run_paths", "tracker_names"]
