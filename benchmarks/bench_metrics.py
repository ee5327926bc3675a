#!/usr/bin/env python
"""Benchmark of simpe's metrics: every cumulative curve for 10,000 segments (target: under 5 s).

References: the first N lines of the shipped ``data/libreoffice/stream.de`` (cycled when N
is larger). Hypotheses (``--hyps``):

- ``perturb`` (default): a lightly damaged copy of each reference, seeded: 40% lose one
  word, 30% get two neighbouring words swapped, the rest are unchanged (a decent system);
- ``shifted``: the next reference (i+1), i.e. unrelated sentences of the same domain (a
  bad system; TER's shift search is slowest there).

Timed separately, each over all N segments:

1. text pipeline: Moses tokenisation + truecasing of hypotheses and references (R metrics);
2. sacreBLEU per-segment sufficient statistics (BLEU n-gram counts, chrF character
   n-gram counts, TER edits) from the detokenised text;
3. end to end: ``OnlineScorer.add`` per segment (1 + 2 + content words, per-segment
   values, and the running cumulative values), as the online loop calls it;
4. accumulation: every cumulative curve (BLEU, chrF, TER, SBLEU, R0, R1, R0+1, ...) after
   every segment, from the logged per-segment records (``cumulative_curves``: running sums of
   the sufficient statistics, never rescoring a prefix). This is the figure the 5 s target is
   about; 1 and 2 are per-segment costs the loop pays once per segment whatever is accumulated.

Each stage prints wall-clock and CPU seconds (``time.process_time``, this process only). The
target is checked on CPU seconds, because on a machine shared with a training job the wall
clock mostly measures the scheduler; the wall figure is printed beside it.

Usage: ``python benchmarks/bench_metrics.py [--segments 10000] [--hyps perturb|shifted] [--r-max-k 1]``.
Exits 1 when the accumulation misses the target.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

from entry import run_main
from record import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simpe.config.files import defaults  # noqa: E402
from simpe.measure.score import resolve_truecaser  # noqa: E402
from simpe.metrics import METRICS  # noqa: E402
from simpe.metrics.online import OnlineScorer, cumulative_curves  # noqa: E402
from simpe.metrics.text import TextPipeline  # noqa: E402

TARGET_S = 5.0


def load_segments(count: int, mode: str) -> tuple[list[str], list[str]]:
    stream = ROOT / "data" / "libreoffice" / "stream.de"
    lines = [line.rstrip("\n") for line in stream.open(encoding="utf-8")]
    refs = [lines[i % len(lines)] for i in range(count)]
    if mode == "shifted":
        hyps = [lines[(i + 1) % len(lines)] for i in range(count)]
    else:
        rng = random.Random(0)
        hyps = []
        for ref in refs:
            words, roll = ref.split(), rng.random()
            if len(words) > 2 and roll < 0.4:
                del words[rng.randrange(len(words))]
            elif len(words) > 3 and roll < 0.7:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
            hyps.append(" ".join(words))
    return hyps, refs


def timed(label: str, fn, count: int):
    """Run ``fn``; print and return its wall-clock and CPU (this process) seconds."""
    start, start_cpu = time.perf_counter(), time.process_time()
    result = fn()
    seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    print(f"{label:<58s} wall {seconds:7.2f} s  cpu {cpu:7.2f} s  ({1e3 * cpu / count:.3f} ms cpu/segment)")
    return result, (seconds, cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--hyps", choices=["perturb", "shifted"], default="perturb")
    parser.add_argument("--r-max-k", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the timings here")
    args = parser.parse_args(argv)

    hyps, refs = load_segments(args.segments, args.hyps)
    cfg = resolve_truecaser(defaults("metrics", lang="de", stopwords="de", r_max_k=args.r_max_k))
    n = len(refs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{n} segments, hypotheses: {args.hyps}; {os.cpu_count()} CPUs, load average {load:.2f}; "
          f"Python {platform.python_version()}; truecaser: {cfg.truecaser}")

    pipe = TextPipeline(cfg.lang, cfg.truecaser)
    _, t_text = timed("1. text pipeline (Moses tokenise + truecase, hyp + ref)",
                      lambda: [(pipe.tokens(h), pipe.tokens(r)) for h, r in zip(hyps, refs)], n)
    corpus = [METRICS.build(name) for name in ("bleu", "chrf", "ter")]
    _, t_stats = timed("2. sacreBLEU segment statistics (BLEU + chrF + TER)",
                       lambda: [[metric.segment_stats(h, r) for metric in corpus] for h, r in zip(hyps, refs)], n)
    scorer = OnlineScorer(cfg)
    records, t_e2e = timed("3. end to end: OnlineScorer.add (1 + 2 + R + cumulative)",
                           lambda: [scorer.add(h, r) for h, r in zip(hyps, refs)], n)
    records = json.loads(json.dumps(records))  # as read back from segments.jsonl
    curves, t_acc = timed("4. accumulation: every cumulative curve from the records", lambda: cumulative_curves(records, cfg), n)

    assert all(len(curve) == n for curve in curves.values())
    assert curves["bleu"][-1] == scorer.summary()["corpus"]["bleu"]
    final = {name: round(curve[-1], 4) if curve[-1] is not None else None for name, curve in curves.items()}
    print(f"curves: {', '.join(curves)}; final values: {final}")
    wall, cpu = t_acc
    # The target is judged on this process's CPU time: on a machine shared with a training job,
    # wall-clock time measures the scheduler more than this code. Both are printed.
    ok = cpu < TARGET_S
    busy = " (machine busy: wall time inflated by other processes)" if wall > 1.5 * cpu + 0.05 else ""
    print(f"accumulation of every cumulative curve for {n} segments: cpu {cpu:.2f} s, wall {wall:.2f} s{busy}: "
          f"{'meets' if ok else 'MISSES'} the {TARGET_S:.0f} s target")
    record("bench-metrics", {f"{n} segments": f"every cumulative curve in {cpu:.2f} s CPU ({wall:.2f} s wall)",
                             "end to end (OnlineScorer.add)": f"{t_e2e[1] / n * 1000:.2f} ms/segment CPU"})
    if args.json:
        args.json.write_text(json.dumps({"segments": n, "hyps": args.hyps, "load_average": load,
                                         "seconds_wall_cpu": {"text": t_text, "sacre_stats": t_stats,
                                                              "end_to_end": t_e2e, "accumulation": t_acc}}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
