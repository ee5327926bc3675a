"""Wall time of `make simulate` run one method after another vs as parallel Ray tasks, side by side,
and the check that both give the same records.

    python benchmarks/bench_simulate.py [--segments 100] [--methods baseline full ...] [--workers N]

Sequential: the methods in turn in this process with torch on every core (what `make simulate
WORKERS=1` does). Parallel: the same methods through `simpe.sweep.execute` (what `make simulate`
does with WORKERS=N), N runs at a time with cores / N torch threads each; the local Ray's
start-up is counted in its wall time. Records are compared without their timings.
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
from entry import run_main
from record import record

from simpe import log
from simpe.config.files import run_configs
from simpe.loop.run import simulate
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.sweep import cpu_count, execute, plan


def _records(path: Path) -> list[dict]:
    records = read_jsonl(path / layout.SEGMENTS_FILE)
    for row in records:
        row.pop("seconds")
    return records


def _differences(a: object, b: object, key: str = "") -> list[tuple[str, float]]:
    """(key, largest absolute difference) of the numbers that differ; inf for a difference that is not numeric."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for name in sorted(set(a) | set(b)):
            out += _differences(a.get(name), b.get(name), f"{key}.{name}" if key else name)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for x, y in zip(a, b) for d in _differences(x, y, key)]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return [] if a == b else [(key, abs(a - b))]
    return [] if a == b else [(key, math.inf)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--methods", nargs="+", default=["baseline", "full", "bias", "fixed", "top", "lasso"])
    parser.add_argument("--workers", type=int, default=None, help="parallel runs (default: the cores, at most one per method)")
    parser.add_argument("--sequential-threads", type=int, default=None, help="torch threads of the sequential runs (default: the cores)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    log.setup()
    logging.getLogger("simpe").setLevel(logging.WARNING)
    cores = cpu_count()
    workers = args.workers or max(1, min(cores, len(args.methods)))
    threads = max(1, cores // workers)
    seq_threads = args.sequential_threads or cores
    with tempfile.TemporaryDirectory() as tmp:
        base = [f"data.segments={args.segments}", f"device={args.device}"]
        torch.set_num_threads(seq_threads)
        start = time.perf_counter()
        seq_paths = simulate(run_configs(args.methods, [*base, f"runs_dir={tmp}/sequential"]), progress=False)
        sequential = time.perf_counter() - start

        specs = plan(args.methods, overrides=[*base, f"runs_dir={tmp}/parallel"], baseline=False)
        start = time.perf_counter()
        outcomes = execute(specs, workers=workers, threads=threads, progress=False)
        parallel = time.perf_counter() - start
        failed = [o for o in outcomes if o.status == "failed"]
        if failed:
            print(f"parallel runs failed: {[(o.name, o.error) for o in failed]}")
            return 1
        diffs = []
        for seq_path, outcome in zip(seq_paths, outcomes):
            found = _differences(_records(seq_path), _records(outcome.path))
            diffs += [(seq_path.name, key, d) for key, d in found]
    print(f"\nbench-simulate: {len(args.methods)} methods x {args.segments} segments of libreoffice stream, {cores} cores, {args.device}")
    print(f"{'mode':12s} {'runs at once':>12s} {'threads/run':>11s} {'wall s':>8s}")
    print(f"{'sequential':12s} {1:12d} {seq_threads:11d} {sequential:8.1f}")
    print(f"{'parallel':12s} {workers:12d} {threads:11d} {parallel:8.1f}")
    print(f"speed-up: {sequential / parallel:.2f}x (goal >= 1.6x on 2 cores; parallel includes Ray's start-up)")
    record("bench-simulate", {"sequential": f"{sequential:.1f} s", "parallel": f"{parallel:.1f} s ({workers} x {threads} threads)",
                              "speed-up": f"{sequential / parallel:.2f}x", "records": "identical" if not diffs else f"{len(diffs)} values differ"})
    if not diffs:
        print("records: identical (every field but the timings)")
    else:
        worst: dict[str, float] = {}
        for _, key, d in diffs:
            worst[key] = max(worst.get(key, 0.0), d)
        print(f"records: {len(diffs)} values differ; largest difference per field: "
              + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items())))
        if seq_threads != threads:
            print(f"  (the sequential runs used {seq_threads} torch threads, the parallel ones {threads}: float sums in another order; "
                  f"--sequential-threads {threads} compares like with like)")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
