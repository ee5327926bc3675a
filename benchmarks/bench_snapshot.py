"""One ranking snapshot as the loop takes it, before and after a change, side by side, with where the time goes.

    python benchmarks/bench_snapshot.py [--before REV] [--rounds 2] [--model models/demo-en-de]
                                        [--preset baseline] [--set key=value ...] [--threads 1] [--cprofile N]
                                        [--device cpu|cuda]

The probe set and the ranking settings are the loop's (``simpe.loop.run.probe_set`` and the
``ranking`` section of adapters/defaults.yaml, merged with ``--preset`` and ``--set``): 20 short
dev sentences, exact top-10, a plain beam, 200 Monte Carlo samples each, chrF. Each timing is
one snapshot (``simpe.ranking.evaluate.evaluate``, as ``snapshot`` runs it) in a fresh worker
process, after a warm-up snapshot of two sentences: the code of this checkout ("after") and
the code of ``--before`` (a git revision; its ``simpe/`` is extracted with ``git archive``;
"none" skips it), alternating ``--rounds`` times so that both see the same machine load. The
per-sentence records of both (top-k lists, scores, qualities, beams, samples, figures; timings
left out) must be identical: exit status 1 when they are not.

Where the time goes: each function the snapshot passes through is wrapped with a timer and
its time is charged to the innermost one (encoder, top-k's bounding beam, top-k search, plain
beam, sampling, the cache reorders, detokenising, quality, figures), with the model's forward
passes split out of each; ``--cprofile N`` also prints cProfile's top N functions of one
"after" snapshot. Timings are wall clock and CPU seconds of the worker process, one torch
thread by default: on this shared 2-core machine, compare only figures taken in one run.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from entry import run_main

REPO = Path(__file__).resolve().parent.parent
BEFORE = "a73a748"  # the last commit before issue 55's snapshot changes (issue 28's: 96f250f)


# ---------------------------------------------------------------- the worker (runs in the tree under test)
class Phases:
    """Wall seconds charged to the innermost running phase (so nested phases never count twice)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.stack: list[list[Any]] = []  # [name, start of its current own stretch]

    def wrap(self, name: str, fn: Any, forward: bool = False) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            now = time.perf_counter()
            label = name
            if self.stack:
                parent = self.stack[-1]
                self.seconds[parent[0]] = self.seconds.get(parent[0], 0.0) + now - parent[1]
                if forward:  # the model's forward passes, by the phase that asked for them
                    label = f"{parent[0].split(' / ')[0]} / model forward"
            self.stack.append([label, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.perf_counter()
                top = self.stack.pop()
                self.seconds[top[0]] = self.seconds.get(top[0], 0.0) + end - top[1]
                if self.stack:
                    self.stack[-1][1] = end
        return timed

    def patch(self, owner: Any, attribute: str, name: str, forward: bool = False) -> None:
        if hasattr(owner, attribute):
            setattr(owner, attribute, self.wrap(name, getattr(owner, attribute), forward))


def _instrument(phases: Phases, model: Any, tokenizer: Any) -> None:
    """Wrap what a snapshot passes through (names present in both the old and the new tree)."""
    import simpe.decoders.beam as beam
    import simpe.decoders.incremental as incremental
    import simpe.decoders.sampling as sampling
    import simpe.decoders.topk as topk
    import simpe.metrics.utility as utility
    import simpe.ranking.evaluate as evaluate
    from simpe.models import family_of

    family = family_of(model)
    phases.patch(family, "encode", "encoder")
    phases.patch(family, "forward", "model forward", forward=True)
    phases.patch(topk, "beam_search_many", "top-k: bounding beam")
    phases.patch(topk.BatchedSearch, "run", "top-k: search")
    phases.patch(beam, "beam_search_many", "plain beam")
    phases.patch(sampling, "draw_samples_many", "sampling")
    phases.patch(incremental.Lockstep, "select", "cache reorder")
    for name in ("decode", "batch_decode", "convert_ids_to_tokens"):
        phases.patch(tokenizer, name, "detokenise")
    phases.patch(utility.MetricUtility, "matrix", "quality")
    phases.patch(evaluate, "rank_figures", "figures")


def _strip(value: Any) -> Any:
    """A record without its timings."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "seconds" and not k.endswith("seconds")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def worker(args: argparse.Namespace) -> int:
    sys.path.insert(0, args.tree)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    import simpe
    from simpe import log
    try:
        from simpe.config.tree import RankingConfig
    except ModuleNotFoundError:  # a tree from before issue 55 moved the config into a package (simpe/config.py)
        from simpe.config import RankingConfig
    from simpe.model import load_model
    from simpe.ranking.evaluate import evaluate

    assert Path(simpe.__file__).resolve().is_relative_to(Path(args.tree).resolve()), simpe.__file__
    log.quiet()
    job = json.loads(Path(args.job).read_text(encoding="utf-8"))
    cfg = RankingConfig(**job["ranking"])
    loaded = load_model(job["model"], job["device"])
    model, tokenizer = loaded.model, loaded.tokenizer
    model.eval()
    sources, references = job["sources"], job["references"]
    evaluate(model, tokenizer, sources[:2], references[:2], cfg)  # warm-up: allocator, lazy imports
    out: dict[str, Any] = {"tree": args.tree, "threads": torch.get_num_threads()}
    phases = Phases()
    if args.phases:
        _instrument(phases, model, tokenizer)
    profiler = None
    if args.cprofile:
        import cProfile

        profiler = cProfile.Profile()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with profiler or contextlib.nullcontext():
        summary, records = evaluate(model, tokenizer, sources, references, cfg, keep_records=True)
    out["wall"], out["cpu"] = time.perf_counter() - wall0, time.process_time() - cpu0
    out["phases"] = phases.seconds
    out["summary"], out["records"] = _strip(summary), _strip(records)
    if profiler is not None:
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.cprofile)
        out["cprofile"] = text.getvalue()
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")
    return 0


# ---------------------------------------------------------------- the driver
def _job(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """The loop's probe set and ranking settings, written for the workers."""
    sys.path.insert(0, str(REPO))
    from dataclasses import asdict

    from simpe.config.files import load_config
    from simpe.loop.run import load_stream, probe_set
    from simpe.model import model_folder

    overrides = list(args.set) + ([f"model={args.model}"] if args.model else [])
    cfg = load_config(args.preset, overrides)
    dataset, segments = load_stream(cfg)
    probe = probe_set(cfg, dataset, segments)
    # the model path absolute: an extracted old tree has no models/ beside it
    job = {"model": str(model_folder(cfg.model.path) or cfg.model.path), "ranking": asdict(cfg.ranking),
           "sources": [s.source for s in probe], "references": [s.reference for s in probe], "device": args.device}
    path.write_text(json.dumps(job), encoding="utf-8")
    return job


def _extract(rev: str, into: Path) -> None:
    """``rev``'s simpe/ package into ``into``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "simpe"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _run_worker(tree: Path, job: Path, out: Path, args: argparse.Namespace, cprofile: int = 0) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads or os.environ.get("OMP_NUM_THREADS", "")), "PYTHONPATH": str(tree)}
    if not args.threads:
        env.pop("OMP_NUM_THREADS")
    command = [sys.executable, __file__, "--worker", "--tree", str(tree), "--job", str(job), "--out", str(out),
               "--threads", str(args.threads), "--cprofile", str(cprofile)] + ([] if args.no_phases else ["--phases"])
    subprocess.run(command, check=True, env=env, cwd=str(REPO))
    return json.loads(out.read_text(encoding="utf-8"))


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def _phase_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    names = sorted({n for side in runs.values() for r in side for n in r["phases"]},
                   key=lambda n: -max(statistics.median(r["phases"].get(n, 0.0) for r in side) for side in runs.values() if side))
    sides = [s for s in runs if runs[s]]
    lines = [f"{'where the time goes (median s)':40s}" + "".join(f"{s:>10s}" for s in sides)]
    for name in names:
        lines.append(f"{name:40s}" + "".join(f"{statistics.median(r['phases'].get(name, 0.0) for r in runs[s]):10.3f}"
                                              for s in sides))
    rest = {s: statistics.median(r["wall"] - sum(r["phases"].values()) for r in runs[s]) for s in sides}
    lines.append(f"{'other (figures, records, Python around)':40s}" + "".join(f"{rest[s]:10.3f}" for s in sides))
    lines.append(f"{'snapshot (wall)':40s}" + "".join(f"{statistics.median(r['wall'] for r in runs[s]):10.3f}" for s in sides))
    return lines


def main() -> int:
    if "--worker" in sys.argv[1:]:  # the tree under test must be the first simpe this process imports
        worker_parser = argparse.ArgumentParser()
        for flag in ("--worker", "--phases"):
            worker_parser.add_argument(flag, action="store_true")
        for flag in ("--tree", "--job", "--out"):
            worker_parser.add_argument(flag)
        worker_parser.add_argument("--threads", type=int, default=1)
        worker_parser.add_argument("--cprofile", type=int, default=0)
        return worker(worker_parser.parse_args())
    sys.path.insert(0, str(REPO))
    from simpe.cli import DeprecatedFlag

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"git revision timed beside this checkout (default {BEFORE}; none: skip)")
    parser.add_argument("--rounds", type=int, default=2, help="before/after pairs, alternating (default 2)")
    parser.add_argument("--preset", default="baseline", help="a preset under adapters/ (default: %(default)s)")
    parser.add_argument("--adapter", dest="preset", action=DeprecatedFlag, new="--preset")
    parser.add_argument("--model", default=None, help="default: the config's (models/demo-en-de)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override, e.g. ranking.samples=100")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default; default: 1)")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="print cProfile's top N functions of one 'after' snapshot")
    parser.add_argument("--no-phases", action="store_true", help="no timers around the phases (their overhead is ~1%%)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phases", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    before = None if args.before.lower() == "none" else args.before
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        job = _job(args, work / "job.json")
        trees = {"after": REPO}
        if before:
            (work / "before").mkdir()
            _extract(before, work / "before")
            trees["before"] = work / "before"
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for round_ in range(args.rounds):
            for side in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                if side in trees:
                    result = _run_worker(trees[side], work / "job.json", work / f"{side}{round_}.json", args)
                    runs[side].append(result)
                    print(f"round {round_ + 1} {side:6s}: {result['wall']:6.2f} s wall, {result['cpu']:6.2f} s CPU", flush=True)
        if args.cprofile:
            profiled = _run_worker(REPO, work / "job.json", work / "profile.json", args, cprofile=args.cprofile)
            print(profiled["cprofile"])
    cfg = job["ranking"]
    print(f"\nbench-snapshot: one ranking snapshot, {len(job['sources'])} probe sentences, exact top-{cfg['k']}, "
          f"plain beam {cfg['beam_size']}, {cfg['samples']} samples each, quality {cfg['quality']}; "
          f"{runs['after'][0]['threads']} torch thread(s), load average {os.getloadavg()[0]:.2f}")
    print("\n".join(_phase_table(runs)))
    after = statistics.median(r["wall"] for r in runs["after"])
    figures = {"after": f"{after:.2f} s/snapshot"}
    status = 0
    if runs["before"]:
        old = statistics.median(r["wall"] for r in runs["before"])
        old_cpu, new_cpu = (statistics.median(r["cpu"] for r in runs[side]) for side in ("before", "after"))
        diffs = [d for r in runs["before"] + runs["after"][1:]
                 for d in _differences({"summary": r["summary"], "records": r["records"]},
                                       {"summary": runs["after"][0]["summary"], "records": runs["after"][0]["records"]})]
        same = "identical" if not diffs else f"DIFFERENT ({len(diffs)} values; first: {diffs[0]})"
        print(f"before ({before}): {old:.2f} s, after: {after:.2f} s per snapshot (median of {args.rounds}): "
              f"{old / after:.2f}x faster, {after / old:.2f} of the time; CPU {old_cpu:.2f} s -> {new_cpu:.2f} s, "
              f"{old_cpu / new_cpu:.2f}x; records (timings left out): {same}")
        figures = {"before": f"{old:.2f} s/snapshot ({old_cpu:.2f} s CPU; {before})",
                   "after": f"{after:.2f} s/snapshot ({new_cpu:.2f} s CPU), {old / after:.2f}x ({old_cpu / new_cpu:.2f}x CPU)",
                   "records": same.split(" (")[0]}
        status = 1 if diffs else 0
    else:
        print(f"after: {after:.2f} s per snapshot (median of {args.rounds})")
    from record import record

    record("bench-snapshot", figures, threads=args.threads or None)
    return status


if __name__ == "__main__":
    sys.exit(run_main(main))
