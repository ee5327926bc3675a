"""Choosing a sweep's settings without tuning on the test: ``simpe sweep --select-on stream|dev``.

simpe's protocol is prequential evaluation (each segment is first a test, then a training example; docs/metrics.md):
the cumulative score of a run is its test score. A setting (a learning rate) chosen by the same stream's score it is
then reported on is tuned on the test. ``--select-on stream`` (the default) still names, per preset, the setting with
the best stream figure, and warns that it was chosen on the reported stream. ``--select-on dev`` runs the grid on the
dev split first (the same presets and settings, no baseline, no snapshots), chooses per preset the best setting there,
and runs only the chosen settings (and the baseline) on the stream. It plans and chooses; the executor runs.
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Callable

from simpe.errors import ConfigError
from simpe.rundir import layout
from simpe.sweep.executor import Outcome
from simpe.sweep.plan import BASELINE, RunSpec, plan

logger = logging.getLogger(__name__)

SELECT_ON = ("stream", "dev")
PREQUENTIAL_WARNING = ("the settings were chosen by the stream's own prequential score, the figure they are reported on "
                       "(tuned on the test); pick them on held-out text with --select-on dev (docs/metrics.md, 'Prequential')")


def check_metric(metric: str) -> None:
    """``--select-metric`` names a metric simpe scores (ConfigError naming the known ones, before any run)."""
    from simpe.errors import SimpeError
    from simpe.metrics import METRICS, metric_for

    try:
        metric_for(metric)
    except SimpeError:
        raise ConfigError(f"--select-metric {metric!r} is not a metric; known: {', '.join(METRICS.names())}") from None


def _preset(spec: RunSpec) -> str:
    return Path(spec.adapter).stem


def _choices(specs: list[RunSpec]) -> dict[str, list[RunSpec]]:
    """The presets with more than one setting: what a selection chooses between."""
    found: dict[str, list[RunSpec]] = {}
    for spec in specs:
        if _preset(spec) != BASELINE:
            found.setdefault(_preset(spec), []).append(spec)
    return {preset: runs for preset, runs in found.items() if len(runs) > 1}


def _figure(spec: RunSpec, metric: str) -> float | None:
    try:
        value = json.loads((spec.path / layout.SUMMARY_FILE).read_text(encoding="utf-8"))["corpus"].get(metric)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else None


def best_settings(specs: list[RunSpec], outcomes: list[Outcome], metric: str) -> dict[str, tuple[RunSpec, float]]:
    """Per preset with several settings, the complete run with the best corpus ``metric`` (summary.json; TER lowest)."""
    from simpe.metrics import metric_for

    higher = metric_for(metric).higher_is_better
    done = {spec.name for spec, outcome in zip(specs, outcomes) if outcome.status != "failed"}
    chosen: dict[str, tuple[RunSpec, float]] = {}
    for preset, runs in _choices(specs).items():
        scored = [(spec, value) for spec in runs if spec.name in done and (value := _figure(spec, metric)) is not None]
        if scored:
            chosen[preset] = max(scored, key=lambda item: item[1] if higher else -item[1])
    return chosen


def dev_segments(spec: RunSpec) -> int:
    """The dev runs' segment count: the stream's, at most the dev split's length (ConfigError without a dev split)."""
    from simpe.datasets import DATASETS

    cfg = spec.cfg or spec.config()
    dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
    if "dev" not in dataset.splits:
        raise ConfigError(f"--select-on dev needs a dev split; dataset {cfg.data.name!r} has {', '.join(dataset.splits)}")
    available = len(dataset.load("dev", cfg.data.skip_empty))
    return min(cfg.data.segments or available, available)


def select_on_dev(specs: list[RunSpec], methods: list[str], grid: dict, seeds: list[int] | None, overrides: list[str],
                  metric: str, run: Callable[[list[RunSpec]], list[Outcome]]) -> list[RunSpec]:
    """Run the grid on the dev split (``run``: the executor), choose per preset its best setting there, and return the
    stream's runs of the chosen settings (and the baseline); presets with one setting keep it."""
    choices = _choices(specs)
    if not choices:
        logger.info("--select-on dev: every preset has one setting; nothing to choose")
        return specs
    segments = dev_segments(specs[0])
    dev = plan([m for m in methods if Path(m).stem != BASELINE], grid, seeds,
               [*overrides, "data.split=dev", f"data.segments={segments}", "snapshots.every=0"], baseline=False)
    outcomes = run(dev)
    chosen = best_settings(dev, outcomes, metric)
    missing = sorted(set(choices) - set(chosen))
    if missing:
        raise ConfigError(f"--select-on dev: no complete dev run of {', '.join(missing)} to choose from")
    names = {spec.name for spec, _ in chosen.values()}
    for spec, value in chosen.values():
        print(f"chosen on dev ({segments} segments, {metric} {value:.2f}): {spec.name}")
    return [spec for spec in specs if _preset(spec) not in choices or spec.name in names]


def report_selection(specs: list[RunSpec], outcomes: list[Outcome], select_on: str, metric: str) -> None:
    """Print the setting each preset would be reported with; on ``stream``, with the prequential warning."""
    if select_on == "dev" or not _choices(specs):
        return
    for spec, value in best_settings(specs, outcomes, metric).values():
        print(f"best on the stream ({metric} {value:.2f}): {spec.name}")
    logger.warning(PREQUENTIAL_WARNING)
