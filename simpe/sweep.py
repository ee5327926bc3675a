"""`simpe sweep`: the cross product of methods x settings x seeds as independent Ray tasks.

Each run is one ``simulate.Loop`` in a Ray task that asks for ``threads`` CPUs (and, with
``gpus``, a fraction of a GPU) and sets torch to that many threads, so concurrent runs never
oversubscribe the cores. Ray starts on this machine by itself (``ray.init(num_cpus=...)``, no
dashboard) unless ``address`` names an existing cluster.

A run is named by its settings (``full--lr=0.02--seed=2``) and lands in its stream's
group folder ``<runs_dir>/<dataset>-<split>--<model>--<N>seg/`` where ``simpe compare`` and
``simpe plot`` read it. The sweep is idempotent: a complete run (``DONE``) with the same
settings is skipped, an incomplete one is resumed from its checkpoint (``Loop.run(resume=True)``),
a run that raises is reported with its error and the others go on. On a cluster the workers
write into ``runs_dir`` themselves when it is a path every node sees (a shared file system);
otherwise ``return_results`` makes each task run in a scratch folder of its node and return
its run folder as a tar archive, which the driver unpacks where the run belongs (an
incomplete run travels to its task the same way, to be resumed there).

``simpe simulate --workers N`` runs its methods through the same executor (``execute``).
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.config import RunConfig, load_config, load_saved_config, read_yaml, resume_difference
from simpe.errors import ConfigError
from simpe.rundir import layout
from simpe.rundir.reader import BASELINE
from simpe.rundir.state import RunState, foreign_message
from simpe.rundir.state import state as run_state
from simpe.rundir.transfer import pack, unpack

logger = logging.getLogger(__name__)

# grid keys that change what an adapted run learns but not the baseline (which never updates)
ADAPTATION_KEYS = ("method.", "update.", "seed")
SWEEP_FILE_KEYS = ("methods", "grid", "seeds", "dataset", "split", "model", "segments", "set", "baseline")


def cpu_count() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass
class RunSpec:
    """One run of a sweep: an adapter file, the overrides that make it, the name they give."""

    adapter: str
    overrides: list[str]
    name: str
    path: Path = field(default=Path())
    cfg: RunConfig | None = field(default=None, repr=False)

    def config(self) -> RunConfig:
        return load_config(self.adapter, [*self.overrides, f"adapter={self.name}"])


@dataclass
class Outcome:
    """What became of one run: done, skipped (already complete), resumed or failed (with the error)."""

    name: str
    path: Path
    status: str
    seconds: float = 0.0
    error: str | None = None


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
    grid = {key: [str(v) for v in values] for key, values in (grid or {}).items()}
    for key, values in grid.items():
        if not values:
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
        keys = [k for k in grid if adapter != BASELINE or not k.startswith(ADAPTATION_KEYS)]
        for values in itertools.product(*(grid[k] for k in keys)):
            stem = Path(adapter).stem
            name = "--".join([stem, *(f"{short[k]}={_value_name(v)}" for k, v in zip(keys, values))])
            specs.append(RunSpec(adapter, [*base, *(f"{k}={v}" for k, v in zip(keys, values))], name))
    seen: dict[Path, str] = {}
    from simpe.decoders import DECODERS
    from simpe.methods import METHODS
    from simpe.simulate import run_path

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
    """A sweep file (YAML): methods, grid {key: [values]}, seeds, dataset, split, model, segments, set, baseline."""
    data = read_yaml(Path(path))
    unknown = sorted(set(data) - set(SWEEP_FILE_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(SWEEP_FILE_KEYS)}")
    if not isinstance(data.get("grid", {}), dict):
        raise ConfigError(f"{path}: grid must be a mapping KEY: [values]")
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


def run_task(adapter: str, overrides: list[str], threads: int, resume: bool, cwd: str, overwrite: bool = False,
             returned: bytes | None = None, return_results: bool = False) -> dict[str, Any]:
    """One run inside a worker (a Ray task or this process): returns its outcome as plain values, never raises.

    With ``return_results`` the run goes into a scratch ``runs_dir`` on the worker (``returned``,
    the packed incomplete run, is put there first) and the outcome carries the packed run folder.
    """
    import torch

    from simpe.simulate import Loop

    start = time.perf_counter()
    torch.set_num_threads(max(1, threads))
    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)  # relative paths (runs/, models/...) mean what they meant to the driver
    loop = None
    scratch = Path(tempfile.mkdtemp(prefix="simpe-sweep-")) if return_results else None
    try:
        if scratch is not None:
            overrides = [*overrides, f"runs_dir={scratch}"]
        cfg = load_config(adapter, overrides)
        if scratch is not None and returned is not None:
            from simpe.simulate import run_path

            unpack(returned, run_path(cfg))
        loop = Loop(cfg, progress=False)
        path = loop.run(resume=resume, overwrite=overwrite)
        outcome = {"path": str(path), "status": "resumed" if resume else "done", "seconds": time.perf_counter() - start}
        if scratch is not None:
            outcome["archive"] = pack(Path(path))
        return outcome
    except BaseException as err:  # noqa: B036 - the outcome carries the error back to the driver
        outcome = {"path": "", "status": "failed", "seconds": time.perf_counter() - start,
                   "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        if scratch is not None and loop is not None and Path(loop.path).is_dir():
            try:  # the segments done so far come back, to be resumed by the next sweep
                outcome["archive"] = pack(Path(loop.path))
            except OSError:
                pass
        return outcome
    finally:
        if loop is not None and getattr(loop, "timer", None) is not None:
            loop.timer.remove()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


# Seconds per segment of each method relative to baseline's, as `make bench-loop` last measured them and wrote them to
# simpe/relative_cost.json: only to start the longest runs first (longest-processing-time order), so that the runs
# left running alone at the end, with cores idle beside them, are short ones. A method not listed counts as
# baseline; a wrong figure costs some idle time at the end, never a wrong record.
COST_FILE = Path(__file__).with_name("relative_cost.json")


def _relative_cost() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(COST_FILE.read_text(encoding="utf-8"))["relative"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        logger.debug("%s is missing or unreadable: every method counts as baseline when the sweep orders its runs", COST_FILE)
        return {}


RELATIVE_COST = _relative_cost()


def expected_cost(spec: RunSpec) -> float:
    """A run's expected time in baseline-segments: its segment count (all: the largest) times its method's relative cost."""
    cfg = spec.cfg or spec.config()
    segments = cfg.data.segments if cfg.data.segments is not None else float("inf")
    return segments * RELATIVE_COST.get(cfg.method.name, 1.0)


def start_ray(address: str | None, cpus: int, gpus: float | None = None) -> Any:
    """Join the cluster at ``address``, or start a local Ray with ``cpus`` CPUs (no dashboard); reuse one already up.

    Ray's own start-up lines (its INFO line, the token-authentication warning) are shown only with
    ``-v`` (simpe's debug console): a run's progress is simpe's to print."""
    import ray

    if ray.is_initialized():
        return ray
    from simpe import log

    level = logging.INFO if log.is_verbose() else logging.ERROR
    for name in ("ray", "ray._private", "ray._private.authentication"):
        logging.getLogger(name).setLevel(level)
    if address:
        ray.init(address=address, log_to_driver=True, logging_level=level)
    else:
        kwargs: dict[str, Any] = {"num_cpus": cpus, "include_dashboard": False, "log_to_driver": False, "logging_level": level}
        if gpus is not None:
            kwargs["num_gpus"] = gpus
        ray.init(**kwargs)
    return ray


class Progress:
    """What a sweep shows while it runs: one overall bar (labelled ``simulate`` or ``sweep``), one line per running
    run with its segment count and running BLEU / R0+1 (read from its run folder by the driver), and a line as each
    run ends, with its time."""

    def __init__(self, total: int, done: int, label: str) -> None:
        from tqdm import tqdm

        self.tqdm = tqdm
        self.bar = tqdm(total=total, initial=done, desc=label, unit="run", dynamic_ncols=True, position=0)
        self.lines: dict[str, Any] = {}  # run name -> its bar
        self.tails: dict[str, _Tail] = {}
        self.started: dict[str, float] = {}

    def start(self, spec: RunSpec) -> None:
        total = spec.cfg.data.segments if spec.cfg is not None and spec.cfg.data.segments else None
        taken = {line.pos for line in self.lines.values()}
        slot = next(i for i in range(1, len(self.lines) + 2) if i not in taken and -i not in taken)  # a free line
        self.lines[spec.name] = self.tqdm(total=total, desc=f"  {spec.name}", unit="seg", dynamic_ncols=True,
                                          position=slot, leave=False)
        self.tails[spec.name] = _Tail(spec.path)
        self.started[spec.name] = time.perf_counter()

    def poll(self) -> None:
        """Move each running run's line to what its folder holds."""
        for name, line in self.lines.items():
            done, figures = self.tails[name].read()
            if done > line.n:
                line.update(done - line.n)
            if figures:
                line.set_postfix_str(figures, refresh=False)
            line.refresh()

    def finish(self, outcome: Outcome) -> None:
        line = self.lines.pop(outcome.name, None)
        self.tails.pop(outcome.name, None)
        if line is not None:
            line.close()
        seconds = time.perf_counter() - self.started.pop(outcome.name, time.perf_counter())
        self.tqdm.write(f"{outcome.status}: {outcome.name} ({seconds:.0f} s)" + (f": {outcome.error}" if outcome.error else ""))
        self.bar.update(1)

    def close(self) -> None:
        for line in self.lines.values():
            line.close()
        self.bar.close()


class _Tail:
    """Follows a run folder's segments.jsonl as it grows: complete lines so far, and the last one's running figures."""

    def __init__(self, path: Path) -> None:
        self.file = path / layout.SEGMENTS_FILE
        self.offset, self.count, self.last = 0, 0, b""

    def read(self) -> tuple[int, str]:
        import json

        try:
            with open(self.file, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return self.count, ""
        end = data.rfind(b"\n")
        if end >= 0:  # whole lines only: the rest is being written
            lines = data[: end].split(b"\n")
            self.offset += end + 1
            self.count += len(lines)
            self.last = lines[-1]
        try:
            figures = json.loads(self.last).get("cumulative") or {} if self.last else {}
        except ValueError:
            figures = {}
        parts = [f"{label} {100 * v if key.startswith('r') else v:.1f}" for key, label in (("bleu", "BLEU"), ("r0+1", "R0+1"))
                 if isinstance(v := figures.get(key), (int, float))]
        return self.count, " ".join(parts)


def execute(specs: list[RunSpec], workers: int | None = None, threads: int | None = None, address: str | None = None,
            gpus_per_run: float = 0.0, progress: bool = True, as_simulate: tuple[bool, bool] | None = None,
            return_results: bool = False) -> list[Outcome]:
    """Run ``specs`` as Ray tasks, ``workers`` at a time with ``threads`` torch threads (CPUs) each.

    Complete runs are skipped, incomplete ones resumed; a failed run is an ``Outcome`` with
    its error, never an exception. Locally Ray gets ``workers * threads`` CPUs. With
    ``as_simulate=(resume, overwrite)`` every run is started as ``simpe simulate`` would
    (the caller has checked the folders), nothing skipped. With ``return_results`` the runs
    come back to this machine's ``runs_dir`` as archives (see the module docstring).
    """
    outcomes: dict[str, Outcome] = {}
    todo: list[tuple[RunSpec, bool]] = []
    overwrite = bool(as_simulate and as_simulate[1])
    for spec in specs:
        if as_simulate is not None:
            todo.append((spec, as_simulate[0]))
            continue
        try:
            found = state(spec)
        except ConfigError as err:
            outcomes[spec.name] = Outcome(spec.name, spec.path, "failed", error=str(err))
            continue
        if found == "complete":
            outcomes[spec.name] = Outcome(spec.name, spec.path, "skipped")
        else:
            todo.append((spec, found == "incomplete"))
    if todo and not address:  # a model this machine cannot have fails every run: say so once, before Ray starts
        from simpe.model import check_available

        for model in sorted({str(spec.cfg.model.path or "") for spec, _ in todo}):
            check_available(model or None)
    if todo:
        if address:  # a cluster: its CPUs, one torch thread per run unless told
            ray = start_ray(address, 0)
            threads = threads or 1
            workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
        else:  # this machine: every core, shared evenly by the runs that go at once
            cores = cpu_count()
            if threads is None:
                threads = max(1, cores // max(1, workers or min(len(todo), cores)))
            if workers is None:
                workers = max(1, min(len(todo), cores // threads))
            ray = start_ray(None, workers * threads, gpus=None)
        remote = ray.remote(run_task).options(num_cpus=threads, num_gpus=gpus_per_run or 0, max_retries=0)
        cwd = os.getcwd()
        shown = Progress(len(specs), len(specs) - len(todo), "simulate" if as_simulate is not None else "sweep") if progress else None
        pending: dict[Any, tuple[RunSpec, bool]] = {}
        queue = sorted(todo, key=lambda item: -expected_cost(item[0]))  # the longest first; ties keep their order
        try:
            while queue or pending:
                while queue and len(pending) < workers:
                    spec, resume = queue.pop(0)
                    overrides = [*spec.overrides, f"adapter={spec.name}"]
                    if gpus_per_run:
                        overrides.append("device=cuda")
                    returned = pack(spec.path) if return_results and resume else None
                    pending[remote.remote(spec.adapter, overrides, threads, resume, cwd, overwrite, returned,
                                          return_results)] = (spec, resume)
                    if shown is not None:
                        shown.start(spec)
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=None if shown is None else 2.0)
                if shown is not None:
                    shown.poll()
                for ref in ready:
                    spec, resume = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as err:  # the worker died (killed, out of memory): report, go on
                        result = {"status": "failed", "seconds": 0.0, "error": f"{type(err).__name__}: {err}"}
                    if result.get("archive") is not None:
                        unpack(result["archive"], spec.path)
                    outcome = Outcome(spec.name, spec.path, result["status"], result["seconds"], result.get("error"))
                    outcomes[spec.name] = outcome
                    if outcome.status == "failed":
                        logger.error("run %s failed: %s", spec.name, outcome.error)
                        if result.get("traceback"):
                            logger.debug("%s", result["traceback"])
                    if shown is not None:
                        shown.finish(outcome)
        finally:
            if shown is not None:
                shown.close()
    return [outcomes[spec.name] for spec in specs]


def compare_groups(specs: list[RunSpec], outcomes: list[Outcome], bootstrap: int = 1000) -> list[tuple[Path, str]]:
    """The comparison table (Markdown) of every stream's group folder that has one baseline and another complete run.

    Writes each table under the group's ``compare/`` as ``simpe compare`` does; returns (group, text or a note).
    """
    from simpe.errors import SimpeError
    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown, write_comparison
    from simpe.rundir.reader import load_group

    groups: dict[Path, list[Path]] = {}
    for spec, outcome in zip(specs, outcomes):
        if outcome.status != "failed":
            groups.setdefault(spec.path.parent, []).append(spec.path)
    tables = []
    for group_dir, paths in groups.items():
        try:
            group = load_group(paths)
            comparison = compare_runs(group, num_resamples=bootstrap)
            write_comparison(comparison, layout.compare_dir(group_dir))
            tables.append((group_dir, to_markdown(comparison)))
        except SimpeError as err:
            tables.append((group_dir, f"(no comparison table: {err})"))
    return tables
