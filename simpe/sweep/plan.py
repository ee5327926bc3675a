"""What a sweep runs: the grid's runs, named and checked (``plan``), a sweep file, each run's state, the longest first.

A run is named by its settings (``full--lr=0.02--seed=2``) and lands in its stream's
group folder ``<runs_dir>/<dataset>-<split>--<model>--<N>seg/`` where ``simpe compare`` and
``simpe plot`` read it. The sweep is idempotent: ``state`` says whether a run is new,
complete with the same settings (skipped) or incomplete (resumed); the folder itself is read
by ``simpe.rundir.state``. ``expected_cost`` orders the runs, longest first, from the
relative costs ``make bench-loop`` writes (``simpe/relative_cost.json``).
"""
from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.config.files import load_config, load_saved_config, read_yaml, resume_difference
from simpe.config.tree import RunConfig
from simpe.errors import ConfigError
from simpe.rundir import layout
from simpe.rundir.reader import BASELINE
from simpe.rundir.state import RunState, foreign_message
from simpe.rundir.state import state as run_state

logger = logging.getLogger(__name__)

# grid keys that change what an adapted run learns but not the baseline (which never updates)
ADAPTATION_KEYS = ("method.", "update.", "seed")
SWEEP_FILE_KEYS = ("methods", "grid", "seeds", "dataset", "split", "model", "segments", "set", "baseline", "slurm")


@dataclass
class RunSpec:
    """One run of a sweep: a preset, the overrides that make it, the name they give."""

    adapter: str
    overrides: list[str]
    name: str
    path: Path = field(default=Path())
    cfg: RunConfig | None = field(default=None, repr=False)

    def config(self) -> RunConfig:
        return load_config(self.adapter, [*self.overrides, f"adapter={self.name}"])



def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``["update.lr=0.01,0.02", ...]`` -> ``{"update.lr": ["0.01", "0.02"]}`` (checked)."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"bad --grid {item!r}; expected KEY=V1,V2,..., e.g. update.lr=0.01,0.02")
        if key in grid:
            raise ConfigError(f"--grid {key} is given twice")
        grid[key] = [v.strip() for v in values.split(",") if v.strip()]
    return grid


def _value_name(value: str) -> str:
    return str(value).replace("/", "_").replace(" ", "")


def plan(methods: list[str], grid: dict[str, list[Any]] | None = None, seeds: list[int] | None = None,
         overrides: list[str] | None = None, baseline: bool = True) -> list[RunSpec]:
    """The runs of a sweep, in order, each checked (a bad key or value raises ConfigError before anything runs).

    Every method runs once per combination of the grid's values (and per seed when ``seeds``
    is given); the run's name is the adapter's followed by ``--key=value`` per grid key (the
    key's last part, ``lr`` for ``update.lr``, when no other grid key ends the same). With
    ``baseline`` a baseline run is added per stream (per combination of the grid keys that
    are not method, update or seed settings) when ``methods`` does not name it.
    """
    if not methods:
        raise ConfigError("a sweep needs at least one --preset")
    per_preset = {key: {str(name): [str(v) for v in (vals if isinstance(vals, list) else [vals])] for name, vals in values.items()}
                  for key, values in (grid or {}).items() if isinstance(values, dict)}
    grid = {key: [] if key in per_preset else [str(v) for v in values] for key, values in (grid or {}).items()}
    for key, values in grid.items():
        if not values and not (key in per_preset and all(per_preset[key].values())):
            raise ConfigError(f"--grid {key} has no values")
    if seeds:
        if "seed" in grid:
            raise ConfigError("give seeds either with --seeds or with --grid seed=..., not both")
        grid["seed"] = [str(s) for s in seeds]
    base = list(overrides or [])
    specs: list[RunSpec] = []
    adapters = list(methods)
    if baseline and BASELINE not in adapters:
        adapters.insert(0, BASELINE)
    tails = [k.rsplit(".", 1)[-1] for k in grid]
    short = {k: tail if tails.count(tail) == 1 else k for k, tail in zip(grid, tails)}  # update.lr -> lr when unambiguous
    for adapter in adapters:
        stem = Path(adapter).stem
        keys = [k for k in grid if adapter != BASELINE or not k.startswith(ADAPTATION_KEYS)]
        for key in keys:  # a key whose values differ per preset (a sweep file's grid: {update.lr: {full: [...], ...}})
            if key in per_preset and stem not in per_preset[key]:
                raise ConfigError(f"grid {key} names no values for preset {stem!r}; it names: {', '.join(per_preset[key])}")
        for values in itertools.product(*(per_preset[k][stem] if k in per_preset else grid[k] for k in keys)):
            name = "--".join([stem, *(f"{short[k]}={_value_name(v)}" for k, v in zip(keys, values))])
            specs.append(RunSpec(adapter, [*base, *(f"{k}={v}" for k, v in zip(keys, values))], name))
    seen: dict[Path, str] = {}
    from simpe.decoders import DECODERS
    from simpe.loop.plan import run_path
    from simpe.methods import METHODS

    for spec in specs:
        spec.cfg = spec.config()
        METHODS.build(spec.cfg.method.name, **spec.cfg.method.params)
        DECODERS.build(spec.cfg.decoder.name, **spec.cfg.decoder.params)
        spec.path = run_path(spec.cfg)
        if spec.path in seen:
            raise ConfigError(f"runs {seen[spec.path]!r} and {spec.name!r} would share the folder {spec.path}")
        seen[spec.path] = spec.name
    return specs


def load_sweep_file(path: Path) -> dict[str, Any]:
    """A sweep file (YAML): methods, grid {key: [values]} (or {key: {preset: [values]}}: values per preset, e.g. each
    method's own learning rates), seeds, dataset, split, model, segments, set, baseline, and slurm {partition, time,
    ...} (``simpe.sweep.slurm.SLURM_KEYS``: the job array's resources with --backend slurm)."""
    data = read_yaml(Path(path))
    unknown = sorted(set(data) - set(SWEEP_FILE_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(SWEEP_FILE_KEYS)}")
    if not isinstance(data.get("grid", {}), dict):
        raise ConfigError(f"{path}: grid must be a mapping KEY: [values]")
    if "slurm" in data:
        from simpe.sweep.slurm import SlurmSettings

        try:
            SlurmSettings.merged(data["slurm"], {})
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
    return data


def state(spec: RunSpec) -> str:
    """``new``, ``complete`` (DONE with the same settings) or ``incomplete`` (to resume), as ``rundir.state`` reads
    the folder; raises when a complete run's settings differ or the folder holds what is not a run's."""
    path = spec.path
    found = run_state(path)
    if found is RunState.FOREIGN:
        raise ConfigError(foreign_message(path))
    if found is RunState.COMPLETE:
        saved_file = path / layout.CONFIG_FILE
        if saved_file.exists() and spec.cfg is not None:
            differs = resume_difference(load_saved_config(saved_file), spec.cfg)
            if differs:
                raise ConfigError(f"{path} is a complete run whose {differs}; remove it or choose another --runs-dir")
        return "complete"
    return "incomplete" if found is RunState.INCOMPLETE else "new"



# Seconds per segment of each method relative to baseline's, as `make bench-loop` last measured them and wrote them to
# simpe/relative_cost.json: only to start the longest runs first (longest-processing-time order), so that the runs
# left running alone at the end, with cores idle beside them, are short ones. A method not listed counts as
# baseline; a wrong figure costs some idle time at the end, never a wrong record.
COST_FILE = Path(__file__).parent.parent / "relative_cost.json"


def _relative_cost() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(COST_FILE.read_text(encoding="utf-8"))["relative"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        logger.debug("%s is missing or unreadable: every method counts as baseline when the sweep orders its runs", COST_FILE)
        return {}


RELATIVE_COST = _relative_cost()


def relative_cost(cfg: RunConfig) -> float:
    """A run's seconds per segment over baseline's: its preset's measured figure (a composition such as full+ewc
    costs several times its method's), else its method's, else baseline's."""
    return RELATIVE_COST.get(cfg.adapter, RELATIVE_COST.get(cfg.method.name, 1.0))


def expected_cost(spec: RunSpec) -> float:
    """A run's expected time in baseline-segments: its segment count (all: the largest) times its relative cost."""
    cfg = spec.cfg or spec.config()
    segments = cfg.data.segments if cfg.data.segments is not None else float("inf")
    return segments * relative_cost(cfg)


