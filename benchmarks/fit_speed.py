"""Fit the dry run's CPU rates (``simpe/scale_table.json``) to the measured rows of ``make bench-size``.

    python benchmarks/fit_speed.py [--fit demo nllb-600m llama3.2-1b] [--write]

Each measured plain row of the ``bench-size`` row of docs/benchmarks.json (model, method, dtype: translate and update
seconds per segment, and the update repetitions where the row records them) is set beside the dry run's time model of
the same run (``simpe.loop.dryrun.seconds`` of its ``time_facts``: the model's sizes from its config, the run's segments read
with its tokenizer, the decoder's length limit). The rates (bytes per second a decoding step reads and multiply-adds
per second, per dtype; the overhead of a decoding step and of a forward pass; the step's passes over the adapted bytes
beyond the cache; each method's forward passes per update repetition) are the ones that minimise the squared log ratio
of estimated to measured seconds (of the total, and with a third of that weight of each part), by Nelder-Mead on their
logarithms. The trained demo model's rows give the update repetitions per method that the dry run assumes of a trained
model (a shape-true model's random weights never reach the perplexity threshold: it repeats ``max_repeats`` times).

Fitted on the models of ``--fit``; every other measured model is printed as the check out of sample. ``--write``
writes the rates with where they came from; without it the table is only printed. ``make fit-speed`` runs this.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from entry import run_main  # noqa: E402 (benchmarks/ is on the path only now)

PARTS = re.compile(r"s/segment = translate ([\d.]+) \+ update ([\d.]+)")
PEAK = re.compile(r"^peak (\d+) MiB")
REPEATS = re.compile(r"([\d.]+) update repetitions per segment")
DTYPES = ("float32", "bfloat16")


def measured_rows(benchmarks: dict[str, Any]) -> dict[tuple[str, str, str], tuple[float, float, float | None, float]]:
    """(model, method, dtype) -> (translate, update, repetitions or None, peak MiB) of the bench-size row's plain runs."""
    rows = {}
    for key, text in benchmarks["bench-size"]["figures"].items():
        name, label, dtype = key.split()
        found = PARTS.search(text)
        if found is None or "+" in label:  # not run, failed, or a saver's row (its time is the plain method's and more)
            continue
        repeats = REPEATS.search(text)
        rows[(name, label, dtype)] = (float(found.group(1)), float(found.group(2)),
                                      float(repeats.group(1)) if repeats else None, float(PEAK.search(text).group(1)))
    return rows


def nelder_mead(f: Any, x0: list[float], step: float = 0.3, iterations: int = 6000, tolerance: float = 1e-9) -> list[float]:
    """The minimum of ``f`` near ``x0`` (Nelder and Mead 1965, standard coefficients)."""
    simplex = [list(x0)] + [[v + (step if i == j else 0.0) for j, v in enumerate(x0)] for i in range(len(x0))]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(len(simplex)), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tolerance:
            break
        centre = [sum(x[j] for x in simplex[:-1]) / (len(simplex) - 1) for j in range(len(x0))]

        def towards(point: list[float], t: float, centre: list[float] = centre) -> list[float]:
            return [c + t * (p - c) for c, p in zip(centre, point)]
        reflected = towards(simplex[-1], -1.0)
        value = f(reflected)
        if value < values[0]:
            expanded = towards(simplex[-1], -2.0)
            other = f(expanded)
            simplex[-1], values[-1] = (expanded, other) if other < value else (reflected, value)
        elif value < values[-2]:
            simplex[-1], values[-1] = reflected, value
        else:
            contracted = towards(simplex[-1], 0.5)
            other = f(contracted)
            if other < values[-1]:
                simplex[-1], values[-1] = contracted, other
            else:  # shrink towards the best point
                simplex = [simplex[0]] + [[b + 0.5 * (p - b) for b, p in zip(simplex[0], x)] for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(len(simplex)), key=values.__getitem__)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", nargs="+", default=["demo", "nllb-600m", "llama3.2-1b", "m2m100-418m", "mbart50-mmt"],
                        help="models fitted on (the others measured are printed out of sample)")
    parser.add_argument("--exclude", nargs="*", default=["demo:bfloat16"], metavar="MODEL:DTYPE",
                        help="rows of the fitted models left out of the fit and printed out of sample (default: the demo "
                             "model at bfloat16, whose weights sit in the cache: its bfloat16 decodes no faster than float32, "
                             "which rates per byte cannot fit beside real-size models)")
    parser.add_argument("--write", action="store_true", help="write simpe/scale_table.json")
    args = parser.parse_args()
    import bench_size

    from simpe.config.files import load_config
    from simpe.loop.dryrun import SPEED_TABLE, estimate, seconds
    from simpe.models import shapes

    benchmarks = json.loads((REPO / "docs" / "benchmarks.json").read_text(encoding="utf-8"))
    rows = measured_rows(benchmarks)
    defaults = bench_size.parser().parse_args([])  # the segments each model ran (bench-size's defaults)
    facts, peaks = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        folders: dict[str, Path | None] = {}
        for (name, method, dtype), (_, _, repeats, _) in sorted(rows.items()):
            if name not in folders:
                folders[name] = None if name == "demo" else shapes.write(name, Path(scratch) / name)
            cfg = load_config(method, bench_size.overrides(name, folders[name], dtype)
                              + [f"data.segments={bench_size.segments_of(name, defaults)}"])
            est = estimate(cfg, "cpu")
            peaks[(name, method, dtype)] = est.peak / 2**20
            found = est.time_facts
            if found is None:
                continue
            if repeats is not None:
                found.repetitions = repeats
            facts[(name, method, dtype)] = found
    methods = sorted({m for (_, m, _), f in facts.items() if f.adapted_bytes})
    demo = {m: [r[2] for (n, mm, _), r in rows.items() if n == "demo" and mm == m and r[2] is not None] for m in methods}
    repetitions = {m: round(sum(v) / len(v), 3) for m, v in demo.items() if v}
    names = [f"bandwidth {d}" for d in DTYPES] + [f"macs {d}" for d in DTYPES] + \
        ["step_overhead", "forward_overhead", "step_passes", "cache", "tied_passes"] + [f"forwards {m}" for m in methods]
    start = [5e9, 6e9, 4e10, 4e10, 1e-3, 6e-3, 4.0, 3e7, 12.0] + [1.0] * len(methods)

    def rates(x: list[float]) -> dict[str, Any]:
        v = dict(zip(names, (math.exp(t) for t in x)))
        return {"bandwidth": {d: v[f"bandwidth {d}"] for d in DTYPES}, "macs": {d: v[f"macs {d}"] for d in DTYPES},
                "step_overhead": v["step_overhead"], "forward_overhead": v["forward_overhead"],
                "step_passes": v["step_passes"], "cache": v["cache"], "tied_passes": v["tied_passes"],
                "forwards_per_repetition": {"baseline": 0.0, "knn": 0.0, **{m: v[f"forwards {m}"] for m in methods}},
                "repetitions": repetitions}

    facts = {key: f for key, f in facts.items() if seconds(f, rates([math.log(v) for v in start])) is not None}  # icl: none
    fitted = [key for key in facts if key[0] in args.fit and f"{key[0]}:{key[2]}" not in args.exclude]

    def loss(x: list[float]) -> float:
        table, total = rates(x), 0.0
        for key in fitted:
            translate, update = seconds(facts[key], table)
            measured_t, measured_u = rows[key][:2]
            total += math.log((translate + update) / (measured_t + measured_u)) ** 2 \
                + (math.log(translate / measured_t) ** 2 + math.log(max(update, 1e-4) / max(measured_u, 1e-4)) ** 2) / 3
        return total
    x = [math.log(v) for v in start]
    for _ in range(3):  # restarts: Nelder-Mead stalls in 16 dimensions
        x = nelder_mead(loss, x)
    table = rates(x)
    # the largest error of the time on the rows fitted on; per model (or a model at an excluded dtype): of its time and
    # of its peak memory, and whether its rows were fitted on
    worst_fitted, worst_time, worst_memory, fitted_on = 0.0, {}, {}, {}
    print(f"{'model method dtype':34s} {'measured s/segment':>26s} {'estimated s/segment':>26s} error   "
          "peak MiB measured, estimated, error")
    for key in sorted(facts):
        translate, update = seconds(facts[key], table)
        measured_t, measured_u, _, peak = rows[key]
        error = (translate + update) / (measured_t + measured_u) - 1
        memory = peaks[key] / peak - 1
        inside = key in fitted
        if inside:
            worst_fitted = max(worst_fitted, abs(error))
        model = key[0] if f"{key[0]}:{key[2]}" not in args.exclude else f"{key[0]} {key[2]}"
        worst_time[model] = max(worst_time.get(model, 0.0), abs(error))
        worst_memory[model] = max(worst_memory.get(model, 0.0), abs(memory))
        fitted_on[model] = inside
        print(f"{' '.join(key):34s} {measured_t:8.3f} + {measured_u:7.3f} = {measured_t + measured_u:7.3f}   "
              f"{translate:8.3f} + {update:7.3f} = {translate + update:7.3f}  {error:+4.0%}   "
              f"{peak:6.0f} {peaks[key]:6.0f} {memory:+4.0%}{'' if inside else '  (out of sample)'}")
    summary = {name: f"largest error of the estimate: time {worst_time[name]:.0%}"
                     f"{' (fitted on)' if inside else ' (out of sample)'}, peak memory {worst_memory[name]:.0%}"
               for name, inside in sorted(fitted_on.items())}
    for name, text in summary.items():
        print(f"{name}: {text}")
    source = benchmarks["bench-size"]
    m = source["machine"]
    machine = f"{m['cpu']}, {m['kernels']}, {m['threads']} thread, torch {m['torch']}"
    table = {"written_from": f"docs/benchmarks.json, row bench-size ({source['date']}, {machine}) by "
                             f"benchmarks/fit_speed.py, fitted on {', '.join(args.fit)}"
                             + (f" but {', '.join(args.exclude)}" if args.exclude else "")
                             + f"; largest error of the time on those rows {worst_fitted:.0%}",
             **table}
    table = json.loads(json.dumps(table), parse_float=lambda s: float(f"{float(s):.4g}"))
    if args.write:
        from record import record

        SPEED_TABLE.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {SPEED_TABLE}")
        record("dryrun-accuracy", summary, threads=1, machine=m, command="make fit-speed",
               load_average=source.get("load_average"))
    else:
        print(json.dumps(table, indent=1))


if __name__ == "__main__":
    sys.exit(run_main(main))
