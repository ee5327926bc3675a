"""Seconds per segment of the online loop, per method, and the share of time spent outside model
forward and backward passes, split by where it goes (tokenising, search, scoring, the step).

    python benchmarks/bench_loop.py [--segments 50] [--methods baseline full ...] [--device cpu|cuda]

All methods run in this one process on the same stream, so the ratios are side by side.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time

import torch
from entry import run_main
from record import record

from simpe import log
from simpe.config.files import load_config
from simpe.loop.run import check_runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=50)
    # the presets `make replicate` runs: the papers' five, lora and knn, and the field's compositions (whose relative
    # cost the replication's time estimate reads by preset name: full+ewc costs several times full)
    parser.add_argument("--methods", nargs="+", default=["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn",
                                                         "tune-retrieve", "full+replay", "full+ewc", "lasso+ewc", "full+knn"])
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--beam-size", type=int, default=5)
    args = parser.parse_args()
    log.setup()
    logging.getLogger("simpe").setLevel(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory() as runs:
        overrides = [f"data.segments={args.segments}", f"runs_dir={runs}", f"device={args.device}",
                     f"decoder.params.beam_size={args.beam_size}"]
        if args.model:
            overrides.append(f"model={args.model}")
        # every method checked (settings, inputs, the sentences it reads) before the first one runs: one line, exit 2
        loops = check_runs([load_config(adapter, overrides) for adapter in args.methods], progress=False)
        for adapter in args.methods:
            loop = loops.pop(0)  # run, then let go of (its model)
            start = time.perf_counter()
            loop.run()
            wall = time.perf_counter() - start
            summary = json.loads((loop.path / "summary.json").read_text())
            sec, n = summary["seconds"], summary["segments"]
            loop_total = sec["prepare"] + sec["translate"] + sec["score"] + sec["update"]
            outside = {"prepare": sec["prepare"], "search": sec["translate"] - sec["translate_model"], "score": sec["score"],
                       "step": sec["update"] - sec["update_model"] - sec["backward"]}
            rows.append((adapter, sec["translate"] / n, sec["update"] / n, loop_total / n,
                         {k: v / loop_total for k, v in outside.items()}, wall / n, summary["corpus"]["bleu"]))
            loop.timer.remove()
    device = "cuda: " + torch.cuda.get_device_name() if torch.cuda.is_available() and args.device != "cpu" else f"cpu, {torch.get_num_threads()} threads"
    print(f"\nbench-loop: {args.segments} segments of libreoffice stream, beam {args.beam_size}, {device}")
    print(f"{'':10s} {'translate':>10s} {'update':>8s} {'total':>8s} {'outside':>8s} | {'prepare':>8s} {'search':>8s} "
          f"{'score':>8s} {'step':>8s} | {'wall':>7s} {'BLEU':>6s}")
    print(f"{'method':10s} {'s/seg':>10s} {'s/seg':>8s} {'s/seg':>8s} {'model':>8s} | {'%':>8s} {'%':>8s} {'%':>8s} {'%':>8s} | "
          f"{'s/seg':>7s}")
    for name, tr, up, tot, outside, wall, bleu in rows:
        parts = " ".join(f"{100 * outside[k]:7.1f}%" for k in ("prepare", "search", "score", "step"))
        print(f"{name:10s} {tr:10.4f} {up:8.4f} {tot:8.4f} {100 * sum(outside.values()):7.1f}% | {parts} | {wall:7.4f} {bleu:6.2f}")
    print("total = prepare + translate + score + update; outside model = the share of total not inside model\n"
          "forward or backward passes (the model's whole forward counts as model; a method's hook on its output,\n"
          "knn's interpolation, does not) (goal < 10%), split into: prepare (tokenising), search (the decoder's own\n"
          "work around the model: scores, top-k, cache reordering, kNN lookups, detokenising), score (metrics), step\n"
          "(the update around forward/backward: clipping, the method's step, the rollback backup and check);\n"
          "wall includes loading the model and writing the run")
    record("bench-loop", {name: f"{tot:.4f} s/segment, {100 * sum(outside.values()):.1f}% outside the model"
                          for name, tr, up, tot, outside, wall, bleu in rows})
    write_relative_cost({name: tot for name, tr, up, tot, *_ in rows}, f"{args.segments} segments, beam {args.beam_size}, {device}")
    return 0


def write_relative_cost(seconds: dict[str, float], how: str) -> None:
    """Each measured method's s/segment over baseline's into simpe/relative_cost.json (the sweep's run order),
    keeping the entries of methods not measured this time."""
    from simpe.sweep import COST_FILE

    if "baseline" not in seconds:
        print(f"(no baseline measured: {COST_FILE} left as it is)")
        return
    try:
        relative = json.loads(COST_FILE.read_text(encoding="utf-8"))["relative"]
    except (OSError, ValueError, KeyError):
        relative = {}
    relative.update({name: round(value / seconds["baseline"], 2) for name, value in seconds.items()})
    data = {"written_by": "benchmarks/bench_loop.py (make bench-loop): seconds per segment of each method over baseline's",
            "measured": f"{time.strftime('%Y-%m-%d')}, {how}", "relative": dict(sorted(relative.items(), key=lambda kv: kv[1]))}
    COST_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"relative costs written to {COST_FILE}")


if __name__ == "__main__":
    sys.exit(run_main(main))
