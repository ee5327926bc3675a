"""``tensorboard``: a run as TensorBoard event files, one folder per run so that a group's runs show side by side.

Written with ``torch.utils.tensorboard.SummaryWriter`` into ``<group folder>/tensorboard/<run folder>/`` (default;
``tensorboard --logdir <group folder>/tensorboard``) or ``<directory>/<group>/<run folder>/``: every figure of
``simpe.track.extract`` as a scalar (step = the segment index ...; TensorBoard keeps 32-bit floats), the resolved
config as text (``config``) and as hyperparameters (the HParams tab, with the ``corpus/*`` figures as its metrics),
each signature as text (``signature/<metric>``) and the run's other tags as one table (``tags``). Every event carries
the run's end (its DONE written) as its wall time.

The folder's ``simpe-run.json``, written last, names the run and its digest: the same run is not written twice, a
run made again since replaces the event files written for it before.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simpe.rundir.layout import CONFIG_FILE
from simpe.rundir.output import OutputDir
from simpe.rundir.reader import Run
from simpe.track.base import TENSORBOARD_DIR, TRACKERS, Tracker, require
from simpe.track.extract import flat_config, param_text, points, run_digest, signatures, tags, times, tracker_name

MARKER_FILE = "simpe-run.json"
EVENTS_PREFIX = "events.out.tfevents."


def _hparam(value: Any) -> str | int | float:
    """A config value as the HParams plugin takes it: numbers as numbers, everything else as its text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return param_text(value)


def _markdown_table(rows: dict[str, str]) -> str:
    lines = ["| tag | value |", "| --- | --- |"]
    lines += [f"| {key} | {str(value).replace('|', '&#124;')} |" for key, value in rows.items()]
    return "\n".join(lines)


@TRACKERS.add("tensorboard")
class TensorboardTracker(Tracker):
    """Writes runs as TensorBoard event files: under ``directory/<group>/<run>`` when given, else under each run's
    ``<group folder>/tensorboard/<run>``."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        require("tensorboard", "tensorboard")  # torch.utils.tensorboard writes with it

    def folder(self, run: Run) -> Path:
        """Where the run's event files go."""
        path = Path(run.path)
        if self.directory:
            return Path(self.directory) / path.parent.name / path.name
        return path.parent / TENSORBOARD_DIR / path.name

    def log(self, run: Run) -> str:
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        folder = self.folder(run)
        digest, run_path = run_digest(run.path), str(Path(run.path).resolve())
        marker = folder / MARKER_FILE
        if marker.is_file():
            try:
                written = json.loads(marker.read_text(encoding="utf-8"))
            except ValueError:
                written = {}
            if isinstance(written, dict) and written.get("run_path") == run_path and written.get("run_digest") == digest:
                return f"{run.name} is written already ({folder}); skipped"
        replaced = sorted(folder.glob(EVENTS_PREFIX + "*")) if folder.is_dir() else []
        for old in replaced:  # the events of this run as it was before (or of a write cut short)
            old.unlink()
        marker.unlink(missing_ok=True)
        out = OutputDir(folder, [MARKER_FILE])
        out.path.mkdir(parents=True, exist_ok=True)
        _, end = times(run)
        figures = points(run)
        config = flat_config(run.config)
        writer = SummaryWriter(log_dir=str(out.path))
        try:
            for point in figures:
                writer.add_scalar(point.name, point.value, point.step, walltime=end)
            config_file = Path(run.path) / CONFIG_FILE
            yaml_text = config_file.read_text(encoding="utf-8") if config_file.is_file() else ""
            writer.add_text("config", "\n".join("    " + line for line in yaml_text.splitlines()), 0, walltime=end)
            for name, signature in signatures(run).items():
                writer.add_text(tracker_name(f"signature/{name}"), signature, 0, walltime=end)
            writer.add_text("tags", _markdown_table(tags(run, digest)), 0, walltime=end)
            corpus = {point.name: point.value for point in figures if point.name.startswith("corpus/")}
            for summary in hparams({tracker_name(key): _hparam(value) for key, value in config.items()}, corpus):
                writer.file_writer.add_summary(summary, 0, walltime=end)
        finally:
            writer.close()
        out.write_json(MARKER_FILE, {"run_path": run_path, "run_digest": digest, "points": len(figures)})
        again = f"; replaced {len(replaced)} event file(s) of an earlier write" if replaced else ""
        return f"{run.name}: {len(figures)} points, {len(config)} hyperparameters -> {folder}{again}"
