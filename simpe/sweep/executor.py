"""How a sweep runs: its runs as independent Ray tasks, longest first, with progress (``execute``).

Each run is one ``simulate.Loop`` in a Ray task that asks for ``threads`` CPUs (and, with
``gpus``, a fraction of a GPU) and sets torch to that many threads, so concurrent runs never
oversubscribe the cores. Ray starts on this machine by itself (``ray.init(num_cpus=...)``, no
dashboard) unless ``address`` names an existing cluster. A complete run is skipped, an
incomplete one resumed from its checkpoint (``Loop.run(resume=True)``), a run that raises is
reported with its error and the others go on. On a cluster the workers write into ``runs_dir``
themselves when it is a path every node sees (a shared file system); otherwise ``return_results``
makes each task run in a scratch folder of its node and return its run folder as a tar archive
(``simpe.rundir.transfer``), which the driver unpacks where the run belongs (an incomplete run
travels to its task the same way, to be resumed there).

``simpe simulate --workers N`` runs its methods through the same executor.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.config.files import load_config
from simpe.errors import ConfigError
from simpe.rundir import layout
from simpe.rundir.transfer import pack, unpack
from simpe.sweep.plan import RunSpec, expected_cost, state

logger = logging.getLogger(__name__)


def cpu_count() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1



@dataclass
class Outcome:
    """What became of one run: done, skipped (already complete), resumed or failed (with the error)."""

    name: str
    path: Path
    status: str
    seconds: float = 0.0
    error: str | None = None


def run_task(adapter: str, overrides: list[str], threads: int, resume: bool, cwd: str, overwrite: bool = False,
             returned: bytes | None = None, return_results: bool = False) -> dict[str, Any]:
    """One run inside a worker (a Ray task or this process): returns its outcome as plain values, never raises.

    With ``return_results`` the run goes into a scratch ``runs_dir`` on the worker (``returned``,
    the packed incomplete run, is put there first) and the outcome carries the packed run folder.
    """
    import torch

    from simpe.loop.run import Loop

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
            from simpe.loop.plan import run_path

            unpack(returned, run_path(cfg))
        loop = Loop(cfg, progress=False)
        path = loop.run(resume=resume, overwrite=overwrite)
        outcome = {"path": str(path), "status": "resumed" if resume else "done", "seconds": time.perf_counter() - start}
        if scratch is not None:
            outcome["archive"] = pack(Path(path))
        return outcome
    except BaseException as err:  # noqa: B036 - the outcome carries the error back to the driver
        outcome = failed_outcome(err, time.perf_counter() - start)
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


def failed_outcome(err: BaseException, seconds: float = 0.0) -> dict[str, Any]:
    """A run's outcome after ``err`` (call inside its ``except``: the traceback is the one being handled)."""
    return {"path": "", "status": "failed", "seconds": seconds, "error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc()}


def run_group_task(runs: list[dict[str, Any]], threads: int, cwd: str, return_results: bool = False) -> list[dict[str, Any]]:
    """The runs of one lockstep group inside a worker (``simpe.loop.group``): each ``runs`` item holds ``run_task``'s
    ``adapter``, ``overrides``, ``resume``, ``overwrite`` and ``returned``; one outcome per run, in order, never raises.
    A group of one is ``run_task``."""
    if len(runs) == 1:
        one = runs[0]
        return [run_task(one["adapter"], one["overrides"], threads, one["resume"], cwd, one["overwrite"], one["returned"],
                         return_results)]
    import torch

    from simpe.loop.group import Group
    from simpe.loop.run import Loop, run_path

    start = time.perf_counter()
    torch.set_num_threads(max(1, threads))
    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    scratch = Path(tempfile.mkdtemp(prefix="simpe-sweep-")) if return_results else None
    loops: list[Any] = []
    try:
        outcomes: list[dict[str, Any] | None] = [None] * len(runs)
        members = []  # (index in runs, loop) of the runs set up; one that cannot be is failed alone
        for number, run in enumerate(runs):
            try:
                overrides = run["overrides"] if scratch is None else [*run["overrides"], f"runs_dir={scratch}"]
                cfg = load_config(run["adapter"], overrides)
                if scratch is not None and run["returned"] is not None:
                    unpack(run["returned"], run_path(cfg))
                loop = Loop(cfg, progress=False)
                loop.check_run_dir(run["resume"], run["overwrite"])
            except Exception as err:  # noqa: BLE001 - this run's outcome; the others go on
                outcomes[number] = failed_outcome(err, time.perf_counter() - start)
                continue
            loops.append(loop)
            members.append(number)
        if loops:
            group = Group(loops)
            try:
                group.run(resume=[runs[n]["resume"] for n in members], overwrite=[runs[n]["overwrite"] for n in members])
            except Exception:  # noqa: BLE001 - each run's own outcome says whether it failed
                pass
            seconds = time.perf_counter() - start
            for number, slot in zip(members, group.slots):
                if slot.error is None and slot.done:
                    outcome = {"path": str(slot.loop.path), "status": "resumed" if runs[number]["resume"] else "done",
                               "seconds": seconds}
                else:
                    outcome = {"path": "", "status": "failed", "seconds": seconds,
                               "error": f"{type(slot.error).__name__}: {slot.error}" if slot.error else "the group stopped"}
                if scratch is not None and Path(slot.loop.path).is_dir():
                    outcome["archive"] = pack(Path(slot.loop.path))
                outcomes[number] = outcome
        return [outcome for outcome in outcomes if outcome is not None]
    except BaseException as err:  # noqa: B036 - the outcomes carry the error back to the driver
        failed = failed_outcome(err, time.perf_counter() - start)
        return [dict(failed) for _ in runs]
    finally:
        for loop in loops:
            if getattr(loop, "timer", None) is not None:
                loop.timer.remove()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def lockstep_tasks(todo: list[tuple[RunSpec, bool]], workers: int) -> list[list[tuple[RunSpec, bool]]]:
    """``todo`` (longest first) as tasks, the costliest first: the runs that may share their passes
    (``simpe.loop.group``) in groups, each dealt round-robin into as many parts as leave no worker idle (a part's runs
    alike in cost to another's: measured, make simulate's six split by cost order took 1.14x their time alone); every
    other run a task of its own."""
    from simpe.loop.lockstep import lockstep_key, why_alone
    from simpe.loop.plan import group_identity

    groups: dict[str, list[tuple[RunSpec, bool]]] = {}
    tasks: list[list[tuple[RunSpec, bool]]] = []
    for item in todo:
        cfg = item[0].cfg
        if why_alone(cfg) is not None:
            tasks.append([item])
            continue
        groups.setdefault(lockstep_key(cfg, group_identity(cfg)), []).append(item)
    spare = max(1, workers - len(tasks))
    for members in groups.values():  # (longest first) dealt round-robin, so that the parts' costs are alike
        parts = max(1, min(len(members), spare // max(1, len(groups))))
        tasks += [members[i::parts] for i in range(parts)]
    # the costliest task first (a group costs its runs' sum): a long group queued behind the runs alone would end
    # last, alone on one worker (make replicate's 13-run group on scalc: 41,000 of 127,000 baseline-segments)
    return sorted(tasks, key=lambda task: -sum(expected_cost(spec) for spec, _ in task))


ADDRESS_TIMEOUT = 5.0  # seconds to wait for a Ray head to answer before the sweep is refused


def check_address(address: str | None, timeout: float = ADDRESS_TIMEOUT) -> None:
    """Refuse, in one line and within ``timeout`` seconds, an ``--address`` no Ray head answers at (ray.init would
    retry for minutes), and ``ray://`` where the Ray Client's packages are missing (plain ``ray`` has no client)."""
    import importlib.util
    import socket

    from simpe.errors import ConfigError

    if not address or address in ("auto", "local"):
        return
    if address.startswith("ray://"):
        if importlib.util.find_spec("grpc") is None:
            raise ConfigError(f"--address {address}: the Ray Client (ray://) needs the packages of ray[client], which simpe does not "
                              "install; `pip install 'ray[client]'` into the venv, or give the head's cluster address HOST:6379 "
                              "from a machine of the cluster")
        rest = address.removeprefix("ray://")
    else:
        rest = address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        why = "timed out" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__)
        raise ConfigError(f"--address {address}: no Ray head answers at {host}:{port} ({why}, within {timeout:g} s); "
                          "start the head (`ray start --head`) or give its address") from None


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
            if done != line.n:  # down too: a run started again from nothing
                line.n = done
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
        self.offset, self.count, self.last, self.inode = 0, 0, b"", None

    def read(self) -> tuple[int, str]:
        """(complete lines, running figures); a file replaced or cut short since the last read (a stale run started
        again from nothing: the worker clears the folder after the driver first read the old file) is read anew."""
        try:
            with open(self.file, "rb") as handle:
                stat = os.fstat(handle.fileno())
                if stat.st_ino != self.inode or stat.st_size < self.offset:
                    self.offset, self.count, self.last, self.inode = 0, 0, b"", stat.st_ino
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


def _triage(specs: list[RunSpec], as_simulate: tuple[bool, bool] | None,
            restart: Collection[Path] = ()) -> tuple[dict[str, Outcome], list[tuple[RunSpec, bool]]]:
    """The outcomes known before anything runs (complete: skipped; a folder that is not a run's: failed) and the
    runs to start, each with whether it resumes. As ``simpe simulate``, every run starts (its folders are checked).
    A run in ``restart`` starts again from nothing, complete or not."""
    outcomes: dict[str, Outcome] = {}
    todo: list[tuple[RunSpec, bool]] = []
    for spec in specs:
        if as_simulate is not None:
            todo.append((spec, as_simulate[0]))
            continue
        if spec.path in restart:
            todo.append((spec, False))
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
    return outcomes, todo


def _start(address: str | None, workers: int | None, threads: int | None, runs: int) -> tuple[Any, int, int]:
    """Ray, started on a cluster (its CPUs, one torch thread per run unless told) or on this machine (every core,
    shared evenly by the runs that go at once), with the workers and threads per run it allows."""
    if address:
        ray = start_ray(address, 0)
        threads = threads or 1
        return ray, workers or max(1, int(ray.cluster_resources().get("CPU", 1)) // threads), threads
    cores = cpu_count()
    if threads is None:
        threads = max(1, cores // max(1, workers or min(runs, cores)))
    if workers is None:
        workers = max(1, min(runs, cores // threads))
    return start_ray(None, workers * threads, gpus=None), workers, threads


def execute(specs: list[RunSpec], workers: int | None = None, threads: int | None = None, address: str | None = None,
            gpus_per_run: float = 0.0, progress: bool = True, as_simulate: tuple[bool, bool] | None = None,
            return_results: bool = False, restart: Collection[Path] = (), lockstep: bool = True) -> list[Outcome]:
    """Run ``specs`` as Ray tasks, ``workers`` at a time with ``threads`` torch threads (CPUs) each.

    Complete runs are skipped, incomplete ones resumed; a failed run is an ``Outcome`` with
    its error, never an exception. Locally Ray gets ``workers * threads`` CPUs. With
    ``as_simulate=(resume, overwrite)`` every run is started as ``simpe simulate`` would
    (the caller has checked the folders), nothing skipped. With ``return_results`` the runs
    come back to this machine's ``runs_dir`` as archives (see the module docstring). The runs whose folders are in
    ``restart`` start again from nothing (their folders emptied, as ``--overwrite`` does), complete or not. With
    ``lockstep`` a task runs a lockstep group (``lockstep_tasks``), else one run.
    """
    outcomes, todo = _triage(specs, as_simulate, restart)
    overwrite = bool(as_simulate and as_simulate[1])
    if todo and not address:  # a model this machine cannot have fails every run: say so once, before Ray starts
        from simpe.model import check_available

        for model in sorted({str(spec.cfg.model.path or "") for spec, _ in todo}):
            check_available(model or None)
    if todo:
        ray, workers, threads = _start(address, workers, threads, len(todo))
        remote = ray.remote(run_group_task).options(num_cpus=threads, num_gpus=gpus_per_run or 0, max_retries=0)
        cwd = os.getcwd()
        shown = Progress(len(specs), len(specs) - len(todo), "simulate" if as_simulate is not None else "sweep") if progress else None
        pending: dict[Any, list[tuple[RunSpec, bool]]] = {}
        ordered = sorted(todo, key=lambda item: -expected_cost(item[0]))  # the longest first; ties keep their order
        queue = lockstep_tasks(ordered, workers) if lockstep else [[item] for item in ordered]
        for task in queue:
            if len(task) > 1:
                logger.info("in lockstep (one pass for %d runs): %s", len(task), ", ".join(spec.name for spec, _ in task))
        try:
            while queue or pending:
                while queue and len(pending) < workers:
                    task = queue.pop(0)
                    runs = []
                    for spec, resume in task:
                        overrides = [*spec.overrides, f"adapter={spec.name}"]
                        if gpus_per_run:
                            overrides.append("device=cuda")
                        runs.append({"adapter": spec.adapter, "overrides": overrides, "resume": resume,
                                     "overwrite": overwrite or spec.path in restart,
                                     "returned": pack(spec.path) if return_results and resume else None})
                        if shown is not None:
                            shown.start(spec)
                    pending[remote.remote(runs, threads, cwd, return_results)] = task
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=None if shown is None else 2.0)
                if shown is not None:
                    shown.poll()
                for ref in ready:
                    task = pending.pop(ref)
                    try:
                        results = ray.get(ref)
                    except Exception as err:  # the worker died (killed, out of memory): report, go on
                        results = [{"status": "failed", "seconds": 0.0, "error": f"{type(err).__name__}: {err}"}] * len(task)
                    for (spec, _resume), result in zip(task, results):
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


