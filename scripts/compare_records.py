"""Did a new replication call move any metric? Compare two records folders run by run, segment-paired.

    python scripts/compare_records.py OLD_RECORDS NEW_RECORDS [--parts scalc ...] [--alpha 0.05]

OLD_RECORDS is typically the committed records read out of git (``git archive HEAD docs/replication/records``),
NEW_RECORDS the folder a fresh ``make replicate`` wrote. For every run present in both (same part, same run name,
same segments), each metric the records keep per segment (BLEU, TER, SBLEU, R0/R1/R0+1 and their novel-word and
subword variants) is scored from the per-segment statistics on both sides and tested with the project's paired
bootstrap (``simpe.stats.paired_bootstrap``, 1,000 resamples over segments, sacreBLEU's draw): the new run against
the old one on the same segments. A row prints the old and new score, the difference with its 95 % interval, the
p-value and how many segments' statistics differ at all. Exit 1 when any difference is significant at ``--alpha``
after a Bonferroni correction over every (run, metric) test, else 0; exit 2 on bad arguments.

This is the check "no metric of any method may move significantly" of a change that is meant to keep the
computation (a moved module, a faster kernel): two identical runs print 0 differing segments everywhere.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from simpe.metrics import metric_for
from simpe.replicate.records import DERIVED_R, SBLEU, SEGMENT_KEYS, read_records
from simpe.report.compare import segment_stats
from simpe.stats import paired_bootstrap

KEYS = (*SEGMENT_KEYS[:2], SBLEU, *SEGMENT_KEYS[2:], *DERIVED_R)


def compare(old: Path, new: Path, parts: list[str] | None, alpha: float) -> int:
    a, b = read_records(old), read_records(new)
    rows: list[tuple[str, str, str, float, float, float, tuple[float, float], float, int]] = []
    for part in parts or sorted(set(a.runs) & set(b.runs)):
        old_runs = {r.run.name: r.run for r in a.runs.get(part, [])}
        new_runs = {r.run.name: r.run for r in b.runs.get(part, [])}
        if not old_runs or not new_runs:
            print(f"{part}: no runs on {'both sides' if not old_runs and not new_runs else 'one side'}; skipped")
            continue
        for name in sorted(set(old_runs) & set(new_runs)):
            ro, rn = old_runs[name], new_runs[name]
            n = min(ro.num_segments, rn.num_segments)
            if ro.num_segments != rn.num_segments:
                print(f"{part}/{name}: {ro.num_segments} against {rn.num_segments} segments; the first {n} compared")
            for key in KEYS:
                so, sn = segment_stats(ro, key, n), segment_stats(rn, key, n)
                if so is None or sn is None:
                    continue
                differ = int(np.count_nonzero(np.any(so != sn, axis=1)))
                result = paired_bootstrap(so, sn, metric_for(key).scores_from_stats)
                rows.append((part, name, key, result.baseline_score, result.system_score, result.delta,
                             result.delta_ci95, result.p_value, differ))
    if not rows:
        print("no run is in both folders", file=sys.stderr)
        return 2
    tests = len(rows)
    threshold = alpha / tests
    moved = [r for r in rows if not np.isnan(r[7]) and r[7] < threshold]
    print(f"{'part':<11} {'run':<10} {'metric':<14} {'old':>9} {'new':>9} {'new-old':>9} {'95% interval':>21} "
          f"{'p':>6} {'segs differ':>11}")
    for part, name, key, o, nw, d, (lo, hi), p, differ in rows:
        mark = " *" if (part, name, key) in {(m[0], m[1], m[2]) for m in moved} else ""
        print(f"{part:<11} {name:<10} {key:<14} {o:9.4f} {nw:9.4f} {d:+9.4f} [{lo:+9.4f}, {hi:+9.4f}] {p:6.3f} "
              f"{differ:11d}{mark}")
    print(f"{tests} tests; Bonferroni threshold p < {threshold:.2g} (alpha {alpha}); significant moves: {len(moved)}")
    return 1 if moved else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--parts", nargs="+", help="experiments to compare (default: every one in both)")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    for folder in (args.old, args.new):
        if not folder.is_dir():
            print(f"compare_records: error: {folder} is not a records folder", file=sys.stderr)
            return 2
    return compare(args.old, args.new, args.parts, args.alpha)


if __name__ == "__main__":
    sys.exit(main())
