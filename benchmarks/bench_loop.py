"""Seconds per segment of the online loop, per method, and the share of time spent outside model
forward and backward passes, split by where it goes (tokenising, search, scoring, the step); then the lockstep
methods among them alone and as one group (simpe.loop.group), side by side: segments per second of all of them,
and each phase's model FLOP rate beside this machine's own matmul rate measured in the same run (the model FLOP
utilisation: how far a phase is from the arithmetic).

    python benchmarks/bench_loop.py [--segments 50] [--methods baseline full ...] [--device cpu|cuda] [--group-only]

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
    parser.add_argument("--group-only", action="store_true",
                        help="only the lockstep comparison (the methods that may go together, alone and as one group)")
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
        if args.group_only:
            loops = []
        for adapter in (args.methods if not args.group_only else []):
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
    with tempfile.TemporaryDirectory() as runs:
        lockstep(args, [f"data.segments={args.segments}", f"runs_dir={runs}", f"device={args.device}",
                        f"decoder.params.beam_size={args.beam_size}"] + ([f"model={args.model}"] if args.model else []), device)
    if args.group_only:
        return 0
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


def matmul_rate(device: str) -> float:
    """This machine's matmul FLOP rate at the current threads: the median of 5 products of (2000, 256) by (256, 8000),
    the shape of a beam's rows through an output projection (FLOP/s)."""
    dev = torch.device("cuda" if device.startswith("cuda") else "cpu")
    a, b = torch.randn(2000, 256, device=dev), torch.randn(8000, 256, device=dev)
    times = []
    for _ in range(6):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        torch.nn.functional.linear(a, b)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * 2000 * 256 * 8000 / sorted(times[1:])[2]


def phase_flops(configs: list, segments: int = 3) -> dict[str, float]:
    """Model FLOPs per segment of each shared phase of a lockstep group of ``configs`` (torch's FlopCounterMode over
    ``segments`` segments' translation and update: matrix products and attention), all runs together."""
    from torch.utils.flop_counter import FlopCounterMode

    from simpe.loop.group import Group
    from simpe.loop.group_update import RunUpdate, update_group

    loops = check_runs(configs, progress=False)
    group = Group(loops)
    group.load([False] * len(loops))
    flops = {"translate": 0.0, "update": 0.0}
    first = loops[0]
    for index in range(segments):
        seg = first.segments[index]
        pair = first.loaded.family.encode_pair(first.tokenizer, seg.source, seg.reference, first.loaded.device)
        with FlopCounterMode(display=False) as counter:
            group._translate(pair, index)
        flops["translate"] += counter.get_total_flops() / segments
        with FlopCounterMode(display=False) as counter:
            update_group(group.stack, [RunUpdate(i, loop.method, loop.cfg.update, loop.model) for i, loop in enumerate(loops)], pair)
        flops["update"] += counter.get_total_flops() / segments
    for loop in loops:
        loop.timer.remove()
    return flops


def lockstep(args: argparse.Namespace, overrides: list[str], device: str) -> None:
    """The lockstep methods among ``args.methods`` alone (each a group of one, one after another) and as one group:
    segments per second of all of them, and each phase's model FLOP rate against the matmul rate."""
    from simpe.loop.group import Group
    from simpe.loop.lockstep import why_alone

    chosen = [m for m in args.methods if why_alone(load_config(m, overrides)) is None]
    if len(chosen) < 2:
        print("\n(lockstep: fewer than two of the methods may go together)")
        return
    rows = {}
    for label, groups in (("alone", [[m] for m in chosen]), ("group", [chosen])):
        seconds = {"translate": 0.0, "update": 0.0, "total": 0.0}
        start = time.perf_counter()
        for members in groups:
            loops = check_runs([load_config(m, [*overrides, f"runs_dir={tempfile.mkdtemp()}"]) for m in members], progress=False)
            Group(loops).run()
            for loop in loops:
                sec = json.loads((loop.path / "summary.json").read_text())["seconds"]
                seconds["translate"] += sec["translate"]
                seconds["update"] += sec["update"]
                seconds["total"] += sec["prepare"] + sec["translate"] + sec["score"] + sec["update"]
                loop.timer.remove()
        rows[label] = (time.perf_counter() - start, seconds)
    flops = {"group": phase_flops([load_config(m, [*overrides, f"runs_dir={tempfile.mkdtemp()}"]) for m in chosen]),
             "alone": {"translate": 0.0, "update": 0.0}}
    for m in chosen:  # each run as a group of one: the FLOPs the runs alone compute
        own = phase_flops([load_config(m, [*overrides, f"runs_dir={tempfile.mkdtemp()}"])])
        for phase in own:
            flops["alone"][phase] += own[phase]
    rate = matmul_rate(device)
    segments = args.segments * len(chosen)
    print(f"\nlockstep: {len(chosen)} runs ({', '.join(chosen)}) x {args.segments} segments, {device}; "
          f"matmul rate here {rate / 1e9:.1f} GFLOP/s")
    print(f"{'':6s} {'wall':>8s} {'seg/s':>8s} {'translate':>10s} {'update':>8s} | {'MFU translate':>14s} {'MFU update':>11s}")
    for label, (wall, seconds) in rows.items():
        mfu = {phase: flops[label][phase] * args.segments / seconds[phase] / rate if seconds[phase] else 0.0
               for phase in ("translate", "update")}
        print(f"{label:6s} {wall:7.1f}s {segments / wall:8.2f} {seconds['translate']:9.1f}s {seconds['update']:7.1f}s | "
              f"{100 * mfu['translate']:13.1f}% {100 * mfu['update']:10.1f}%")
    ratio = rows["alone"][0] / rows["group"][0]
    print(f"group / alone: {ratio:.2f}x the segments per second (goal >= 2.5x at one thread); model FLOPs per segment of "
          f"all runs, alone / group: translate {flops['alone']['translate'] / 1e9:.2f} / {flops['group']['translate'] / 1e9:.2f} "
          f"GFLOP, update {flops['alone']['update'] / 1e9:.2f} / {flops['group']['update'] / 1e9:.2f} GFLOP; MFU = those FLOPs "
          "over the phase's seconds (summed over the runs' records) over the matmul rate")
    record("bench-loop", {f"lockstep, {len(chosen)} runs alone": f"{rows['alone'][0]:.1f} s ({segments / rows['alone'][0]:.2f} segments/s)",
                          f"lockstep, {len(chosen)} runs as one group": f"{rows['group'][0]:.1f} s ({segments / rows['group'][0]:.2f} segments/s, "
                                                                          f"{ratio:.2f}x)",
                          "matmul rate": f"{rate / 1e9:.1f} GFLOP/s"}, merge=True)


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
