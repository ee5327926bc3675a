#!/usr/bin/env bash
# Before and after a change, in one sitting on one machine: make bench-topk, make bench-loop ARGS="--segments 100" and
# make simulate (the six presets, 500 segments, WORKERS=nproc), first in a worktree of REV (before), then in this
# checkout (after); then make bench-snapshot, which alternates REV and this checkout itself. Run it on an idle machine.
#   benchmarks/before_after.sh REV [OUT]        # OUT (default /tmp/before-after): each benchmark's output
# REV's simpe/ runs with this checkout's venv; a method that needs the train split (EWC before it was shipped as
# data/libreoffice/train-sample.*) gets this checkout's train files where they exist. The figures are printed, not
# recorded: this checkout's benchmarks record their own rows in docs/benchmark-results.md as they run.
set -u
REV=${1:?usage: benchmarks/before_after.sh REV [OUT]}
OUT=${2:-/tmp/before-after}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=$OUT/tree
mkdir -p "$OUT"
[ -d "$BEFORE" ] || git -C "$HERE" worktree add -q --detach "$BEFORE" "$REV"
ln -sfn "$HERE/.venv" "$BEFORE/.venv"
for f in "$HERE"/data/libreoffice/train.*; do [ -e "$f" ] && ln -sf "$f" "$BEFORE/data/libreoffice/"; done
run() {  # name tree command...
  local name=$1 tree=$2; shift 2
  echo "== $name $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  (cd "$tree" && PYTHONPATH="$tree" "$@") > "$OUT/$name.txt" 2>&1
}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run topk-before "$BEFORE" .venv/bin/python benchmarks/bench_topk.py
run topk-after "$HERE" .venv/bin/python benchmarks/bench_topk.py
run loop-before "$BEFORE" .venv/bin/python benchmarks/bench_loop.py --segments 100
run loop-after "$HERE" .venv/bin/python benchmarks/bench_loop.py --segments 100
unset OMP_NUM_THREADS MKL_NUM_THREADS
rm -rf "$OUT/sim-before" "$OUT/sim-after"
run sim-before "$BEFORE" /usr/bin/time -f "wall %e s" make -o .venv/.installed simulate RUNS="$OUT/sim-before"
run sim-after "$HERE" /usr/bin/time -f "wall %e s" make -o .venv/.installed simulate RUNS="$OUT/sim-after"
run snapshot "$HERE" env OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_snapshot.py --before "$REV"
grep -h "speed ratio with decode_batch" "$OUT"/topk-*.txt
tail -n 1 "$OUT"/sim-*.txt
tail -n 3 "$OUT/snapshot.txt"
