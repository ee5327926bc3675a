"""A lockstep group's records against the same runs alone, under several CPU kernel sets (docs/lockstep.md).

    python scripts/lockstep_check.py [--presets baseline full ...] [--segments 500] [--kernels native default avx2]

For each kernel set (``ATEN_CPU_CAPABILITY``; ``native``: torch's own choice) it runs the presets twice with
``simpe simulate`` at one torch thread, as one lockstep group and with ``--lockstep off``, then compares each run's
folders file by file (``simpe.rundir.same.differences``: every record field but the clock, the snapshots, the store,
the summary's figures). Prints one row per kernel set and preset; exit 1 when any run differs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simpe.rundir.same import differences

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["baseline", "full", "bias", "fixed", "top", "lasso"])
    parser.add_argument("--segments", type=int, default=500)
    parser.add_argument("--kernels", nargs="+", default=["native", "default", "avx2"])
    args = parser.parse_args()
    failed = 0
    print(f"| kernel set | preset | {args.segments} segments: group against alone |\n| --- | --- | --- |")
    for kernels in args.kernels:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if kernels != "native":
            env["ATEN_CPU_CAPABILITY"] = kernels
        with tempfile.TemporaryDirectory() as scratch:
            folders = {}
            for mode in ("on", "off"):
                runs = Path(scratch) / mode
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "simpe", "simulate", "--preset", *args.presets, "--segments",
                                       str(args.segments), "--runs-dir", str(runs), "--lockstep", mode, "--no-progress",
                                       "--threads", "1"], cwd=REPO, env=env, capture_output=True, text=True)
                if done.returncode:
                    print(done.stderr[-3000:], file=sys.stderr)
                    return 2
                folders[mode] = runs
                print(f"<!-- {kernels}, lockstep {mode}: {time.perf_counter() - start:.1f} s -->")
            for preset in args.presets:
                group = next(folders["on"].glob(f"*/{preset}"))
                alone = folders["off"] / group.parent.name / preset
                found = differences(alone, group)
                failed += bool(found)
                print(f"| {kernels} | {preset} | {'identical' if not found else '; '.join(found)} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
